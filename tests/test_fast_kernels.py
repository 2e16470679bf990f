"""The fast variant's transformer kernels against independent references: libm's float64 erf
(math.erf), mpmath, and float64 or longdouble formulas of the operators' definitions."""

from __future__ import annotations

import importlib
import math
import warnings
from pathlib import Path

import mpmath
import numpy as np
import pytest

import runtime_support as rt
from runtime_support.activation import rows_max, softmax_rows

try:
    from ml_dtypes import bfloat16
except ImportError:  # pragma: no cover
    bfloat16 = None


def _erf_reference(x: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)).astype(np.float64)


def _ulps32(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """|actual - expected| in float32 ulps at the expected value."""
    spacing = np.spacing(np.abs(expected).astype(np.float32)).astype(np.float64)
    return np.abs(actual.astype(np.float64) - expected) / spacing


def test_erf_float32_within_five_ulps():
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [
            rng.uniform(-5, 5, 200_000),
            rng.standard_normal(100_000) * 1e-3,
            np.linspace(-4.5, 4.5, 100_001),
        ]
    ).astype(np.float32)
    y = rt.erf(x)
    assert y.dtype == np.float32 and y.shape == x.shape
    assert _ulps32(y, _erf_reference(x)).max() <= 5
    assert np.abs(y).max() <= 1


def test_erf_float32_tiny_and_huge_and_special():
    x = np.array([1e-40, -1e-30, 0.0, -0.0, 10.0, 1e20, 3e38, np.inf, -np.inf], np.float32)
    y = rt.erf(x)
    expected = np.array([math.erf(v) for v in x.astype(np.float64)]).astype(np.float32)
    np.testing.assert_allclose(y[:2], expected[:2], rtol=3e-7)
    assert np.signbit(y[3]) and y[2] == 0
    np.testing.assert_array_equal(y[4:], [1, 1, 1, 1, -1])
    assert np.isnan(rt.erf(np.array([np.nan], np.float32)))[0]


def test_erf_agrees_with_mpmath_on_a_sample():
    x = np.float32([0.1, 0.5, 1.0, 1.7, 2.5, 3.3])
    y = rt.erf(x)
    expected = np.array([float(mpmath.erf(float(v))) for v in x])
    assert _ulps32(y, expected).max() <= 5


def test_erf_float64_keeps_float64_accuracy():
    x = np.linspace(-6, 6, 2001)
    np.testing.assert_allclose(rt.erf(x), _erf_reference(x), rtol=2e-15, atol=1e-300)


@pytest.mark.parametrize("dtype", [np.float16] + ([bfloat16] if bfloat16 else []))
def test_erf_half_types_within_one_step(dtype):
    x = np.linspace(-4, 4, 4001).astype(dtype)
    y = rt.erf(x)
    assert y.dtype == np.dtype(dtype)
    expected = _erf_reference(x.astype(np.float64)).astype(dtype).astype(np.float64)
    # A few float32 ulps may move the final rounding to the half type by one step at most.
    step = np.abs(expected) * (2.0**-10 if dtype is np.float16 else 2.0**-7)
    assert (np.abs(y.astype(np.float64) - expected) <= step + 1e-7).all()


def _gelu_reference(x: np.ndarray, approximate: str) -> np.ndarray:
    x64 = x.astype(np.float64)
    if approximate == "tanh":
        return 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)))
    return 0.5 * x64 * (1 + _erf_reference(x64 / math.sqrt(2)))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_float32(approximate):
    x = np.random.default_rng(3).uniform(-8, 8, (3, 70_000)).astype(np.float32)
    y = rt.gelu(x, approximate=approximate)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, _gelu_reference(x, approximate), rtol=2e-6, atol=4e-7)


def _layer_norm_reference(x, scale, bias, axis, epsilon):
    """LayerNormalization's definition in longdouble."""
    wide = x.astype(np.longdouble)
    axes = tuple(range(axis, x.ndim))
    mean = wide.mean(axis=axes, keepdims=True)
    variance = ((wide - mean) ** 2).mean(axis=axes, keepdims=True)
    inv_std = 1 / np.sqrt(variance + np.longdouble(epsilon))
    return (wide - mean) * inv_std * scale + bias, mean, inv_std


@pytest.mark.parametrize(
    "shape, axis",
    [
        ((2, 128, 256), 2),
        ((1, 1, 256), -1),  # one row: the decoder-step path with Python-float statistics
        ((1, 3, 2000), 1),  # one row of 6000 elements (near the one-row path's limit)
        ((1, 1, 9000), 2),  # one row beyond that limit
        ((3, 4, 5), 1),
        ((6, 7), 0),
        ((2, 5000), 1),
    ],
)
def test_layer_normalization_float32(shape, axis):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    normalized = shape[axis % len(shape) :]
    scale = rng.standard_normal(normalized).astype(np.float32)
    bias = rng.standard_normal(normalized).astype(np.float32)
    y, mean, inv_std = rt.layer_normalization(x, scale, bias, axis=axis, epsilon=1e-5)
    ref_y, ref_mean, ref_inv_std = _layer_norm_reference(x, scale, bias, axis % x.ndim, 1e-5)
    assert y.dtype == mean.dtype == inv_std.dtype == np.float32
    assert y.shape == x.shape and mean.shape == ref_mean.shape == inv_std.shape
    np.testing.assert_allclose(y, ref_y.astype(np.float64), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mean, ref_mean.astype(np.float64), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(inv_std, ref_inv_std.astype(np.float64), rtol=1e-5)


@pytest.mark.parametrize("shape", [(1, 1, 256), (4, 256)])
def test_layer_normalization_without_stats_returns_y_alone(shape):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(shape) * 2 - 3).astype(np.float32)
    scale, bias = rng.standard_normal((2, 256)).astype(np.float32)
    y = rt.layer_normalization(x, scale, bias, axis=-1, epsilon=1e-5, stats=False)
    ref_y, _, _ = _layer_norm_reference(x, scale, bias, x.ndim - 1, 1e-5)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, ref_y.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_layer_normalization_one_constant_row_without_epsilon():
    """A zero variance and epsilon 0: 1/sqrt(0) is inf and Y is NaN (0 * inf), as IEEE float32
    arithmetic of the definition gives, not a Python ZeroDivisionError."""
    x = np.full((1, 8), 2.5, np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        y, mean, inv_std = rt.layer_normalization(x, np.ones(8, np.float32), axis=1, epsilon=0.0)
    assert np.isnan(y).all() and mean[0, 0] == 2.5 and inv_std[0, 0] == np.inf


def test_layer_normalization_broadcast_scale_and_no_bias():
    x = np.random.default_rng(2).standard_normal((4, 3, 8)).astype(np.float32)
    scale = np.float32([1.5, -2.0, 0.5, 1, 1, 1, 3, 0.25])
    y, _, _ = rt.layer_normalization(x, scale, axis=1, epsilon=1e-3)  # scale broadcasts over (3, 8)
    ref_y, _, _ = _layer_norm_reference(x, scale, np.float32(0), 1, 1e-3)
    np.testing.assert_allclose(y, ref_y.astype(np.float64), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "shape, dtype",
    [((2, 128, 256), np.float32), ((1, 1, 256), np.float32), ((3, 40), np.float64)],
)
def test_layer_normalization_writes_into_out_even_its_input(shape, dtype):
    """The kernel declares `out`, which lets the fast module pass the dying residual sum as `out`: the result is in
    it, with the bits of the allocating call (the BLAS-statistics rows, the one-row path, the
    float64 path), and a non-contiguous `out` gets them too."""
    rng = np.random.default_rng(21)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    scale, bias = rng.standard_normal((2, shape[-1])).astype(dtype)
    keywords = dict(axis=-1, epsilon=1e-5, stats=False)
    expected = rt.layer_normalization(x, scale, bias, **keywords)
    ref_y, _, _ = _layer_norm_reference(x, scale, bias, x.ndim - 1, 1e-5)
    np.testing.assert_allclose(expected, ref_y.astype(np.float64), rtol=1e-5, atol=1e-5)
    inplace = x.copy()
    assert rt.layer_normalization(inplace, scale, bias, **keywords, out=inplace) is inplace
    np.testing.assert_array_equal(inplace, expected)
    target = np.zeros(shape[:-1] + (2 * shape[-1],), dtype)[..., ::2]
    assert rt.layer_normalization(x, scale, bias, **keywords, out=target) is target
    np.testing.assert_array_equal(target, expected)


@pytest.mark.parametrize("axis", [-1, 2, 0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_with_masked_scores_and_out(axis, dtype):
    """Attention scores with BERT's additive -10000 mask and -inf entries: within a few float32
    ulps of a long-double reference along any axis (the last one sums by a BLAS product with
    ones), and into `out` -- the scores themselves -- with the allocating call's bits."""
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((2, 4, 128, 128)) * 6).astype(dtype)
    x[1, :, :, 100:] -= 10000
    x[0, 0, 3, :5] = -np.inf
    wide = x.astype(np.longdouble)
    e = np.exp(wide - wide.max(axis=axis, keepdims=True))
    reference = (e / e.sum(axis=axis, keepdims=True)).astype(np.float64)
    y = rt.softmax(x, axis=axis)
    assert y.dtype == dtype and not np.shares_memory(y, x)
    np.testing.assert_allclose(y, reference, rtol=4e-6 if dtype == np.float32 else 1e-13, atol=0)
    np.testing.assert_allclose(y.sum(axis=axis), 1, rtol=2e-5 if dtype == np.float32 else 1e-13)
    inplace = x.copy()
    assert rt.softmax(inplace, axis=axis, out=inplace) is inplace
    np.testing.assert_array_equal(inplace, y)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # the -inf row
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [14, 200])
@pytest.mark.parametrize("every", [10, 2])
def test_softmax_rows_far_below_the_shared_shift(every, n, dtype):
    """softmax's rows share the array's maximum as their shift; rows far below it (here 30 and
    1000 below: a fifth of them, gathered, or all, computed again) and a row of -inf take their
    own maximum: all within a few float32 ulps of a long-double reference, and a run of rows
    with the whole's shift gets the whole's bits (fused attention splits its rows so)."""
    rng = np.random.default_rng(21)
    x = (rng.standard_normal((320, n)) * 3).astype(dtype)
    x[::every] -= 30
    x[every // 2 :: every] -= 1000
    x[7, :] = -np.inf
    x[9, :3] = -np.inf
    wide = x[np.arange(320) != 7].astype(np.longdouble)
    e = np.exp(wide - wide.max(axis=1, keepdims=True))
    reference = (e / e.sum(axis=1, keepdims=True)).astype(np.float64)
    y = rt.softmax(x)
    assert np.isnan(y[7]).all()
    np.testing.assert_allclose(
        y[np.arange(320) != 7], reference, rtol=4e-6 if dtype == np.float32 else 1e-13, atol=0
    )
    shift = rows_max(x)
    for start in range(0, 320, 64):
        run = softmax_rows(x[start : start + 64], shift)
        np.testing.assert_array_equal(run, y[start : start + 64])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf
def test_softmax_rows_of_an_array_with_nan_or_inf_take_their_own_maxima():
    """A NaN or +inf anywhere leaves no finite shared shift: every row takes its own maximum, so
    only the rows holding one are NaN (as onnxruntime's), the others as without it (within the
    shared shift's rounding)."""
    x = (np.random.default_rng(22).standard_normal((64, 40)) * 3).astype(np.float32)
    clean = rt.softmax(x)
    x[3, 7], x[10, 0] = np.nan, np.inf
    y = rt.softmax(x)
    assert np.isnan(y[3]).all() and np.isnan(y[10]).all()
    others = np.ones(64, bool)
    others[[3, 10]] = False
    np.testing.assert_allclose(y[others], clean[others], rtol=4e-6, atol=0)


@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax_float32(axis):
    x = (np.random.default_rng(5).standard_normal((2, 4, 128, 16)) * 20).astype(np.float32)
    wide = x.astype(np.longdouble)
    e = np.exp(wide - wide.max(axis=axis, keepdims=True))
    expected = (e / e.sum(axis=axis, keepdims=True)).astype(np.float64)
    y = rt.softmax(x, axis=axis)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, expected, rtol=2e-6, atol=1e-12)
    assert not np.shares_memory(y, x)


@pytest.mark.parametrize("kernel", [rt.erf, rt.gelu])
def test_erf_and_gelu_write_into_out_even_their_input(kernel):
    x = np.random.default_rng(9).uniform(-5, 5, (3, 50_000)).astype(np.float32)
    expected = kernel(x)
    inplace = x.copy()
    assert kernel(inplace, out=inplace) is inplace
    np.testing.assert_array_equal(inplace, expected)
    strided = x[:, ::2]  # not contiguous: computed on a copy
    np.testing.assert_array_equal(kernel(strided), expected[:, ::2])
    target = np.zeros((3, 100_000), np.float32)[:, ::2]
    assert kernel(x, out=target) is target
    np.testing.assert_array_equal(target, expected)


@pytest.mark.parametrize("kernel", [rt.erf, rt.gelu])
def test_erf_and_gelu_small_tensors_match_the_blocked_path(kernel):
    """A tensor of one block (no block loop) gets the bits its elements get inside a large one."""
    x = np.random.default_rng(12).uniform(-6, 6, 70_000).astype(np.float32)
    x[:4] = [np.inf, -np.inf, np.nan, -0.0]
    whole = kernel(x)
    for start, stop in ((0, 1), (0, 1024), (5000, 37000)):
        part = x[start:stop].reshape(1, 1, -1)
        with np.errstate(invalid="ignore"):  # gelu(-inf) = -inf * 0: NaN, warned on small tensors
            small = kernel(part)
        np.testing.assert_array_equal(small, whole[start:stop].reshape(1, 1, -1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_hard_swish_matches_its_definition_in_float64_and_writes_into_out(dtype):
    """rt.hard_swish (the fast variant's HardSwish, clip(x + 3, 0, 6) * (1/6) * x) against
    x * min(max(x / 6 + 0.5, 0), 1) in float64, within two roundings; `out` may be x itself."""
    x = np.random.default_rng(13).uniform(-8, 8, (2, 3, 40, 40)).astype(dtype)
    x[0, 0, 0, :6] = [-3, 3, 0, -0.0, np.inf, np.nan]
    wide = x.astype(np.float64)
    expected = wide * np.minimum(np.maximum(wide / 6 + 0.5, 0), 1)
    y = rt.hard_swish(x)
    assert y.dtype == dtype and y.shape == x.shape and not np.shares_memory(y, x)
    # x + 3 (or x / 6 + 0.5) cancels near x = -3: the error is bounded relative to x, not to y
    finite = np.isfinite(expected)
    error = np.abs(y[finite].astype(np.float64) - expected[finite])
    assert np.all(error <= 2 * np.finfo(dtype).eps * np.abs(wide[finite])), error.max()
    np.testing.assert_array_equal(y[~finite], expected[~finite])
    inplace = x.copy()
    assert rt.hard_swish(inplace, out=inplace) is inplace
    np.testing.assert_array_equal(inplace, y)
    assert np.asarray(rt.hard_swish(np.asarray(dtype(1.5)))).item() == pytest.approx(1.125)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_relu_is_the_maximum_with_zero_and_writes_into_out(dtype):
    """rt.relu (the fast variant's Relu, a clip to [0, inf]) equals np.maximum(x, 0) on every
    value but -0, which it keeps (equal to +0 as a number); NaN stays NaN; `out` may be x."""
    x = np.random.default_rng(14).standard_normal((3, 5, 7)).astype(dtype)
    x[0, 0, :5] = [-0.0, np.inf, -np.inf, np.nan, 0.0]
    expected = np.maximum(x, dtype(0))
    y = rt.relu(x)
    assert y.dtype == dtype and not np.shares_memory(y, x)
    np.testing.assert_array_equal(y, expected)  # NaN == NaN, -0 == +0 here
    assert np.signbit(y[0, 0, 0]) and not np.signbit(y[0, 0, 4])
    inplace = x[:, :, ::2].copy()
    assert rt.relu(inplace, out=inplace) is inplace
    np.testing.assert_array_equal(inplace, expected[:, :, ::2])


@pytest.mark.parametrize(
    "dtype, shape",
    [
        (np.float32, (2, 7, 5, 3)),
        (np.float64, (1, 4, 6)),
        (np.float32, (1, 3, 2, 3, 4)),
        (np.float16, (2, 3, 4, 4)),
    ],
)
def test_global_average_pool_is_the_mean_of_each_plane(dtype, shape):
    """rt.global_average_pool (the fast GlobalAveragePool, plane sums by einsum)
    against the float64 mean of each plane, within a few roundings; non-contiguous inputs too."""
    x = np.random.default_rng(15).standard_normal(shape).astype(dtype)
    for value in (x, x[:, ::2]):
        y = rt.global_average_pool(value)
        expected = value.astype(np.float64).mean(axis=tuple(range(2, value.ndim)), keepdims=True)
        assert y.dtype == dtype and y.shape == expected.shape
        np.testing.assert_allclose(y, expected, rtol=4 * np.finfo(dtype).eps, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_sigmoid_is_the_logistic_function_without_warnings(dtype):
    """rt.sigmoid (fast Sigmoid) against 1 / (1 + exp(-x)) in float64, within two roundings
    relative to the value or 1e-38 absolute (values below are subnormals that may come out as
    0; float16, in its own arithmetic, 1e-3); no overflow warning at -inf or large negative x; a new array.
    """
    x = (np.random.default_rng(16).standard_normal(4000) * 30).astype(dtype)
    x[:6] = [-np.inf, np.inf, 0.0, -0.0, np.finfo(dtype).min, np.finfo(dtype).max]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = rt.sigmoid(x)
    with np.errstate(over="ignore"):
        expected = 1 / (1 + np.exp(-x.astype(np.float64)))
    assert y.dtype == dtype and not np.shares_memory(y, x)
    error = np.abs(y.astype(np.float64) - expected)
    floor = 1e-3 if dtype == np.float16 else 1e-38  # float16 computes e / (1 + e) in float16
    assert np.all(error <= 2 * np.finfo(dtype).eps * expected + floor), error.max()
    assert rt.sigmoid(np.asarray(dtype(0))) == 0.5  # 0-d


def _recurrent_session(op_type: str, X, W, R, B, attrs, initial=()):
    """onnxruntime's result for one LSTM or GRU node (the reference for the fast kernels);
    `initial`: the initial states (initial_h, and initial_c for an LSTM) as initializers."""
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper

    states = [f"initial_{i}" for i in range(len(initial))]
    names = ["X", "W", "R", "B"] + (["", *states] if initial else [])  # "": no sequence_lens
    outputs = ["Y", "Y_h"] + (["Y_c"] if op_type == "LSTM" else [])
    graph = helper.make_graph(
        [helper.make_node(op_type, names, outputs, **attrs)],
        "g",
        [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, X.shape)],
        [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None) for o in outputs],
        [numpy_helper.from_array(v, n) for n, v in zip(names[1:], (W, R, B))]
        + [numpy_helper.from_array(v, n) for n, v in zip(states, initial)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    session = onnxruntime.InferenceSession(model.SerializeToString())
    return session.run(None, {"X": X})


def _read_only(a: np.ndarray) -> np.ndarray:
    """`a` as the weights file gives it: a read-only view of bytes (the kernels cache what they
    make from such arrays)."""
    return np.frombuffer(a.tobytes(), a.dtype).reshape(a.shape)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op_type,lbr", [("LSTM", 0), ("GRU", 0), ("GRU", 1)])
@pytest.mark.parametrize(
    "steps,initial,hidden,batch",
    [(6, False, 5, 3), (1, True, 5, 3), (4, True, 5, 1), (7, True, 64, 9)],
)
def test_recurrent_layers_with_every_direction_in_one_loop(
    op_type, lbr, direction, steps, initial, hidden, batch
):
    """The common case (default activations, no clip, full lengths) runs all directions in one
    time loop with sigmoid through tanh; it matches onnxruntime, from zero or given states (one
    step from given states is how a streaming model such as silero-vad calls it). Two directions
    of hidden 5 share one block-diagonal product, of hidden 64 a stacked one; the projection
    reaches the loop's layout as it is (batch 1), by a copy per batch column (3) or by one copy
    (9); weights given as read-only arrays (cached prepared weights) give the same results on
    every call."""
    rng = np.random.default_rng(7)
    gates = 4 if op_type == "LSTM" else 3
    directions, features = 1 + (direction == "bidirectional"), 4
    X = rng.normal(size=(steps, batch, features)).astype(np.float32)
    scale = 1 / np.sqrt(hidden)
    W = (scale * rng.normal(size=(directions, gates * hidden, features))).astype(np.float32)
    R = (scale * rng.normal(size=(directions, gates * hidden, hidden))).astype(np.float32)
    B = rng.normal(size=(directions, 2 * gates * hidden)).astype(np.float32)
    states = [
        rng.normal(size=(directions, batch, hidden)).astype(np.float32)
        for _ in range((2 if op_type == "LSTM" else 1) * initial)
    ]
    attrs = {"hidden_size": hidden, "direction": direction}
    if op_type == "GRU":
        attrs["linear_before_reset"] = lbr
    expected = _recurrent_session(op_type, X, W, R, B, attrs, states)
    for weights in [(W, R, B)] + 2 * [tuple(_read_only(a) for a in (W, R, B))]:
        if op_type == "GRU":
            ours = rt.gru(X, *weights, None, *states, direction=direction, linear_before_reset=lbr)
        else:
            ours = rt.lstm(X, *weights, None, *states, direction=direction)
        for have, want in zip(ours, expected):
            np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "x_shape,w_shape,pads,strides,bias",
    [
        ((1, 1, 640), (258, 1, 256), (0, 0), (128,), False),  # a learned STFT (silero-vad)
        ((2, 3, 400), (8, 3, 80), (5, 7), (3,), True),
        ((1, 2, 20, 24), (4, 2, 9, 9), (1, 2, 3, 4), (2, 3), True),
    ],
)
def test_conv_with_many_taps_matches_onnxruntime(x_shape, w_shape, pads, strides, bias):
    """Kernels of 64 taps or more take the sliding-window im2col; onnxruntime is the reference."""
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(8)
    X = rng.normal(size=x_shape).astype(np.float32)
    W = rng.normal(size=w_shape).astype(np.float32)
    B = rng.normal(size=w_shape[0]).astype(np.float32)
    inputs = ["X", "W"] + (["B"] if bias else [])
    graph = helper.make_graph(
        [helper.make_node("Conv", inputs, ["Y"], pads=list(pads), strides=list(strides))],
        "g",
        [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(W, "W")] + ([numpy_helper.from_array(B, "B")] if bias else []),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    (expected,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"X": X})
    ours = rt.conv(
        X, W, B if bias else None, pads=pads, strides=strides, dilations=(1,) * len(strides)
    )
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "x_shape,kernel,pads,strides,dilations,bias",
    [
        ((1, 40, 6, 6), (3, 3), (1, 1, 1, 1), (1, 1), (1, 1), True),  # late MobileNet maps
        ((2, 24, 6, 5), (5, 5), (2, 2, 2, 2), (1, 1), (1, 1), True),  # EfficientNet's 5x5
        ((2, 16, 11, 11), (3, 3), (1, 0, 2, 1), (2, 2), (1, 1), False),  # strided, uneven pads
        ((1, 8, 5, 5), (3, 3), (2, 2, 2, 2), (1, 1), (2, 2), True),  # dilated
        ((3, 5, 4), (3,), (1, 1), (1,), (1,), True),  # one spatial axis
        ((2, 16, 2, 20), (5, 5), (2, 2, 2, 2), (1, 1), (1, 1), True),  # an OCR model's 2 x 20
        ((1, 24, 8, 8), (3, 3), (1, 1, 1, 1), (1, 1), (1, 1), True),  # 64 positions
        ((1, 160, 14, 14), (3, 3), (1, 1, 1, 1), (1, 1), (1, 1), True),  # 196, 160 channels
        ((2, 72, 24, 24), (5, 5), (2, 2, 2, 2), (2, 2), (1, 1), False),  # 144, 2 x 72 rows
    ],
)
def test_depthwise_conv_on_small_maps_matches_onnxruntime(
    x_shape, kernel, pads, strides, dilations, bias
):
    """Depthwise Convs with at most 64 output positions, or outputs at most 0.6 of the padded
    grid, or at most 196 positions and 128 rows of N * C, run channels last, the taps summed by
    one einsum (runtime_support.conv._depthwise_last_path); onnxruntime is the reference."""
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(9)
    channels = x_shape[1]
    X = rng.normal(size=x_shape).astype(np.float32)
    W = rng.normal(size=(channels, 1, *kernel)).astype(np.float32)
    B = rng.normal(size=channels).astype(np.float32)
    conv = importlib.import_module("runtime_support.conv")
    plan = conv._conv_plan(X.shape, X.dtype, W.shape, pads, strides, dilations, channels, "NOTSET")
    assert plan.path is conv._depthwise_last_path
    inputs = ["X", "W"] + (["B"] if bias else [])
    attrs = dict(pads=list(pads), strides=list(strides), dilations=list(dilations), group=channels)
    graph = helper.make_graph(
        [helper.make_node("Conv", inputs, ["Y"], **attrs)],
        "g",
        [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(W, "W")] + ([numpy_helper.from_array(B, "B")] if bias else []),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    (expected,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"X": X})
    ours = rt.conv(
        X, W, B if bias else None, pads=pads, strides=strides, dilations=dilations, group=channels
    )
    assert ours.flags.c_contiguous and ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "x_shape,w_shape,pads,strides,activation",
    [
        ((1, 32, 40, 40), (32, 1, 3, 3), (1, 1, 1, 1), (1, 1), "clip"),  # depthwise, products
        ((1, 16, 96, 96), (16, 1, 3, 3), (1, 1, 1, 1), (2, 2), "relu"),  # depthwise, accumulated
        ((2, 144, 12, 12), (144, 1, 5, 5), (2, 2, 2, 2), (1, 1), "silu"),  # channels last
        ((1, 24, 24, 24), (144, 24, 1, 1), (0, 0, 0, 0), (1, 1), "hard_swish"),  # 1x1
        ((2, 64, 24, 24), (96, 64, 1, 1), (0, 0, 0, 0), (2, 2), None),  # 1x1, strided, batch 2
    ],
)
def test_split_convs_give_the_bits_of_one_thread(
    x_shape, w_shape, pads, strides, activation, monkeypatch
):
    """With runtime_support's own kernels set to split (_threads.SPLIT_MIN; off by default), a
    depthwise or 1x1 Conv big enough runs in one part per thread over ranges of its channels
    (conv._run_split), the activation inside each part: at 2 and 3 threads the bits are those
    of one thread, which match onnxruntime; with SPLIT_MIN None nothing splits."""
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper

    from runtime_support import _threads

    rng = np.random.default_rng(11)
    X = rng.normal(size=x_shape).astype(np.float32)
    W = (rng.normal(size=w_shape) * 0.3).astype(np.float32)
    B = rng.normal(size=w_shape[0]).astype(np.float32)
    group = x_shape[1] if w_shape[1] == 1 else 1
    geometry = dict(pads=pads, strides=strides, group=group)
    bounds = dict(low=0.0, high=6.0) if activation == "clip" else {}

    def run():
        if activation is None:
            return rt.conv(X, W, B, **geometry)
        return rt.conv_activation(X, W, B, activation=activation, **bounds, **geometry)

    real_run_parts, parts = _threads.run_parts, []

    def recording(function, count):
        parts.append(count)
        return real_run_parts(function, count)

    monkeypatch.setattr(_threads, "run_parts", recording)
    before = rt.get_num_threads()
    try:
        rt.set_num_threads(1)
        whole = run()
        monkeypatch.setattr(_threads, "SPLIT_MIN", _threads.SPLIT_SIZE)
        for count in (2, 3):
            rt.set_num_threads(count)
            parts.clear()
            split = run()
            assert parts == [count]
            assert split.flags.c_contiguous and split.tobytes() == whole.tobytes()
        monkeypatch.setattr(_threads, "SPLIT_MIN", None)  # the default
        parts.clear()
        assert run().tobytes() == whole.tobytes() and not parts
    finally:
        rt.set_num_threads(before)
    nodes = [helper.make_node("Conv", ["X", "W", "B"], ["Y0"], **geometry)]
    extra = []
    if activation == "clip":
        extra = [numpy_helper.from_array(np.float32(v), n) for n, v in (("lo", 0), ("hi", 6))]
        nodes.append(helper.make_node("Clip", ["Y0", "lo", "hi"], ["Y"]))
    elif activation == "silu":
        nodes.append(helper.make_node("Sigmoid", ["Y0"], ["S"]))
        nodes.append(helper.make_node("Mul", ["Y0", "S"], ["Y"]))
    else:
        op = {"relu": "Relu", "hard_swish": "HardSwish", None: "Identity"}[activation]
        nodes.append(helper.make_node(op, ["Y0"], ["Y"]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B")] + extra,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    (expected,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"X": X})
    np.testing.assert_allclose(whole, expected, rtol=1e-5, atol=1e-5)


_PAD_CASES = [
    ((1, 512), (0, 0, 0, 64)),  # silero-vad's reflect pad of its audio chunk
    ((2, 3, 5, 4), (0, 1, 2, 3, 0, 2, 4, 3)),  # pads up to the axis: one reflection
    ((3, 4), (-1, 1, 1, -1)),  # negative pads crop first
]
_LONG_PAD = (
    (2, 3),
    (0, 3, 0, 2),
)  # as long as the axis: np.pad's path (onnxruntime refuses reflect)


@pytest.mark.parametrize(
    "mode,shape,pads",
    [(m, *case) for m in ("constant", "edge", "reflect", "wrap") for case in _PAD_CASES]
    + [(m, *_LONG_PAD) for m in ("constant", "edge", "wrap")],
)
def test_pad_matches_onnxruntime(mode, shape, pads):
    """rt.pad assigns pads shorter than their axis itself (axis by axis, as np.pad, so the corners
    agree) and leaves longer ones and wrap to np.pad; onnxruntime is the reference."""
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper

    X = np.random.default_rng(9).normal(size=shape).astype(np.float32)
    value = np.array(2.5, np.float32)
    inputs = ["X", "pads"] + (["value"] if mode == "constant" else [])
    graph = helper.make_graph(
        [helper.make_node("Pad", inputs, ["Y"], mode=mode)],
        "g",
        [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(pads, np.int64), "pads")]
        + ([numpy_helper.from_array(value, "value")] if mode == "constant" else []),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    (expected,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"X": X})
    constant = (value,) if mode == "constant" else ()
    np.testing.assert_array_equal(rt.pad(X, np.array(pads), *constant, mode=mode), expected)


def test_attention_heads_without_keys_or_queries_gives_empty_or_zero_sums():
    """softmax over no keys is empty, and its product with no values sums nothing: zeros; no
    queries give no rows (the large-score split reshapes by rows only when there are some)."""
    q = np.ones((1, 2, 3, 4), np.float32)
    got = rt.attention_heads(
        q, np.ones((1, 2, 4, 0), np.float32), np.ones((1, 2, 0, 5), np.float32)
    )
    np.testing.assert_array_equal(got, np.zeros((1, 2, 3, 5), np.float32))
    mask = np.zeros((1, 1, 1, 3), np.float32)
    k, v = np.ones((1, 2, 4, 3), np.float32), np.ones((1, 2, 3, 5), np.float32)
    assert rt.attention_heads(q[:, :, :0], k, v, mask=mask).shape == (1, 2, 0, 5)


def _conv_session(X, W, B, **attrs):
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper

    inputs = ["X", "W"] + (["B"] if B is not None else [])
    graph = helper.make_graph(
        [helper.make_node("Conv", inputs, ["Y"], **attrs)],
        "g",
        [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, X.shape)],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(W, "W")]
        + ([numpy_helper.from_array(B, "B")] if B is not None else []),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    (expected,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"X": X})
    return expected


@pytest.mark.parametrize(
    "x_shape,activation",
    [
        ((1, 8, 12, 12), None),  # the product adds the bias through the ones row
        ((1, 8, 12, 12), "relu"),
        ((2, 8, 6, 6), None),  # two samples: filters and bias split back
        ((1, 8, 7), "hard_swish"),  # one spatial axis
    ],
)
def test_conv_with_the_bias_as_a_filter_column_matches_onnxruntime(x_shape, activation):
    """rt.conv / rt.conv_activation with `bias_column`: W (M, C + 1, 1, ...) holds the filters
    and, as its last column, the bias (optimize.py's conv-bias-column)."""
    rng = np.random.default_rng(12)
    X = rng.normal(size=x_shape).astype(np.float32)
    kernel = (1,) * (len(x_shape) - 2)
    W = (rng.normal(size=(48, x_shape[1]) + kernel) * 0.3).astype(np.float32)
    B = rng.normal(size=48).astype(np.float32)
    joined = np.concatenate([W, B.reshape((48, 1) + kernel)], axis=1)
    expected = _conv_session(X, W, B)
    if activation is None:
        ours = rt.conv(X, joined, bias_column=True)
    else:
        ours = rt.conv_activation(X, joined, activation=activation, bias_column=True)
        expected = {
            "relu": lambda y: np.maximum(y, 0),
            "hard_swish": lambda y: y * np.clip(y / 6 + 0.5, 0, 1),
        }[activation](expected)
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "x_shape,maps,strides,path",
    [
        ((1, 240, 12, 40), 240, (1, 1), "_depthwise_last_path"),  # 25 taps, 240 rows
        ((1, 96, 48, 48), 96, (1, 1), "_depthwise_last_path"),  # 96 rows, in runs of columns
        ((1, 16, 30, 29), 16, (1, 1), "_depthwise_last_path"),  # a prime width: runs of 29
        ((1, 96, 96, 96), 96, (2, 2), "_depthwise_path"),  # columns of 22 MB: blocks of channels
        ((1, 32, 48, 48), 64, (1, 1), "_depthwise_path"),  # blocks, channel multiplier 2
        ((1, 96, 24, 24), 96, (2, 2), "_depthwise_path"),  # 1.4 MB: whole
    ],
)
def test_depthwise_conv_with_many_taps_matches_onnxruntime(x_shape, maps, strides, path):
    """5x5 depthwise Convs: at unit strides they run channels last (at least 144 rows, or
    fewer in runs of output columns, `_depthwise_chunk`); on the per-channel products, columns
    past _DEPTHWISE_WHOLE_BYTES are copied and multiplied in blocks of channels. onnxruntime is
    the reference."""
    rng = np.random.default_rng(13)
    channels = x_shape[1]
    X = rng.normal(size=x_shape).astype(np.float32)
    W = rng.normal(size=(maps, 1, 5, 5)).astype(np.float32)
    B = rng.normal(size=maps).astype(np.float32)
    pads = (2, 2, 2, 2)
    conv = importlib.import_module("runtime_support.conv")
    plan = conv._conv_plan(X.shape, X.dtype, W.shape, pads, strides, (1, 1), channels, "NOTSET")
    assert plan.path.__name__ == path
    expected = _conv_session(X, W, B, pads=list(pads), strides=list(strides), group=channels)
    ours = rt.conv(X, W, B, pads=pads, strides=strides, group=channels)
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "x_shape,kernel,pads,strides",
    [
        ((2, 24, 5, 80), (5, 5), (2, 2, 2, 2), (1, 1)),  # runs of 16 columns, two samples
        ((2, 40, 3, 96), (5, 5), (2, 2, 2, 2), (1, 1)),  # runs and bands of rows
        ((1, 48, 14, 14), (3, 3), (1, 1, 1, 1), (1, 1)),  # 48 rows at 14x14: runs of 14
        ((2, 24, 12, 30), (3, 3), (1, 1, 1, 1), (2, 1)),  # strided along the first axis only
        ((1, 20, 6, 7, 9), (3, 3, 3), (1,) * 6, (1, 1, 1)),  # three spatial axes
    ],
)
def test_depthwise_conv_in_runs_of_columns_matches_onnxruntime(
    x_shape, kernel, pads, strides, monkeypatch
):
    """Channels-last depthwise Convs with fewer than _DEPTHWISE_RUN_ROWS rows sum runs of
    output columns side by side (`_depthwise_chunk`), the weights repeated along the run; with
    their input and weights constant the run's weights are built once (the same values as a
    second call shows). onnxruntime is the reference; the one-position-a-row einsum gives the
    same bits."""
    rng = np.random.default_rng(15)
    channels = x_shape[1]
    X = rng.normal(size=x_shape).astype(np.float32)
    W = rng.normal(size=(channels, 1, *kernel)).astype(np.float32)
    W.flags.writeable = False  # a module constant: its repeated weights are cached
    B = rng.normal(size=channels).astype(np.float32)
    conv = importlib.import_module("runtime_support.conv")
    dilations = (1,) * len(kernel)
    plan = conv._conv_plan(X.shape, X.dtype, W.shape, pads, strides, dilations, channels, "NOTSET")
    assert plan.path is conv._depthwise_last_path and plan.extra[4] is not None
    attrs = dict(pads=list(pads), strides=list(strides), group=channels)
    expected = _conv_session(X, W, B, **attrs)
    first = rt.conv(X, W, B, pads=pads, strides=strides, group=channels)
    second = rt.conv(X, W, B, pads=pads, strides=strides, group=channels)
    np.testing.assert_allclose(first, expected, rtol=1e-5, atol=1e-5)
    assert np.array_equal(first, second)
    monkeypatch.setattr(conv, "_depthwise_chunk", lambda *args: None)
    geometry = (X.shape, X.dtype, W.shape, pads, strides, dilations, channels, "NOTSET")
    single = conv._conv_plan.__wrapped__(*geometry, conv._depthwise_last_path)
    assert single.extra[4] is None
    assert np.array_equal(single.run(X, W, B), first)


@pytest.mark.parametrize(
    "size,kernel,pad,stride,dilation,count",
    [
        (2, 5, 2, 1, 1, 2),
        (3, 5, 2, 2, 1, 2),
        (5, 3, 2, 1, 2, 5),
        (4, 5, 1, 1, 1, 2),
        (2, 3, 3, 1, 1, 6),
    ],
)
def test_tap_bands_cover_the_kernel_rows_that_reach_the_input(
    size, kernel, pad, stride, dilation, count, monkeypatch
):
    """Each output row's band holds exactly the kernel rows whose input row is inside the map
    (the others read padding only), counted here tap by tap (the saving rule off)."""
    conv = importlib.import_module("runtime_support.conv")
    monkeypatch.setattr(conv, "_BAND_SAVING", 0.0)
    bands = conv._tap_bands.__wrapped__(size, kernel, pad, stride, dilation, count, 1)
    assert bands is not None
    covered = []
    for first, stop, low, high in bands:
        for i in range(first, stop):
            inside = [t for t in range(kernel) if 0 <= i * stride + t * dilation - pad < size]
            assert list(range(low, high)) == inside
            covered.append(i)
    assert covered == list(range(count))


@pytest.mark.parametrize(
    "x_shape,kernel,pads,strides,dilations",
    [
        ((2, 24, 2, 30), (5, 5), (2, 2, 2, 2), (1, 1), (1, 1)),  # two bands
        ((2, 40, 3, 30), (5, 5), (2, 1, 1, 2), (2, 1), (1, 1)),  # uneven pads, strided
        ((1, 160, 2, 7), (3, 3), (2, 2, 2, 2), (1, 1), (2, 2)),  # dilated
        ((2, 20, 6), (5,), (4, 0), (1,), (1,)),  # one spatial axis
    ],
)
def test_depthwise_conv_in_bands_of_rows_matches_onnxruntime(
    x_shape, kernel, pads, strides, dilations
):
    """Channels-last depthwise Convs on short maps sum each band of output rows over the kernel
    rows that reach into the input (conv._tap_bands); onnxruntime is the reference."""
    rng = np.random.default_rng(14)
    channels = x_shape[1]
    X = rng.normal(size=x_shape).astype(np.float32)
    W = rng.normal(size=(channels, 1, *kernel)).astype(np.float32)
    B = rng.normal(size=channels).astype(np.float32)
    conv = importlib.import_module("runtime_support.conv")
    plan = conv._conv_plan(X.shape, X.dtype, W.shape, pads, strides, dilations, channels, "NOTSET")
    assert plan.path is conv._depthwise_last_path and plan.extra[3] is not None
    attrs = dict(pads=list(pads), strides=list(strides), dilations=list(dilations), group=channels)
    expected = _conv_session(X, W, B, **attrs)
    ours = rt.conv(X, W, B, pads=pads, strides=strides, dilations=dilations, group=channels)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "x_shape,w_shape,pads,strides,group",
    [
        ((2, 3, 64, 64), (16, 3, 7, 7), (3, 3, 3, 3), (2, 2), 1),  # ResNet-18-w16's stem
        ((2, 3, 33, 30), (8, 3, 5, 5), (2, 1, 0, 2), (2, 2), 1),  # odd sizes, uneven pads
        ((2, 4, 20, 21), (6, 2, 7, 5), (1, 2, 3, 0), (2, 1), 2),  # two groups, one axis strided
        ((1, 16, 32, 32), (32, 16, 5, 5), (2, 2, 2, 2), (2, 2), 1),  # one sample, many rows
        ((2, 3, 40), (4, 3, 13), (4, 4), (2,), 1),  # one spatial axis
        ((2, 2, 9, 10, 11), (4, 2, 5, 5, 2), (2, 2, 1, 2, 2, 0), (2, 2, 1), 1),  # three axes
    ],
)
def test_conv_by_phase_planes_matches_onnxruntime(x_shape, w_shape, pads, strides, group):
    """Strided Convs with many taps per stride phase take their im2col matrix from the input's
    phase planes, rows over the plane width (runtime_support.conv._phase_path); onnxruntime is
    the reference, and the strided view's path gives the same values."""
    rng = np.random.default_rng(16)
    X = rng.normal(size=x_shape).astype(np.float32)
    W = rng.normal(size=w_shape).astype(np.float32)
    B = rng.normal(size=w_shape[0]).astype(np.float32)
    conv = importlib.import_module("runtime_support.conv")
    dilations = (1,) * len(strides)
    plan = conv._conv_plan(X.shape, X.dtype, W.shape, pads, strides, dilations, group, "NOTSET")
    assert plan.path is conv._phase_path
    expected = _conv_session(X, W, B, pads=list(pads), strides=list(strides), group=group)
    ours = rt.conv_activation(X, W, B, activation="relu", pads=pads, strides=strides, group=group)
    np.testing.assert_allclose(ours, np.maximum(expected, 0), rtol=1e-4, atol=1e-4)
    ours = rt.conv(X, W, B, pads=pads, strides=strides, group=group)
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-4)
    strided = conv._Plan(
        conv._strided_path,
        np.float32,
        plan.pads,
        plan.strides,
        plan.dilations,
        group,
        conv._strided_geometry(
            X.shape, W.shape[0], W.shape[2:], pads, strides, dilations, plan.extra[-1], np.float32
        ),
    )
    np.testing.assert_allclose(ours, strided.run(X, W, B), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "x_shape,maps,strides,bias",
    [
        ((2, 24, 1, 1), 6, (1, 1), True),  # a squeeze-and-excitation block's reduction
        ((1, 6, 1, 1), 24, (1, 1), True),  # ... and its expansion, one sample
        ((3, 8, 2, 3), 5, (2, 3), False),  # strided down to one position
        ((2, 16, 1), 4, (1,), True),  # one spatial axis
    ],
)
def test_pointwise_conv_on_one_position_matches_onnxruntime(x_shape, maps, strides, bias):
    """1x1 Convs with one output position a sample are one (N, C) @ (C, M) product
    (conv._pointwise_path); onnxruntime is the reference."""
    rng = np.random.default_rng(17)
    X = rng.normal(size=x_shape).astype(np.float32)
    W = rng.normal(size=(maps, x_shape[1]) + (1,) * (len(x_shape) - 2)).astype(np.float32)
    B = rng.normal(size=maps).astype(np.float32) if bias else None
    conv = importlib.import_module("runtime_support.conv")
    rank = len(strides)
    plan = conv._conv_plan(
        X.shape, X.dtype, W.shape, (0,) * 2 * rank, strides, (1,) * rank, 1, "NOTSET"
    )
    assert plan.path is conv._pointwise_path and plan.extra[2] == 1
    expected = _conv_session(X, W, B, strides=list(strides))
    ours = rt.conv(X, W, B, strides=strides)
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)
    half = rt.conv(X.astype(np.float16), W.astype(np.float16), None, strides=strides)
    assert half.dtype == np.float16 and half.shape == expected.shape


def _conv_session_dynamic(X, W, B, **attrs):
    """onnxruntime's Conv with X declared with symbolic dims (N, C, and every spatial axis)."""
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper

    dims = ["N", "C"] + [f"S{i}" for i in range(X.ndim - 2)]
    graph = helper.make_graph(
        [helper.make_node("Conv", ["X", "W", "B"], ["Y"], **attrs)],
        "g",
        [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    (expected,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"X": X})
    return expected


# Long filters along the last axis (conv._polyphase_path): (X shape, W shape, pads, strides) of
# resamplers, audio filter banks and learned STFTs, 1-D and 2-D with rows of kernel 1, pads
# larger than a stride and than the filter, strides above, equal to and below the filter
_POLYPHASE_CASES = [
    ((2, 1, 1, 1600), (1, 1, 1, 80), (0, 37, 0, 43), (1, 6)),
    ((2, 1, 1600), (1, 1, 160), (0, 0), (3,)),
    ((1, 1, 1, 2000), (41, 1, 1, 400), (0, 200, 0, 200), (1, 160)),
    ((1, 1, 512), (258, 1, 256), (0, 0), (128,)),
    ((3, 2, 4, 700), (5, 2, 1, 64), (0, 0, 0, 9), (1, 1)),
    ((1, 3, 900), (4, 3, 70), (100, 3), (7,)),
    ((2, 1, 300), (2, 1, 64), (0, 0), (100,)),
    ((1, 2, 2, 3, 400), (3, 2, 1, 1, 96), (0, 0, 5, 0, 0, 1), (1, 1, 5)),
]


@pytest.mark.parametrize("x_shape,w_shape,pads,strides", _POLYPHASE_CASES)
def test_conv_polyphase_path_matches_onnxruntime(x_shape, w_shape, pads, strides):
    """Convolutions whose only kernel axis of more than one tap is the last, with at least
    conv._WINDOWED_TAPS taps, take the polyphase path; their values are onnxruntime's (X with
    dynamic dims, so onnxruntime cannot specialise on its shape), with and without a bias."""
    rng = np.random.default_rng(31)
    X = rng.normal(size=x_shape).astype(np.float32)
    W = (rng.normal(size=w_shape) * 0.2).astype(np.float32)
    B = rng.normal(size=w_shape[0]).astype(np.float32)
    conv = importlib.import_module("runtime_support.conv")
    rank = len(strides)
    geometry = (pads, strides, (1,) * rank, 1, "NOTSET")
    assert conv._conv_plan(X.shape, X.dtype, W.shape, *geometry).path.__name__ == "_polyphase_path"
    keywords = dict(pads=pads, strides=strides, dilations=(1,) * rank, group=1)
    attrs = dict(pads=list(pads), strides=list(strides), dilations=[1] * rank, group=1)
    expected = _conv_session_dynamic(X, W, B, **attrs)
    got = rt.conv(X, W, B, **keywords)
    assert got.shape == expected.shape and got.flags.c_contiguous
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    unbiased = _conv_session_dynamic(X, W, np.zeros_like(B), **attrs)
    np.testing.assert_allclose(rt.conv(X, W, None, **keywords), unbiased, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "x_shape,w_shape,pads,dilations",
    [
        ((1, 64, 40, 56), (16, 64, 3, 3), (1, 1, 1, 1), (1, 1)),  # PP-OCR's FPN neck
        ((1, 16, 72, 64), (16, 16, 3, 3), (1, 1, 1, 1), (1, 1)),  # few channels, a large map
        ((2, 48, 36, 40), (12, 48, 3, 2), (1, 0, 1, 1), (1, 1)),  # two samples, uneven pads
        ((1, 64, 48, 48), (16, 64, 3, 3), (2, 1, 2, 1), (2, 1)),  # dilated rows
        ((2, 128, 3000), (32, 128, 5), (2, 2), (1,)),  # one spatial axis
        ((1, 32, 16, 24, 24), (8, 32, 1, 3, 3), (0, 1, 1, 0, 1, 1), (1, 1, 1)),  # three axes
    ],
)
def test_conv_by_shifted_tap_blocks_matches_onnxruntime(x_shape, w_shape, pads, dilations):
    """Stride-1 Convs with filters for at most half their input channels (or as many as a few
    channels, on a large map), too large for the strided view, multiply the flat padded input by the stacked tap filters and add each tap's
    block at its offset (runtime_support.conv._shifted_path); onnxruntime is the reference, with
    and without a bias, and with the fused activation."""
    rng = np.random.default_rng(17)
    X = rng.normal(size=x_shape).astype(np.float32)
    W = rng.normal(size=w_shape).astype(np.float32)
    B = rng.normal(size=w_shape[0]).astype(np.float32)
    conv = importlib.import_module("runtime_support.conv")
    strides = (1,) * len(dilations)
    plan = conv._conv_plan(X.shape, X.dtype, W.shape, pads, strides, dilations, 1, "NOTSET")
    assert plan.path is conv._shifted_path
    attrs = dict(pads=list(pads), dilations=list(dilations))
    expected = _conv_session(X, W, B, **attrs)
    keywords = dict(pads=pads, strides=strides, dilations=dilations)
    ours = rt.conv(X, W, B, **keywords)
    assert ours.shape == expected.shape and ours.flags.c_contiguous
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-3)
    ours = rt.conv_activation(X, W, B, activation="relu", **keywords)
    np.testing.assert_allclose(ours, np.maximum(expected, 0), rtol=1e-4, atol=1e-3)
    unbiased = _conv_session(X, W, None, **attrs)
    np.testing.assert_allclose(rt.conv(X, W, None, **keywords), unbiased, rtol=1e-4, atol=1e-3)


# (X shape, W shape, pads, strides, dilations, group, path): every path whose products go
# through conv._matmul, each with a product of at least _SERIAL_TERMS multiply-adds
_PRODUCT_PART_CASES = [
    ((1, 64, 41, 39), (128, 64, 1, 1), (0, 0, 0, 0), (1, 1), (1, 1), 1, "_pointwise_path"),
    ((3, 512, 3, 5), (1024, 512, 1, 1), (0, 0, 0, 0), (1, 1), (1, 1), 1, "_pointwise_path"),
    ((2, 64, 33, 31), (96, 64, 1, 1), (0, 0, 0, 0), (1, 1), (1, 1), 1, "_pointwise_path"),
    ((2, 3, 65, 63), (16, 3, 7, 7), (3, 3, 3, 3), (2, 2), (1, 1), 1, "_phase_path"),
    ((2, 32, 30, 30), (64, 16, 3, 3), (1, 1, 1, 1), (1, 1), (1, 1), 2, "_strided_path"),
    ((1, 128, 40, 40), (256, 64, 1, 1), (0, 0, 0, 0), (1, 1), (1, 1), 2, "_pointwise_path"),
    ((2, 16, 1000), (32, 16, 5), (2, 2), (1,), (1,), 1, "_strided_path"),
    ((2, 256, 6, 6), (256, 256, 3, 3), (1, 1, 1, 1), (1, 1), (1, 1), 1, "_gather_path"),
    ((1, 32, 70, 66), (64, 32, 3, 3), (2, 1, 2, 1), (1, 1), (2, 2), 1, "_im2col_path"),
    ((8, 16, 24, 25), (32, 16, 3, 3), (1, 1, 1, 1), (1, 1), (1, 1), 1, "_im2col_path"),
    ((8, 32, 24, 24), (64, 16, 3, 3), (1, 1, 1, 1), (1, 1), (1, 1), 2, "_im2col_path"),
    ((2, 64, 40, 44), (16, 64, 3, 3), (1, 1, 1, 1), (1, 1), (1, 1), 1, "_shifted_path"),
    ((2, 4, 40, 41), (32, 4, 9, 9), (4, 4, 4, 4), (1, 1), (1, 1), 1, "_windowed_path"),
    ((2, 4, 1, 20000), (64, 4, 1, 128), (0, 3, 0, 5), (1, 4), (1, 1), 1, "_polyphase_path"),
    ((2, 3, 64, 64), (512, 3, 8, 8), (0, 0, 0, 0), (8, 8), (1, 1), 1, "_patch_path"),
]


@pytest.mark.parametrize("x_shape,w_shape,pads,strides,dilations,group,path", _PRODUCT_PART_CASES)
def test_conv_products_in_parts_give_the_bits_of_one_thread(
    x_shape, w_shape, pads, strides, dilations, group, path, monkeypatch
):
    """With runtime_support's own splitting on (_threads.SPLIT_MIN set; off by default), at more
    than one thread a Conv's products of at least _SERIAL_TERMS multiply-adds run in one part
    per thread (conv._matmul over _threads.run_parts), not over OpenBLAS's threads: at 2 and 3
    threads the bits are those of one thread, which match onnxruntime (X declared with dynamic
    dims there); at one thread nothing splits."""
    from runtime_support import _threads

    monkeypatch.setattr(_threads, "SPLIT_MIN", _threads.SPLIT_SIZE)

    rng = np.random.default_rng(15)
    X = rng.normal(size=x_shape).astype(np.float32)
    W = (rng.normal(size=w_shape) * 0.2).astype(np.float32)
    B = rng.normal(size=w_shape[0]).astype(np.float32)
    conv = importlib.import_module("runtime_support.conv")
    geometry = (pads, strides, dilations, group, "NOTSET")
    assert conv._conv_plan(X.shape, X.dtype, W.shape, *geometry).path.__name__ == path
    real_run_parts, parts = _threads.run_parts, []

    def recording(function, count):
        parts.append(count)
        return real_run_parts(function, count)

    monkeypatch.setattr(_threads, "run_parts", recording)
    keywords = dict(pads=pads, strides=strides, dilations=dilations, group=group)
    before = rt.get_num_threads()
    try:
        rt.set_num_threads(1)
        whole = rt.conv(X, W, B, **keywords)
        assert not parts
        for count in (2, 3):
            rt.set_num_threads(count)
            parts.clear()
            split = rt.conv(X, W, B, **keywords)
            assert parts and set(parts) == {count}
            assert split.flags.c_contiguous and split.tobytes() == whole.tobytes()
    finally:
        rt.set_num_threads(before)
    attrs = dict(pads=list(pads), strides=list(strides), dilations=list(dilations), group=group)
    expected = _conv_session_dynamic(X, W, B, **attrs)
    np.testing.assert_allclose(whole, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("x_shape,w_shape,pads,strides,dilations,group,path", _PRODUCT_PART_CASES)
def test_conv_products_run_over_openblas_threads_by_default(
    x_shape, w_shape, pads, strides, dilations, group, path, monkeypatch
):
    """By default (SPLIT_MIN None) a Conv's products of at least _SERIAL_TERMS multiply-adds
    run over BLAS at the thread count set, none in parts: on a quiet 2-core machine OpenBLAS's
    own split beats the parts (docs/decisions.md); the values match one thread's."""
    from runtime_support import _threads

    rng = np.random.default_rng(15)
    X = rng.normal(size=x_shape).astype(np.float32)
    W = (rng.normal(size=w_shape) * 0.2).astype(np.float32)
    B = rng.normal(size=w_shape[0]).astype(np.float32)
    blas = _threads._blas()
    if not blas.found:
        pytest.skip("numpy's BLAS exports no thread-count function")
    counts, real_set = [], type(blas).set
    monkeypatch.setattr(type(blas), "set", lambda self, n: (counts.append(n), real_set(self, n)))
    monkeypatch.setattr(_threads, "run_parts", lambda *a: pytest.fail("a product ran in parts"))
    keywords = dict(pads=pads, strides=strides, dilations=dilations, group=group)
    before = rt.get_num_threads()
    try:
        rt.set_num_threads(1)
        whole = rt.conv(X, W, B, **keywords)
        rt.set_num_threads(2)
        counts.clear()
        threaded = rt.conv(X, W, B, **keywords)
    finally:
        rt.set_num_threads(before)
    assert 2 in counts[1:-1]  # inside the Conv's one-thread block, a product at 2
    np.testing.assert_allclose(threaded, whole, rtol=1e-5, atol=1e-5)


def test_conv_with_the_bias_column_in_parts_gives_the_bits_of_one_thread(monkeypatch):
    """conv-bias-column's product (_bias_column_conv) runs in parts as well at 2 threads (own
    splitting on)."""
    from runtime_support import _threads

    monkeypatch.setattr(_threads, "SPLIT_MIN", _threads.SPLIT_SIZE)

    rng = np.random.default_rng(16)
    X = rng.normal(size=(1, 24, 47, 49)).astype(np.float32)
    W = (rng.normal(size=(144, 24, 1, 1)) * 0.3).astype(np.float32)
    B = rng.normal(size=144).astype(np.float32)
    joined = np.concatenate([W, B.reshape(144, 1, 1, 1)], axis=1)
    real_run_parts, parts = _threads.run_parts, []

    def recording(function, count):
        parts.append(count)
        return real_run_parts(function, count)

    monkeypatch.setattr(_threads, "run_parts", recording)
    before = rt.get_num_threads()
    try:
        rt.set_num_threads(1)
        whole = rt.conv_activation(X, joined, activation="relu", bias_column=True)
        rt.set_num_threads(2)
        split = rt.conv_activation(X, joined, activation="relu", bias_column=True)
    finally:
        rt.set_num_threads(before)
    assert parts == [2] and split.tobytes() == whole.tobytes()
    expected = np.maximum(_conv_session_dynamic(X, W, B), 0)
    np.testing.assert_allclose(whole, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "x_shape,w_shape,strides,pads,group",
    [
        ((2, 64, 33, 31), (64, 32, 2, 2), (2, 2), (0, 0, 0, 0), 1),  # U-Net's tiles, batch 2
        ((1, 48, 21, 20), (48, 24, 3, 3), (2, 2), (1, 1, 1, 1), 1),  # overlapping windows
        ((2, 64, 600), (64, 32, 4), (2,), (1, 1), 1),  # one spatial axis
        ((1, 64, 33, 31), (64, 64, 2, 2), (2, 2), (0, 0, 0, 0), 2),  # two groups
    ],
)
def test_conv_transpose_products_in_parts_give_the_bits_of_one_thread(
    x_shape, w_shape, strides, pads, group, monkeypatch
):
    """ConvTranspose's product of at least _SERIAL_TERMS multiply-adds per sample and group runs
    in parts at 2 threads (conv._stacked; own splitting on), with the bits of one thread, which
    match onnxruntime."""
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper

    from runtime_support import _threads

    monkeypatch.setattr(_threads, "SPLIT_MIN", _threads.SPLIT_SIZE)

    rng = np.random.default_rng(17)
    X = rng.normal(size=x_shape).astype(np.float32)
    W = (rng.normal(size=w_shape) * 0.2).astype(np.float32)
    B = rng.normal(size=w_shape[1] * group).astype(np.float32)
    assert X[0].size * math.prod(W.shape[1:]) >= group * _threads.SMALL_BLAS_WORK  # per group
    real_run_parts, parts = _threads.run_parts, []

    def recording(function, count):
        parts.append(count)
        return real_run_parts(function, count)

    monkeypatch.setattr(_threads, "run_parts", recording)
    before = rt.get_num_threads()
    try:
        rt.set_num_threads(1)
        whole = rt.conv_transpose(X, W, B, strides=strides, pads=pads, group=group)
        rt.set_num_threads(2)
        split = rt.conv_transpose(X, W, B, strides=strides, pads=pads, group=group)
    finally:
        rt.set_num_threads(before)
    assert parts and set(parts) == {2} and split.tobytes() == whole.tobytes()
    dims = ["N", "C"] + [f"S{i}" for i in range(X.ndim - 2)]
    attrs = dict(strides=list(strides), pads=list(pads), group=group)
    graph = helper.make_graph(
        [helper.make_node("ConvTranspose", ["X", "W", "B"], ["Y"], **attrs)],
        "g",
        [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    (expected,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"X": X})
    np.testing.assert_allclose(whole, expected, rtol=1e-4, atol=1e-4)


# (op type, alpha attribute or constant slope, the fast variant's selection): LeakyRelu and PRelu
# as max(x * slope, x) for slopes at most 1, min(x * slope, x) for slopes at least 1, np.where
# for a zero slope (inf * 0) and for slopes on both sides of 1
_LEAKY_CASES = [
    ("LeakyRelu", 0.01, "np.maximum"),
    ("LeakyRelu", -0.5, "np.maximum"),
    ("LeakyRelu", 1.5, "np.minimum"),
    ("LeakyRelu", 0.0, "np.where"),
    ("PRelu", [0.25, 0.1, -0.3], "np.maximum"),
    ("PRelu", [2.0, 1.5, 1.0], "np.minimum"),
    ("PRelu", [0.25, 2.0, 0.5], "np.where"),
    ("PRelu", [0.25, 0.0, 0.5], "np.where"),
]


@pytest.mark.parametrize("op_type,slope,selection", _LEAKY_CASES)
def test_leaky_selection_matches_onnxruntime(op_type, slope, selection, tmp_path):
    """The fast variant's LeakyRelu and PRelu (ops/common.leaky_selection) give onnxruntime's
    values on random signs and on -inf, inf, NaN and zeros, whichever selection it emits."""
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper

    from onemodel_compile import compile_model

    inputs, initializers, attrs = ["X"], [], {}
    if op_type == "LeakyRelu":
        attrs["alpha"] = slope
    else:
        inputs.append("slope")
        values = np.array(slope, np.float32).reshape(3, 1, 1)
        initializers.append(numpy_helper.from_array(values, "slope"))
    graph = helper.make_graph(
        [helper.make_node(op_type, inputs, ["Y"], **attrs)],
        "leaky",
        [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, ["N", 3, 4, 5])],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)
    X = np.random.default_rng(5).normal(size=(2, 3, 4, 5)).astype(np.float32)
    X.reshape(-1)[:6] = [-np.inf, np.inf, np.nan, 0.0, -0.0, -1e-30]
    path = Path(compile_model(model, tmp_path / "leaky.py"))
    assert f"{selection}(" in path.read_text()
    spec = importlib.util.spec_from_file_location("leaky_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (expected,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"X": X})
    with np.errstate(invalid="ignore"):  # np.where's inf * 0 (the NaN it then discards)
        got = module.run(X)[0]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    "shape,kernel",
    [
        ((1, 6, 24, 24), (2, 2)),
        ((2, 3, 9, 7), (3, 2)),
        ((1, 2, 8), (2,)),
        ((1, 2, 4, 4, 6), (2, 2, 3)),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_max_pool_tiles_give_the_other_paths_bits(shape, kernel, dtype, monkeypatch):
    """MaxPool over the tiles of a small map (pool._tile_max) gives the bits of the paths it
    replaces, on zeros of both signs, NaN and ties: max_pool serves the exact variant too."""
    pool = importlib.import_module("runtime_support.pool")
    rng = np.random.default_rng(3)
    if dtype == np.int8:
        X = rng.integers(-3, 3, size=shape).astype(dtype)
    else:
        X = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, np.nan], dtype), size=shape)
    rank = len(kernel)
    keywords = dict(
        kernel_shape=kernel, pads=(0,) * 2 * rank, strides=kernel, dilations=(1,) * rank
    )
    out = [n // k for n, k in zip(shape[2:], kernel)]
    assert pool._small_tiles(X.size, kernel, (0,) * 2 * rank, kernel, (1,) * rank, (0,) * rank, out)
    tiles = rt.max_pool(X, **keywords)
    monkeypatch.setattr(pool, "_TILE_MAX_SIZE", 0)
    pool._max_pool_plan.cache_clear()  # the path is settled per shape
    other = rt.max_pool(X, **keywords)
    pool._max_pool_plan.cache_clear()
    assert tiles.dtype == other.dtype and tiles.shape == other.shape
    assert tiles.tobytes() == other.tobytes()


# --- DynamicQuantizeLinear in float32 ----------------------------------------------------------


def _dynamic_quantize_by_the_formula(x):
    """ONNX's DynamicQuantizeLinear as its definition writes it, in float64 after the float32
    scale and quotient: y = saturate(round(x / y_scale) + y_zero_point) (NaN saturating to 0)."""
    high = max(float(np.max(x, initial=0)), 0.0)
    low = min(float(np.min(x, initial=0)), 0.0)
    scale = np.float32(1) if high == low else np.float32(np.float32(high) - np.float32(low)) / np.float32(255)  # fmt: skip
    zero = np.rint(np.fmin(np.fmax(np.float32(0) - np.float32(low) / scale, 0), 255))
    y = np.rint(x / scale).astype(np.float64) + float(zero)
    y = np.where(np.isnan(y), 0.0, np.clip(y, 0, 255)).astype(np.uint8)
    return y, scale, np.uint8(zero)


def test_dynamic_quantize_linear_in_float32_is_the_formula_s_bits():
    """rt.dynamic_quantize_linear adds the zero point in float32, in place: its integers, scale
    and zero point equal the float64 formula's on ranges from subnormal to huge, one-signed
    inputs, zeros, infinities and NaNs."""
    rng = np.random.default_rng(3)
    cases = [np.zeros(0, np.float32), np.array([-np.inf, 1], np.float32)]
    for k in range(120):
        n = int(rng.integers(1, 2000))
        x = (rng.standard_normal(n) * 10.0 ** rng.uniform(-40, 38)).astype(np.float32)
        x = [x, np.abs(x), -np.abs(x), 0 * x][k % 4]
        if k % 7 == 3:
            x[rng.integers(0, n)] = np.inf
        if k % 11 == 4:
            x[rng.integers(0, n)] = np.nan
        if k % 13 == 5:
            x = (rng.integers(-3, 3, n) * np.float32(1e-45)).astype(np.float32)
        cases.append(x)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for x in cases:
            y, scale, zero = rt.dynamic_quantize_linear(x)
            want_y, want_scale, want_zero = _dynamic_quantize_by_the_formula(x)
            assert y.dtype == np.uint8 and scale.dtype == np.float32 and zero.dtype == np.uint8
            np.testing.assert_array_equal(y, want_y)
            assert np.array_equal(scale, want_scale, equal_nan=True) and zero == want_zero
