"""scikit-learn, LightGBM and XGBoost models converted to ONNX (tests/ml_models/, built by
tools/make_ml_models.py; its README lists them): each compiles in both variants and reproduces
onnxruntime 1.31.1's outputs on the stored feed sets, run here through onnxruntime itself.

Labels (int64 or string tensors) and the keys of ZipMap's maps must be equal; scores agree within
RTOL/ATOL. The exact variant may refuse a model only for an operator of the refusal list
(tests/acceptance.py). Also here: the ai.onnx.ml backend node cases of onnx 1.23.2 (out of the
conformance scope, tests/conformance/scope.json), small graphs for the corner cases of
onnxruntime's conventions the converted models do not reach, and the registry's coverage of every
ai.onnx.ml domain opset (1 to 5).

`python tests/test_ml_models.py` prints each model's outcome.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

if __name__ == "__main__":  # `python tests/test_ml_models.py` from the repository root
    sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

from onemodel_compile import (  # noqa: E402
    CompileError,
    ExactnessError,
    compile_model,
    ir,
    resolve,
)
from onemodel_compile.load import DOMAIN_OPSETS  # noqa: E402
from onemodel_compile.ops import lookup, registered  # noqa: E402
from tests.acceptance import REFUSAL_LIST  # noqa: E402
from tests.harness.modules import import_generated  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "tests" / "ml_models"
MODELS = sorted(p.stem for p in FOLDER.glob("*.onnx"))
VARIANTS = ("fast", "exact")
RTOL, ATOL = 1e-4, 1e-5
ML = "ai.onnx.ml"
# model -> why it fails today, as `outcome` reports it (strict: a fixed one fails as XPASS).
XFAIL: dict[str, str] = {}  # empty: string initializers are inline literals (ops/code.py)


# --- feeds and comparison ----------------------------------------------------------------------


def load_feeds(name: str) -> list[dict]:
    """The stored feed sets (tools/make_ml_models.py): unicode arrays become object arrays of str
    (what onnxruntime returns for strings and both runtimes take), map entries a dict."""
    sets: dict[int, dict] = {}
    maps: dict[tuple[int, str], dict] = {}
    with np.load(FOLDER / f"{name}.npz") as data:
        for key in sorted(data.files):
            k, kind, onnx_name = key.split(":", 2)
            value = data[key]
            feed = sets.setdefault(int(k), {})
            if kind == "input":
                feed[onnx_name] = value.astype(object) if value.dtype.kind == "U" else value
            else:
                maps.setdefault((int(k), onnx_name), {})[kind] = value
    for (k, onnx_name), parts in maps.items():
        keys = parts["mapkeys"].tolist()
        sets[k][onnx_name] = dict(zip(keys, parts["mapvalues"].tolist()))
    return [sets[k] for k in sorted(sets)]


def run_onnxruntime(model: onnx.ModelProto, feeds: dict) -> dict:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3  # skl2onnx declares some output shapes wrongly: no warnings
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def difference(expected, actual, where: str) -> str | None:
    """None when `actual` matches onnxruntime's `expected`, else what differs."""
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{where}: expected a list of {len(expected)}, got {type(actual).__name__}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            problem = difference(e, a, f"{where}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{where}: expected a dict, got {type(actual).__name__}"
        if list(expected) != list(actual) or [type(k) for k in expected] != [
            type(k) for k in actual
        ]:
            return f"{where}: keys {list(actual)} instead of {list(expected)}"
        e = np.array(list(expected.values()), dtype=np.float64)
        a = np.array(list(actual.values()), dtype=np.float64)
        if not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
            return f"{where}: values {a.tolist()} instead of {e.tolist()}"
        if not all(type(v) is float for v in actual.values()):
            return f"{where}: values are not Python floats"
        return None
    expected, actual = np.asarray(expected), actual
    if not isinstance(actual, np.ndarray):
        return f"{where}: expected an ndarray, got {type(actual).__name__}"
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return (
            f"{where}: {actual.dtype} {list(actual.shape)} instead of "
            f"{expected.dtype} {list(expected.shape)}"
        )
    if expected.dtype.kind in "fc":
        bad = ~np.isclose(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True)
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            return (
                f"{where}: {int(bad.sum())} of {bad.size} differ, first at {list(at)}: "
                f"{actual[at]!r} instead of {expected[at]!r}"
            )
        return None
    if not np.array_equal(actual, expected):
        at = tuple(int(i) for i in np.argwhere(actual != expected)[0])
        return f"{where}: {actual[at]!r} instead of {expected[at]!r} at {list(at)}"
    return None


def outcome(model, feeds: list[dict], variant: str, folder: Path, tag: str, reference=None):
    """None when the compiled model gives onnxruntime's outputs (of `reference`, default `model`)
    on every feed set; "refused: ..." for a refusal; else the failure on one line."""
    try:
        path = compile_model(model, folder / f"{tag}.py", variant)
    except ExactnessError as exc:
        return f"refused: {exc}"
    except CompileError as exc:
        return f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - an internal error is a failure to report
        return f"internal {type(exc).__name__}: {exc}".splitlines()[0]
    try:
        module = import_generated(path, f"ml_{tag}")
        for index, feed in enumerate(feeds):
            expected = run_onnxruntime(model if reference is None else reference, feed)
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                actual = module.run_feeds(feed)
            for name, value in expected.items():
                problem = difference(value, actual[name], f"set {index} {name}")
                if problem:
                    return f"mismatch: {problem}"
    except Exception as exc:  # noqa: BLE001
        return f"run {type(exc).__name__}: {exc}".splitlines()[0]
    return None


def check(problem: str | None, variant: str) -> None:
    if problem and problem.startswith("refused: ") and variant == "exact":
        operator = problem.removeprefix("refused: ").split()[0]
        assert operator in REFUSAL_LIST, f"refused {operator}, not on the list: {problem}"
        assert "--variant fast" in problem, problem
        return
    assert problem is None, problem


# --- the converted models ------------------------------------------------------------------------


def test_the_set_is_there() -> None:
    assert len(MODELS) >= 25, MODELS
    for name in MODELS:
        assert (FOLDER / f"{name}.npz").exists(), name
    total = sum((FOLDER / f"{name}.onnx").stat().st_size for name in MODELS)
    assert total < 4 << 20, f"tests/ml_models holds {total} bytes of models"
    assert set(XFAIL) <= set(MODELS), sorted(set(XFAIL) - set(MODELS))


def _model_params():
    for name in MODELS:
        for variant in VARIANTS:
            reason = XFAIL.get(name)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(name, variant, id=f"{name}-{variant}", marks=marks)


@pytest.mark.parametrize("name,variant", list(_model_params()))
def test_ml_model(name: str, variant: str, tmp_path: Path) -> None:
    model = onnx.load(FOLDER / f"{name}.onnx")
    check(outcome(model, load_feeds(name), variant, tmp_path, f"{name}_{variant}"), variant)


def main() -> None:
    passed = 0
    with tempfile.TemporaryDirectory() as scratch:
        for name in MODELS:
            model = onnx.load(FOLDER / f"{name}.onnx")
            for variant in VARIANTS:
                problem = outcome(
                    model, load_feeds(name), variant, Path(scratch), f"{name}_{variant}"
                )
                passed += problem is None
                print(f"{name} {variant}: {problem or 'pass'}")
    print(f"{passed} of {2 * len(MODELS)} pass")


if __name__ == "__main__":
    main()


# --- small graphs for onnxruntime's conventions ------------------------------------------------------


def _graph_model(node: onnx.NodeProto, inputs, outputs, ml_opset=3, opset=17) -> onnx.ModelProto:
    graph = helper.make_graph([node], "case", inputs, outputs)
    imports = [helper.make_opsetid("", opset), helper.make_opsetid(ML, ml_opset)]
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _tensor(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _split(feature, threshold, mode, yes, no, missing=0):
    return ("split", feature, threshold, mode, missing, yes, no)


def _leaf(*weights):
    return ("leaf", list(weights))


def _tree_attributes(trees, prefix: str) -> dict:
    """nodes_* and <prefix>_* attributes of `trees` (nested _split/_leaf tuples), node ids in
    depth-first order per tree."""
    attrs = {
        k: [] for k in ("treeids", "nodeids", "featureids", "values", "modes", "true", "false")
    }
    attrs["missing"] = []
    weights = {"treeids": [], "nodeids": [], "ids": [], "weights": []}
    for tree_id, tree in enumerate(trees):
        counter = iter(range(1000))

        def visit(node):
            node_id = next(counter)
            slot = len(attrs["nodeids"])
            attrs["treeids"].append(tree_id)
            attrs["nodeids"].append(node_id)
            for key in ("featureids", "values", "modes", "true", "false", "missing"):
                attrs[key].append(None)
            if node[0] == "leaf":
                attrs["featureids"][slot], attrs["values"][slot] = 0, 0.0
                attrs["modes"][slot], attrs["true"][slot], attrs["false"][slot] = "LEAF", 0, 0
                attrs["missing"][slot] = 0
                for target, weight in node[1]:
                    weights["treeids"].append(tree_id)
                    weights["nodeids"].append(node_id)
                    weights["ids"].append(target)
                    weights["weights"].append(weight)
                return node_id
            _, feature, threshold, mode, missing, yes, no = node
            attrs["featureids"][slot], attrs["values"][slot] = feature, threshold
            attrs["modes"][slot], attrs["missing"][slot] = mode, missing
            attrs["true"][slot] = visit(yes)
            attrs["false"][slot] = visit(no)
            return node_id

        visit(tree)
    return {
        "nodes_treeids": attrs["treeids"],
        "nodes_nodeids": attrs["nodeids"],
        "nodes_featureids": attrs["featureids"],
        "nodes_values": attrs["values"],
        "nodes_modes": attrs["modes"],
        "nodes_truenodeids": attrs["true"],
        "nodes_falsenodeids": attrs["false"],
        "nodes_missing_value_tracks_true": attrs["missing"],
        **{f"{prefix}_{k}": v for k, v in weights.items()},
    }


# Two trees over three features using every comparison, NaN tracking on some nodes.
MIXED_TREES = [
    _split(
        0,
        0.5,
        "BRANCH_LEQ",
        _split(1, -0.25, "BRANCH_LT", _leaf((0, 0.25)), _leaf((0, -0.5)), missing=1),
        _split(2, 1.0, "BRANCH_GTE", _leaf((0, 0.75)), _leaf((0, 0.125))),
    ),
    _split(
        1,
        0.0,
        "BRANCH_GT",
        _split(2, 2.0, "BRANCH_EQ", _leaf((0, 1.5)), _leaf((0, -0.375)), missing=1),
        _split(0, -1.0, "BRANCH_NEQ", _leaf((0, 0.0625)), _leaf((0, 2.0))),
    ),
]


def _with_targets(trees, mapping):
    """`trees` with each leaf's weights re-targeted: mapping(leaf index, weight) -> weights."""
    counter = iter(range(1000))

    def visit(node):
        if node[0] == "leaf":
            index = next(counter)
            return _leaf(*mapping(index, node[1][0][1]))
        return (*node[:5], visit(node[5]), visit(node[6]))

    return [visit(tree) for tree in trees]


def _tree_rows(dtype=np.float32, rows=40, seed=3):
    """Rows around MIXED_TREES' thresholds: random values, the thresholds themselves, NaNs."""
    rng = np.random.default_rng(seed)
    X = rng.normal(0, 1.5, size=(rows, 3)).astype(dtype)
    X[::5, 0] = 0.5
    X[1::5, 1] = -0.25
    X[2::5, 2] = 2.0
    X[3::5, 1] = 0.0
    X[4::7, 0] = -1.0
    X[::6, 1] = np.nan
    X[3::8, 2] = np.nan
    return X


def _regressor(trees, n_targets=1, dtype=TensorProto.FLOAT, **attrs):
    node = helper.make_node(
        "TreeEnsembleRegressor",
        ["X"],
        ["Y"],
        domain=ML,
        n_targets=n_targets,
        **_tree_attributes(trees, "target"),
        **attrs,
    )
    return _graph_model(
        node, [_tensor("X", dtype, [None, 3])], [_tensor("Y", 1, [None, n_targets])]
    )


def _classifier(trees, labels, dtype=TensorProto.FLOAT, **attrs):
    strings = isinstance(labels[0], str)
    node = helper.make_node(
        "TreeEnsembleClassifier",
        ["X"],
        ["label", "scores"],
        domain=ML,
        **{"classlabels_strings" if strings else "classlabels_int64s": labels},
        **_tree_attributes(trees, "class"),
        **attrs,
    )
    outputs = [
        _tensor("label", TensorProto.STRING if strings else TensorProto.INT64, [None]),
        _tensor("scores", TensorProto.FLOAT, [None, len(labels)]),
    ]
    return _graph_model(node, [_tensor("X", dtype, [None, 3])], outputs)


def _three(index, weight):
    return [(index % 3, weight), ((index + 1) % 3, weight / 2)]


def _linear(op, n_in, labels=None, output_width=1, in_type=TensorProto.FLOAT, **attrs):
    rng = np.random.default_rng(11)
    targets = len(attrs.get("intercepts", [])) or 1
    coefficients = rng.normal(size=targets * n_in).round(3).tolist()
    attrs.setdefault("coefficients", coefficients)
    outputs = []
    if op == "LinearClassifier":
        strings = isinstance(labels[0], str)
        attrs["classlabels_strings" if strings else "classlabels_ints"] = labels
        outputs.append(
            _tensor("label", TensorProto.STRING if strings else TensorProto.INT64, [None])
        )
    outputs.append(_tensor("scores", TensorProto.FLOAT, [None, output_width]))
    names = [o.name for o in outputs]
    node = helper.make_node(op, ["X"], names, domain=ML, **attrs)
    return _graph_model(node, [_tensor("X", in_type, [None, n_in])], outputs, ml_opset=1)


def _linear_rows(n_in, dtype=np.float32, seed=5):
    return np.random.default_rng(seed).normal(size=(30, n_in)).astype(dtype)


def _svm(n_in, labels, **attrs):
    strings = isinstance(labels[0], str)
    attrs["classlabels_strings" if strings else "classlabels_ints"] = labels
    width = attrs.pop("width")
    outputs = [
        _tensor("label", TensorProto.STRING if strings else TensorProto.INT64, [None]),
        _tensor("scores", TensorProto.FLOAT, [None, width]),
    ]
    node = helper.make_node("SVMClassifier", ["X"], ["label", "scores"], domain=ML, **attrs)
    return _graph_model(node, [_tensor("X", TensorProto.FLOAT, [None, n_in])], outputs, ml_opset=1)


def _svm_regressor(n_in, **attrs):
    node = helper.make_node("SVMRegressor", ["X"], ["Y"], domain=ML, **attrs)
    inputs, outputs = [_tensor("X", TensorProto.FLOAT, [None, n_in])], [_tensor("Y", 1, [None, 1])]
    return _graph_model(node, inputs, outputs, ml_opset=1)


def _one(op, inputs, outputs, ml_opset=1, **attrs):
    node = helper.make_node(
        op, [i.name for i in inputs], [o.name for o in outputs], domain=ML, **attrs
    )
    return _graph_model(node, inputs, outputs, ml_opset=ml_opset)


_R = np.random.default_rng(7)
_SV = _R.normal(size=(5, 3)).round(2)
_MAP_TYPE = helper.make_map_type_proto(
    TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, [])
)


def _cases():
    """(name, model, feed sets)."""
    X = _tree_rows()
    yield "regressor_mixed_modes_logistic_one_target", _regressor(
        MIXED_TREES, base_values=[0.5], post_transform="LOGISTIC"
    ), [{"X": X}]
    probit = _with_targets(MIXED_TREES, lambda i, w: [(0, 0.05 + 0.04 * i)])
    yield "regressor_probit", _regressor(probit, base_values=[0.1], post_transform="PROBIT"), [
        {"X": X}
    ]
    three = _with_targets(MIXED_TREES, _three)
    yield "regressor_three_targets_softmax", _regressor(
        three, n_targets=3, base_values=[0.1, -0.2, 0.3], post_transform="SOFTMAX"
    ), [{"X": X}]
    yield "regressor_average_two_targets", _regressor(
        _with_targets(MIXED_TREES, lambda i, w: [(i % 2, w)]),
        n_targets=2,
        aggregate_function="AVERAGE",
        base_values=[1.0, 2.0],
    ), [{"X": X}]
    sparse = _with_targets(MIXED_TREES, lambda i, w: [(i % 2, w)] if i % 3 else [(0, w), (1, -w)])
    for aggregate in ("MIN", "MAX"):
        yield f"regressor_{aggregate.lower()}", _regressor(
            sparse, n_targets=2, aggregate_function=aggregate
        ), [{"X": X}]
    yield "regressor_double_input", _regressor(
        MIXED_TREES, dtype=TensorProto.DOUBLE, base_values=[0.25]
    ), [{"X": _tree_rows(np.float64)}]
    yield "classifier_three_classes_unscored_class_ties", _classifier(
        _with_targets(MIXED_TREES, lambda i, w: [(i % 2, 1.0)]), [10, 20, 30]
    ), [{"X": X}]
    yield "classifier_softmax_zero", _classifier(
        _with_targets(MIXED_TREES, lambda i, w: [(i % 3, w)]),
        ["a", "b", "c"],
        post_transform="SOFTMAX_ZERO",
    ), [{"X": X}]
    both = _with_targets(MIXED_TREES, lambda i, w: [(0, w), (1, -w / 3)])
    yield "classifier_binary_two_base_values", _classifier(
        both, [0, 1], base_values=[0.25, -0.5]
    ), [{"X": X}]
    positive = _with_targets(MIXED_TREES, lambda i, w: [(1, abs(w) / 4)])
    yield "classifier_binary_one_class_positive", _classifier(positive, [4, 9]), [{"X": X}]
    yield "classifier_binary_one_class_mixed_logistic", _classifier(
        MIXED_TREES, ["no", "yes"], base_values=[-0.125], post_transform="LOGISTIC"
    ), [{"X": X}]
    yield "classifier_binary_two_classes_no_base_logistic_strings", _classifier(
        both, ["no", "yes"], post_transform="LOGISTIC"
    ), [{"X": X}]
    yield "classifier_binary_two_classes_labels_3_7", _classifier(both, [3, 7]), [{"X": X}]
    yield "classifier_int64_input", _classifier(
        _with_targets(MIXED_TREES, _three), [0, 1, 2], dtype=TensorProto.INT64
    ), [{"X": np.round(np.nan_to_num(_tree_rows(np.float64)) * 2).astype(np.int64).clip(-5, 5)}]

    L4 = _linear_rows(4)
    yield "linear_classifier_one_target_two_labels_logistic", _linear(
        "LinearClassifier", 4, [0, 1], 2, intercepts=[0.1], post_transform="LOGISTIC"
    ), [{"X": L4}]
    yield "linear_classifier_one_target_strings", _linear(
        "LinearClassifier", 4, ["neg", "pos"], 2, intercepts=[-0.2]
    ), [{"X": L4}]
    yield "linear_classifier_softmax_zero_int_input", _linear(
        "LinearClassifier",
        4,
        [5, 6, 7],
        3,
        in_type=TensorProto.INT64,
        intercepts=[0.0, 0.5, -0.5],
        post_transform="SOFTMAX_ZERO",
    ), [{"X": np.random.default_rng(1).integers(-3, 4, size=(30, 4)).astype(np.int64)}]
    yield "linear_classifier_tie", _linear(
        "LinearClassifier",
        2,
        [1, 2, 3],
        3,
        coefficients=[1.0, 0.0, 1.0, 0.0, 0.5, 0.5],
        intercepts=[0.0, 0.0, 0.0],
        post_transform="LOGISTIC",
    ), [{"X": np.array([[1.0, 1.0], [0.0, 2.0], [2.0, 0.0], [-1.0, 3.0]], np.float32)}]
    yield "linear_regressor_probit", _linear(
        "LinearRegressor",
        4,
        output_width=1,
        coefficients=[0.05, -0.02, 0.03, 0.01],
        intercepts=[0.5],
        post_transform="PROBIT",
    ), [{"X": L4}]
    yield "linear_regressor_two_targets_softmax", _linear(
        "LinearRegressor",
        4,
        output_width=2,
        targets=2,
        intercepts=[0.5, -0.5],
        post_transform="SOFTMAX",
    ), [{"X": L4}]

    S3 = _linear_rows(3, seed=8)
    yield "svm_liblinear_three_classes", _svm(
        3,
        [0, 1, 2],
        width=3,
        coefficients=_R.normal(size=9).round(3).tolist(),
        rho=[0.25],
        kernel_type="LINEAR",
        kernel_params=[0.0, 0.0, 0.0],
    ), [{"X": S3}]
    yield "svm_liblinear_two_classes", _svm(
        3,
        ["a", "b"],
        width=2,
        coefficients=_R.normal(size=6).round(3).tolist(),
        rho=[-0.1],
        kernel_type="LINEAR",
        kernel_params=[0.0, 0.0, 0.0],
    ), [{"X": S3}]
    yield "svm_binary_linear_kernel_logistic", _svm(
        3,
        [0, 1],
        width=2,
        vectors_per_class=[2, 3],
        support_vectors=_SV.ravel().tolist(),
        coefficients=[0.5, -0.25, 0.75, -1.0, 0.125],
        rho=[0.2],
        kernel_type="LINEAR",
        kernel_params=[0.0, 0.0, 0.0],
        post_transform="LOGISTIC",
    ), [{"X": S3}]
    yield "svm_three_classes_rbf_softmax", _svm(
        3,
        [0, 1, 2],
        width=3,
        vectors_per_class=[2, 2, 1],
        support_vectors=_SV.ravel().tolist(),
        coefficients=_R.normal(size=10).round(3).tolist(),
        rho=[0.1, -0.2, 0.05],
        kernel_type="RBF",
        kernel_params=[0.3, 0.0, 0.0],
        post_transform="SOFTMAX",
    ), [{"X": S3}]
    yield "svm_regressor_liblinear", _svm_regressor(
        3,
        coefficients=[0.5, -1.0, 0.25],
        rho=[0.75],
        kernel_type="LINEAR",
        kernel_params=[0.0, 0.0, 0.0],
        n_supports=0,
    ), [{"X": S3}]
    yield "svm_regressor_poly_fractional_degree_one_class", _svm_regressor(
        3,
        coefficients=[0.5, -0.25, 0.75, -1.0, 0.125],
        support_vectors=_SV.ravel().tolist(),
        n_supports=5,
        rho=[0.1],
        kernel_type="POLY",
        kernel_params=[0.5, 2.0, 2.5],
        one_class=1,
    ), [{"X": S3}]

    S = _tensor("X", TensorProto.STRING, [None])
    F = _tensor("X", TensorProto.FLOAT, [None])
    yield "label_encoder_v2_floats_to_strings", _one(
        "LabelEncoder",
        [F],
        [_tensor("Y", TensorProto.STRING, [None])],
        ml_opset=2,
        keys_floats=[0.5, -1.0, 2.0, 0.5],
        values_strings=["half", "minus", "two", "last half"],
        default_string="?",
    ), [{"X": np.array([0.5, 2.0, 3.0, -1.0, np.nan], np.float32)}]
    yield "label_encoder_v4_double_nan_key_repeated_key", _one(
        "LabelEncoder",
        [_tensor("X", TensorProto.DOUBLE, [None])],
        [_tensor("Y", TensorProto.INT64, [None])],
        ml_opset=4,
        keys_tensor=numpy_helper.from_array(np.array([1.5, np.nan, -2.0, 1.5]), "keys"),
        values_tensor=numpy_helper.from_array(np.array([7, 8, 9, 10], np.int64), "values"),
        default_tensor=numpy_helper.from_array(np.array([-3], np.int64), "default"),
    ), [{"X": np.array([1.5, np.nan, 0.0, -2.0, np.nan])}]
    yield "label_encoder_v4_int64_to_float_default", _one(
        "LabelEncoder",
        [_tensor("X", TensorProto.INT64, [None])],
        [_tensor("Y", TensorProto.FLOAT, [None])],
        ml_opset=4,
        keys_tensor=numpy_helper.from_array(np.array([3, 1], np.int64), "keys"),
        values_tensor=numpy_helper.from_array(np.array([0.5, 2.5], np.float32), "values"),
    ), [{"X": np.array([1, 2, 3], np.int64)}]
    yield "label_encoder_v1_ints_to_strings", _one(
        "LabelEncoder",
        [_tensor("X", TensorProto.INT64, [None])],
        [_tensor("Y", TensorProto.STRING, [None])],
        classes_strings=["zero", "one", "two"],
        default_string="none",
    ), [{"X": np.array([2, 0, 5, -1, 1], np.int64)}]
    yield "label_encoder_v1_strings_to_ints", _one(
        "LabelEncoder",
        [S],
        [_tensor("Y", TensorProto.INT64, [None])],
        classes_strings=["zero", "one", "two"],
        default_int64=42,
    ), [{"X": np.array(["two", "x", "zero"], dtype=object)}]
    yield "one_hot_encoder_float_input", _one(
        "OneHotEncoder",
        [_tensor("X", TensorProto.FLOAT, [None, 2])],
        [_tensor("Y", TensorProto.FLOAT, [None, 2, 3])],
        cats_int64s=[1, 3, 5],
        zeros=1,
    ), [{"X": np.array([[1.0, 3.9], [5.2, -1.0], [2.0, 1.0]], np.float32)}]
    yield "binarizer_nan", _one(
        "Binarizer", [F], [_tensor("Y", TensorProto.FLOAT, [None])], threshold=0.5
    ), [{"X": np.array([0.5, 0.75, 0.5000001, -1.0, np.inf], np.float32)}]
    yield "imputer_int64", _one(
        "Imputer",
        [_tensor("X", TensorProto.INT64, [None, 3])],
        [_tensor("Y", TensorProto.INT64, [None, 3])],
        imputed_value_int64s=[7, 8, 9],
        replaced_value_int64=-1,
    ), [{"X": np.array([[-1, 2, -1], [3, -1, 4]], np.int64)}]
    for norm in ("MAX", "L1", "L2"):
        yield f"normalizer_{norm.lower()}_rank3", _one(
            "Normalizer",
            [_tensor("X", TensorProto.DOUBLE, [3, 4])],
            [_tensor("Y", TensorProto.FLOAT, [3, 4])],
            norm=norm,
        ), [{"X": np.random.default_rng(2).normal(size=(3, 4)) * [[1], [0], [-3]]}]
    yield "array_feature_extractor_1d", _one(
        "ArrayFeatureExtractor",
        [F, _tensor("I", TensorProto.INT64, [None])],
        [_tensor("Y", TensorProto.FLOAT, [1, None])],
    ), [{"X": np.array([1.0, 2.0, 3.0], np.float32), "I": np.array([2, 0, 2], np.int64)}]
    yield "scaler_int_input_one_offset", _one(
        "Scaler",
        [_tensor("X", TensorProto.INT32, [None, 3])],
        [_tensor("Y", TensorProto.FLOAT, [None, 3])],
        offset=[1.5, 0.0, -2.0],
        scale=[0.5, 2.0, -1.0],
    ), [{"X": np.array([[1, 2, 3], [-4, 5, 6]], np.int32)}]
    yield "zip_map_int_labels", _one(
        "ZipMap",
        [_tensor("X", TensorProto.FLOAT, [None, 3])],
        [helper.make_value_info("Z", helper.make_sequence_type_proto(_MAP_TYPE))],
        classlabels_int64s=[10, -2, 7],
    ), [{"X": np.array([[0.1, 0.2, 0.7], [1.0, 0.0, -0.5]], np.float32)}]
    yield "cast_map_floats_to_strings_sparse", _one(
        "CastMap",
        [helper.make_value_info("M", _MAP_TYPE)],
        [_tensor("Y", TensorProto.STRING, [1, 5])],
        cast_to="TO_STRING",
        map_form="SPARSE",
        max_map=5,
    ), [{"M": {3: 2.5, 0: -0.1, 9: 1.0}}]
    yield "cast_map_floats_to_int64_dense", _one(
        "CastMap",
        [helper.make_value_info("M", _MAP_TYPE)],
        [_tensor("Y", TensorProto.INT64, [1, None])],
        cast_to="TO_INT64",
    ), [{"M": {2: 1.75, 1: -3.5, 5: 7.0}}]
    yield "dict_vectorizer_int_keys_repeated_vocabulary", _one(
        "DictVectorizer",
        [helper.make_value_info("M", _MAP_TYPE)],
        [_tensor("Y", TensorProto.FLOAT, [1, 4])],
        int64_vocabulary=[3, 1, 4, 1],
    ), [{"M": {1: 0.5, 4: -2.0, 8: 3.0}}]


CASES = list(_cases())


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name,model,feeds", CASES, ids=[c[0] for c in CASES])
def test_convention(name, model, feeds, variant, tmp_path: Path) -> None:
    """Each small graph gives onnxruntime's outputs in both variants."""
    check(outcome(model, feeds, variant, tmp_path, f"{name}_{variant}"), variant)


# --- the backend cases, the registry, the loader and the input checks --------------------------------

BACKEND_CASES = (
    "test_ai_onnx_ml_array_feature_extractor",
    "test_ai_onnx_ml_binarizer",
    "test_ai_onnx_ml_label_encoder_string_int",
    "test_ai_onnx_ml_label_encoder_string_int_no_default",
    "test_ai_onnx_ml_label_encoder_tensor_mapping",
    "test_ai_onnx_ml_label_encoder_tensor_value_only_mapping",
    "test_ai_onnx_ml_tree_ensemble_set_membership",
    "test_ai_onnx_ml_tree_ensemble_single_tree",
)


def test_backend_case_list_is_complete() -> None:
    from tests.harness import backend_cases

    assert sorted(n for n in backend_cases.all_cases() if "ai_onnx_ml" in n) == list(BACKEND_CASES)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", BACKEND_CASES)
def test_backend_case(name: str, variant: str) -> None:
    """onnx 1.23.2's ai.onnx.ml node cases reproduce the backend data (they are outside the
    seed's conformance scope, tests/conformance/scope.json, so they run here)."""
    from tests.harness import conformance

    result = conformance.run_case(name, variant)
    assert result.status == "pass", f"{result.status}: {result.detail}"


ML_OPS = sorted(e.op_type for e in registered() if e.domain == ML)


def test_the_domain_is_registered() -> None:
    schemas = {s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ML}
    assert set(ML_OPS) == schemas


@pytest.mark.parametrize("op_type", ML_OPS)
def test_every_domain_opset_has_an_emitter(op_type: str) -> None:
    """Every ai.onnx.ml opset (1 to 5) at which the operator's schema exists has an emitter in
    both variants, and each registration starts at a schema version (tests/test_registry.py
    checks the default domain's opsets 7 to 28)."""
    low, high = DOMAIN_OPSETS[ML]
    versions = []
    for opset in range(low, high + 1):
        try:
            onnx.defs.get_schema(op_type, opset, ML)
        except onnx.defs.SchemaError:
            continue
        versions.append(opset)
    assert versions, op_type
    for opset in versions:
        for variant in VARIANTS:
            lookup(op_type, ML, opset, variant, "test")
    for entry in registered():
        if (entry.domain, entry.op_type) == (ML, op_type) and entry.since > low:
            assert onnx.defs.get_schema(op_type, entry.since, ML).since_version == entry.since


def _scaler_model(ml_opset: int, default_opset: int | None) -> onnx.ModelProto:
    node = helper.make_node("Scaler", ["X"], ["Y"], domain=ML, offset=[1.0], scale=[2.0])
    graph = helper.make_graph(
        [node], "g", [_tensor("X", TensorProto.FLOAT, [None, 2])], [_tensor("Y", 1, [None, 2])]
    )
    imports = [helper.make_opsetid(ML, ml_opset)]
    if default_opset is not None:
        imports.append(helper.make_opsetid("", default_opset))
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 8
    return model


def test_a_model_importing_no_default_domain_compiles(tmp_path: Path) -> None:
    model = _scaler_model(1, None)
    X = np.array([[1.0, -2.0]], np.float32)
    problem = outcome(model, [{"X": X}], "exact", tmp_path, "nodefault")
    assert problem is None, problem
    assert "'ai.onnx.ml' 1" in (tmp_path / "nodefault.py").read_text().splitlines()[2]


def test_an_ml_opset_out_of_range_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CompileError, match=r"ai\.onnx\.ml opset 6 is outside .* 1 to 5"):
        compile_model(_scaler_model(6, 17), tmp_path / "m.py")


def test_string_and_map_inputs_are_checked() -> None:
    from runtime_support import InputChecker, InvalidInput

    check_inputs = InputChecker(
        [("s", "string", (None, 2)), ("m", "map(string,float32)", None), ("x", "float32", (2,))]
    )
    x = np.zeros(2, np.float32)
    strings, mapping, _ = check_inputs(np.array([["a", "b"]]), {"k": 1.0}, x)
    assert strings.dtype == object and strings.tolist() == [["a", "b"]]
    assert mapping == {"k": 1.0}
    with pytest.raises(InvalidInput, match=r"input 's': expected dtype string, got float32"):
        check_inputs(np.zeros((1, 2), np.float32), {}, x)
    with pytest.raises(InvalidInput, match=r"input 'm': expected a dict, got list"):
        check_inputs(np.array([["a", "b"]], dtype=object), [], x)
    with pytest.raises(InvalidInput, match=r"input 'm': expected string keys, got int 3"):
        check_inputs(np.array([["a", "b"]], dtype=object), {3: 1.0}, x)
    int_keys = InputChecker([("m", "map(int64,float32)", None)])
    assert int_keys({np.int64(2): 0.5, 3: 1.0}) == {2: 0.5, 3: 1.0}
    with pytest.raises(InvalidInput, match=r"expected int64 keys, got str 'a'"):
        int_keys({"a": 1.0})


def test_type_names() -> None:
    tensor = ir.TensorType(np.dtype(np.float32), (None,))
    assert ir.type_name(ir.TensorType(np.dtype(object), (2,))) == "string"
    assert ir.type_name(ir.SequenceType(ir.MapType(np.dtype(np.int64), tensor))) == (
        "sequence(map(int64,float32))"
    )
    assert ir.type_name(ir.MapType(np.dtype(object), tensor)) == "map(string,float32)"
    assert ir.type_name(ir.OptionalType(ir.UNKNOWN)) == "optional(?)"


def test_string_literal_rebuilds_string_arrays() -> None:
    from onemodel_compile.ops.code import literal as string_literal

    hostile = ["a'b", 'c"d', "new\nline", "\\", "é∂", "", "__import__('os')"]
    for value in (np.array(hostile, dtype=object), np.array([hostile[:2]], dtype=object)):
        code = string_literal(value)
        rebuilt = eval(code, {"np": np, "__builtins__": {}})  # only np is in scope
        assert rebuilt.dtype == object and rebuilt.shape == value.shape
        assert rebuilt.tolist() == value.tolist()
    empty = eval(string_literal(np.empty((0, 3), dtype=object)), {"np": np, "__builtins__": {}})
    assert empty.shape == (0, 3) and empty.dtype == object


def _rankless(value_type) -> bool:
    """An input of unknown rank, or a map (CastMap's, DictVectorizer's), which has none."""
    return isinstance(value_type, ir.MapType) or getattr(value_type, "shape", ()) is None


@pytest.mark.slow
def test_every_ml_emitter_takes_an_unknown_rank(monkeypatch, tmp_path: Path) -> None:
    """Every converted model and small graph, compiled with its graph's shapes hidden
    (tests.harness.conformance.hide_shapes), still gives onnxruntime's outputs in both variants, and every
    ai.onnx.ml registration is handed an input of unknown rank on the way (the rule
    tests/test_unknown_rank.py holds the other emitters to)."""
    from tests.harness import conformance

    exercised: set = set()
    original = resolve.lookup

    def lookup(*args, **kwargs):
        entry = original(*args, **kwargs)

        def emit_rule(view, entry=entry):
            if any(x is not None and _rankless(x.type) for x in view.inputs):
                exercised.add((entry.op_type, entry.since, entry.variant))
            return entry.emit(view)

        return dataclasses.replace(entry, emit=emit_rule)

    monkeypatch.setattr(resolve, "lookup", lookup)
    converted = [(name, onnx.load(FOLDER / f"{name}.onnx"), load_feeds(name)) for name in MODELS]
    failures = []
    for name, model, feeds in converted + CASES:
        if name in XFAIL:
            continue
        hidden = conformance.hide_shapes(model)
        for variant in VARIANTS:
            problem = outcome(hidden, feeds, variant, tmp_path, f"{name}_{variant}", model)
            if problem:
                failures.append(f"{name} {variant}: {problem}")
    assert not failures, failures[:5]
    every = {(e.op_type, e.since, e.variant) for e in registered() if e.domain == ML}
    assert not every - exercised, sorted(every - exercised)


# The run step of the bit-identity check: numpy and runtime_support only (it also runs under
# numpy 1.26). Prints {case: sha256 of its outputs on every feed set}.
_DIGEST_SCRIPT = r"""
import hashlib, json, sys
import numpy as np
from tests.harness.modules import import_generated

def feeds(path):
    sets, maps = {}, {}
    with np.load(path) as data:
        for key in sorted(data.files):
            k, kind, name = key.split(":", 2)
            value = data[key]
            feed = sets.setdefault(int(k), {})
            if kind == "input":
                feed[name] = value.astype(object) if value.dtype.kind == "U" else value
            else:
                maps.setdefault((int(k), name), {})[kind] = value
    for (k, name), parts in maps.items():
        sets[k][name] = dict(zip(parts["mapkeys"].tolist(), parts["mapvalues"].tolist()))
    return [sets[k] for k in sorted(sets)]

def update(h, value):
    if isinstance(value, list):
        h.update(b"list%d" % len(value))
        for item in value:
            update(h, item)
    elif isinstance(value, dict):
        h.update(repr(list(value)).encode())
        h.update(np.array(list(value.values()), dtype=np.float64).tobytes())
    elif value.dtype == object:
        h.update(repr((value.shape, value.ravel().tolist())).encode())
    else:
        h.update(repr((value.dtype.str, value.shape)).encode() + np.ascontiguousarray(value).tobytes())

out = {}
for case, (module_path, feeds_path) in sorted(json.loads(sys.argv[1]).items()):
    module = import_generated(module_path, "m_" + case, register=False)
    h = hashlib.sha256()
    with np.errstate(all="ignore"):
        for feed in feeds(feeds_path):
            results = module.run_feeds(feed)
            for name in sorted(results):
                update(h, results[name])
    out[case] = h.hexdigest()
print(json.dumps(out))
"""


@pytest.mark.slow
def test_exact_bits_are_the_same_in_every_environment(tmp_path: Path) -> None:
    """The exact modules of every converted model and small graph give the same output bits under
    every environment of tests.harness.bit_identity.ENVIRONMENTS (SIMD levels off, OpenBLAS kernels and
    threads, numpy 1.26): the exactness the ai.onnx.ml emitters declare."""
    import json
    import subprocess

    from tests.harness import bit_identity
    from tools.make_ml_models import feed_arrays, write_npz

    cases = {}
    for name in MODELS:
        if name not in XFAIL:
            model = onnx.load(FOLDER / f"{name}.onnx")
            cases[name] = (model, FOLDER / f"{name}.npz")
    for name, model, feeds in CASES:
        path = tmp_path / f"{name}.npz"
        write_npz(path, feed_arrays(feeds))
        cases[name] = (model, path)
    manifest = {}
    for name, (model, feeds_path) in cases.items():
        module = compile_model(model, tmp_path / f"{name}.py", "exact")
        manifest[name] = (str(module), str(feeds_path))
    argument = json.dumps(manifest)
    digests = {}
    for environment in bit_identity.ENVIRONMENTS:
        python = bit_identity.ensure_numpy126_python() if environment.numpy126 else sys.executable
        done = subprocess.run(
            [str(python), "-c", _DIGEST_SCRIPT, argument],
            env=bit_identity.clean_environment(environment.settings),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, f"{environment.name}: {done.stderr[-2000:]}"
        digests[environment.name] = json.loads(done.stdout)
    reference_name = bit_identity.ENVIRONMENTS[0].name
    reference = digests[reference_name]
    assert set(reference) == set(cases)
    for environment, found in digests.items():
        differing = sorted(case for case in reference if found[case] != reference[case])
        assert not differing, f"{environment} differs from {reference_name} on {differing}"
