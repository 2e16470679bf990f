"""The integer products (MatMulInteger, ConvInteger, QLinearConv) against int64 numpy sums (an
independent reference: integer arithmetic, no floating point) on both sides of the bound under
which runtime_support runs them in float32 (every partial sum below 2**24) instead of float64.

Near the bound's far side the float32 sums would round (odd sums above 2**24 are not float32
numbers), so a wrong choice of type fails these tests."""

from __future__ import annotations

import numpy as np
import pytest

import runtime_support as rt
from runtime_support.linalg import integer_span, integer_sum_type


def _int64_conv2d(x, w, x_zero, w_zero, pads):
    """The direct definition of a 2-D convolution (group 1, stride 1) in int64."""
    xs = np.pad(x.astype(np.int64) - int(x_zero), [(0, 0), (0, 0), (pads, pads), (pads, pads)])
    ws = w.astype(np.int64) - np.asarray(w_zero, np.int64).reshape(-1, 1, 1, 1)
    n, c, h, wd = xs.shape
    m, _, kh, kw = ws.shape
    out = np.zeros((n, m, h - kh + 1, wd - kw + 1), np.int64)
    for i in range(kh):
        for j in range(kw):
            window = xs[:, :, i : i + out.shape[2], j : j + out.shape[3]]
            out += np.einsum("nchw,mc->nmhw", window, ws[:, :, i, j])
    return out


def test_integer_sum_type_bound():
    assert integer_span(np.uint8) == 255
    assert integer_span(np.int8) == 255  # x = -128, zero point 127
    sums = np.array([10.0, 65_000.0])  # the largest line counts
    assert integer_sum_type(258, sums) is np.float32  # 16,770,000 < 2**24 = 16,777,216
    assert integer_sum_type(259, sums) is np.float64  # 16,835,000
    assert integer_sum_type(255, np.zeros(0)) is np.float32


@pytest.mark.parametrize("inner", [300, 600, 5000])
def test_matmul_integer_worst_case_sums(inner):
    # uint8 255 - 0 times int8 -128 over `inner` terms: the largest sums the types allow, with
    # odd terms mixed in so that sums above 2**24 are not all float32 numbers
    rng = np.random.default_rng(inner)
    a = np.full((3, inner), 255, np.uint8)
    a[:, ::7] = rng.integers(0, 256, a[:, ::7].shape)
    b = np.full((inner, 5), -128, np.int8)
    b[::5] = rng.integers(-128, 128, b[::5].shape)
    expected = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    assert np.array_equal(rt.matmul_integer(a, b), expected)
    zero_a, zero_b = np.uint8(3), np.array([1, -2, 0, 5, 127], np.int8)
    expected = ((a.astype(np.int64) - 3) @ (b.astype(np.int64) - zero_b.astype(np.int64))).astype(
        np.int32
    )
    assert np.array_equal(rt.matmul_integer(a, b, zero_a, zero_b), expected)


@pytest.mark.parametrize("channels", [4, 64, 256])
def test_conv_integer_against_int64_sums(channels):
    rng = np.random.default_rng(channels)
    x = rng.integers(0, 256, (2, channels, 7, 9)).astype(np.uint8)
    x[:, :, ::2] = 255
    w = rng.integers(-128, 128, (6, channels, 3, 3)).astype(np.int8)
    w[::2] = -127  # odd, so that large sums are not multiples of a power of two
    x_zero, w_zero = np.uint8(0), np.int8(0)
    got = rt.conv_integer(x, w, x_zero, w_zero, pads=[1, 1, 1, 1])
    assert np.array_equal(got, _int64_conv2d(x, w, 0, 0, 1).astype(np.int32))
    x_zero = np.uint8(17)
    got = rt.conv_integer(x, w, x_zero, None, pads=[0, 0, 0, 0])
    assert np.array_equal(got, _int64_conv2d(x, w, 17, 0, 0).astype(np.int32))


def test_conv_integer_matches_onnxruntime():
    import onnx
    import onnxruntime
    from onnx import TensorProto, helper

    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (1, 200, 5, 5)).astype(np.uint8)
    w = rng.integers(-128, 128, (8, 200, 3, 3)).astype(np.int8)
    node = helper.make_node("ConvInteger", ["x", "w", "xz"], ["y"], pads=[1, 1, 1, 1])
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.UINT8, x.shape),
            helper.make_tensor_value_info("w", TensorProto.INT8, w.shape),
            helper.make_tensor_value_info("xz", TensorProto.UINT8, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 8, 5, 5])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)], ir_version=8)
    onnx.checker.check_model(model)
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    xz = np.array(128, np.uint8)
    (expected,) = session.run(None, {"x": x, "w": w, "xz": xz})
    assert np.array_equal(rt.conv_integer(x, w, xz, pads=[1, 1, 1, 1]), expected)
