"""The generated module's API (docs/contract.md, "The generated module"): header, docstring, INPUTS and
OUTPUTS, run() returning a NamedTuple, run_feeds keyed by ONNX names, input checks naming the input
with what was expected and what was given, dead intermediates released, provenance comments, and
runtime_support.InferenceSession standing in for onnxruntime's."""

from __future__ import annotations

import ast
import hashlib
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onemodel_compile
import runtime_support
from tests import models

ORT_TYPE = {"float32": "tensor(float)", "float64": "tensor(double)", "int64": "tensor(int64)",
            "bool": "tensor(bool)"}  # fmt: skip


def compile_and_import(model, tmp_path, stem="net", variant="fast"):
    path = onemodel_compile.compile_model(model, tmp_path / f"{stem}.py", variant)
    return path, models.import_generated(path)


def typed_model(unknown_dim: bool = False) -> onnx.ModelProto:
    """Inputs and outputs of several element types, static and symbolic dims (and an unknown one)."""
    last = None if unknown_dim else 4
    nodes = [
        helper.make_node("Add", ["ids", "offset"], ["shifted"], name="shift"),
        helper.make_node("And", ["mask", "mask"], ["mask_out"], name="and"),
        helper.make_node("Mul", ["values", "values"], ["squares"], name="square"),
    ]
    graph = helper.make_graph(
        nodes,
        "typed",
        [
            helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 5]),
            helper.make_tensor_value_info("mask", TensorProto.BOOL, [2, 2]),
            helper.make_tensor_value_info("values", TensorProto.DOUBLE, ["batch", last]),
        ],
        [
            helper.make_tensor_value_info("shifted", TensorProto.INT64, ["batch", 5]),
            helper.make_tensor_value_info("mask_out", TensorProto.BOOL, [2, 2]),
            helper.make_tensor_value_info("squares", TensorProto.DOUBLE, ["batch", last]),
        ],
        [models.init("offset", np.array([1, 2, 3, 4, 5], dtype=np.int64))],
    )
    return models.finish(graph, 17)


# --- header and docstring -------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["fast", "exact"])
def test_header_names_tool_version_model_digest_opset_and_variant(tmp_path, variant):
    model = models.two_input_model()  # exact-compatible operators
    model_path = models.save(model, tmp_path / "two.onnx")
    path, _ = compile_and_import(model_path, tmp_path, variant=variant)
    source = path.read_text()
    header = "\n".join(models.header_comments(source))
    assert header, "the module must open with a comment"
    assert "onemodel-compile" in header
    assert onemodel_compile.__version__ in header
    assert hashlib.sha256(model_path.read_bytes()).hexdigest() in header
    assert re.search(r"opset", header, re.IGNORECASE) and re.search(r"\b17\b", header)
    assert re.search(rf"\b{variant}\b", header)
    other = {"fast": "exact", "exact": "fast"}[variant]
    assert not re.search(rf"\b{other}\b", header)
    # the header comes first, then the docstring
    tree = ast.parse(source)
    assert isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant)
    assert source.index('"""') > source.index(header.splitlines()[-1])


def test_header_digest_of_a_model_proto(tmp_path):
    model = models.mlp_model()
    path, _ = compile_and_import(model, tmp_path)
    header = "\n".join(models.header_comments(path.read_text()))
    assert hashlib.sha256(model.SerializeToString()).hexdigest() in header


def _section(doc: str, title: str, other: str) -> list[str]:
    lines = doc.splitlines()
    start = next(i for i, line in enumerate(lines) if title in line.lower())
    end = next(
        (i for i, line in enumerate(lines) if i > start and other in line.lower()), len(lines)
    )
    return lines[start + 1 : end]


def test_docstring_lists_inputs_and_outputs_with_dtypes_and_shapes(tmp_path):
    model = typed_model()
    _, module = compile_and_import(model, tmp_path)
    doc = module.__doc__
    assert doc
    declared = {
        "inputs": [("ids", "int64", ["batch", "5"]), ("mask", "bool", ["2", "2"]),
                   ("values", "float64", ["batch", "4"])],
        "outputs": [("shifted", "int64", ["batch", "5"]), ("mask_out", "bool", ["2", "2"]),
                    ("squares", "float64", ["batch", "4"])],
    }  # fmt: skip
    sections = {
        "inputs": _section(doc, "input", "output"),
        "outputs": _section(doc, "output", "input"),
    }
    for kind, entries in declared.items():
        for name, dtype, dims in entries:
            lines = [line for line in sections[kind] if re.search(rf"\b{name}\b", line)]
            assert len(lines) == 1, f"{kind}: no single line for {name!r} in\n{doc}"
            line = lines[0]
            assert dtype in line, (dtype, line)
            position = line.index(dtype)
            for dim in dims:
                assert re.search(rf"\b{dim}\b", line[position:]), (dim, line)


# --- INPUTS, OUTPUTS, run, run_feeds --------------------------------------------------------


def test_inputs_and_outputs_tuples(tmp_path):
    _, module = compile_and_import(typed_model(), tmp_path)
    assert module.INPUTS == (
        ("ids", "int64", ("batch", 5)),
        ("mask", "bool", (2, 2)),
        ("values", "float64", ("batch", 4)),
    )
    assert module.OUTPUTS == (
        ("shifted", "int64", ("batch", 5)),
        ("mask_out", "bool", (2, 2)),
        ("squares", "float64", ("batch", 4)),
    )


def test_unknown_dims_stay_unknown(tmp_path):
    model = typed_model(unknown_dim=True)
    _, module = compile_and_import(model, tmp_path)
    assert module.INPUTS[2] == ("values", "float64", ("batch", None))
    session = runtime_support.InferenceSession(module)
    theirs = models.ort_session(model)
    assert [list(a.shape) for a in session.get_outputs()] == [
        list(a.shape) for a in theirs.get_outputs()
    ]
    assert module.OUTPUTS[2] == ("squares", "float64", ("batch", None))


def test_run_takes_inputs_in_graph_order_and_returns_a_named_tuple(tmp_path):
    model = typed_model()
    _, module = compile_and_import(model, tmp_path)
    import inspect

    assert list(inspect.signature(module.run).parameters) == ["ids", "mask", "values"]
    ids = np.arange(15, dtype=np.int64).reshape(3, 5)
    mask = np.array([[True, False], [False, True]])
    values = np.linspace(-1, 1, 12).reshape(3, 4)
    result = module.run(ids, mask, values)
    assert isinstance(result, tuple) and type(result) is module.Outputs
    assert type(result)._fields == ("shifted", "mask_out", "squares")
    assert result.shifted.dtype == np.int64 and result.mask_out.dtype == bool
    np.testing.assert_array_equal(result.shifted, ids + np.arange(1, 6))
    np.testing.assert_array_equal(result.mask_out, mask)
    np.testing.assert_array_equal(result.squares, values * values)
    expected = models.ort_run(model, {"ids": ids, "mask": mask, "values": values})
    for name, value in zip(result._fields, result):
        np.testing.assert_array_equal(value, expected[name])
        assert value.dtype == expected[name].dtype


def test_run_feeds_is_keyed_by_onnx_names(tmp_path):
    model = models.conv_model()
    _, module = compile_and_import(model, tmp_path)
    image = models.rng(4).standard_normal((1, 2, 5, 5)).astype(np.float32)
    results = module.run_feeds({"image": image})
    assert isinstance(results, dict)
    assert list(results) == ["probs", "features"]
    expected = models.ort_run(model, {"image": image})
    for name, value in results.items():
        np.testing.assert_allclose(value, expected[name], rtol=1e-5, atol=1e-6)
        assert value.dtype == expected[name].dtype and value.shape == expected[name].shape


def test_outputs_match_their_declaration(tmp_path):
    _, module = compile_and_import(models.mlp_model(), tmp_path)
    x = np.ones((7, 4), dtype=np.float32)
    result = module.run(x)
    for (name, dtype, shape), value in zip(module.OUTPUTS, result):
        assert value.dtype.name == dtype, name
        assert len(value.shape) == len(shape)
        for want, got in zip(shape, value.shape):
            assert want == got or (want == "N" and got == 7), (name, shape, value.shape)


@pytest.mark.parametrize("feeds", [{}, {"a": None}, {"a": 1, "b": 2, "c": 3}])
def test_run_feeds_missing_or_unknown_names(tmp_path, feeds):
    _, module = compile_and_import(models.two_input_model(), tmp_path)
    x = np.ones((2, 3), dtype=np.float32)
    feeds = {name: x for name in feeds}
    with pytest.raises(runtime_support.InvalidInput) as info:
        module.run_feeds(feeds)
    message = str(info.value)
    for name in {"a", "b"} - set(feeds):
        assert repr(name) in message, message
    for name in set(feeds) - {"a", "b"}:
        assert repr(name) in message, message


# --- input checks ---------------------------------------------------------------------------

GOOD = np.ones((2, 3), dtype=np.float32)

BAD_INPUTS = {
    # case: (a, b, fragments the message must hold)
    "dtype": (GOOD.astype(np.float64), GOOD, ["'a'", "float32", "float64"]),
    "dtype int": (GOOD, GOOD.astype(np.int32), ["'b'", "float32", "int32"]),
    "rank": (np.ones(3, np.float32), GOOD, ["'a'", "rank", r"re:\b2\b", r"re:\b1\b"]),
    "rank 3": (GOOD, np.ones((2, 3, 1), np.float32), ["'b'", r"re:\b2\b", r"re:\b3\b"]),
    "static dim": (np.ones((2, 4), np.float32), GOOD, ["'a'", r"re:\b3\b", r"re:\b4\b"]),
    "symbolic dim": (GOOD, np.ones((5, 3), np.float32), ["'b'", "N", r"re:\b2\b", r"re:\b5\b"]),
    "not an array": ([[1.0, 2.0, 3.0]], GOOD, ["'a'", "list"]),
}


# InferenceSession converts a list to an array of the input's type, as onnxruntime does
# (tests/test_session_api.py), so "not an array" goes through the module's own entry points only.
CHECK_ENTRIES = [
    (case, entry)
    for case in sorted(BAD_INPUTS)
    for entry in ("run", "run_feeds", "InferenceSession")
    if (case, entry) != ("not an array", "InferenceSession")
]


@pytest.mark.parametrize("case, entry", CHECK_ENTRIES)
def test_input_checks_name_the_input_expected_and_given(tmp_path, case, entry):
    _, module = compile_and_import(models.two_input_model(), tmp_path)
    a, b, fragments = BAD_INPUTS[case]
    with pytest.raises(runtime_support.InvalidInput) as info:
        if entry == "run":
            module.run(a, b)
        elif entry == "run_feeds":
            module.run_feeds({"a": a, "b": b})
        else:
            runtime_support.InferenceSession(module).run(None, {"a": a, "b": b})
    message = str(info.value)
    for fragment in fragments:
        if fragment.startswith("re:"):
            assert re.search(fragment[3:], message), (fragment, message)
        else:
            assert fragment in message, (fragment, message)


def test_valid_inputs_of_any_batch_size(tmp_path):
    model = models.two_input_model()
    _, module = compile_and_import(model, tmp_path)
    for n in (0, 1, 4):
        a = models.rng(n).standard_normal((n, 3)).astype(np.float32)
        b = models.rng(n + 10).standard_normal((n, 3)).astype(np.float32)
        result = module.run(a, b)
        np.testing.assert_array_equal(result[0], a + b)
        assert result[1].shape == (n, 3)


# --- code shape: provenance, del ------------------------------------------------------------


def test_each_node_has_a_provenance_comment(tmp_path):
    model = models.conv_model()
    path, _ = compile_and_import(model, tmp_path)
    comments = [
        line.strip() for line in path.read_text().splitlines() if line.strip().startswith("#")
    ]
    for node in model.graph.node:
        assert any(node.op_type in c and repr(node.name) in c for c in comments), node.name


@pytest.mark.parametrize("build", [models.conv_model, models.mlp_model, models.two_input_model])
def test_dead_intermediates_are_released(tmp_path, build):
    model = build()
    path, _ = compile_and_import(model, tmp_path)
    run = models.function_def(ast.parse(path.read_text()), "run")
    # the node statements sit in one try block (its handler names the failing node)
    body = [s for top in run.body for s in (top.body if isinstance(top, ast.Try) else [top])]
    returned = {
        n.id
        for s in body
        if isinstance(s, ast.Return)
        for n in ast.walk(s)
        if isinstance(n, ast.Name)
    }
    parameters = {a.arg for a in run.args.args}

    def names(statement, context):
        return {
            n.id
            for n in ast.walk(statement)
            if isinstance(n, ast.Name) and isinstance(n.ctx, context)
        }

    assigned: dict[str, int] = {}
    for index, statement in enumerate(body):
        if isinstance(statement, ast.Assign):
            for name in names(statement, ast.Store) - parameters:
                assigned.setdefault(name, index)
    intermediates = set(assigned) - returned
    assert intermediates, "the model has intermediates"
    for name in sorted(intermediates):
        uses = [i for i, s in enumerate(body) if name in names(s, ast.Load)]
        deletes = [
            i for i, s in enumerate(body) if isinstance(s, ast.Delete) and name in names(s, ast.Del)
        ]
        assert len(deletes) == 1, f"{name!r} is never released"
        last = max(uses, default=assigned[name])
        assert deletes[0] > last, f"{name!r} is released before its last use"
        between = body[last + 1 : deletes[0]]
        assert all(
            isinstance(s, ast.Delete) for s in between
        ), f"{name!r} is released {len(between)} statements after its last use"


@pytest.mark.parametrize("op", ["Identity", "Reshape", "Transpose"])
def test_outputs_do_not_alias_the_callers_inputs(tmp_path, op):
    node = {
        "Identity": helper.make_node("Identity", ["x"], ["y"], name="op"),
        "Reshape": helper.make_node("Reshape", ["x", "shape"], ["y"], name="op"),
        "Transpose": helper.make_node("Transpose", ["x"], ["y"], name="op", perm=[1, 0]),
    }[op]
    graph = helper.make_graph(
        [node],
        "alias",
        [models.tensor("x", [2, 3])],
        [models.tensor("y", [2, 3] if op == "Identity" else [3, 2])],
        [models.init("shape", np.array([3, 2], dtype=np.int64))] if op == "Reshape" else [],
    )
    _, module = compile_and_import(models.finish(graph), tmp_path)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = module.run(x)
    assert not np.shares_memory(y, x)


def test_an_input_passed_through_is_copied(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "passthrough",
        [models.tensor("x", [2, 3])],
        [models.tensor("y", [2, 3]), models.tensor("x", [2, 3])],
    )
    _, module = compile_and_import(models.finish(graph), tmp_path)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    result = module.run(x)
    np.testing.assert_array_equal(result[1], x)
    assert not np.shares_memory(result[1], x)


def test_an_input_view_passed_through_is_copied(tmp_path):
    """The caller's array is a view (of a bigger one, or through a different dtype object): the
    output still never shares its memory."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"], name="same")],
        "view",
        [models.tensor("x", [2, 3])],
        [models.tensor("y", [2, 3])],
    )
    _, module = compile_and_import(models.finish(graph), tmp_path)
    base = np.arange(12, dtype=np.float32).reshape(4, 3)
    for x in (base[1:3], base[::2], base[:2].view(np.dtype(np.float32).newbyteorder("="))):
        (y,) = module.run(x)
        np.testing.assert_array_equal(y, x)
        assert not np.shares_memory(y, base)


class _Subclass(np.ndarray):
    pass


def test_inputs_in_every_accepted_form(tmp_path):
    """ndarray subclasses, numpy scalars for 0-d inputs and non-contiguous views give the same
    results as plain arrays; symbolic dims must agree across inputs whatever the form."""
    _, module = compile_and_import(models.two_input_model(), tmp_path)
    a = models.rng(1).standard_normal((4, 3)).astype(np.float32)
    b = models.rng(2).standard_normal((4, 3)).astype(np.float32)
    expected = module.run(a, b)
    wide = np.zeros((4, 6), np.float32)
    wide[:, ::2] = a
    for given in (a.view(_Subclass), wide[:, ::2], np.asfortranarray(a)):
        result = module.run(given, b)
        for got, want in zip(result, expected):
            np.testing.assert_array_equal(got, want)
            assert type(got) is np.ndarray
    with pytest.raises(runtime_support.InvalidInput, match="symbolic dim 'N'"):
        module.run(a, b[:2])

    scalar = helper.make_graph(
        [helper.make_node("Neg", ["s"], ["t"], name="neg")],
        "scalar",
        [models.tensor("s", [])],
        [models.tensor("t", [])],
    )
    _, module = compile_and_import(models.finish(scalar), tmp_path, stem="scalar")
    for given in (np.float32(2.5), np.array(2.5, np.float32)):
        (t,) = module.run(given)
        assert isinstance(t, np.ndarray) and t.shape == () and t == -2.5


def test_fast_variant_reuses_dead_buffers_only(tmp_path):
    """`out=` goes only to a new intermediate read by this node alone: never the caller's input,
    a weight, a graph output, a value another node reads, or one a view (Reshape) was taken of."""
    r = models.rng(4)
    w = r.standard_normal((3, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Mul", ["x", "w"], ["scaled"], name="scale"),  # new array
        helper.make_node("Add", ["scaled", "w"], ["shifted"], name="shift"),  # into scaled
        helper.make_node("Relu", ["shifted"], ["kept"], name="relu"),  # into shifted; an output
        helper.make_node("Neg", ["kept"], ["negated"], name="neg"),  # not into kept
        helper.make_node("Reshape", ["negated", "shape"], ["flat"], name="view"),
        helper.make_node("Abs", ["negated"], ["magnitude"], name="abs"),  # negated read twice
        helper.make_node("Sqrt", ["magnitude"], ["root"], name="sqrt"),  # into magnitude
    ]
    graph = helper.make_graph(
        nodes,
        "reuse",
        [models.tensor("x", [3, 3])],
        [models.tensor(n, [3, 3]) for n in ("kept", "root")] + [models.tensor("flat", [9])],
        [models.init("w", w), models.init("shape", np.array([9], dtype=np.int64))],
    )
    model = models.finish(graph)
    path, module = compile_and_import(model, tmp_path)
    source = path.read_text()
    assert all(f"out={n})" in source for n in ("scaled", "shifted", "magnitude"))
    assert source.count("out=") == 3
    assert "out=" not in compile_and_import(model, tmp_path, "exact", "exact")[0].read_text()

    x = r.standard_normal((3, 3)).astype(np.float32)
    given = x.copy()
    kept, root, flat = module.run(x)
    np.testing.assert_array_equal(x, given)  # the caller's input is untouched
    expected_kept = np.maximum(x * w + w, 0)
    np.testing.assert_array_equal(kept, expected_kept)
    np.testing.assert_array_equal(flat, -expected_kept.reshape(9))
    np.testing.assert_array_equal(root, np.sqrt(np.abs(-expected_kept)))


def test_a_buffer_read_before_by_fresh_kernels_only_is_reused(tmp_path):
    """A squeeze-and-excitation block: the map is read by GlobalAveragePool (a fresh kernel:
    its result holds no view of the map), then multiplied by the pooled scale: the product
    goes into the map (`out=`), and the results are the formula's."""
    r = models.rng(5)
    w = r.standard_normal((1, 4, 1, 1)).astype(np.float32)
    nodes = [
        helper.make_node("Mul", ["x", "w"], ["features"], name="scale"),  # a new array
        helper.make_node("GlobalAveragePool", ["features"], ["pooled"], name="pool"),
        helper.make_node("Sigmoid", ["pooled"], ["gate"], name="gate"),
        helper.make_node("Mul", ["features", "gate"], ["y"], name="excite"),  # into features
    ]
    graph = helper.make_graph(
        nodes,
        "se",
        [models.tensor("x", [2, 4, 5, 5])],
        [models.tensor("y", [2, 4, 5, 5])],
        [models.init("w", w)],
    )
    path, module = compile_and_import(models.finish(graph), tmp_path)
    assert "out=features)" in path.read_text()
    x = r.standard_normal((2, 4, 5, 5)).astype(np.float32)
    scaled = x.astype(np.float64) * w
    gate = 1 / (1 + np.exp(-scaled.mean(axis=(2, 3), keepdims=True)))
    np.testing.assert_allclose(module.run(x).y, scaled * gate, rtol=1e-5, atol=1e-6)


def _png(pixels: np.ndarray) -> np.ndarray:
    import io

    import PIL.Image

    with io.BytesIO() as f:
        PIL.Image.fromarray(pixels).save(f, format="PNG")
        return np.frombuffer(f.getvalue(), np.uint8)


def _new_array_cases():
    """Sample calls of every runtime_support kernel declared `fresh` (it returns new arrays
    (a float32 and a float64 call each, where the kernel has a separate path)."""
    r = models.rng(9)
    x32 = r.standard_normal((2, 3, 5, 5)).astype(np.float32)
    x64 = x32.astype(np.float64)
    w = r.standard_normal((4, 3, 3, 3)).astype(np.float32)
    depthwise = r.standard_normal((3, 1, 3, 3)).astype(np.float32)
    pointwise = r.standard_normal((4, 3, 1, 1)).astype(np.float32)
    bias = r.standard_normal(4).astype(np.float32)
    geometry = dict(strides=(1, 1), dilations=(1, 1))
    per_channel = r.standard_normal((3, 1, 1)).astype(np.float32)
    scale, shift = r.standard_normal(5).astype(np.float32), r.standard_normal(5).astype(np.float32)
    return {
        "rt.conv": [
            ((x32, w, bias), dict(pads=(1, 1, 1, 1), **geometry)),
            ((x32, depthwise), dict(pads=(0, 0, 0, 0), group=3, **geometry)),
            ((x32, pointwise, bias), dict(pads=(0, 0, 0, 0), **geometry)),
        ],
        "rt.conv_activation": [
            ((x32, w, bias), dict(pads=(1, 1, 1, 1), activation=activation, **geometry))
            for activation in ("relu", "hard_swish", "silu")
        ]
        + [((x32, depthwise), dict(pads=(0, 0, 0, 0), group=3, activation="clip", high=6.0))],
        "rt.deform_conv": [
            ((x32, w, np.zeros((2, 18, 3, 3), np.float32), bias), {}),
            (
                (x64, w.astype(np.float64), np.ones((2, 18, 5, 5)), None, np.ones((2, 9, 5, 5))),
                dict(pads=(1, 1, 1, 1)),
            ),
        ],
        "rt.image_decoder": [
            ((_png(np.zeros((2, 3, 3), np.uint8)),), {}),
            ((_png(np.zeros((2, 3, 3), np.uint8)),), dict(pixel_format="BGR")),
            ((np.zeros(4, np.uint8),), dict(pixel_format="Grayscale")),  # undecodable: empty
        ],
        "rt.erf": [((x32,), {}), ((x64,), {}), ((x32[:, :, ::2],), {})],
        "rt.gelu": [((x32,), {}), ((x64,), {}), ((x32,), dict(approximate="tanh"))],
        "rt.hard_swish": [((x32,), {}), ((x64,), {}), ((x32.astype(np.float16),), {})],
        "rt.layer_normalization": [
            ((x32, scale, shift), dict(axis=-1, stats=False)),
            ((x32[0, 0, :1], scale, shift), dict(axis=-1, stats=False)),  # one row
            ((x64, scale, shift), dict(axis=-1)),
        ],
        "rt.softmax": [((x32,), dict(axis=-1)), ((x64,), dict(axis=1))],
        "rt.attention_heads": [
            ((x32, x32.transpose(0, 1, 3, 2), x32), {}),
            ((x64, x64, x64), dict(scale=0.5, mask=x64[:1, :1], keep=x64[0, 0] > 0, fill=-1.0)),
        ],
        "rt.batch_normalization": [
            (
                (x32[:, :3], *(per_channel.reshape(-1),) * 3, per_channel.reshape(-1) ** 2),
                {"epsilon": 1e-5},
            )
        ],
        "rt.scale_shift": [
            ((x32[:, :3], per_channel, per_channel), {}),
            ((x32[:, :3], per_channel, per_channel), dict(low=0.0)),
        ],
        "rt.relu": [((x32,), {}), ((x64[:, :, ::2],), {})],
        "rt.global_average_pool": [((x32,), {}), ((x64[:, :, ::2],), {})],
        "rt.sigmoid": [((x32,), {}), ((x64[:, :, ::2],), {}), ((x32.astype(np.float16),), {})],
        "rt.expand": [((x32[:1, :1], (2, 3, 1, 1)), {}), ((x32, (1,)), {})],
        "rt.tile": [((x32, (1, 1, 1, 1)), {}), ((x64, (1, 2, 1, 1)), {})],
        "rt.constant_of_shape": [(((2, 3), 1.5), dict(dtype=np.float32))],
        "rt.arange": [((0, 5, 1), dict(dtype=np.int64))],
        "rt.resize_fast": [
            ((x32,), dict(sizes=np.array(x32.shape), mode="linear")),  # the identity
            ((x32,), dict(scales=np.array([1, 1, 0.5, 1], np.float32))),  # nearest: a slice
            ((x64,), dict(scales=np.array([1, 1, 2, 1.5], np.float32), mode="linear")),
            ((x32.astype(np.int32),), dict(sizes=np.array(x32.shape))),  # rt.resize's input
        ],
        "rt.matmul_weight": [
            ((x32.reshape(-1, 5), w.reshape(-1, 12)[:5].copy()), {}),  # the kernel, if usable
            ((x64.reshape(-1, 5), w.reshape(-1, 12)[:5].astype(np.float64)), {}),  # np.matmul
        ],
    }


def test_kernels_declared_fresh_return_arrays_nobody_else_holds():
    """Kernels declared `fresh` (runtime_support._kernels) let a later node write into their
    results (`out=`): each must return a new array (or tuple of them) sharing memory with no
    operand and no earlier result. Every kernel so declared is checked here."""
    cases = _new_array_cases()
    declared = {
        f"rt.{name}"
        for name in dir(runtime_support)
        if getattr(getattr(runtime_support, name), "__kernel__", None) is not None
        and getattr(runtime_support, name).__kernel__.fresh
    }
    assert declared == set(cases)
    for function, calls in cases.items():
        kernel = getattr(runtime_support, function.removeprefix("rt."))
        for args, keywords in calls:
            first, second = kernel(*args, **keywords), kernel(*args, **keywords)
            for result in first if isinstance(first, tuple) else (first,):
                assert isinstance(result, np.ndarray) and result.flags.writeable, function
                for other in [a for a in args if isinstance(a, np.ndarray)] + list(
                    second if isinstance(second, tuple) else (second,)
                ):
                    assert not np.shares_memory(result, other), (function, keywords)


def test_fast_variant_writes_into_kernel_results_never_into_views_or_inputs(tmp_path):
    """The Relu after a Conv writes into the conv's result, an Erf into a MatMul's, a Gelu kernel
    into its dying operand; never into the caller's input, a Reshape view of a value another node
    still reads, or a value that is also an output. Checked against onnxruntime."""
    r = models.rng(5)
    nodes = [
        helper.make_node("Conv", ["image", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        # into c (an Abs: a Relu would join the Conv, optimize.fuse_conv_activation)
        helper.make_node("Abs", ["c"], ["activated"], name="abs"),
        helper.make_node("Conv", ["image", "w"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["c2_relu"], name="relu2"),  # c2 is an output: new
        helper.make_node("Erf", ["image"], ["image_erf"], name="erf_input"),  # input: new
        helper.make_node("MatMul", ["x", "m"], ["p"], name="matmul"),
        helper.make_node("Reshape", ["p", "flat_shape"], ["p_flat"], name="view"),
        helper.make_node("Erf", ["p_flat"], ["p_erf"], name="erf_view"),  # a view of p: new
        helper.make_node("Neg", ["p"], ["p_neg"], name="neg"),  # reads p after the Erf
        helper.make_node("MatMul", ["x", "m"], ["q"], name="matmul2"),
        helper.make_node("Erf", ["q"], ["q_erf"], name="erf_fresh"),  # into q
    ]
    graph = helper.make_graph(
        nodes,
        "kernels",
        [models.tensor("image", [1, 2, 5, 5]), models.tensor("x", [3, 4])],
        [
            models.tensor("activated", [1, 3, 5, 5]),
            models.tensor("c2", [1, 3, 5, 5]),
            models.tensor("c2_relu", [1, 3, 5, 5]),
            models.tensor("image_erf", [1, 2, 5, 5]),
            models.tensor("p_erf", [12]),
            models.tensor("p_neg", [3, 4]),
            models.tensor("q_erf", [3, 4]),
        ],
        [
            models.init("w", r.standard_normal((3, 2, 3, 3)).astype(np.float32)),
            models.init("m", r.standard_normal((4, 4)).astype(np.float32)),
            models.init("flat_shape", np.array([12], dtype=np.int64)),
        ],
    )
    model = models.finish(graph)
    path, module = compile_and_import(model, tmp_path)
    source = path.read_text()
    assert "out=c)" in source and "out=q)" in source
    assert source.count("out=") == 2
    feeds = {
        "image": r.standard_normal((1, 2, 5, 5)).astype(np.float32),
        "x": r.standard_normal((3, 4)).astype(np.float32),
    }
    given = {name: value.copy() for name, value in feeds.items()}
    got = module.run_feeds(feeds)
    for name, value in feeds.items():
        np.testing.assert_array_equal(value, given[name])  # the caller's inputs are untouched
    for name, expected in models.ort_run(model, given).items():
        np.testing.assert_allclose(got[name], expected, rtol=1e-5, atol=1e-6, err_msg=name)


def test_fast_variant_binds_single_element_constants_at_import(tmp_path):
    """Fast: `run` reads scalars from read-only module names (no array built per call); exact:
    inline literals as before. Both give the values onnxruntime gives."""
    nodes = [
        helper.make_node("Div", ["x", "scale"], ["scaled"], name="div"),
        helper.make_node("Add", ["scaled", "shift"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "scalars",
        [models.tensor("x", [2, 3])],
        [models.tensor("y", [2, 3])],
        [
            models.init("scale", np.array(8.0, dtype=np.float32)),
            models.init("shift", np.array([[0.25]], dtype=np.float32)),
        ],
    )
    model = models.finish(graph)
    path, module = compile_and_import(model, tmp_path)
    source = path.read_text()
    run_source = source[source.index("def run(") :]
    assert "scale = rt.filled((), np.array(8.0, dtype=np.float32))" in source
    assert "shift = rt.filled((1, 1), np.array(0.25, dtype=np.float32))" in source
    assert "np.array(" not in run_source and "np.divide(x, scale)" in run_source
    assert not module.scale.flags.writeable and not module.shift.flags.writeable
    assert not (tmp_path / "net.weights.safetensors").exists()
    exact_path, exact = compile_and_import(model, tmp_path, "exact", "exact")
    assert "np.array(8.0, dtype=np.float32)" in exact_path.read_text().split("def run(")[1]
    x = models.rng(6).standard_normal((2, 3)).astype(np.float32)
    (expected,) = models.ort_run(model, {"x": x}).values()
    np.testing.assert_array_equal(module.run(x).y, expected)
    np.testing.assert_array_equal(module.run(x).y, exact.run(x).y)


def test_fast_variant_binds_short_constants_at_import(tmp_path):
    """Fast: a constant short enough to be written inline (here 3 biases and 3 labels) is a
    read-only module name built at import, not an np.array built on every run; a longer one
    stays in the weights file; the outputs are the caller's to modify (the next run is
    unchanged) and the values onnxruntime gives."""
    long = np.linspace(-1, 1, 16, dtype=np.float32) / 3
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["y"], name="add"),
        helper.make_node("Mul", ["x", "labels"], ["z"], name="mul"),
        helper.make_node("Add", ["w", "long"], ["v"], name="add_long"),
    ]
    graph = helper.make_graph(
        nodes,
        "short",
        [models.tensor("x", [2, 3]), models.tensor("w", [2, 16])],
        [models.tensor("y", [2, 3]), models.tensor("z", [2, 3]), models.tensor("v", [2, 16])],
        [
            models.init("bias", np.array([0.5, -1.0, 2.0], dtype=np.float32)),
            models.init("labels", np.array([10, 20, 30], dtype=np.float32)),
            models.init("long", long),
        ],
    )
    model = models.finish(graph)
    path, module = compile_and_import(model, tmp_path)
    source = path.read_text()
    run_source = source[source.index("def run(") :]
    assert "bias = rt.read_only(np.array([0.5, -1.0, 2.0], dtype=np.float32))" in source
    assert "np.array(" not in run_source and "np.add(x, bias)" in run_source
    assert not module.bias.flags.writeable and not module.labels.flags.writeable
    assert 'long = _WEIGHTS["long"]' in source
    rng = models.rng(7)
    feeds = {
        "x": rng.standard_normal((2, 3)).astype(np.float32),
        "w": rng.standard_normal((2, 16)).astype(np.float32),
    }
    expected = models.ort_run(model, feeds)
    first = module.run(**feeds)
    for name, value in expected.items():
        np.testing.assert_array_equal(getattr(first, name), value)
        getattr(first, name)[...] = -7  # the caller's array
    second = module.run(**feeds)
    for name, value in expected.items():
        np.testing.assert_array_equal(getattr(second, name), value)
    exact_path, _ = compile_and_import(model, tmp_path, "exact", "exact")
    assert (
        "np.array([0.5, -1.0, 2.0], dtype=np.float32)"
        in exact_path.read_text().split("def run(")[1]
    )


# --- InferenceSession -----------------------------------------------------------------------

SESSION_MODELS = {
    "mlp": (models.mlp_model, lambda: {"x": models.rng(1).standard_normal((3, 4)).astype(np.float32)}),
    "conv": (models.conv_model, lambda: {"image": models.rng(2).standard_normal((1, 2, 5, 5)).astype(np.float32)}),
    "typed": (
        typed_model,
        lambda: {
            "ids": np.arange(10, dtype=np.int64).reshape(2, 5),
            "mask": np.array([[True, False], [True, True]]),
            "values": np.linspace(0, 1, 8).reshape(2, 4),
        },
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SESSION_MODELS))
def test_inference_session_matches_onnxruntime(tmp_path, name):
    build, make_feeds = SESSION_MODELS[name]
    model = build()
    _, module = compile_and_import(model, tmp_path)
    ours = runtime_support.InferenceSession(module)
    theirs = models.ort_session(model)

    def describe(args):
        return [(a.name, a.type, list(a.shape)) for a in args]

    assert describe(ours.get_inputs()) == describe(theirs.get_inputs())
    assert describe(ours.get_outputs()) == describe(theirs.get_outputs())

    feeds = make_feeds()
    output_names = [o.name for o in theirs.get_outputs()]
    for names in (None, [], output_names, output_names[::-1], output_names[-1:]):
        want = theirs.run(names, feeds)
        got = ours.run(names, feeds)
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_inference_session_errors(tmp_path):
    _, module = compile_and_import(models.two_input_model(), tmp_path)
    session = runtime_support.InferenceSession(module)
    a = np.ones((2, 3), np.float32)
    with pytest.raises(Exception, match="nope"):
        session.run(["nope"], {"a": a, "b": a})
    with pytest.raises(Exception, match="'b'"):
        session.run(None, {"a": a})
    with pytest.raises(Exception, match="'c'"):
        session.run(None, {"a": a, "b": a, "c": a})


def test_load_compiled(tmp_path):
    model = models.mlp_model()
    path = models.save(model, tmp_path / "mlp.onnx")
    x = np.ones((2, 4), dtype=np.float32)
    for source in (path, model):
        module = onemodel_compile.load_compiled(source)
        np.testing.assert_allclose(
            module.run(x).probs, models.mlp_reference(model, x)["probs"], rtol=1e-5, atol=1e-6
        )
