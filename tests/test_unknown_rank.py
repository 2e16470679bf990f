"""Unknown ranks cost speed, never correctness (issue #11, point 2).

Real models carry values whose rank the compiler cannot know: the outputs of an If whose branches
differ, of a Loop, of a Reshape to a run-time shape. No emitter may refuse a node for that: what
depends on the rank (axes, the spatial geometry of a convolution) is settled at run time instead
(ops.common.axis_of / axes_of, rt.flatten, the convolution kernels' defaults; docs/architecture.md,
"Adding an operator").

- Every backend case of the expected-pass lists, compiled with the shapes of its graph inputs and
  outputs hidden (tests.harness.conformance.hide_shapes), meets the conformance rule in both variants
  (tests/acceptance.py): the expected values are the ONNX backend data.
- Small models reach what the backend cases do not: the run-time forms they never need (Softmax
  before opset 13, a convolution with no geometry attribute, NonZero of a scalar, ...) and the
  emitters no backend case hands an input of unknown rank. Compiled with and without their shapes
  they compute the same values (the same bits in the exact variant), and the shapeless compile did
  take the run-time form (`marker` in its source).
- Every registered emitter is exercised with an input of unknown rank by one of these, or listed
  in NOT_EXERCISED with the reason.
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from dataclasses import dataclass, field

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onemodel_compile.emit
import onemodel_compile.resolve
from onemodel_compile import ExactnessError, compile_model, ir
from onemodel_compile.compiler import generate
from onemodel_compile.ops.registry import registered
from tests import models
from tests.acceptance import EXPECTED, VARIANTS, assert_accepted
from tests.harness import backend_cases, conformance
from tests.harness.modules import import_generated

BACKEND_CASES = sorted(EXPECTED["fast"] | EXPECTED["exact"])
# Cases that compile only with their shapes known, with the reason (strict xfail: the day they
# pass, drop them). Empty: the last ones, CausalConvWithState's, compiled through the function body
# onnx builds only for inputs of known rank; the operator has its own rule now (ops/conv.py).
SHAPES_NEEDED: dict[str, str] = {}


def _hidden_params():
    for name in BACKEND_CASES:
        reason = SHAPES_NEEDED.get(name)
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", list(_hidden_params()))
def test_backend_case_with_shapes_hidden(name: str, variant: str) -> None:
    """As tests/test_conformance.py's test_backend_case, with no shape of a graph input or output
    known to the compiler."""
    assert_accepted(conformance.run_case(name, variant, hidden=True))


# --- small models ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """A one-purpose model: `nodes` over the graph inputs `inputs` (name: value, whose shape the
    model declares) and the initializers `constants`; outputs `outputs` (name: element type) of
    the shapes onnx infers, or `shapes` gives. `marker`: text the shapeless compile's source must
    hold (its run-time form)."""

    name: str
    opset: int
    nodes: list
    inputs: dict
    outputs: dict = field(default_factory=lambda: {"y": TensorProto.FLOAT})
    constants: dict = field(default_factory=dict)
    marker: str | None = None
    shapes: dict = field(default_factory=dict)

    def model(self) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes,
            self.name,
            [
                models.tensor(name, value.shape, helper.np_dtype_to_tensor_dtype(value.dtype))
                for name, value in self.inputs.items()
            ],
            [
                helper.make_tensor_value_info(name, kind, self.shapes.get(name))
                for name, kind in self.outputs.items()
            ],
            [models.init(name, value) for name, value in self.constants.items()],
        )
        model = models.finish(graph, self.opset)
        inferred = onnx.shape_inference.infer_shapes(model)
        for output, typed in zip(model.graph.output, inferred.graph.output):
            if not output.type.tensor_type.HasField("shape"):
                output.type.CopyFrom(typed.type)
        return model


_r = np.random.default_rng(11)
X3 = _r.standard_normal((2, 3, 4)).astype(np.float32)
IMAGE = _r.standard_normal((1, 2, 5, 5)).astype(np.float32)
FILTERS = _r.standard_normal((3, 2, 3, 3)).astype(np.float32)
BYTES = _r.integers(0, 255, (1, 1, 5, 5)).astype(np.uint8)
BYTE_FILTERS = _r.integers(0, 255, (1, 1, 3, 3)).astype(np.uint8)
node = helper.make_node


def _scalar(value, dtype=np.float32) -> np.ndarray:
    return np.array(value, dtype=dtype)


SPECS = [
    # Softmax and its kin before opset 13: the 2-D coercion through rt.flatten
    Spec(
        "softmax_11_axis_1",
        11,
        [node("Softmax", ["x"], ["y"], axis=1)],
        {"x": X3},
        marker="rt.flatten(",
    ),
    Spec(
        "softmax_11_last_axis",
        11,
        [node("Softmax", ["x"], ["y"], axis=2)],
        {"x": X3},
        marker="rt.flatten(",
    ),
    Spec(
        "log_softmax_11_negative_axis",
        11,
        [node("LogSoftmax", ["x"], ["y"], axis=-2)],
        {"x": X3},
        marker="rt.flatten(",
    ),
    Spec(
        "hardmax_11_default_axis",
        11,
        [node("Hardmax", ["x"], ["y"])],
        {"x": X3},
        marker="rt.flatten(",
    ),
    # Flatten over its whole axis range, empty inputs included
    Spec(
        "flatten_empty_negative_axis",
        13,
        [node("Flatten", ["x"], ["y"], axis=-1)],
        {"x": np.zeros((0, 3, 4), np.float32)},
        marker="rt.flatten(",
    ),
    Spec(
        "flatten_axis_rank",
        13,
        [node("Flatten", ["x"], ["y"], axis=3)],
        {"x": X3},
        marker="rt.flatten(",
    ),
    Spec(
        "flatten_axis_minus_rank",
        13,
        [node("Flatten", ["x"], ["y"], axis=-3)],
        {"x": X3},
        marker="rt.flatten(",
    ),
    # reductions with axes attributes, empty reductions, integers
    Spec(
        "reduce_sum_11_axes_attribute",
        11,
        [node("ReduceSum", ["x"], ["y"], axes=[-1, 0], keepdims=0)],
        {"x": X3},
        marker="rt.normalize_axes(",
    ),
    Spec(
        "reduce_mean_empty_axis",
        17,
        [node("ReduceMean", ["x"], ["y"], axes=[1])],
        {"x": np.zeros((2, 0, 3), np.float32)},
        marker="reduce_mean(",  # the fast variant passes non-negative axes as a literal tuple
    ),
    Spec(
        "reduce_max_int32_empty_axis",
        17,
        [node("ReduceMax", ["x"], ["y"], axes=[-2], keepdims=0)],
        {"x": np.zeros((2, 0, 3), np.int32)},
        {"y": TensorProto.INT32},
        marker="rt.normalize_axes(",
    ),
    Spec(
        "argmax_last_index",
        13,
        [node("ArgMax", ["x"], ["y"], axis=-1, select_last_index=1)],
        {"x": np.round(X3)},
        {"y": TensorProto.INT64},
        marker="rt.normalize_axis(",
    ),
    Spec(
        "cumsum_constant_axis",
        14,
        [node("CumSum", ["x", "axis"], ["y"])],
        {"x": X3},
        constants={"axis": np.array(-1, np.int64)},
        marker="rt.normalize_axis(",
    ),
    Spec(
        "cumsum_reverse_exclusive_constant_axis",
        14,
        [node("CumSum", ["x", "axis"], ["y"], reverse=1, exclusive=1)],
        {"x": X3},
        constants={"axis": np.array(0, np.int64)},
        marker="rt.normalize_axis(",
    ),
    # convolutions: the kernel shape, even the number of spatial axes, known only at run time
    Spec(
        "conv_without_attributes",
        11,
        [node("Conv", ["x", "w"], ["y"])],
        {"x": IMAGE, "w": FILTERS},
        marker="pads=None",
    ),
    Spec(
        "conv_1d_bias_without_attributes",
        11,
        [node("Conv", ["x", "w", "b"], ["y"])],
        {"x": IMAGE[:, :, 0].copy(), "w": FILTERS[:, :, 0].copy(), "b": FILTERS[:, 0, 0, 0].copy()},
        marker="pads=None",
    ),
    Spec(
        "conv_same_upper_strided",
        11,
        [node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])],
        {"x": IMAGE, "w": FILTERS},
        marker="auto_pad=",
    ),
    Spec(
        "conv_same_lower_even_kernel",
        11,
        [node("Conv", ["x", "w"], ["y"], auto_pad="SAME_LOWER")],
        {"x": IMAGE, "w": FILTERS[:, :, :2, :2].copy()},
        marker="auto_pad=",
    ),
    Spec(
        "conv_grouped_dilated_padded",
        11,
        [node("Conv", ["x", "w"], ["y"], group=2, dilations=[2, 1], pads=[1, 0, 2, 1])],
        {"x": IMAGE, "w": FILTERS[:2, :1].copy()},
    ),
    Spec(
        "conv_integer_same_upper",
        10,
        [node("ConvInteger", ["x", "w", "x_zero"], ["y"], auto_pad="SAME_UPPER")],
        {"x": BYTES, "w": BYTE_FILTERS},
        {"y": TensorProto.INT32},
        constants={"x_zero": _scalar(3, np.uint8)},
        marker="auto_pad=",
    ),
    Spec(
        "qlinear_conv_without_attributes",
        10,
        [
            node(
                "QLinearConv",
                ["x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero"],
                ["y"],
            )
        ],
        {"x": BYTES, "w": BYTE_FILTERS},
        {"y": TensorProto.UINT8},
        constants={
            "x_scale": _scalar(0.05),
            "x_zero": _scalar(128, np.uint8),
            "w_scale": _scalar(0.01),
            "w_zero": _scalar(100, np.uint8),
            "y_scale": _scalar(0.2),
            "y_zero": _scalar(10, np.uint8),
        },
        marker="pads=None",
    ),
    # NonZero of a scalar (numpy refuses nonzero of a 0-d array)
    Spec(
        "nonzero_scalar",
        13,
        [node("NonZero", ["x"], ["y"])],
        {"x": _scalar(2.5)},
        {"y": TensorProto.INT64},
        marker="rt.nonzero(",
    ),
    Spec(
        "nonzero_zero_scalar",
        13,
        [node("NonZero", ["x"], ["y"])],
        {"x": _scalar(0.0)},
        {"y": TensorProto.INT64},
        marker="rt.nonzero(",
    ),
    # emitters no backend case hands an input of unknown rank
    Spec("clip_6", 10, [node("Clip", ["x"], ["y"], min=-0.5, max=0.5)], {"x": X3}),
    Spec("not", 13, [node("Not", ["x"], ["y"])], {"x": X3 > 0}, {"y": TensorProto.BOOL}),
    Spec("global_lp_pool", 13, [node("GlobalLpPool", ["x"], ["y"], p=3)], {"x": IMAGE}),
    Spec(
        "max_roi_pool",
        13,
        [node("MaxRoiPool", ["x", "rois"], ["y"], pooled_shape=[2, 2], spatial_scale=0.5)],
        {"x": IMAGE, "rois": np.array([[0, 0, 0, 6, 6], [0, 2, 2, 8, 9]], np.float32)},
    ),
    Spec(
        "upsample_7",
        7,
        [node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 3.0], mode="nearest")],
        {"x": IMAGE},
        marker="rt.resize(",
    ),
    Spec(
        "resize_10",
        10,
        [node("Resize", ["x", "scales"], ["y"], mode="nearest")],
        {"x": IMAGE},
        constants={"scales": np.array([1.0, 1.0, 2.0, 2.0], np.float32)},
        marker="rt.resize(",
    ),
    Spec(
        "optional_of_a_tensor",
        18,
        [node("Optional", ["x"], ["maybe"]), node("OptionalGetElement", ["maybe"], ["y"])],
        {"x": X3},
    ),
    Spec(
        "sequence_construct_erase_concat",
        17,
        [
            node("SequenceConstruct", ["a", "b", "c"], ["abc"]),
            node("SequenceErase", ["abc", "position"], ["ac"]),
            node("ConcatFromSequence", ["ac"], ["y"], axis=-1),
        ],
        {"a": X3[:, :, :1].copy(), "b": X3[:, :, 1:3].copy(), "c": X3[:, :, 3:].copy()},
        constants={"position": np.array(1, np.int64)},
    ),
    # Multinomial has no backend case: seeded, so both compiles draw the same classes
    Spec(
        "multinomial_seeded",
        15,
        [node("Multinomial", ["x"], ["y"], sample_size=5, seed=2.0)],
        {"x": X3[0].copy()},
        outputs={"y": TensorProto.INT32},
    ),
]


def _compile_and_run(model, inputs, variant: str, path):
    """(source, outputs) of `model` compiled in `variant` and run on `inputs`."""
    written = compile_model(model, path, variant)
    module = import_generated(written, f"unknown_rank_{path.stem}")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return written.read_text(), list(module.run(*inputs))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_shapeless_compile_computes_what_the_shaped_one_does(spec: Spec, variant: str, tmp_path):
    model = spec.model()
    inputs = list(spec.inputs.values())
    try:
        _, expected = _compile_and_run(model, inputs, variant, tmp_path / f"shaped_{variant}.py")
    except ExactnessError as refused:  # then the shapeless compile is refused alike
        with pytest.raises(ExactnessError) as shapeless:
            compile_model(conformance.hide_shapes(model), tmp_path / "hidden.py", variant)
        assert str(shapeless.value) == str(refused)
        return
    hidden = conformance.hide_shapes(model)
    source, actual = _compile_and_run(hidden, inputs, variant, tmp_path / f"hidden_{variant}.py")
    if spec.marker is not None:
        assert spec.marker in source, f"no {spec.marker!r} in the shapeless module:\n{source}"
    assert len(actual) == len(expected)
    for e, a in zip(expected, actual):
        assert (a.dtype, a.shape) == (e.dtype, e.shape)
        if variant == "exact" or e.dtype.kind not in "f":
            np.testing.assert_array_equal(a, e)  # the same bits (NaN where NaN)
        else:
            np.testing.assert_allclose(a, e, rtol=1e-6, atol=0)


OUT_OF_RANGE = [
    Spec("argmax_axis_2_of_rank_2", 13, [node("ArgMax", ["x"], ["y"], axis=2)], {"x": X3[0]}),
    Spec(
        "softmax_axis_minus_3_of_rank_2", 13, [node("Softmax", ["x"], ["y"], axis=-3)], {"x": X3[0]}
    ),
    Spec(
        "reduce_sum_11_axis_2_of_rank_2",
        11,
        [node("ReduceSum", ["x"], ["y"], axes=[2])],
        {"x": X3[0]},
    ),
    Spec("flatten_axis_3_of_rank_2", 13, [node("Flatten", ["x"], ["y"], axis=3)], {"x": X3[0]}),
]


@pytest.mark.parametrize("spec", OUT_OF_RANGE, ids=lambda spec: spec.name)
def test_an_axis_out_of_range_fails_at_run_time_when_the_rank_is_unknown(spec: Spec, tmp_path):
    """The shapeless module refuses an axis outside the run-time rank, naming it, instead of
    computing along another axis (an invalid model: onnx infers no output shape, so the test
    declares none)."""
    model = dataclasses.replace(spec, shapes={"y": ()}).model()
    path = compile_model(conformance.hide_shapes(model), tmp_path / "hidden.py", "fast")
    module = import_generated(path, f"unknown_rank_range_{spec.name}")
    # rt.normalize_axes's message, or numpy's for a non-negative axis passed as it is
    with pytest.raises(ValueError, match="axis .* out of (range|bounds)"):
        module.run(*spec.inputs.values())


# --- every emitter ------------------------------------------------------------------------------

# Registrations (op type, since, variant) no hidden-shape compile hands an input of unknown rank,
# with the reason.
NOT_EXERCISED = {
    ("Constant", 1, None): "no inputs: its value, shape included, is its attribute",
    ("SequenceEmpty", 11, None): "no inputs: it makes an empty sequence",
    ("RandomUniform", 1, None): "no inputs: its shape is its attribute",
    ("RandomNormal", 1, None): "no inputs: its shape is its attribute",
    ("RandomNormalLike", 1, None): "no backend case; its rule is RandomUniformLike's (which the "
    "Bernoulli cases' expanded forms reach), the input only giving its shape at run time",
    ("GroupNormalization", 18, None): "deprecated: onnx's checker (load.py) refuses opsets 18-20",
    ("onemodel.fused.ScaleShift", 1, None): "never in a model: optimize.py makes it from a "
    "BatchNormalization (tested there); its kernel broadcasts, whatever the rank",
    **{
        (f"onemodel.fused.{op_type}", 1, None): "never in a model: optimize.py makes it only "
        "from values of known rank (tests/test_optimize.py)"
        for op_type in ("LayerNorm", "RMSNorm", "Gelu", "Attention", "HardSwish")
    },
    ("onemodel.fused.ConvActivation", 1, None): "never in a model: optimize.py makes it from a "
    "Conv and its activation (tested there); Conv's keywords and rt.conv, which take any rank",
}


def _key(entry) -> tuple:
    return (
        entry.op_type if not entry.domain else f"{entry.domain}.{entry.op_type}",
        entry.since,
        entry.variant,
    )


def _rank_unknown(value_type) -> bool:
    """Whether a value's rank (of a sequence's or optional's element) is unknown."""
    if isinstance(value_type, (ir.SequenceType, ir.OptionalType)):
        return _rank_unknown(value_type.elem)
    return getattr(value_type, "shape", None) is None


def _recording_lookup(exercised: set):
    """registry.lookup, its emitters wrapped to record in `exercised` every one whose emit rule
    is given an input of unknown rank."""
    original = onemodel_compile.resolve.lookup
    wrapped = {}

    def lookup(*args, **kwargs):
        entry = original(*args, **kwargs)
        if entry not in wrapped:

            def emit(view, entry=entry):
                if any(x is not None and _rank_unknown(x.type) for x in view.inputs):
                    exercised.add(_key(entry))
                return entry.emit(view)

            wrapped[entry] = dataclasses.replace(entry, emit=emit)
        return wrapped[entry]

    return lookup


@pytest.mark.slow
def test_every_emitter_is_exercised_with_an_unknown_rank(monkeypatch) -> None:
    """Registry-wide: each registration is handed an input of unknown rank by the shapeless
    compile of a backend case of the expected-pass lists (in a variant that uses it) or of a
    small model above, or is listed in NOT_EXERCISED with the reason; a listed one is not."""
    exercised: set = set()
    monkeypatch.setattr(onemodel_compile.resolve, "lookup", _recording_lookup(exercised))
    # the source is not looked at: leave it unformatted (black takes most of a compile's time)
    monkeypatch.setattr(onemodel_compile.emit.black, "format_str", lambda source, mode: source)
    models_by_variant = {
        variant: itertools.chain(
            (
                backend_cases.case(name).model
                for name in sorted(EXPECTED[variant])
                if name not in SHAPES_NEEDED
            ),
            (spec.model() for spec in SPECS),
        )
        for variant in VARIANTS
    }
    for variant, shaped in models_by_variant.items():
        for model in shaped:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                try:
                    generate(conformance.hide_shapes(model), variant)
                except ExactnessError:
                    pass  # an exact-variant refusal of a small model (the backend's: listed)
    # ai.onnx.ml's emitters: tests/test_ml_models.py::test_every_ml_emitter_takes_an_unknown_rank;
    # onnxruntime's own (ops/microsoft.py): tests/test_microsoft.py
    every = {
        _key(entry)
        for entry in registered()
        if entry.domain != "ai.onnx.ml"
        and entry.emit.__module__ != "onemodel_compile.ops.microsoft"
    }
    assert set(NOT_EXERCISED) <= every, sorted(set(NOT_EXERCISED) - every)
    missing = sorted(every - exercised - set(NOT_EXERCISED), key=str)
    assert not missing, f"never given an input of unknown rank: {missing}"
    listed = sorted(exercised & set(NOT_EXERCISED), key=str)
    assert not listed, f"exercised after all, drop from NOT_EXERCISED: {listed}"
