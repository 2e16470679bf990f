"""The small types (float8, float4, int4/uint4, int2/uint2): initializers large enough to go to the
weights file, where the 4- and 2-bit ones are packed as ONNX packs them, and data movement on them,
in both variants, against onnx's ReferenceEvaluator (the backend cases cover Cast, CastLike,
QuantizeLinear and DequantizeLinear on their own inputs)."""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from onemodel_compile import compile_model
from runtime_support._dtypes import dtype_from_name
from runtime_support._weights import load_weights, pack
from tests.harness.compare import compare
from tests.harness.modules import import_generated

VARIANTS = ("fast", "exact")
# name -> (ONNX type, values drawn from: integers in [low, high], or a float range)
SMALL = {
    "int4": (TensorProto.INT4, (-8, 7)),
    "uint4": (TensorProto.UINT4, (0, 15)),
    "int2": (TensorProto.INT2, (-2, 1)),
    "uint2": (TensorProto.UINT2, (0, 3)),
    "float8_e4m3fn": (TensorProto.FLOAT8E4M3FN, (-400.0, 400.0)),
    "float8_e4m3fnuz": (TensorProto.FLOAT8E4M3FNUZ, (-200.0, 200.0)),
    "float8_e5m2": (TensorProto.FLOAT8E5M2, (-5e4, 5e4)),
    "float8_e5m2fnuz": (TensorProto.FLOAT8E5M2FNUZ, (-5e4, 5e4)),
    "float4_e2m1fn": (TensorProto.FLOAT4E2M1, (-6.0, 6.0)),
}


def _values(name: str, shape, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    low, high = SMALL[name][1]
    if isinstance(low, int):
        drawn = rng.integers(low, high, size=shape, endpoint=True)
    else:
        drawn = rng.uniform(low, high, size=shape).astype(np.float32)
    return drawn.astype(dtype_from_name(name))


def _model(nodes, inputs, outputs, initializers, opset=25) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 13
    onnx.checker.check_model(model)
    return model


def _check(model, feeds, tmp_path, variant):
    expected = ReferenceEvaluator(model).run(None, feeds)
    path = compile_model(model, tmp_path / f"m_{variant}.py", variant)
    results = import_generated(path).run(*feeds.values())
    for position, (e, a) in enumerate(zip(expected, results)):
        problem = compare(np.asarray(e), a, 1e-6, 0.0, f"output {position}")
        assert problem is None, problem
    return path


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", sorted(SMALL))
def test_dequantized_weights_from_the_weights_file(name, variant, tmp_path):
    """A [33, 7] initializer (odd sizes: the last byte half or three-quarters packed) travels
    through the weights file and is dequantized per axis (the scale a graph input, so that
    nothing is folded at compile time)."""
    W = _values(name, (33, 7))
    scale = np.linspace(0.5, 2.0, 7).astype(np.float32)
    model = _model(
        [helper.make_node("DequantizeLinear", ["W", "scale"], ["y"], axis=1)],
        [helper.make_tensor_value_info("scale", TensorProto.FLOAT, [7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [33, 7])],
        [numpy_helper.from_array(W, "W")],
    )
    path = _check(model, {"scale": scale}, tmp_path, variant)
    weights = path.with_name(f"{path.stem}.weights.safetensors")
    stored = load_weights(weights, sha256=hashlib.sha256(weights.read_bytes()).hexdigest())
    (array,) = stored.values()
    assert array.dtype == W.dtype
    assert array.shape == W.shape and np.array_equal(array.view(np.uint8), W.view(np.uint8))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", sorted(SMALL))
def test_data_movement(name, variant, tmp_path):
    """Transpose, Reshape, Concat with an initializer, Slice and Gather keep the small type."""
    code = SMALL[name][0]
    X = _values(name, (4, 6), seed=1)
    B = _values(name, (3, 6), seed=2)
    nodes = [
        helper.make_node("Transpose", ["X"], ["t"], perm=[1, 0]),
        helper.make_node("Reshape", ["t", "shape"], ["r"]),
        helper.make_node("Concat", ["X", "B"], ["c"], axis=0),
        helper.make_node("Slice", ["c", "starts", "ends"], ["s"]),
        helper.make_node("Gather", ["s", "indices"], ["g"], axis=1),
    ]
    info = helper.make_tensor_value_info
    model = _model(
        nodes,
        [info("X", code, [4, 6])],
        [info("r", code, [3, 8]), info("c", code, [7, 6]), info("g", code, [5, 3])],
        [
            numpy_helper.from_array(B, "B"),
            numpy_helper.from_array(np.array([3, 8], np.int64), "shape"),
            numpy_helper.from_array(np.array([1], np.int64), "starts"),
            numpy_helper.from_array(np.array([6], np.int64), "ends"),
            numpy_helper.from_array(np.array([5, 0, 2], np.int64), "indices"),
        ],
    )
    _check(model, {"X": X}, tmp_path, variant)


def test_packing_is_onnx_s():
    """The weights file's bytes of a 4- or 2-bit tensor are the raw_data onnx writes."""
    for name in ("int4", "uint4", "int2", "uint2", "float4_e2m1fn"):
        for size in (1, 2, 3, 5, 8, 9):
            values = _values(name, (size,), seed=size)
            raw = np.frombuffer(numpy_helper.from_array(values).raw_data, np.uint8)
            assert np.array_equal(pack(values), raw), (name, size)


def test_session_names_the_small_types_as_onnxruntime(tmp_path):
    """runtime_support.InferenceSession reports onnxruntime's type strings for them."""
    import runtime_support

    info = helper.make_tensor_value_info
    model = _model(
        [helper.make_node("Identity", ["X"], ["y"])],
        [info("X", TensorProto.FLOAT8E4M3FN, [2])],
        [info("y", TensorProto.FLOAT8E4M3FN, [2])],
        [],
    )
    session = runtime_support.InferenceSession(
        import_generated(compile_model(model, tmp_path / "m.py"))
    )
    assert session.get_inputs()[0].type == "tensor(float8e4m3fn)"
    X = _values("float8_e4m3fn", (2,))
    (y,) = session.run(None, {"X": X})
    assert y.dtype == X.dtype and np.array_equal(y.view(np.uint8), X.view(np.uint8))


def test_float_to_4_and_2_bit_integers_truncate_and_zero_out_of_range() -> None:
    """The backend data's rule (test_cast_FLOAT_to_INT4: -9 and 8..15 give 0), computed by the
    runtime itself: ml_dtypes 0.5 (numpy 1.26's) wraps such values around, 0.7 gives 0."""
    import ml_dtypes

    from runtime_support.quantization import cast_small

    x = np.array([-9, -8.5, -7.5, -2.5, -0.5, 0.5, 1.7, 2.5, 3.9, 7.9, 8, 15, np.nan, np.inf])
    expected = {
        "int4": [0, -8, -7, -2, 0, 0, 1, 2, 3, 7, 0, 0, 0, 0],
        "uint4": [0, 0, 0, 0, 0, 0, 1, 2, 3, 7, 8, 15, 0, 0],
        "int2": [0, 0, 0, -2, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
        "uint2": [0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0],
    }
    for name, values in expected.items():
        for source in (np.float32, np.float16, np.float64):
            got = cast_small(x.astype(source), to=getattr(ml_dtypes, name))
            assert got.dtype == np.dtype(getattr(ml_dtypes, name))
            assert got.astype(np.int64).tolist() == values, (name, source)
