"""Normalization kernels (inference).

float16 and bfloat16 inputs are computed in float32 and rounded once to the input's type at the end,
unless an operator's `stash_type` says otherwise: LayerNormalization, GroupNormalization (opset 21)
and RMSNormalization compute their statistics in the type `stash_type` names (an ONNX element type
number: 1 float32, 10 float16, 11 float64, 16 bfloat16).

A normalization whose norm is zero gives zeros (LpNormalization: an all-zero slice;
MeanVarianceNormalization: a constant slice), never NaN.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from runtime_support._dtypes import dtype_from_name
from runtime_support._kernels import kernel
from runtime_support._limits import check_allocation
from runtime_support._threads import blas_threads_for, run_ranges
from runtime_support.exact import exact_mean, exact_standardize, exact_sum
from runtime_support.exact_math import exact_pow
from runtime_support.math import clip_ufunc

__all__ = [
    "batch_normalization",
    "exact_group_normalization",
    "exact_instance_normalization",
    "exact_layer_normalization",
    "exact_lrn",
    "exact_lp_normalization",
    "exact_mean_variance_normalization",
    "exact_rms_normalization",
    "group_normalization",
    "instance_normalization",
    "layer_normalization",
    "lp_normalization",
    "lrn",
    "mean_variance_normalization",
    "rms_normalization",
    "scale_shift",
]

_STASH_TYPES = {1: "float32", 10: "float16", 11: "float64", 16: "bfloat16"}

# MeanVarianceNormalization's epsilon (the constant of its ONNX function body), added to the
# standard deviation.
_MVN_EPSILON = 1e-9


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """The type arithmetic on `dtype` runs in: float32 for float16 and bfloat16."""
    return np.dtype(np.float32) if dtype.itemsize < 4 else dtype


def _stash_dtype(stash_type: int) -> np.dtype:
    return dtype_from_name(_STASH_TYPES[stash_type])


@kernel(fresh=True)
def scale_shift(X, factor, shift, *, low=None, high=None):
    """X * factor + shift in X's type, factor and shift shaped to broadcast against X: an
    inference BatchNormalization whose factor and shift the compiler computed (fast variant),
    then clamped to [low, high] in place when a bound is given (the Relu or Clip after it; an
    absent bound is an infinite one, NaN stays NaN). np.clip with scalar bounds: several times
    faster than np.maximum with a scalar (see conv._clip)."""
    Y = np.multiply(X, factor)
    np.add(Y, shift, out=Y)
    if low is not None or high is not None:
        f = Y.dtype.type
        clip_ufunc(
            Y, f(-np.inf if low is None else low), f(np.inf if high is None else high), out=Y
        )
    return Y.astype(X.dtype, copy=False)


@kernel(fresh=True)
def batch_normalization(X, scale, B, input_mean, input_var, *, epsilon):
    """Inference BatchNormalization: (X - mean) * (scale / sqrt(var + epsilon)) + B, statistics per
    channel (axis 1), or per activation when they have X's non-batch shape (opset 7, spatial=0).
    Elementwise IEEE operations in a fixed order, in the widest of the operands' types: exact."""
    shape = (-1,) + (1,) * (X.ndim - 2) if scale.ndim == 1 else scale.shape
    dtype = np.result_type(X.dtype, scale.dtype, input_mean.dtype)
    scale, B, mean, var = (
        a.astype(dtype, copy=False).reshape(shape) for a in (scale, B, input_mean, input_var)
    )
    factor = scale / np.sqrt(var + dtype.type(epsilon))
    Y = np.subtract(X, mean, dtype=dtype)
    np.multiply(Y, factor, out=Y)
    return np.add(Y, B, out=Y).astype(X.dtype, copy=False)


def _standardize(x, axes, epsilon):
    """(x - mean) / sqrt(variance + epsilon) over `axes`, with the mean and 1 / sqrt(...)."""
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    variance = (centered * centered).mean(axis=axes, keepdims=True)
    inv_std = x.dtype.type(1) / np.sqrt(variance + x.dtype.type(epsilon))
    return centered * inv_std, mean, inv_std


def _exact_standardize(x, axes, epsilon):
    """exact_standardize for every stash type: float16 and bfloat16 through float32."""
    if x.dtype.itemsize >= 4:
        return exact_standardize(x, axes, epsilon)
    return tuple(a.astype(x.dtype) for a in exact_standardize(x.astype(np.float32), axes, epsilon))


def _exact_mean(x, axes):
    return exact_mean(x, axes, keepdims=True)


def _mean(x, axes):
    return x.mean(axis=axes, keepdims=True)


@kernel(exact=False, exact_twin="rt.exact_instance_normalization")
def instance_normalization(input, scale, B, *, epsilon=1e-5):
    """scale * (x - mean) / sqrt(variance + epsilon) + B, the statistics of each (batch, channel)
    over the spatial axes, scale and B per channel."""
    return _instance_normalization(input, scale, B, epsilon, _standardize)


@kernel(exact=True)
def exact_instance_normalization(input, scale, B, *, epsilon=1e-5):
    """instance_normalization with the statistics of exact_standardize (float64 sums, one
    rounding each), then normalized * scale + B in the compute type, one IEEE operation each."""
    return _instance_normalization(input, scale, B, epsilon, _exact_standardize)


def _instance_normalization(input, scale, B, epsilon, standardize):
    dtype = _compute_dtype(input.dtype)
    shape = (-1,) + (1,) * (input.ndim - 2)
    normalized, _, _ = standardize(
        input.astype(dtype, copy=False), tuple(range(2, input.ndim)), epsilon
    )
    y = normalized * scale.astype(dtype).reshape(shape) + B.astype(dtype).reshape(shape)
    return y.astype(input.dtype, copy=False)


@kernel(exact=False, exact_twin="rt.exact_group_normalization")
def group_normalization(X, scale, bias, *, num_groups, epsilon=1e-5, stash_type=1):
    """The channels (axis 1) split into `num_groups` groups; each (batch, group) standardized over
    its channels and spatial positions (in the stash type), then scale and bias per channel."""
    return _group_normalization(X, scale, bias, num_groups, epsilon, stash_type, _standardize)


@kernel(exact=True)
def exact_group_normalization(X, scale, bias, *, num_groups, epsilon=1e-5, stash_type=1):
    """group_normalization with the statistics of exact_standardize (float64 sums, one rounding
    each), then normalized * scale + bias, one IEEE operation each."""
    return _group_normalization(X, scale, bias, num_groups, epsilon, stash_type, _exact_standardize)


def _group_normalization(X, scale, bias, num_groups, epsilon, stash_type, standardize):
    stash = _stash_dtype(stash_type)
    dtype = np.result_type(stash, _compute_dtype(X.dtype))
    grouped = X.reshape(X.shape[0], num_groups, -1).astype(stash, copy=False)
    normalized, _, _ = standardize(grouped, (2,), epsilon)
    shape = (-1,) + (1,) * (X.ndim - 2)
    y = normalized.astype(dtype, copy=False).reshape(X.shape) * scale.astype(dtype).reshape(shape)
    return (y + bias.astype(dtype).reshape(shape)).astype(X.dtype, copy=False)


@kernel(out=True, fresh=True, exact=False, exact_twin="rt.exact_layer_normalization")
def layer_normalization(
    X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1, stats=True, out=None
):
    """LayerNormalization over the axes from `axis` on; returns (Y, Mean, InvStdDev), or Y alone
    with stats=False (a node without the optional outputs: nothing computed for them). Y goes into
    `out` when given (an array of X's shape and dtype, possibly X itself).

    The statistics (Mean, InvStdDev) are computed in the stash type, float64 X in float64 whatever
    the stash type (onnxruntime), and returned as the stash type; Scale and B are applied in the
    wider of the stash type and X's type."""
    axis = axis % X.ndim
    count = math.prod(X.shape[axis:])
    if (
        X.dtype == np.float32
        and stash_type == 1
        and Scale.dtype == np.float32
        and Scale.size == count
        and (B is None or B.size == count)
        and X.size
    ):
        if X.size == count and count <= _ONE_ROW_LIMIT:
            Y, mean, inv_std = _layer_normalization_row32(X, Scale, B, count, epsilon)
            Y = _into(Y, out)
            if not stats:
                return Y
            stats_shape = (1,) * X.ndim
            return (
                Y,
                np.full(stats_shape, mean, np.float32),
                np.full(stats_shape, inv_std, np.float32),
            )
        direct = out if out is not None and out.flags.c_contiguous else None  # else copied below
        result = _layer_normalization32(X, Scale, B, axis, count, epsilon, direct)
    else:
        # float64 X keeps float64 statistics (the stash type only says what Mean and InvStdDev
        # are returned as): onnxruntime computes double in double, float32 statistics cost it
        # float32 precision (a relative error of 1e-7 to 1e-5 on Y).
        statistics = np.dtype(np.float64) if X.dtype == np.float64 else None
        result = _layer_normalization(
            X, Scale, B, axis, epsilon, stash_type, _standardize, statistics
        )
    result = (_into(result[0], out),) + result[1:]
    return result if stats else result[0]


def _into(y, out):
    """y, or y copied into `out` when that is given and y is not already it."""
    if out is None or y is out:
        return y
    out[...] = y
    return out


# Rows up to this many elements take _layer_normalization_row32 when X is one row: its sum of
# squares is a BLAS dot product in float32 lanes, accurate enough for rows this short.
_ONE_ROW_LIMIT = 8192


def _layer_normalization_row32(X, Scale, B, count, epsilon):
    """layer_normalization of a float32 X that is one row of `count` elements (a decoder step's
    token): the statistics as Python floats (double precision) between the six numpy calls, no
    reductions with kept axes, no float32 scalars (each costs more in call overhead on a
    few-hundred-element row than its arithmetic). Returns Y in X's shape, the mean and 1/std."""
    row = X.reshape(count)
    mean = float(np.add.reduce(row)) / count
    Y = np.subtract(row, mean)  # float32: a Python float does not widen the array
    variance = float(np.dot(Y, Y)) / count + epsilon
    inv_std = 1.0 / math.sqrt(variance) if variance else math.inf  # as float32's 1 / sqrt(0)
    Y *= inv_std
    Y *= Scale.reshape(count)
    if B is not None:
        Y += B.reshape(count)
    return Y.reshape(X.shape), mean, inv_std


def _layer_normalization32(X, Scale, B, axis, count, epsilon, out=None):
    """layer_normalization of float32 X with float32 statistics, the normalized axes flattened
    into one (Scale and B have as many elements), into `out` (C-contiguous, may be X) when given:
    the fewest numpy calls (it runs on every token of a decoder step) and passes over X. Each
    row's mean and mean square deviation is a BLAS matrix-vector product with a vector of
    1 / count for rows up to _ONE_ROW_LIMIT (several times faster than np.add.reduce along short
    rows; longer ones keep its pairwise sums); the difference goes
    into `out`, then the scaling, Scale and B in place. Python scalars keep float32 arithmetic
    float32. Large X runs in equal runs of rows over the threads set (run_ranges): rows are
    independent, and a run's rows get the bits they get in the whole."""
    rows = X.reshape(-1, count)
    Y = np.empty_like(rows) if out is None else out.reshape(-1, count)
    mean = np.empty((rows.shape[0], 1), np.float32)
    inv_std = np.empty((rows.shape[0], 1), np.float32)
    weights = _mean_weights(count) if count <= _ONE_ROW_LIMIT else None
    scale, bias = Scale.reshape(-1), None if B is None else B.reshape(-1)

    def run(start, stop):
        _layer_normalization32_rows(
            rows[start:stop], Y[start:stop], mean[start:stop], inv_std[start:stop],
            scale, bias, count, epsilon, weights,
        )  # fmt: skip

    # runs of whole groups of 32 rows: OpenBLAS's matrix-vector kernels take rows in groups,
    # the last few alone, so a run's rows then get the bits they get in the whole. Their
    # products at one BLAS thread when small (at more than one thread OpenBLAS splits a
    # matrix-vector product of 10^4 elements or more and waits for its second thread)
    with blas_threads_for(rows.size):
        run_ranges(run, rows.shape[0], count, align=32)
    stats_shape = X.shape[:axis] + (1,) * (X.ndim - axis)
    Y = Y.reshape(X.shape) if out is None else out
    return Y, mean.reshape(stats_shape), inv_std.reshape(stats_shape)


@functools.lru_cache(maxsize=64)
def _mean_weights(count: int) -> np.ndarray:
    """count values 1 / count in float32, read-only: made once per row length (np.full costs
    about 1 us, a twentieth of a 56 x 384 normalization)."""
    weights = np.full(count, 1.0 / count, np.float32)
    weights.flags.writeable = False
    return weights


def _layer_normalization32_rows(rows, Y, mean, inv_std, scale, bias, count, epsilon, weights):
    """_layer_normalization32 of a run of rows, into Y, mean and inv_std (views of the whole's):
    with `weights` (1 / count, rows up to _ONE_ROW_LIMIT) the statistics are BLAS products."""
    if weights is not None:  # float32 lanes of BLAS: accurate enough for rows this short
        np.matmul(rows, weights, out=mean[:, 0])
        np.subtract(rows, mean, out=Y)
        np.matmul(Y * Y, weights, out=inv_std[:, 0])
    else:  # np.add.reduce's pairwise sums
        np.add.reduce(rows, axis=1, keepdims=True, out=mean)
        mean /= count
        np.subtract(rows, mean, out=Y)
        np.add.reduce(Y * Y, axis=1, keepdims=True, out=inv_std)
        inv_std /= count
    inv_std += epsilon
    np.sqrt(inv_std, out=inv_std)
    np.reciprocal(inv_std, out=inv_std)
    Y *= inv_std
    Y *= scale
    if bias is not None:
        Y += bias


@kernel(exact=True)
def exact_layer_normalization(X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1, stats=True):
    """layer_normalization with the statistics of exact_standardize (float64 sums, one rounding
    each), then normalized * Scale + B, one IEEE operation each; Y alone with stats=False."""
    result = _layer_normalization(X, Scale, B, axis, epsilon, stash_type, _exact_standardize)
    return result if stats else result[0]


def _layer_normalization(X, Scale, B, axis, epsilon, stash_type, standardize, statistics=None):
    """LayerNormalization with the statistics computed in `statistics` (default: the stash type)
    and returned as the stash type."""
    stash = _stash_dtype(stash_type)
    statistics = stash if statistics is None else statistics
    dtype = np.result_type(statistics, _compute_dtype(X.dtype))
    axes = tuple(range(axis % X.ndim, X.ndim))
    normalized, mean, inv_std = standardize(X.astype(statistics, copy=False), axes, epsilon)
    Y = normalized.astype(dtype, copy=False) * Scale.astype(dtype, copy=False)
    if B is not None:
        Y = Y + B.astype(dtype, copy=False)
    return (
        Y.astype(X.dtype, copy=False),
        mean.astype(stash, copy=False),
        inv_std.astype(stash, copy=False),
    )


@kernel(exact=False, exact_twin="rt.exact_rms_normalization")
def rms_normalization(X, scale, *, axis=-1, epsilon=1e-5, stash_type=1):
    """x / sqrt(mean(x * x) + epsilon) * scale, the mean over the axes from `axis` on (in the
    stash type)."""
    return _rms_normalization(X, scale, axis, epsilon, stash_type, _mean)


@kernel(exact=True)
def exact_rms_normalization(X, scale, *, axis=-1, epsilon=1e-5, stash_type=1):
    """rms_normalization with mean(x * x) by exact_mean (the float64 sum of the squares, one
    division, rounded once to the stash type); the rest elementwise, one IEEE operation each."""
    return _rms_normalization(X, scale, axis, epsilon, stash_type, _exact_mean)


def _rms_normalization(X, scale, axis, epsilon, stash_type, mean):
    stash = _stash_dtype(stash_type)
    dtype = np.result_type(stash, _compute_dtype(X.dtype))
    x = X.astype(stash, copy=False)
    mean_square = mean(x * x, tuple(range(axis % X.ndim, X.ndim)))
    normalized = x * (stash.type(1) / np.sqrt(mean_square + stash.type(epsilon)))
    y = normalized.astype(dtype, copy=False) * scale.astype(dtype, copy=False)
    return y.astype(X.dtype, copy=False)


def _sum(x, axis):
    return x.sum(axis=axis, keepdims=True)


def _exact_sum(x, axis):
    return exact_sum(x, axis, keepdims=True)


@kernel(exact=False, exact_twin="rt.exact_lp_normalization")
def lp_normalization(input, *, axis=-1, p=2):
    """x / norm(x) along `axis`, the L1 (p=1) or L2 (p=2) norm; an all-zero slice gives zeros."""
    return _lp_normalization(input, axis, p, _sum)


@kernel(exact=True)
def exact_lp_normalization(input, *, axis=-1, p=2):
    """lp_normalization with the sum of |x| or x * x by exact_sum (float64, fixed order, rounded
    once to the compute type), then sqrt and the division, one IEEE operation each."""
    return _lp_normalization(input, axis, p, _exact_sum)


def _lp_normalization(input, axis, p, total):
    x = input.astype(_compute_dtype(input.dtype), copy=False)
    if p == 1:
        norm = total(np.abs(x), axis)
    else:
        norm = np.sqrt(total(x * x, axis))
    zero = norm == 0
    y = np.where(zero, x.dtype.type(0), x / np.where(zero, x.dtype.type(1), norm))
    return y.astype(input.dtype, copy=False)


@kernel(exact=False, exact_twin="rt.exact_mean_variance_normalization")
def mean_variance_normalization(X, *, axes=(0, 2, 3)):
    """(x - mean) / (sqrt(variance) + 1e-9) over `axes`. A constant slice gives zeros: its mean
    is taken to be its value, not a rounded sum divided by the count."""
    return _mean_variance_normalization(X, axes, _mean)


@kernel(exact=True)
def exact_mean_variance_normalization(X, *, axes=(0, 2, 3)):
    """mean_variance_normalization with both means by exact_mean (float64 sums in a fixed order,
    one division, rounded once to the compute type); the rest one IEEE operation each."""
    return _mean_variance_normalization(X, axes, _exact_mean)


def _mean_variance_normalization(X, axes, mean_of):
    x = X.astype(_compute_dtype(X.dtype), copy=False)
    axes = tuple(axes)
    mean = mean_of(x, axes)
    low, high = x.min(axis=axes, keepdims=True), x.max(axis=axes, keepdims=True)
    centered = x - np.where(low == high, high, mean)
    std = np.sqrt(mean_of(centered * centered, axes))
    return (centered / (std + x.dtype.type(_MVN_EPSILON))).astype(X.dtype, copy=False)


@kernel(exact=False, exact_twin="rt.exact_lrn")
def lrn(X, *, size, alpha=0.0001, beta=0.75, bias=1.0):
    """Local response normalization across channels (axis 1):
    x / (bias + alpha / size * sum of x * x over the window of `size` channels around c) ** beta,
    the window reaching floor((size - 1) / 2) channels before c and ceil((size - 1) / 2) after."""
    return _lrn(X, size, alpha, beta, bias, np.power)


@kernel(exact=True)
def exact_lrn(X, *, size, alpha=0.0001, beta=0.75, bias=1.0):
    """lrn with the power by exact_pow (for a float64 X, its double-length logarithm); the window
    sum adds the channels in a fixed order and the rest is one IEEE operation each, in the order
    lrn's docstring gives."""
    return _lrn(X, size, alpha, beta, bias, exact_pow)


def _lrn(X, size, alpha, beta, bias, power):
    x = X.astype(_compute_dtype(X.dtype), copy=False)
    before = (size - 1) // 2
    pads = [(0, 0)] * x.ndim
    pads[1] = (before, size - 1 - before)
    padded = (x.shape[0], x.shape[1] + max(size - 1, 0), *x.shape[2:])
    check_allocation(padded, x.dtype, "padded input")  # size is the model's attribute
    squares = np.pad(x * x, pads)
    channels = x.shape[1]
    square_sum = squares[:, :channels].copy()
    for offset in range(1, size):
        square_sum += squares[:, offset : offset + channels]
    dtype = x.dtype.type
    denominator = power(dtype(bias) + dtype(alpha) / dtype(size) * square_sum, dtype(beta))
    return (x / denominator).astype(X.dtype, copy=False)
