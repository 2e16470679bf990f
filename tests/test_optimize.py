"""The fast variant's graph rewrites (onemodel_compile/optimize.py): a Conv absorbs the per-channel
affine nodes after it (BatchNormalization, Mul, Add, Sub, Div by constants); a BatchNormalization
left over gets its factor and shift at compile time; the Erf form of Gelu becomes one rt.gelu call.
Results are compared with onnxruntime, libm's erf, or the exact variant, which computes every node
as written."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onemodel_compile
from onemodel_compile.compiler import generate
from tests import models
from tests.models import init, tensor

CHANNELS = 6


def _bn(r, name: str, x: str, out: str, channels: int = CHANNELS, dtype=np.float32):
    inits = [
        init(f"{name}.scale", (1 + 0.3 * r.standard_normal(channels)).astype(dtype)),
        init(f"{name}.bias", (0.2 * r.standard_normal(channels)).astype(dtype)),
        init(f"{name}.mean", (0.2 * r.standard_normal(channels)).astype(dtype)),
        init(f"{name}.var", r.uniform(0.2, 2.0, channels).astype(dtype)),
    ]
    node = helper.make_node(
        "BatchNormalization", [x] + [i.name for i in inits], [out], name=name, epsilon=1e-3
    )
    return node, inits


def conv_chain_model(
    bias: bool = True,
    group: int = 1,
    tail=("bn", "mul", "add"),
    extra_output: str | None = None,
    dtype=np.float32,
    seed: int = 0,
) -> onnx.ModelProto:
    """x[2, 4, 9, 9] -> Conv (3x3, pads 1) -> the `tail` nodes in order -> Relu -> y."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    r = models.rng(seed)
    c_in = 6 if group > 1 else 4
    w = r.standard_normal((CHANNELS, c_in // group, 3, 3)).astype(dtype)
    inits = [init("W", w)]
    conv_inputs = ["x", "W"]
    if bias:
        inits.append(init("B", r.standard_normal(CHANNELS).astype(dtype)))
        conv_inputs.append("B")
    nodes = [
        helper.make_node(
            "Conv", conv_inputs, ["c"], name="conv", kernel_shape=[3, 3], pads=[1] * 4, group=group
        )
    ]
    value = "c"
    for i, kind in enumerate(tail):
        out = f"t{i}"
        if kind == "bn":
            node, more = _bn(r, f"bn{i}", value, out, dtype=dtype)
            nodes.append(node)
            inits += more
            value = out
            continue
        op, shape = {
            "mul": ("Mul", (CHANNELS, 1, 1)),
            "add": ("Add", (1, CHANNELS, 1, 1)),
            "sub": ("Sub", (CHANNELS, 1, 1)),
            "div": ("Div", (CHANNELS, 1, 1)),
            "scalar_mul": ("Mul", ()),
            "spatial_mul": ("Mul", (9, 9)),  # varies along the spatial axes: not per channel
        }[kind]
        c = (1 + 0.5 * r.uniform(0.2, 1.0, shape)).astype(dtype)
        inits.append(init(f"c{i}", c))
        operands = [f"c{i}", value] if op in ("Mul", "Add") and i % 2 else [value, f"c{i}"]
        nodes.append(helper.make_node(op, operands, [out], name=f"{kind}{i}"))
        value = out
    nodes.append(helper.make_node("Relu", [value], ["y"], name="relu"))
    outputs = [tensor("y", [2, CHANNELS, 9, 9], elem)]
    if extra_output:
        outputs.append(tensor(extra_output, [2, CHANNELS, 9, 9], elem))
    graph = helper.make_graph(
        nodes, "conv_chain", [tensor("x", [2, c_in, 9, 9], elem)], outputs, initializer=inits
    )
    return models.finish(graph, opset=15)


def _input(model: onnx.ModelProto, seed: int = 1) -> np.ndarray:
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    elem = model.graph.input[0].type.tensor_type.elem_type
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    return models.rng(seed).standard_normal(dims).astype(dtype)


def _onnxruntime(model: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(model.SerializeToString())
    return session.run(None, {"x": x})


TAILS = {
    "bn": ("bn",),
    "bn_mul_add": ("bn", "mul", "add"),  # inception_v2's pattern
    "mul_add_sub_div": ("mul", "add", "sub", "div"),
    "two_bns": ("bn", "bn"),
    "scalar_mul": ("scalar_mul",),
}


@pytest.mark.parametrize("tail", TAILS, ids=list(TAILS))
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_conv_absorbs_the_affine_chain(tmp_path, tail, bias):
    model = conv_chain_model(bias=bias, tail=TAILS[tail])
    source = generate(model, "fast").source
    # the Relu after the chain joins the Conv too (fuse_conv_activation)
    assert source.count("rt.conv_activation(") == 1 and "rt.conv(" not in source
    for op in ("batch_normalization", "np.multiply", "np.add", "np.subtract", "np.divide"):
        assert op not in source
    assert source.count("\n        # + ") == len(TAILS[tail]) + 1  # the chain and the Relu
    assert "folded in, then Relu in place, in one call" in source
    assert "# Conv 'conv' (opset 15)" in source

    x = _input(model)
    fast = onemodel_compile.load_compiled(model, "fast").run(x).y
    exact = onemodel_compile.load_compiled(model, "exact").run(x).y
    (expected,) = _onnxruntime(model, x)
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fast, exact, rtol=1e-5, atol=1e-5)


def test_depthwise_conv_absorbs_batch_normalization(tmp_path):
    model = conv_chain_model(group=CHANNELS, tail=("bn",))
    assert "batch_normalization" not in generate(model, "fast").source
    x = _input(model)
    (expected,) = _onnxruntime(model, x)
    fast = onemodel_compile.load_compiled(model, "fast").run(x).y
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_folding_in_other_float_types(tmp_path, dtype):
    model = conv_chain_model(tail=("bn", "mul"), dtype=dtype)
    source = generate(model, "fast").source
    assert "batch_normalization" not in source
    x = _input(model)
    fast = onemodel_compile.load_compiled(model, "fast").run(x).y
    assert fast.dtype == dtype
    # the reference: onnxruntime on the same graph in float32 (it has no float16 or float64 Conv)
    narrow = conv_chain_model(tail=("bn", "mul"), dtype=dtype)
    for tensor_proto in narrow.graph.initializer:
        value = onnx.numpy_helper.to_array(tensor_proto).astype(np.float32)
        tensor_proto.CopyFrom(init(tensor_proto.name, value))
    for info in list(narrow.graph.input) + list(narrow.graph.output):
        info.type.tensor_type.elem_type = TensorProto.FLOAT
    (expected,) = _onnxruntime(narrow, x.astype(np.float32))
    tolerance = 1e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(fast, expected, rtol=tolerance, atol=tolerance)


def test_the_chain_stops_at_a_value_with_another_reader(tmp_path):
    """The BatchNormalization's output is also a graph output: the Conv absorbs nothing after it
    (the Mul may not move into the Conv past a value the caller sees)."""
    model = conv_chain_model(tail=("bn", "mul"), extra_output="t0")
    source = generate(model, "fast").source
    assert "folded in" in source and source.count(", folded in") == 1  # the BN only
    x = _input(model)
    module = onemodel_compile.load_compiled(model, "fast")
    got = module.run(x)
    expected = _onnxruntime(model, x)
    np.testing.assert_allclose(got.y, expected[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.t0, expected[1], rtol=1e-5, atol=1e-5)


def test_conv_output_that_is_a_graph_output_is_not_folded(tmp_path):
    model = conv_chain_model(tail=("bn",), extra_output="c")
    source = generate(model, "fast").source
    assert "folded in" not in source
    x = _input(model)
    got = onemodel_compile.load_compiled(model, "fast").run(x)
    expected = _onnxruntime(model, x)
    np.testing.assert_allclose(got.y, expected[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.c, expected[1], rtol=1e-5, atol=1e-5)


def test_a_constant_that_varies_along_space_is_not_folded(tmp_path):
    model = conv_chain_model(tail=("bn", "spatial_mul"))
    source = generate(model, "fast").source
    assert source.count(", folded in") == 1  # the BN, not the Mul
    x = _input(model)
    (expected,) = _onnxruntime(model, x)
    fast = onemodel_compile.load_compiled(model, "fast").run(x).y
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-5)


def test_the_exact_variant_is_not_rewritten():
    source = generate(conv_chain_model(tail=("bn", "mul")), "exact").source
    assert "folded" not in source
    assert "rt.batch_normalization(" in source and "epsilon=" in source


def test_folded_weights_are_byte_identical_across_compiles():
    model = conv_chain_model(tail=("bn", "mul", "add"))
    first, second = generate(model, "fast"), generate(model, "fast")
    assert first.weights is not None
    assert first.source == second.source and first.weights == second.weights
    assert "W_folded" in first.source


def standalone_bn_model(rank: int = 4, dtype=np.float32) -> onnx.ModelProto:
    """x -> BatchNormalization -> y, no Conv before it (a pre-activation block)."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    shape = [3, CHANNELS, 5, 7][:rank]
    node, inits = _bn(models.rng(2), "bn", "x", "y", dtype=dtype)
    graph = helper.make_graph(
        [node], "bn", [tensor("x", shape, elem)], [tensor("y", shape, elem)], initializer=inits
    )
    return models.finish(graph, opset=15)


@pytest.mark.parametrize("rank", [2, 3, 4])
def test_a_standalone_batch_normalization_is_precomputed(tmp_path, rank):
    model = standalone_bn_model(rank)
    source = generate(model, "fast").source
    assert "rt.scale_shift(x, x_bn_factor, x_bn_shift)" in source
    assert "epsilon" not in source
    x = _input(model)
    (expected,) = _onnxruntime(model, x)
    module = onemodel_compile.load_compiled(model, "fast")
    fast = module.run(x).y
    exact = onemodel_compile.load_compiled(model, "exact").run(x).y
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exact, expected, rtol=1e-5, atol=1e-6)
    # in X's type: a float64 factor would make every run compute in float64 (densenet 7x slower)
    assert module.x_bn_factor.dtype == module.x_bn_shift.dtype == np.float32


def pre_activation_model(tail=("mul", "add"), activation="Relu", dtype=np.float32):
    """x[batch, 6, 5, 7] (dynamic batch) -> BatchNormalization -> per-channel `tail` nodes ->
    `activation` -> y: DenseNet's pre-activation block, as the light model writes it."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    r = models.rng(4)
    node, inits = _bn(r, "bn", "x", "t", dtype=dtype)
    nodes, value = [node], "t"
    for i, kind in enumerate(tail):
        op = {"mul": "Mul", "add": "Add", "sub": "Sub", "div": "Div"}[kind]
        inits.append(init(f"c{i}", (1 + 0.5 * r.uniform(0.2, 1.0, (CHANNELS, 1, 1))).astype(dtype)))
        nodes.append(helper.make_node(op, [value, f"c{i}"], [f"a{i}"], name=f"{kind}{i}"))
        value = f"a{i}"
    if activation == "Clip":
        inits += [init("lo", np.array(0.5, dtype)), init("hi", np.array(1.5, dtype))]
        nodes.append(helper.make_node("Clip", [value, "lo", "hi"], ["y"], name="act"))
    else:
        nodes.append(helper.make_node(activation, [value], ["y"], name="act"))
    shape = ["batch", CHANNELS, 5, 7]
    graph = helper.make_graph(
        nodes, "pre", [tensor("x", shape, elem)], [tensor("y", shape, elem)], initializer=inits
    )
    return models.finish(graph, opset=15)


@pytest.mark.parametrize(
    "tail, activation",
    [(("mul", "add"), "Relu"), (("sub", "div"), "Clip"), ((), "Relu"), (("mul",), "Sigmoid")],
    ids=["mul_add_relu", "sub_div_clip", "relu", "mul_then_sigmoid"],
)
def test_a_batch_normalization_takes_the_affine_nodes_and_clamp_after_it(tail, activation):
    """One rt.scale_shift call computes the BatchNormalization, the per-channel Mul/Add/Sub/Div
    after it and a Relu or Clip after those (in place); any other activation stays a node of
    its own. Results as onnxruntime's, at two batch sizes."""
    model = pre_activation_model(tail, activation)
    source = generate(model, "fast").source
    assert source.count("rt.scale_shift(") == 1 and "epsilon" not in source
    assert not any(f"np.{f}(" in source for f in ("multiply", "add", "subtract", "divide"))
    clamp = {"Relu": "low=0.0", "Clip": "low=0.5, high=1.5"}.get(activation)
    if clamp is not None:
        assert f"x_bn_shift, {clamp})" in source and "np.maximum" not in source
    else:
        assert "rt.sigmoid(" in source
    module = onemodel_compile.load_compiled(model, "fast")
    for batch in (2, 1):
        x = models.rng(batch).standard_normal((batch, CHANNELS, 5, 7)).astype(np.float32)
        (expected,) = _onnxruntime(model, x)
        np.testing.assert_allclose(module.run(x).y, expected, rtol=1e-5, atol=1e-6)


def test_a_dim_read_off_a_value_does_not_block_a_fold():
    """x[batch, 4, h, w] -> Conv -> BatchNormalization -> Relu -> Reshape to (-1, h', w'), the
    Conv's spatial dims (which onnx's inference leaves unknown, so they are symbols first seen
    on the Conv's output) read off it by Shape -> Slice: the dims are read off the fused Conv's
    result instead, and the Conv still absorbs the BatchNormalization and the Relu (a real
    PP-OCR classifier's export kept its BatchNormalization unfolded)."""
    r = models.rng(5)
    node, inits = _bn(r, "bn", "c", "t")
    inits += [
        init("W", r.standard_normal((CHANNELS, 4, 3, 3)).astype(np.float32)),
        init("starts", np.array([2], np.int64)),
        init("ends", np.array([4], np.int64)),
        init("minus_one", np.array([-1], np.int64)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "W"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1] * 4),
        helper.make_node("Shape", ["c"], ["shape"], name="shape"),
        helper.make_node("Slice", ["shape", "starts", "ends"], ["hw"], name="hw"),
        helper.make_node("Concat", ["minus_one", "hw"], ["target"], name="target", axis=0),
        node,
        helper.make_node("Relu", ["t"], ["u"], name="relu"),
        helper.make_node("Reshape", ["u", "target"], ["y"], name="planes"),
    ]
    graph = helper.make_graph(
        nodes,
        "planes",
        [tensor("x", ["batch", 4, "h", "w"])],
        [tensor("y", [None, None, None])],
        initializer=inits,
    )
    model = models.finish(graph, opset=15)
    source = generate(model, "fast").source
    assert ".shape[2]" in source  # the dims are read at run time
    assert source.count("rt.conv_activation(") == 1
    assert "scale_shift" not in source and "batch_normalization" not in source
    module = onemodel_compile.load_compiled(model, "fast")
    for shape in ((3, 4, 9, 7), (1, 4, 5, 6)):
        x = models.rng(shape[0]).standard_normal(shape).astype(np.float32)
        (expected,) = _onnxruntime(model, x)
        np.testing.assert_allclose(module.run(x).y, expected, rtol=1e-5, atol=1e-5)


def test_batch_normalization_with_run_time_statistics_is_left_alone(tmp_path):
    """Statistics that are graph inputs are not constants: the kernel gets all five operands."""
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn")
    stats = [tensor(n, [CHANNELS]) for n in "sbmv"]
    graph = helper.make_graph(
        [node], "bn", [tensor("x", [2, CHANNELS, 3])] + stats, [tensor("y", [2, CHANNELS, 3])]
    )
    model = models.finish(graph, opset=15)
    source = generate(model, "fast").source
    assert "rt.batch_normalization(x, s, b, m, v, epsilon=" in source
    r = models.rng(3)
    feeds = {n: r.uniform(0.5, 1.5, [CHANNELS]).astype(np.float32) for n in "sbmv"}
    feeds["x"] = r.standard_normal((2, CHANNELS, 3)).astype(np.float32)
    session = onnxruntime.InferenceSession(model.SerializeToString())
    (expected,) = session.run(None, feeds)
    got = onemodel_compile.load_compiled(model, "fast").run_feeds(feeds)["y"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_folding_inside_a_subgraph(tmp_path):
    """An If branch holding Conv -> BatchNormalization: the body is rewritten too."""
    inner = conv_chain_model(tail=("bn",))
    branch = helper.make_graph(
        list(inner.graph.node),
        "then",
        [],
        [tensor("y", [2, CHANNELS, 9, 9])],
        initializer=list(inner.graph.initializer),
    )
    other = helper.make_graph(
        [helper.make_node("Relu", ["x_wide"], ["z"], name="relu2")],
        "else",
        [],
        [tensor("z", [2, CHANNELS, 9, 9])],
    )
    nodes = [
        helper.make_node("Concat", ["x", "x"], ["x_wide_full"], name="cat", axis=1),
        helper.make_node("Slice", ["x_wide_full", "starts", "ends", "axes"], ["x_wide"], name="sl"),
        helper.make_node(
            "If", ["flag"], ["out"], name="branch", then_branch=branch, else_branch=other
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "if",
        [tensor("x", [2, 4, 9, 9]), tensor("flag", [], TensorProto.BOOL)],
        [tensor("out", [2, CHANNELS, 9, 9])],
        initializer=[
            init("starts", np.array([0])),
            init("ends", np.array([CHANNELS])),
            init("axes", np.array([1])),
        ],
    )
    model = models.finish(graph, opset=15)
    assert "BatchNormalization folded in, then Relu" in generate(model, "fast").source
    x = _input(model)
    session = onnxruntime.InferenceSession(model.SerializeToString())
    module = onemodel_compile.load_compiled(model, "fast")
    for flag in (True, False):
        (expected,) = session.run(None, {"x": x, "flag": np.array(flag)})
        got = module.run(x, np.array(flag)).out
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


# --- Gelu from its Erf form -------------------------------------------------------------------

SQRT_2 = 1.4142135623730951


def gelu_model(form: str, dtype=np.float32, extra_output: str | None = None, x_reader=False):
    """x[2, 3, 40] -> MatMul (a new array) -> h -> Gelu written as five nodes in `form` -> y.

    Forms, as exporters write 0.5 * x * (1 + erf(x / sqrt 2)):
    - "torch": Div(h, sqrt 2), Erf, Add(e, 1), Mul(h, a), Mul(m, 0.5)   (torch.onnx, bench_models)
    - "hf": Mul(h, 0.5) first, then Div, Erf, Add(1, e), Mul(half, a)   (transformers' gelu)
    - "inner": Mul(h, 1/sqrt 2), Erf, Add, Mul(0.5, a), Mul(h, m)       (x * (0.5 * (1 + erf)))
    - "div2": Mul(1/sqrt 2, h), Erf, Add, Mul(a, h), Div(m, 2)
    - "off_sqrt2": as torch with 1.5 in place of sqrt 2 (not Gelu)
    - "off_half": as torch with 0.6 in place of 0.5 (not Gelu)
    """
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    r = models.rng(7)
    inits = [init("W", (r.standard_normal((40, 40)) * 0.4).astype(dtype))]

    def const(name, value):
        inits.append(init(name, np.array(value, dtype=dtype)))
        return name

    mul, div = "Mul", "Div"
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="proj")]
    sqrt2 = 1.5 if form == "off_sqrt2" else SQRT_2
    half = 0.6 if form == "off_half" else 0.5
    if form in ("torch", "off_sqrt2", "off_half"):
        nodes += [
            helper.make_node(div, ["h", const("sqrt2", sqrt2)], ["u"], name="gelu/Div"),
            helper.make_node("Erf", ["u"], ["e"], name="gelu/Erf"),
            helper.make_node("Add", ["e", const("one", 1.0)], ["a"], name="gelu/Add"),
            helper.make_node(mul, ["h", "a"], ["m"], name="gelu/Mul"),
            helper.make_node(mul, ["m", const("half", half)], ["y"], name="gelu/Mul_1"),
        ]
    elif form == "hf":
        nodes += [
            helper.make_node(mul, ["h", const("half", 0.5)], ["m"], name="gelu/Mul"),
            helper.make_node(div, ["h", const("sqrt2", SQRT_2)], ["u"], name="gelu/Div"),
            helper.make_node("Erf", ["u"], ["e"], name="gelu/Erf"),
            helper.make_node("Add", [const("one", 1.0), "e"], ["a"], name="gelu/Add"),
            helper.make_node(mul, ["m", "a"], ["y"], name="gelu/Mul_1"),
        ]
    elif form == "inner":
        nodes += [
            helper.make_node(mul, ["h", const("rsqrt2", 1 / SQRT_2)], ["u"], name="gelu/Mul"),
            helper.make_node("Erf", ["u"], ["e"], name="gelu/Erf"),
            helper.make_node("Add", ["e", const("one", 1.0)], ["a"], name="gelu/Add"),
            helper.make_node(mul, [const("half", 0.5), "a"], ["m"], name="gelu/Mul_1"),
            helper.make_node(mul, ["h", "m"], ["y"], name="gelu/Mul_2"),
        ]
    elif form == "div2":
        nodes += [
            helper.make_node(mul, [const("rsqrt2", 1 / SQRT_2), "h"], ["u"], name="gelu/Mul"),
            helper.make_node("Erf", ["u"], ["e"], name="gelu/Erf"),
            helper.make_node("Add", ["e", const("one", 1.0)], ["a"], name="gelu/Add"),
            helper.make_node(mul, ["a", "h"], ["m"], name="gelu/Mul_1"),
            helper.make_node(div, ["m", const("two", 2.0)], ["y"], name="gelu/Div"),
        ]
    outputs = [tensor("y", [2, 3, 40], elem)]
    if x_reader:  # h has a reader outside the pattern
        nodes.append(helper.make_node("Neg", ["h"], ["z"], name="neg"))
        outputs.append(tensor("z", [2, 3, 40], elem))
    if extra_output:
        outputs.append(tensor(extra_output, [2, 3, 40], elem))
    graph = helper.make_graph(
        nodes, "gelu", [tensor("x", [2, 3, 40], elem)], outputs, initializer=inits
    )
    return models.finish(graph, opset=17)


@pytest.mark.parametrize("form", ["torch", "hf", "inner", "div2"])
def test_the_erf_form_of_gelu_becomes_one_kernel_call(form):
    model = gelu_model(form)
    source = generate(model, "fast").source
    assert source.count("rt.gelu(") == 1 and 'approximate="none"' in source
    for gone in ("rt.erf(", "np.divide(", "np.multiply(", "np.add("):
        assert gone not in source
    # the comment names the model's five nodes and what they became
    assert source.count("# + ") == 4 and "# = Gelu" in source
    # h is a new array (np.matmul) read by the pattern only: the kernel writes into it
    assert "out=h)" in source
    x = _input(model)
    (expected,) = _onnxruntime(model, x)
    fast = onemodel_compile.load_compiled(model, "fast").run(x).y
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-6)
    exact_source = generate(model, "exact").source
    assert "rt.gelu(" not in exact_source and "rt.exact_erf(" in exact_source


@pytest.mark.parametrize("form", ["off_sqrt2", "off_half"])
def test_other_constants_are_not_gelu(form):
    model = gelu_model(form)
    source = generate(model, "fast").source
    assert "rt.gelu(" not in source and "rt.erf(" in source
    x = _input(model)
    (expected,) = _onnxruntime(model, x)
    fast = onemodel_compile.load_compiled(model, "fast").run(x).y
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("inner", ["u", "e", "a", "m"])
def test_gelu_is_not_fused_past_a_value_the_caller_sees(inner):
    model = gelu_model("torch", extra_output=inner)
    source = generate(model, "fast").source
    assert "rt.gelu(" not in source
    x = _input(model)
    expected = _onnxruntime(model, x)
    got = onemodel_compile.load_compiled(model, "fast").run(x)
    for value, reference in zip(got, expected):
        np.testing.assert_allclose(value, reference, rtol=1e-5, atol=1e-6)


def test_gelu_of_a_value_with_other_readers_leaves_it_intact():
    """h is also read by a Neg: Gelu is fused, but may not write into h (the Neg after it,
    h's last reader, may: Gelu's result is a new array)."""
    model = gelu_model("torch", x_reader=True)
    source = generate(model, "fast").source
    (gelu_line,) = [line for line in source.splitlines() if "rt.gelu(" in line]
    assert "out=" not in gelu_line
    x = _input(model)
    expected = _onnxruntime(model, x)
    got = onemodel_compile.load_compiled(model, "fast").run(x)
    for value, reference in zip(got, expected):
        np.testing.assert_allclose(value, reference, rtol=1e-5, atol=1e-6)


def test_gelu_in_float64():
    model = gelu_model("hf", dtype=np.float64)
    assert generate(model, "fast").source.count("rt.gelu(") == 1
    x = _input(model)
    h = x @ onnx.numpy_helper.to_array(model.graph.initializer[0])
    expected = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))  # libm's erf
    fast = onemodel_compile.load_compiled(model, "fast").run(x).y
    np.testing.assert_allclose(fast, expected, rtol=1e-12, atol=1e-14)


def test_gelu_rewrite_in_the_bench_transformers():
    """tools/bench_models.py writes GELU as torch.onnx does: one rt.gelu per layer."""
    from tools import bench_models

    source = generate(bench_models.bert(layers=2, seq=8, hidden=32, ffn=64).model, "fast").source
    assert source.count("rt.gelu(") == 2 and "rt.erf(" not in source


# --- Gelu from its tanh form --------------------------------------------------------------------

SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def tanh_gelu_model(form: str, extra_output: str | None = None):
    """x[2, 3, 40] -> MatMul -> h -> 0.5 * h * (1 + tanh(sqrt(2/pi) * (h + 0.044715 * h**3))).

    Forms, as torch.onnx writes them (tools/bench_data/export_models.py):
    - "gelu_new": Mul(h, 0.5) first, Pow(h, 3), Mul(p, c), Add(h, .), Mul(., k), Tanh, Add(t, 1),
      Mul(half, a)   (GPT-2's activation)
    - "torch_tanh": Mul(h, h), Mul(h, sq), Mul(c, cube), Add(h, .), Mul(k, .), Tanh, Add(1, t),
      Mul(h, a), Mul(0.5, m)   (F.gelu(approximate="tanh") before opset 20)
    - "off_cubic": gelu_new with 0.05 in place of 0.044715 (not Gelu)
    """
    r = models.rng(5)
    inits = [init("W", (r.standard_normal((40, 40)) * 0.4).astype(np.float32))]

    def const(name, value):
        inits.append(init(name, np.array(value, dtype=np.float32)))
        return name

    def node(op, inputs, out):
        return helper.make_node(op, inputs, [out], name=f"gelu/{out}")

    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="proj")]
    cubic = 0.05 if form == "off_cubic" else 0.044715
    if form in ("gelu_new", "off_cubic"):
        nodes += [
            node("Mul", ["h", const("half", 0.5)], "hh"),
            node("Pow", ["h", const("three", 3.0)], "p"),
            node("Mul", ["p", const("cubic", cubic)], "c"),
            node("Add", ["h", "c"], "s"),
            node("Mul", ["s", const("k", SQRT_2_OVER_PI)], "u"),
            node("Tanh", ["u"], "t"),
            node("Add", ["t", const("one", 1.0)], "a"),
            node("Mul", ["hh", "a"], "y"),
        ]
    else:
        nodes += [
            node("Mul", ["h", "h"], "sq"),
            node("Mul", ["h", "sq"], "p"),
            node("Mul", [const("cubic", cubic), "p"], "c"),
            node("Add", ["h", "c"], "s"),
            node("Mul", [const("k", SQRT_2_OVER_PI), "s"], "u"),
            node("Tanh", ["u"], "t"),
            node("Add", [const("one", 1.0), "t"], "a"),
            node("Mul", ["h", "a"], "m"),
            node("Mul", [const("half", 0.5), "m"], "y"),
        ]
    outputs = [tensor("y", [2, 3, 40])]
    if extra_output:
        outputs.append(tensor(extra_output, [2, 3, 40]))
    graph = helper.make_graph(nodes, "gelu", [tensor("x", [2, 3, 40])], outputs, initializer=inits)
    return models.finish(graph, opset=14)


def _same_as_onnxruntime(model, rtol=1e-5, atol=1e-6):
    x = _input(model)
    expected = _onnxruntime(model, x)
    got = onemodel_compile.load_compiled(model, "fast").run(x)
    for value, reference in zip(got, expected):
        np.testing.assert_allclose(value, reference, rtol=rtol, atol=atol)


@pytest.mark.parametrize("form", ["gelu_new", "torch_tanh"])
def test_the_tanh_form_of_gelu_becomes_one_kernel_call(form):
    model = tanh_gelu_model(form)
    source = generate(model, "fast").source
    assert source.count("rt.gelu(") == 1 and 'approximate="tanh"' in source
    for gone in ("np.tanh(", "np.power(", "np.multiply(", "np.add("):
        assert gone not in source
    assert source.count("# + ") == (7 if form == "gelu_new" else 8) and "# = Gelu" in source
    assert "out=h)" in source
    _same_as_onnxruntime(model)
    exact_source = generate(model, "exact").source
    assert "rt.gelu(" not in exact_source and "tanh(" in exact_source


def test_other_constants_are_not_tanh_gelu():
    model = tanh_gelu_model("off_cubic")
    source = generate(model, "fast").source
    assert "rt.gelu(" not in source and "np.tanh(" in source
    _same_as_onnxruntime(model)


@pytest.mark.parametrize("inner", ["sq", "p", "s", "t"])
def test_tanh_gelu_is_not_fused_past_a_value_the_caller_sees(inner):
    model = tanh_gelu_model("torch_tanh", extra_output=inner)
    assert "rt.gelu(" not in generate(model, "fast").source
    _same_as_onnxruntime(model)


# --- LayerNormalization from its decomposed form ---------------------------------------------


def layer_norm_model(form: str = "torch", extra_output: str | None = None, d_reader=False):
    """x[2, 3, 40] -> MatMul -> h -> LayerNorm over the last axis written in nodes -> y.

    Forms:
    - "torch": ReduceMean(axes=[-1]), Sub, Pow(d, 2), ReduceMean, Add(v, eps), Sqrt, Div(d, s),
      Mul(n, w), Add(., b)   (torch.onnx before opset 17)
    - "custom": the square as Mul(d, d), Add(eps, v), Mul(w, n), Add(b, .), means over axis 2,
      a scale of shape (1, 1, 40) and a single-element bias   (a hand-written LayerNorm)
    - "opset18": as torch, the axes of ReduceMean an input (opset 18)
    - "plain": no scale, no bias
    - "last_two": over the last two axes (axes [1, 2]), scale (3, 40), bias (40,)
    - "middle": means over axis 1 (not a trailing range: not rewritten)
    - "leading_scale": a scale of shape (2, 1, 40), varying along the batch (scale not absorbed)
    """
    r = models.rng(11)
    opset = 18 if form == "opset18" else 14
    inits = [init("W", (r.standard_normal((40, 40)) * 0.4).astype(np.float32))]

    def const(name, value, dtype=np.float32):
        inits.append(init(name, np.array(value, dtype=dtype)))
        return name

    def mean(x, out):
        axes = {"custom": [2], "last_two": [1, 2], "middle": [1]}.get(form, [-1])
        if opset >= 18:
            return helper.make_node("ReduceMean", [x, const(f"{out}_axes", axes, np.int64)], [out])
        return helper.make_node("ReduceMean", [x], [out], axes=axes)

    scale_shape = {"custom": (1, 1, 40), "last_two": (3, 40), "leading_scale": (2, 1, 40)}
    w = const("w", 1 + 0.2 * r.standard_normal(scale_shape.get(form, (40,))))
    b = const("b", 0.3 if form == "custom" else 0.1 * r.standard_normal(40))
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="proj"),
        mean("h", "m"),
        helper.make_node("Sub", ["h", "m"], ["d"]),
    ]
    if form == "custom":
        nodes += [
            helper.make_node("Mul", ["d", "d"], ["p"]),
            mean("p", "v"),
            helper.make_node("Add", [const("eps", 1e-12), "v"], ["e"]),
        ]
    else:
        nodes += [
            helper.make_node("Pow", ["d", const("two", 2.0)], ["p"]),
            mean("p", "v"),
            helper.make_node("Add", ["v", const("eps", 1e-5)], ["e"]),
        ]
    nodes += [helper.make_node("Sqrt", ["e"], ["s"]), helper.make_node("Div", ["d", "s"], ["n"])]
    if form == "plain":
        nodes.append(helper.make_node("Identity", ["n"], ["y"]))
    elif form == "custom":
        nodes += [
            helper.make_node("Mul", [w, "n"], ["g"]),
            helper.make_node("Add", [b, "g"], ["y"]),
        ]
    else:
        nodes += [
            helper.make_node("Mul", ["n", w], ["g"]),
            helper.make_node("Add", ["g", b], ["y"]),
        ]
    outputs = [tensor("y", [2, 3, 40])]
    if d_reader:  # the difference has a reader outside the pattern
        nodes.append(helper.make_node("Neg", ["d"], ["z"]))
        outputs.append(tensor("z", [2, 3, 40]))
    if extra_output:
        outputs.append(tensor(extra_output, None))
    graph = helper.make_graph(nodes, "ln", [tensor("x", [2, 3, 40])], outputs, initializer=inits)
    return models.finish(graph, opset=opset)


@pytest.mark.parametrize("form", ["torch", "custom", "opset18", "plain", "last_two"])
def test_the_decomposed_layer_norm_becomes_one_kernel_call(form):
    model = layer_norm_model(form)
    source = generate(model, "fast").source
    assert source.count("rt.layer_normalization(") == 1
    for gone in ("np.mean(", "np.sqrt(", "np.power(", "np.divide(", "np.multiply(", "np.add("):
        assert gone not in source
    assert "# = LayerNormalization" in source
    assert f"axis={1 if form == 'last_two' else 2}," in source
    _same_as_onnxruntime(model, rtol=1e-5, atol=1e-5)
    exact_source = generate(model, "exact").source
    assert "layer_normalization(" not in exact_source


def test_a_scale_that_varies_along_the_batch_stays_a_multiply():
    model = layer_norm_model("leading_scale")
    source = generate(model, "fast").source
    assert source.count("rt.layer_normalization(") == 1 and source.count("np.multiply(") == 1
    _same_as_onnxruntime(model, rtol=1e-5, atol=1e-5)


def test_means_over_a_middle_axis_are_not_layer_norm():
    model = layer_norm_model("middle")
    assert "rt.layer_normalization(" not in generate(model, "fast").source
    _same_as_onnxruntime(model, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("inner", ["m", "d", "p", "v", "e", "s"])
def test_layer_norm_is_not_fused_past_a_value_the_caller_sees(inner):
    model = layer_norm_model(extra_output=inner)
    assert "rt.layer_normalization(" not in generate(model, "fast").source
    _same_as_onnxruntime(model, rtol=1e-5, atol=1e-5)


def test_layer_norm_keeps_its_affine_tail_when_the_normalized_value_is_read_elsewhere():
    """n is a graph output: the LayerNormalization stops at n (a scale of ones), the Mul and Add
    by the model's scale and bias stay."""
    model = layer_norm_model(extra_output="n")
    source = generate(model, "fast").source
    assert source.count("rt.layer_normalization(") == 1 and "h_ln_scale" in source
    assert "np.multiply(" in source and "np.add(" in source
    _same_as_onnxruntime(model, rtol=1e-5, atol=1e-5)


def test_a_difference_with_a_second_reader_is_not_layer_norm():
    model = layer_norm_model(d_reader=True)
    assert "rt.layer_normalization(" not in generate(model, "fast").source
    _same_as_onnxruntime(model, rtol=1e-5, atol=1e-5)


def test_layer_norm_and_gelu_rewrites_in_the_exported_transformers():
    """The torch.onnx exports of tools/bench_data at opset 14: every LayerNorm and Gelu is one
    kernel call, no Pow, Sqrt of a variance or Tanh left; results as onnxruntime's."""
    from tools import bench_models

    for stem, norms, gelus in (("bert_op14", 5, 2), ("gpt2_op14", 5, 2)):
        built = bench_models.exported(stem, 2, 5)
        source = generate(built.model, "fast").source
        assert source.count("rt.layer_normalization(") == norms, stem
        assert source.count("rt.gelu(") == gelus and "np.power(" not in source, stem


# --- the scale of attention scores into the query projection -----------------------------------


def scores_model(scale_op: str = "Div", q_reader: bool = False, bias: bool = True):
    """x[1, 6, 16] -> q, k projections (MatMul + bias Add) -> Reshape to 2 heads of 8 ->
    Transpose -> q @ k^T -> Div by sqrt(8) (or Mul by its inverse) -> Softmax -> y."""
    r = models.rng(3)
    inits = [
        init("Wq", (r.standard_normal((16, 16)) * 0.5).astype(np.float32)),
        init("Wk", (r.standard_normal((16, 16)) * 0.5).astype(np.float32)),
        init("bq", r.standard_normal(16).astype(np.float32)),
        init("heads", np.array([1, 6, 2, 8])),
        init("c", np.array(math.sqrt(8) if scale_op == "Div" else 1 / math.sqrt(8), np.float32)),
    ]
    q_in = "q_lin" if bias else "q_mm"
    nodes = [helper.make_node("MatMul", ["x", "Wq"], ["q_mm"], name="q/MatMul")]
    if bias:
        nodes.append(helper.make_node("Add", ["q_mm", "bq"], ["q_lin"], name="q/Add"))
    nodes += [
        helper.make_node("Reshape", [q_in, "heads"], ["q_r"], name="q/Reshape"),
        helper.make_node("Transpose", ["q_r"], ["q"], name="q/Transpose", perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["x", "Wk"], ["k_mm"], name="k/MatMul"),
        helper.make_node("Reshape", ["k_mm", "heads"], ["k_r"], name="k/Reshape"),
        helper.make_node("Transpose", ["k_r"], ["kt"], name="k/Transpose", perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
        helper.make_node(scale_op, ["s", "c"], ["scaled"], name="scale"),
        helper.make_node("Softmax", ["scaled"], ["y"], name="softmax", axis=-1),
    ]
    outputs = [tensor("y", [1, 2, 6, 6])]
    if q_reader:  # the query projection is also read elsewhere: its weights must stay as they are
        nodes.append(helper.make_node("Neg", [q_in], ["z"], name="neg"))
        outputs.append(tensor("z", [1, 6, 16]))
    graph = helper.make_graph(
        nodes, "scores", [tensor("x", [1, 6, 16])], outputs, initializer=inits
    )
    return models.finish(graph, opset=17)


@pytest.mark.parametrize("scale_op, bias", [("Div", True), ("Mul", True), ("Div", False)])
def test_score_scale_moves_into_the_query_projection(scale_op, bias):
    model = scores_model(scale_op, bias=bias)
    source = generate(model, "fast").source
    assert "np.divide(" not in source and "np.multiply(" not in source
    assert "Wq_scaled" in source and ("bq_scaled" in source) == bias
    assert f"# + {scale_op} 'scale' (opset 17), folded in" in source
    x = _input(model)
    (expected,) = _onnxruntime(model, x)
    got = onemodel_compile.load_compiled(model, "fast").run(x).y
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    exact = generate(model, "exact").source
    assert "Wq_scaled" not in exact


def test_score_scale_leaves_a_projection_with_another_reader_for_the_key_one():
    """The query projection is also a graph output: its weights stay, the key's take the scale."""
    model = scores_model(q_reader=True)
    source = generate(model, "fast").source
    assert "np.divide(" not in source and "Wq_scaled" not in source and "Wk_scaled" in source
    x = _input(model)
    expected = _onnxruntime(model, x)
    got = onemodel_compile.load_compiled(model, "fast").run(x)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


# --- the rules as data --------------------------------------------------------------------------


def test_optimize_returns_a_new_graph_and_leaves_its_input_alone():
    """A stage returns new steps, constants and types: the resolved graph it was given keeps its
    own (the decomposed LayerNorm's nine steps, no new constant, no new type)."""
    from onemodel_compile import ir
    from onemodel_compile.load import load
    from onemodel_compile.optimize import optimize
    from onemodel_compile.resolve import resolve
    from onemodel_compile.variants import FAST

    resolved = resolve(ir.from_onnx(load(layer_norm_model("plain"))), FAST)
    steps, constants, types = list(resolved.steps), dict(resolved.constants), dict(resolved.types)
    optimized = optimize(resolved)
    assert resolved.steps == steps and resolved.constants == constants and resolved.types == types
    assert len(optimized.steps) < len(steps)
    assert set(optimized.constants) > set(constants) and set(optimized.types) > set(types)


def test_every_rule_makes_an_operator_of_the_own_domain():
    """Each pattern rule's replacement is an operator of ops/fused.py with an emitter."""
    from onemodel_compile.ops import fused, registry
    from onemodel_compile.optimize import RULES, PatternRule

    own = {e.op_type for e in registry.registered() if e.domain == fused.DOMAIN}
    assert {"ScaleShift", "LayerNorm", "RMSNorm", "Gelu", "Attention"} <= own
    names = [rule.name for rule in RULES]
    assert len(set(names)) == len(names)
    assert sum(isinstance(rule, PatternRule) for rule in RULES) >= 5


# --- RMSNorm as llama and T5 exports write it ---------------------------------------------------


def rms_norm_model(form: str = "llama", extra_output: str | None = None):
    """x[batch, seq, 40] (dynamic axes) -> MatMul -> h -> RMSNorm over the last axis in nodes.

    Forms:
    - "llama": Pow(h, 2), ReduceMean, Add eps, Sqrt, Div(1, s), Mul(h, r), Mul(w, .)
    - "t5": Mul(w, h) first, then Pow, ReduceMean, Add, Sqrt, Div(1, s), Mul(wh, r)
    - "reciprocal": the inverse as Reciprocal(s), the square as Mul(h, h), no weight
    - "div": Div(h, s), then Mul(., w), opset 18 (ReduceMean's axes an input)
    - "fourth": Pow(h, 4) in place of the square (not RMSNorm)
    - "middle": the mean over axis 1 (not RMSNorm)
    """
    r = models.rng(13)
    opset = 18 if form == "div" else 17
    inits = [init("W", (r.standard_normal((40, 40)) * 0.4).astype(np.float32))]

    def const(name, value, dtype=np.float32):
        inits.append(init(name, np.array(value, dtype=dtype)))
        return name

    axes = [1] if form == "middle" else [-1]
    if opset >= 18:
        mean = helper.make_node("ReduceMean", ["p", const("axes", axes, np.int64)], ["v"])
    else:
        mean = helper.make_node("ReduceMean", ["p"], ["v"], axes=axes)
    w = const("w", 1 + 0.2 * r.standard_normal(40))
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="proj")]
    x = "h"
    if form == "t5":
        nodes.append(helper.make_node("Mul", [w, "h"], ["wh"]))
    if form == "reciprocal":
        nodes.append(helper.make_node("Mul", ["h", "h"], ["p"]))
    else:
        power = 4.0 if form == "fourth" else 2.0
        nodes.append(helper.make_node("Pow", [x, const("two", power)], ["p"]))
    nodes += [
        mean,
        helper.make_node("Add", ["v", const("eps", 1e-6)], ["e"]),
        helper.make_node("Sqrt", ["e"], ["s"]),
    ]
    if form == "reciprocal":
        nodes += [
            helper.make_node("Reciprocal", ["s"], ["i"]),
            helper.make_node("Mul", ["h", "i"], ["y"]),
        ]
    elif form == "div":
        nodes += [
            helper.make_node("Div", ["h", "s"], ["n"]),
            helper.make_node("Mul", ["n", w], ["y"]),
        ]
    elif form == "t5":
        nodes += [
            helper.make_node("Div", [const("one", 1.0), "s"], ["i"]),
            helper.make_node("Mul", ["wh", "i"], ["y"]),
        ]
    else:
        nodes += [
            helper.make_node("Div", [const("one", 1.0), "s"], ["i"]),
            helper.make_node("Mul", ["h", "i"], ["n"]),
            helper.make_node("Mul", [w, "n"], ["y"]),
        ]
    dims = ["batch", "seq", 40]
    outputs = [tensor("y", dims)]
    if extra_output:
        outputs.append(tensor(extra_output, None))
    graph = helper.make_graph(nodes, "rms", [tensor("x", dims)], outputs, initializer=inits)
    return models.finish(graph, opset=opset)


def _run_against_onnxruntime(model, feeds: dict, rtol=1e-5, atol=1e-5):
    session = onnxruntime.InferenceSession(model.SerializeToString())
    expected = session.run(None, feeds)
    got = onemodel_compile.load_compiled(model, "fast").run(**feeds)
    assert len(got) == len(expected)
    for value, reference in zip(got, expected):
        np.testing.assert_allclose(value, reference, rtol=rtol, atol=atol)


@pytest.mark.parametrize("form", ["llama", "t5", "reciprocal", "div"])
def test_the_decomposed_rms_norm_becomes_one_kernel_call(form):
    model = rms_norm_model(form)
    source = generate(model, "fast").source
    assert source.count("rt.rms_normalization(") == 1 and "# = RMSNormalization" in source
    for gone in ("np.mean(", "np.sqrt(", "np.power(", "np.divide(", "np.reciprocal("):
        assert gone not in source
    for batch, seq in ((2, 3), (1, 7)):  # dynamic axes
        x = models.rng(batch).standard_normal((batch, seq, 40)).astype(np.float32)
        _run_against_onnxruntime(model, {"x": x})
    assert "rms_normalization(" not in generate(model, "exact").source


@pytest.mark.parametrize("form", ["fourth", "middle"])
def test_other_means_and_powers_are_not_rms_norm(form):
    model = rms_norm_model(form)
    assert "rt.rms_normalization(" not in generate(model, "fast").source
    x = models.rng(1).standard_normal((2, 3, 40)).astype(np.float32)
    _run_against_onnxruntime(model, {"x": x})


@pytest.mark.parametrize("inner", ["p", "s", "i"])
def test_rms_norm_is_not_fused_past_a_value_the_caller_sees(inner):
    model = rms_norm_model("llama", extra_output=inner)
    assert "rt.rms_normalization(" not in generate(model, "fast").source
    x = models.rng(1).standard_normal((2, 3, 40)).astype(np.float32)
    _run_against_onnxruntime(model, {"x": x})


# --- attention as exporters write it ------------------------------------------------------------


def attention_model(form: str = "bert", extra_output: str | None = None, softmax_axis: int = -1):
    """x[batch, seq, 16] and attention_mask[batch, seq] (int64; dynamic axes) -> q, k, v
    projections (MatMul, bias Add) -> Reshape to 2 heads of 8 -> Transpose (k to [B, H, D, S]) ->
    scores -> scale -> mask -> Softmax -> @ v -> Transpose, Reshape back -> y, as torch.onnx
    writes a BERT layer's attention.

    Forms:
    - "bert": scores Div by sqrt(8) (product-scale moves it into Wq), the mask from the
      attention_mask input as (1 - Cast(Unsqueeze(m))) * -10000 added
    - "scaled_qk": q and k^T each multiplied by 8**-0.25 before their product (transformers'
      MiniLM/SDPA export), no mask
    - "causal": GPT-2's Where(tril, scores, -10000) over a boolean [seq, seq] input `keep`,
      then the mask added
    - "t5": as bert without the scale, the masked scores cast to float before the Softmax
    """
    r = models.rng(5)
    inits = [init("heads", np.array([0, 0, 2, 8])), init("merged", np.array([0, 0, 16]))]
    nodes = []
    for name in "qkv":
        inits += [
            init(f"W{name}", (r.standard_normal((16, 16)) * 0.5).astype(np.float32)),
            init(f"b{name}", (r.standard_normal(16) * 0.1).astype(np.float32)),
        ]
        perm = [0, 2, 3, 1] if name == "k" else [0, 2, 1, 3]
        nodes += [
            helper.make_node("MatMul", ["x", f"W{name}"], [f"{name}_mm"], name=f"{name}/MatMul"),
            helper.make_node(
                "Add", [f"b{name}", f"{name}_mm"], [f"{name}_lin"], name=f"{name}/Add"
            ),
            helper.make_node("Reshape", [f"{name}_lin", "heads"], [f"{name}_r"]),
            helper.make_node("Transpose", [f"{name}_r"], [f"{name}_t"], perm=perm),
        ]
    inputs = [tensor("x", ["batch", "seq", 16]), tensor("attention_mask", ["batch", "seq"], 7)]
    scores_in = ["q_t", "k_t"]
    if form == "scaled_qk":
        inits.append(init("quarter", np.array(8**-0.25, np.float32)))
        nodes += [
            helper.make_node("Mul", ["q_t", "quarter"], ["q_s"]),
            helper.make_node("Mul", ["k_t", "quarter"], ["k_s"]),
        ]
        scores_in = ["q_s", "k_s"]
    nodes.append(helper.make_node("MatMul", scores_in, ["s"], name="scores"))
    last = "s"
    if form in ("bert", "causal", "t5"):
        inits += [
            init("root", np.array(math.sqrt(8), np.float32)),
            init("one", np.array(1.0, np.float32)),
            init("big", np.array(-10000.0, np.float32)),
        ]
        nodes += [
            helper.make_node("Div", ["s", "root"], ["scaled"], name="scale"),
            helper.make_node("Unsqueeze", ["attention_mask", "axes12"], ["m4"]),
            helper.make_node("Cast", ["m4"], ["mf"], to=TensorProto.FLOAT),
            helper.make_node("Sub", ["one", "mf"], ["inverted"]),
            helper.make_node("Mul", ["inverted", "big"], ["bias"]),
        ]
        inits.append(init("axes12", np.array([1, 2])))
        last = "s" if form == "t5" else "scaled"
    if form == "t5":
        nodes = [n for n in nodes if n.name != "scale"]
    if form == "causal":
        inputs.append(tensor("keep", ["seq", "seq"], TensorProto.BOOL))
        nodes.append(helper.make_node("Where", ["keep", last, "big"], ["kept"], name="causal"))
        last = "kept"
    if form in ("bert", "causal", "t5"):
        nodes.append(helper.make_node("Add", [last, "bias"], ["masked"], name="mask"))
        last = "masked"
    if form == "t5":
        nodes.append(helper.make_node("Cast", [last], ["cast"], to=TensorProto.FLOAT))
        last = "cast"
    nodes += [
        helper.make_node("Softmax", [last], ["p"], name="softmax", axis=softmax_axis),
        helper.make_node("MatMul", ["p", "v_t"], ["c"], name="context"),
        helper.make_node("Transpose", ["c"], ["c_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["c_t", "merged"], ["y"]),
    ]
    outputs = [tensor("y", ["batch", "seq", 16])]
    if extra_output:
        outputs.append(tensor(extra_output, None))
    graph = helper.make_graph(nodes, "attention", inputs, outputs, initializer=inits)
    return models.finish(graph, opset=17)


def _attention_feeds(model, batch: int, seq: int) -> dict:
    r = models.rng(batch * 10 + seq)
    mask = np.ones((batch, seq), np.int64)
    mask[1:, seq - 2 :] = 0  # rows past the first padded
    feeds = {"x": r.standard_normal((batch, seq, 16)).astype(np.float32), "attention_mask": mask}
    if any(i.name == "keep" for i in model.graph.input):
        feeds["keep"] = np.tril(np.ones((seq, seq), bool))
    return feeds


@pytest.mark.parametrize("form", ["bert", "scaled_qk", "causal", "t5"])
def test_attention_becomes_one_kernel_call(form):
    model = attention_model(form)
    source = generate(model, "fast").source
    assert source.count("rt.attention_heads(") == 1 and "# = attention: softmax(" in source
    for gone in ("rt.softmax(", "np.where("):
        assert gone not in source
    # the Div by sqrt(8) is in the query's weights, the two Muls of scaled_qk in the kernel's scale
    assert ("Wq_scaled" in source) == (form in ("bert", "causal"))
    assert ("scale=" in source) == (form == "scaled_qk")
    for batch, seq in ((2, 5), (3, 9), (1, 1)):  # dynamic batch and sequence
        _run_against_onnxruntime(model, _attention_feeds(model, batch, seq))
    assert "attention_heads(" not in generate(model, "exact").source


@pytest.mark.parametrize("inner", ["s", "masked", "p"])
def test_attention_is_not_fused_past_a_value_the_caller_sees(inner):
    """The scores, the masked scores or the probabilities are graph outputs: left as nodes."""
    model = attention_model("bert", extra_output=inner)
    assert "rt.attention_heads(" not in generate(model, "fast").source
    _run_against_onnxruntime(model, _attention_feeds(model, 2, 5))


def test_a_softmax_over_another_axis_is_not_attention():
    model = attention_model("bert", softmax_axis=2)
    source = generate(model, "fast").source
    assert "rt.attention_heads(" not in source and "rt.softmax(" in source
    _run_against_onnxruntime(model, _attention_feeds(model, 2, 5))


def test_attention_kernel_against_a_float64_reference():
    """rt.attention_heads with every option, and a mask with more rows than the scores (the
    kernel broadcasts the scores up), against the formula in float64."""
    import runtime_support as rt

    r = models.rng(2)
    q, k, v = (r.standard_normal(shape) for shape in ((1, 3, 4, 8), (1, 3, 8, 6), (1, 3, 6, 5)))
    keep = r.random((4, 6)) > 0.3
    keep[:, 0] = True
    mask = r.standard_normal((2, 1, 4, 6))
    got = rt.attention_heads(
        q.astype(np.float32), k.astype(np.float32), v.astype(np.float32),
        scale=0.5, mask=mask.astype(np.float32), keep=keep, fill=np.float32(-1e4),
    )  # fmt: skip
    scores = np.where(keep, (q @ k) * 0.5, -1e4) + mask
    e = np.exp(scores - scores.max(-1, keepdims=True))
    expected = (e / e.sum(-1, keepdims=True)) @ v
    assert got.shape == (2, 3, 4, 5) and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


EXPORTED_LAYERS = {
    "bert_op14": 2, "bert_op17": 2, "minilm_op14": 3, "minilm_op17": 3,
    "gpt2_op14": 2, "gpt2_op17": 2, "vit_op14": 2, "vit_op17": 2,
}  # fmt: skip


@pytest.mark.parametrize("stem", EXPORTED_LAYERS)
def test_attention_in_the_exported_transformers(stem):
    """The torch.onnx exports of tools/bench_data: every layer's attention is one kernel call, no
    Softmax left; results as onnxruntime's at two shapes of the dynamic axes."""
    from tools import bench_models

    layers = EXPORTED_LAYERS[stem]
    built = bench_models.exported(stem, 2, 5)
    source = generate(built.model, "fast").source
    assert source.count("rt.attention_heads(") == layers and "rt.softmax(" not in source
    compiled = onemodel_compile.load_compiled(built.model, "fast")
    session = onnxruntime.InferenceSession(built.model.SerializeToString())
    for batch, seq in ((2, 5), (1, 9)):
        feeds = bench_models.exported(stem, batch, seq).feeds
        expected = session.run(None, feeds)
        got = compiled.run(**feeds)
        for value, reference in zip(got, expected):  # absolute errors at the outputs' scale
            scale = float(np.abs(reference).max())
            np.testing.assert_allclose(value, reference, rtol=1e-4, atol=2e-6 * scale)


def conv_activation_model(activation: str, opset: int = 17, extra_output: str | None = None):
    """x[2, 4, 9, 9] -> Conv (3x3, pads 1, bias) -> the activation as exporters write it -> y:
    Relu, Clip(0, 6) (bounds as inputs from opset 11, attributes before), HardSwish, SiLU as
    Sigmoid and Mul (either operand order), or Clip with a bound given at run time."""
    r = models.rng(3)
    inits = [
        init("W", r.standard_normal((CHANNELS, 4, 3, 3)).astype(np.float32)),
        init("B", r.standard_normal(CHANNELS).astype(np.float32)),
    ]
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1] * 4)]
    inputs = [tensor("x", [2, 4, 9, 9])]
    if activation == "clip" and opset < 11:
        nodes.append(helper.make_node("Clip", ["c"], ["y"], name="act", min=0.0, max=6.0))
    elif activation in ("clip", "clip_low_only"):
        inits.append(init("lo", np.array(0.0, np.float32)))
        bounds = ["lo"] if activation == "clip_low_only" else ["lo", "hi"]
        if activation == "clip":
            inits.append(init("hi", np.array(6.0, np.float32)))
        nodes.append(helper.make_node("Clip", ["c", *bounds], ["y"], name="act"))
    elif activation == "clip_run_time_bound":
        inputs.append(tensor("hi", []))
        inits.append(init("lo", np.array(0.0, np.float32)))
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"], name="act"))
    elif activation in ("silu", "silu_swapped"):
        nodes.append(helper.make_node("Sigmoid", ["c"], ["s"], name="sigmoid"))
        operands = ["s", "c"] if activation == "silu_swapped" else ["c", "s"]
        nodes.append(helper.make_node("Mul", operands, ["y"], name="mul"))
    else:
        nodes.append(helper.make_node(activation, ["c"], ["y"], name="act"))
    outputs = [tensor("y", [2, CHANNELS, 9, 9])]
    if extra_output:
        outputs.append(tensor(extra_output, [2, CHANNELS, 9, 9]))
    graph = helper.make_graph(nodes, "activated", inputs, outputs, initializer=inits)
    return models.finish(graph, opset=opset)


@pytest.mark.parametrize(
    "activation,opset",
    [
        ("Relu", 17),
        ("clip", 17),
        ("clip", 9),
        ("clip_low_only", 13),
        ("HardSwish", 14),
        ("silu", 17),
        ("silu_swapped", 13),
    ],
)
def test_conv_and_its_activation_become_one_call(activation, opset):
    """Conv + activation as exporters write it becomes one rt.conv_activation call (the
    activation in place on the Conv's result); onnxruntime is the reference, and the exact
    variant keeps both nodes."""
    model = conv_activation_model(activation, opset)
    source = generate(model, "fast").source
    assert source.count("rt.conv_activation(") == 1 and "rt.conv(" not in source
    assert "rt.sigmoid" not in source and "np.clip" not in source
    assert "rt.conv_activation" not in generate(model, "exact").source
    x = _input(model)
    (expected,) = _onnxruntime(model, x)
    assert (expected == 0).any() or activation.startswith(("silu", "Hard"))  # bounds reached
    fast = onemodel_compile.load_compiled(model, "fast").run(x).y
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "activation,extra_output",
    [
        ("Relu", "c"),  # the Conv's result is a graph output
        ("silu", "s"),  # the Sigmoid's result is a graph output
        ("silu", "c"),
    ],
)
def test_conv_activation_leaves_values_others_see(activation, extra_output):
    model = conv_activation_model(activation, extra_output=extra_output)
    source = generate(model, "fast").source
    assert "rt.conv_activation(" not in source and "rt.conv(" in source
    x = _input(model)
    expected = _onnxruntime(model, x)
    got = onemodel_compile.load_compiled(model, "fast").run(x)
    for have, want in zip(got, expected):
        np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5)


def test_conv_activation_needs_constant_clip_bounds():
    model = conv_activation_model("clip_run_time_bound")
    source = generate(model, "fast").source
    assert "rt.conv_activation(" not in source
    x = _input(model)
    hi = np.array(1.5, np.float32)
    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x, "hi": hi})
    got = onemodel_compile.load_compiled(model, "fast").run(x, hi).y
    np.testing.assert_allclose(got, expected[0], rtol=1e-5, atol=1e-5)


def pointwise_model(c_in: int, c_out: int, size: int, batch: int = 1, activation=None, bias=True):
    """x[batch, c_in, size, size] -> Conv 1x1 (c_out filters) [-> activation] -> y."""
    r = models.rng(3)
    inits = [init("W", (0.3 * r.standard_normal((c_out, c_in, 1, 1))).astype(np.float32))]
    if bias:
        inits.append(init("B", r.standard_normal(c_out).astype(np.float32)))
    out = "c" if activation else "y"
    nodes = [helper.make_node("Conv", ["x", "W"] + (["B"] if bias else []), [out], name="expand")]
    if activation:
        nodes.append(helper.make_node(activation, ["c"], ["y"], name="act"))
    graph = helper.make_graph(
        nodes,
        "pointwise",
        [tensor("x", [batch, c_in, size, size])],
        [tensor("y", [batch, c_out, size, size])],
        initializer=inits,
    )
    return models.finish(graph, opset=17)


@pytest.mark.parametrize("activation", [None, "Relu", "HardSwish"])
def test_expansion_conv_takes_its_bias_as_a_filter_column(activation):
    """A 1x1 Conv of one sample that expands its channels (conv-bias-column) gets the bias as the
    filters' last column and `bias_column=True`: no bias operand in the call; onnxruntime is the
    reference; the exact variant keeps the model's weights and bias."""
    model = pointwise_model(8, 48, 12, activation=activation)
    source = generate(model, "fast").source
    call = "rt.conv_activation(" if activation else "rt.conv("
    assert source.count(call) == 1 and "bias_column=True" in source
    assert "W_bias_column" in source and '_WEIGHTS["B"]' not in source
    assert "bias_column" not in generate(model, "exact").source
    x = _input(model)
    (expected,) = _onnxruntime(model, x)
    fast = onemodel_compile.load_compiled(model, "fast").run(x).y
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "c_in,c_out,size,batch,bias",
    [
        (8, 24, 12, 1, True),  # expands 3x only
        (8, 48, 5, 1, True),  # 25 positions
        (8, 48, 12, 2, True),  # two samples
        (8, 48, 12, 1, False),  # no bias
        (48, 8, 12, 1, True),  # a projection
    ],
)
def test_bias_column_only_for_expansions_of_one_sample(c_in, c_out, size, batch, bias):
    model = pointwise_model(c_in, c_out, size, batch=batch, bias=bias)
    source = generate(model, "fast").source
    assert "bias_column" not in source and "rt.conv(" in source
    x = _input(model)
    (expected,) = _onnxruntime(model, x)
    fast = onemodel_compile.load_compiled(model, "fast").run(x).y
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-5)


def hard_swish_model(form: str, conv: bool = True, bounds=(0.0, 6.0)) -> onnx.ModelProto:
    """x[2, 4, 9, 9] -> (Conv 3x3 ->) HardSwish as exporters write it before opset 14 -> y.
    form: "paddle" (Add 3, Clip 0..6, Mul x, Div 6), "paddle_mul" (... Mul by 1/6 last),
    "inner_div" (x * (clip / 6)), "torch" (x * HardSigmoid(x, alpha 1/6, beta 1/2))."""
    r = models.rng(3)
    inits = [
        init("W", r.standard_normal((CHANNELS, 4, 3, 3)).astype(np.float32)),
        init("three", np.array(3.0, np.float32)),
        init("low", np.array(bounds[0], np.float32)),
        init("high", np.array(bounds[1], np.float32)),
        init("six", np.array(6.0, np.float32)),
        init("sixth", np.array(1 / 6, np.float32)),
    ]
    nodes = []
    x = "x"
    if conv:
        nodes.append(helper.make_node("Conv", ["x", "W"], ["c"], kernel_shape=[3, 3], pads=[1] * 4))
        x = "c"
    if form == "torch":
        nodes += [
            helper.make_node("HardSigmoid", [x], ["s"], alpha=1 / 6, beta=0.5),
            helper.make_node("Mul", [x, "s"], ["y"]),
        ]
    else:
        nodes += [
            helper.make_node("Add", [x, "three"], ["a"]),
            helper.make_node("Clip", ["a", "low", "high"], ["k"]),
        ]
        nodes += {
            "paddle": [
                helper.make_node("Mul", [x, "k"], ["m"]),
                helper.make_node("Div", ["m", "six"], ["y"]),
            ],
            "paddle_mul": [
                helper.make_node("Mul", ["k", x], ["m"]),
                helper.make_node("Mul", ["m", "sixth"], ["y"]),
            ],
            "inner_div": [
                helper.make_node("Div", ["k", "six"], ["m"]),
                helper.make_node("Mul", [x, "m"], ["y"]),
            ],
        }[form]
    channels = CHANNELS if conv else 4
    graph = helper.make_graph(
        nodes,
        "hard_swish",
        [tensor("x", [2, 4, 9, 9])],
        [tensor("y", [2, channels, 9, 9])],
        initializer=inits,
    )
    return models.finish(graph, opset=13)


@pytest.mark.parametrize("form", ["paddle", "paddle_mul", "inner_div", "torch"])
@pytest.mark.parametrize("conv", [True, False])
def test_hard_swish_as_exporters_write_it_becomes_one_kernel(form, conv):
    model = hard_swish_model(form, conv)
    source = generate(model, "fast").source
    if conv:
        assert source.count('activation="hard_swish"') == 1 and "rt.conv_activation(" in source
    else:
        assert source.count("rt.hard_swish(") == 1
    for gone in ("np.clip(", "np.divide(", "np.multiply(", "rt.hard_sigmoid(", "np.add("):
        assert gone not in source
    x = _input(model) * 4  # past both bends of the curve
    (expected,) = _onnxruntime(model, x)
    fast = onemodel_compile.load_compiled(model, "fast").run(x).y
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-5)


def test_other_clip_bounds_are_not_hard_swish():
    model = hard_swish_model("paddle", conv=False, bounds=(0.0, 5.0))
    source = generate(model, "fast").source
    assert "rt.hard_swish(" not in source and "np.clip(" in source
    x = _input(model) * 4
    (expected,) = _onnxruntime(model, x)
    fast = onemodel_compile.load_compiled(model, "fast").run(x).y
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-5)


def linear_model(shared: bool = False, inner: int = 24, columns: int = 10) -> onnx.ModelProto:
    """x[batch, inner] -> Gemm(transB, W (columns, inner), bias) -> y, torch's Linear on a 2-D
    input; with `shared`, W is also read by a MatMul by its own transpose's rows (a second
    reader)."""
    r = models.rng(3)
    inits = [
        init("W", r.standard_normal((columns, inner)).astype(np.float32)),
        init("B", r.standard_normal(columns).astype(np.float32)),
    ]
    nodes = [helper.make_node("Gemm", ["x", "W", "B"], ["y"], name="fc", transB=1)]
    outputs = [tensor("y", ["batch", columns])]
    if shared:
        nodes.append(helper.make_node("MatMul", ["y", "W"], ["z"], name="back"))
        outputs.append(tensor("z", ["batch", inner]))
    graph = helper.make_graph(nodes, "linear", [tensor("x", ["batch", inner])], outputs, inits)
    return models.finish(graph, opset=13)


@pytest.mark.parametrize(
    "inner, columns, call",
    [(24, 10, "(x @ W_transposed)"), (128, 1000, "rt.matmul_weight(x, W_transposed)")],
)
def test_a_gemm_by_a_transposed_weight_takes_it_transposed_once(inner, columns, call):
    """gemm-weight-layout: the weight is stored transposed (OpenBLAS multiplies 2-32 rows by a
    transposed view 2-9x slower than by the contiguous matrix); a product too small for
    rt.matmul_weight's kernel at any row count stays an inline `@`. The results match
    onnxruntime at batch 1, 2 and 20."""
    model = linear_model(inner=inner, columns=columns)
    source = generate(model, "fast").source
    assert call in source and ".T" not in source
    module = onemodel_compile.load_compiled(model, "fast")
    session = onnxruntime.InferenceSession(model.SerializeToString())
    for batch in (1, 2, 20):
        x = models.rng(batch).standard_normal((batch, inner)).astype(np.float32)
        (expected,) = session.run(None, {"x": x})
        np.testing.assert_allclose(module.run(x).y, expected, rtol=1e-5, atol=1e-5)


def test_a_weight_with_another_reader_is_not_transposed():
    """One copy of each weight in the weights file: a W the MatMul reads too stays as it is."""
    source = generate(linear_model(shared=True), "fast").source
    assert "W_transposed" not in source and "W.T" in source
