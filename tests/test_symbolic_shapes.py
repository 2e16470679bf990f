"""Symbolic dims and shape values (onemodel_compile/symbolic.py, shapes.py): the algebra checked
against Python's own integer arithmetic, and models whose shapes are computed at run time, the way
exporters write them, checked against onnxruntime."""

from __future__ import annotations

import random

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from onemodel_compile import load_compiled
from onemodel_compile import symbolic as sym
from onemodel_compile.compiler import generate

SYMBOLS = ("batch", "seq", "heads")


def _random_expression(rng: random.Random, depth: int):
    """(dim, the same as a function of the symbols' values) built from sizes."""
    if depth == 0 or rng.random() < 0.3:
        if rng.random() < 0.5:
            n = rng.randint(0, 9)
            return n, lambda v, n=n: n
        name = rng.choice(SYMBOLS)
        return name, lambda v, name=name: v[name]
    (a, fa), (b, fb) = _random_expression(rng, depth - 1), _random_expression(rng, depth - 1)
    op = rng.choice(["add", "mul", "floordiv", "min", "max", "mod"])
    if op in ("floordiv", "mod"):
        n = rng.randint(1, 6)
        dim = sym.floordiv(a, n) if op == "floordiv" else sym.mod(a, n)
        return dim, (lambda v: fa(v) // n) if op == "floordiv" else (lambda v: fa(v) % n)
    function = {"add": sym.add, "mul": sym.mul, "min": sym.minimum, "max": sym.maximum}[op]
    python = {"add": int.__add__, "mul": int.__mul__, "min": min, "max": max}[op]
    return function(a, b), lambda v: python(fa(v), fb(v))


def _value(dim, values: dict) -> int:
    return eval(sym.code(dim, lambda name: str(values[name])))  # our own code, ints only


@pytest.mark.parametrize("seed", range(40))
def test_algebra_agrees_with_python_ints(seed: int) -> None:
    rng = random.Random(seed)
    dim, python = _random_expression(rng, 4)
    for _ in range(5):
        values = {name: rng.randint(0, 50) for name in SYMBOLS}
        assert _value(dim, values) == python(values), sym.text(dim)


def test_equal_sizes_compare_equal_however_computed() -> None:
    a = sym.mul(sym.add("batch", 1), "seq")
    b = sym.add(sym.mul("seq", "batch"), "seq")
    assert a == b and hash(a) == hash(b)
    assert sym.sub(a, b) == 0
    assert sym.exact_quotient(sym.mul(a, 6), sym.mul("seq", 3)) == sym.add(sym.mul(2, "batch"), 2)
    assert sym.exact_quotient("batch", "seq") is None
    assert sym.floordiv(sym.mul(8, "seq"), 4) == sym.mul(2, "seq")
    assert sym.maximum("seq", sym.add("seq", 1)) == sym.add("seq", 1)
    assert sym.minimum("seq", 0) == 0  # a size is never negative


def _model(nodes, inputs, outputs, initializers=(), opset=13):
    graph = h.make_graph(
        nodes,
        "g",
        inputs,
        outputs,
        [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], ir_version=8)


def _check_against_onnxruntime(model, feeds_list) -> None:
    session = onnxruntime.InferenceSession(model.SerializeToString())
    names = [i.name for i in session.get_inputs()]
    for variant in ("fast", "exact"):
        module = load_compiled(model, variant)
        for feeds in feeds_list:
            expected = session.run(None, dict(zip(names, feeds)))
            got = module.run(*feeds)
            for want, have in zip(expected, got):
                assert have.shape == want.shape, variant
                np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-6, err_msg=variant)


def paddle_reshape_model():
    """Reshape(x, Concat(Slice(Shape(x), 0, 2), [-1])) then a reduction: the target shape has a
    known length but symbolic values, and the output declares no shape (as Paddle writes it)."""
    return _model(
        [
            h.make_node("Shape", ["x"], ["s"]),
            h.make_node("Slice", ["s", "start", "end"], ["s2"]),
            h.make_node("Concat", ["s2", "minus_one"], ["target"], axis=0),
            h.make_node("Reshape", ["x", "target"], ["r"]),
            h.make_node("ReduceMean", ["r"], ["y"], axes=[2], keepdims=0),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, ["batch", 3, "h", "w"])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        [
            ("start", np.array([0], np.int64)),
            ("end", np.array([2], np.int64)),
            ("minus_one", np.array([-1], np.int64)),
        ],
    )


def test_reshape_to_a_computed_shape_gets_its_rank() -> None:
    rng = np.random.default_rng(0)
    feeds = [[rng.random((b, 3, hh, w), dtype=np.float32)] for b, hh, w in [(2, 4, 5), (1, 2, 2)]]
    _check_against_onnxruntime(paddle_reshape_model(), feeds)


def test_shape_arithmetic_leaves_run() -> None:
    source = generate(paddle_reshape_model()).source
    assert "batch = x.shape[0]" in source
    assert "r = x.reshape((batch, 3, -1))" in source
    for op in ("Shape", "Slice", "Concat"):
        assert f"# + {op} (opset 13), as shape arithmetic" in source


def test_expand_and_range_from_shape_arithmetic() -> None:
    """A causal mask as GPT-2 exports write it: Range(0, seq) compared with itself, Expand to
    (batch, 1, seq, seq) from the input's dims, Tile by a computed repeat."""
    model = _model(
        [
            h.make_node("Shape", ["ids"], ["s"]),
            h.make_node("Gather", ["s", "one"], ["seq"], axis=0),
            h.make_node("Gather", ["s", "zero"], ["batch"], axis=0),
            h.make_node("Range", ["zero", "seq", "one"], ["positions"]),
            h.make_node("Unsqueeze", ["positions", "axis0"], ["rows"]),
            h.make_node("Unsqueeze", ["positions", "axis1"], ["columns"]),
            h.make_node("LessOrEqual", ["rows", "columns"], ["causal"]),
            h.make_node("Unsqueeze", ["batch", "axis0"], ["batch1"]),
            h.make_node("Unsqueeze", ["seq", "axis0"], ["seq1"]),
            h.make_node("Concat", ["batch1", "one1", "seq1", "seq1"], ["mask_shape"], axis=0),
            h.make_node("Expand", ["causal", "mask_shape"], ["mask"]),
            h.make_node("Cast", ["mask"], ["y"], to=T.FLOAT),
            h.make_node("Mul", ["seq1", "two"], ["twice"]),
            h.make_node("Concat", ["one1", "twice"], ["repeats"], axis=0),
            h.make_node("Tile", ["ids", "repeats"], ["tiled"]),
        ],
        [h.make_tensor_value_info("ids", T.INT64, ["batch", "seq"])],
        [
            h.make_tensor_value_info("y", T.FLOAT, None),
            h.make_tensor_value_info("tiled", T.INT64, None),
        ],
        [
            ("zero", np.array(0, np.int64)),
            ("one", np.array(1, np.int64)),
            ("one1", np.array([1], np.int64)),
            ("two", np.array([2], np.int64)),
            ("axis0", np.array([0], np.int64)),
            ("axis1", np.array([1], np.int64)),
        ],
        opset=14,
    )
    rng = np.random.default_rng(1)
    feeds = [[rng.integers(0, 9, (b, s), dtype=np.int64)] for b, s in [(2, 5), (1, 1), (3, 7)]]
    _check_against_onnxruntime(model, feeds)
    source = generate(model).source
    assert "rt.arange(0, seq, 1, dtype=np.int64)" in source
    assert "rt.expand(" in source and "(batch, 1, seq, seq)" in source
    assert "rt.tile(ids, (1, 2 * seq))" in source


def test_a_negative_declared_dim_is_unknown_and_shown_as_none() -> None:
    """Paddle declares a batch dim of -1; onnxruntime reads it as unknown, and so do we."""
    model = paddle_reshape_model()
    model.graph.input[0].type.tensor_type.shape.dim[0].Clear()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -1
    module = load_compiled(model)
    assert module.INPUTS == (("x", "float32", (None, 3, "h", "w")),)
    session = onnxruntime.InferenceSession(model.SerializeToString())
    assert list(session.get_inputs()[0].shape)[0] is None
    rng = np.random.default_rng(2)
    feeds = [[rng.random((b, 3, 2, 3), dtype=np.float32)] for b in (1, 4)]
    _check_against_onnxruntime(model, feeds)


def test_an_output_without_a_declared_shape_is_accepted() -> None:
    """onnx's checker wants a shape on graph outputs; onnxruntime runs models without one."""
    model = paddle_reshape_model()
    assert not model.graph.output[0].type.tensor_type.HasField("shape")
    module = load_compiled(model)
    assert module.OUTPUTS == (("y", "float32", ("batch", 3)),)
    assert not model.graph.output[0].type.tensor_type.HasField("shape")


def _if_on_first_dim_model(first_dim):
    """If(Shape(x)[0] == 1): Squeeze the first axis, else keep x; then a reduction. With a static
    first dim the condition is known and only the taken branch is compiled; with a symbolic one
    the If stays, and its output's rank is unknown."""
    then_graph = h.make_graph(
        [h.make_node("Squeeze", ["x", "zero"], ["a"])],
        "squeezed",
        [],
        [h.make_tensor_value_info("a", T.FLOAT, None)],
    )
    else_graph = h.make_graph(
        [h.make_node("Identity", ["x"], ["b"])],
        "kept",
        [],
        [h.make_tensor_value_info("b", T.FLOAT, None)],
    )
    return _model(
        [
            h.make_node("Shape", ["x"], ["s"]),
            h.make_node("Gather", ["s", "zero_scalar"], ["n"], axis=0),
            h.make_node("Equal", ["n", "one"], ["condition"]),
            h.make_node("If", ["condition"], ["z"], then_branch=then_graph, else_branch=else_graph),
            h.make_node("ReduceMax", ["z"], ["y"], keepdims=0),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [first_dim, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        [
            ("zero", np.array([0], np.int64)),
            ("zero_scalar", np.array(0, np.int64)),
            ("one", np.array(1, np.int64)),
        ],
    )


def test_an_if_with_a_known_condition_compiles_only_the_taken_branch() -> None:
    # (a static first dim other than 1 makes the untaken Squeeze branch invalid for onnxruntime)
    model = _if_on_first_dim_model(1)
    source = generate(model).source
    assert "def if_" not in source  # no branch functions
    assert "a = x[0]" in source  # the known 1-sized axis squeezed by a subscript
    assert "Identity 'If: taken branch squeezed'" in source
    rng = np.random.default_rng(3)
    _check_against_onnxruntime(model, [[rng.random((1, 4), dtype=np.float32)]])


def test_a_slice_over_a_negative_declared_dim_does_not_stop_the_process() -> None:
    """onnx 1.23's shape inference aborts the interpreter (a C++ assertion) on a Slice over a
    `dim_value: -1` axis; the compiler hands it the model with such dims unknown."""
    model = _model(
        [h.make_node("Slice", ["x", "start", "end", "axis"], ["y"])],
        [h.make_tensor_value_info("x", T.FLOAT, [-1, -1])],
        [h.make_tensor_value_info("y", T.FLOAT, [-1, -1])],
        [
            ("start", np.array([0], np.int64)),
            ("end", np.array([1 << 30], np.int64)),
            ("axis", np.array([1], np.int64)),
        ],
    )
    rng = np.random.default_rng(4)
    _check_against_onnxruntime(model, [[rng.random((2, 5), dtype=np.float32)]])


def test_dims_named_by_a_mark_are_unknown() -> None:
    """Paddle declares unknown dims as dim_param "?": a mark, not a name shared by every such
    dim (onnxruntime accepts different sizes for them)."""
    model = paddle_reshape_model()
    for axis in (2, 3):
        model.graph.input[0].type.tensor_type.shape.dim[axis].dim_param = "?"
    module = load_compiled(model)
    assert module.INPUTS == (("x", "float32", ("batch", 3, None, None)),)
    rng = np.random.default_rng(5)
    _check_against_onnxruntime(model, [[rng.random((2, 3, 4, 6), dtype=np.float32)]])


def test_a_value_a_dim_is_read_off_survives_the_conv_folding() -> None:
    """Conv's result has dims the compiler only names (symbolic input, padding); a Shape of it
    becomes shape arithmetic that reads them off the Conv's result, so the fast variant's folding
    of the BatchNormalization into the Conv must keep that value."""
    rng = np.random.default_rng(6)
    model = _model(
        [
            h.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2]),
            h.make_node("BatchNormalization", ["y", "scale", "bias", "mean", "var"], ["z"]),
            h.make_node("Shape", ["y"], ["s"]),
            h.make_node("Reshape", ["z", "s"], ["out"]),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, ["n", 2, "height", "width"])],
        [h.make_tensor_value_info("out", T.FLOAT, None)],
        [
            ("w", rng.normal(size=(4, 2, 3, 3)).astype(np.float32)),
            ("scale", rng.random(4, dtype=np.float32) + 0.5),
            ("bias", rng.normal(size=4).astype(np.float32)),
            ("mean", rng.normal(size=4).astype(np.float32)),
            ("var", rng.random(4, dtype=np.float32) + 0.5),
        ],
    )
    feeds = [
        [rng.random((1, 2, 7, 9), dtype=np.float32)],
        [rng.random((2, 2, 8, 5), dtype=np.float32)],
    ]
    _check_against_onnxruntime(model, feeds)


def test_load_compiled_leaves_no_folder_behind(tmp_path) -> None:
    """load_compiled's temporary folder goes when the interpreter exits."""
    import subprocess
    import sys

    script = (
        "import sys, tempfile; sys.path.insert(0, '.'); tempfile.tempdir = sys.argv[1]\n"
        "from tests.test_symbolic_shapes import paddle_reshape_model\n"
        "from onemodel_compile import load_compiled\n"
        "module = load_compiled(paddle_reshape_model())\n"
        "print(module.__file__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().startswith(str(tmp_path))
    assert list(tmp_path.iterdir()) == []
