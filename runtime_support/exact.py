"""Exact kernels: results whose bits depend only on the input bits.

The exact variant's matrix products (MatMul, Gemm, Einsum, Conv), determinants, reductions,
cumulative sums and products, softmax and the normalizations' statistics. Every kernel here is
built from operations whose result does not depend on the machine, the SIMD level, the BLAS build,
the thread count or the numpy version (docs/contract.md "Exactness"):
- IEEE-754 elementwise `+ - * /` and `sqrt` (correctly rounded), in an order written in each
  kernel's docstring; comparisons, `abs`, `max`, `trunc`, `ldexp`, `frexp`, data movement;
- BLAS and numpy sums only over integer-valued float64 operands whose every partial result is an
  integer below 2**53: such sums are exact, so their order does not matter.

Conventions shared by all kernels:
- arithmetic runs in float64 and the result is rounded once to the input's type at the end
  (bfloat16 through float32, a second deterministic rounding);
- every NaN in a result is numpy's `np.nan` (positive quiet NaN), whatever NaN produced it, so
  NaN payloads and signs cannot differ between machines.

The matrix product (`exact_matmul`) is an error-free splitting in the manner of Ozaki, Ogita, Oishi
and Rump: each row of A and column of B is scaled by a power of two, cut into integer-valued
float64 slices (one per operand for float32 and narrower, rounded to nearest; three for float64),
the slice products run through BLAS exactly, and the slice results are combined in a fixed order.
"""

from __future__ import annotations

import functools
import math
import weakref

import numpy as np

from runtime_support._constants import immutable_root as _immutable_root
from runtime_support._kernels import kernel
from runtime_support.exact_math import (
    _fast_two_sum,
    _log_double,
    exact_exp,
    exact_log,
    exp_double_length,
)
from runtime_support.exact_trig import _divide, _two_sum

__all__ = [
    "exact_conv",
    "exact_cumprod",
    "exact_cumsum",
    "exact_det",
    "exact_einsum",
    "exact_gemm",
    "exact_log_softmax",
    "exact_matmul",
    "exact_mean",
    "exact_reduce_l1",
    "exact_reduce_l2",
    "exact_reduce_mean",
    "exact_reduce_prod",
    "exact_reduce_sum",
    "exact_reduce_sum_square",
    "exact_softmax",
    "exact_standardize",
    "exact_sum",
    "exact_var",
]

# The inner dimension of a matrix product is cut into blocks of at most this many terms; with it
# each slice is at least 21 bits wide (see _slice_width).
MATMUL_BLOCK = 2048


# --- shared helpers -------------------------------------------------------------------------------


def _float64(x) -> np.ndarray:
    """`x` as float64 (every supported float type converts exactly)."""
    return np.asarray(x).astype(np.float64)


_NUMPY_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _rounded(values: np.ndarray, dtype) -> np.ndarray:
    """float64 `values` rounded once to `dtype` (bfloat16: through float32), NaNs made np.nan;
    truncated toward zero for an integer `dtype`."""
    if type(values) is np.ndarray and values.dtype == np.float64 and dtype in _NUMPY_FLOATS:
        # the common case, without the conversions and checks below (same steps)
        if values.size and np.isnan(np.maximum.reduce(values, axis=None)):
            values = np.where(np.isnan(values), np.nan, values)
        if dtype == np.float64:
            return values
        with np.errstate(over="ignore"):
            return values.astype(dtype)
    values = np.asarray(values, dtype=np.float64)
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return values.astype(dtype)
    # One reduction finds whether any NaN is there (max propagates NaN) without a mask the size
    # of the values; only then the mask.
    if values.size and np.isnan(np.maximum.reduce(values, axis=None)):
        values = np.where(np.isnan(values), np.nan, values)
    if dtype == np.float64:
        return values
    with np.errstate(over="ignore"):  # overflow gives infinity, as IEEE rounding does
        if dtype.kind != "f":  # bfloat16 (ml_dtypes)
            return values.astype(np.float32).astype(dtype)
        return values.astype(dtype)


def _axes(ndim: int, axes, noop_with_empty_axes=0) -> tuple[int, ...]:
    """Sorted non-negative axes; None or empty means all axes, or none with noop_with_empty_axes."""
    if isinstance(axes, int):  # the common cases, without the arrays below
        return (axes % ndim,)
    if isinstance(axes, tuple) and axes and all(type(a) is int for a in axes):
        return tuple(sorted({a % ndim for a in axes}))
    if axes is None or np.asarray(axes).size == 0:
        return () if noop_with_empty_axes else tuple(range(ndim))
    return tuple(sorted({int(a) % ndim for a in np.asarray(axes).reshape(-1)}))


def _gather(x, axes: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """`x` with `axes` merged into one axis that runs over the reduced elements in C order of
    `axes`, and where that axis is: last (shape (*kept, n)) when `axes` are x's trailing axes
    (not all), so that no transposition is needed, else first ((n, *kept)). A view where
    numpy can make one; bfloat16 comes as float32."""
    x = np.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(np.float32)
    kept = tuple(a for a in range(x.ndim) if a not in axes)
    kept_shape = tuple(x.shape[a] for a in kept)
    count = math.prod(x.shape[a] for a in axes)
    if kept and axes == tuple(range(x.ndim - len(axes), x.ndim)):
        return x.reshape(kept_shape + (count,)), -1
    return x.transpose(axes + kept).reshape((count,) + kept_shape), 0


def _restore(reduced: np.ndarray, shape, axes: tuple[int, ...], keepdims) -> np.ndarray:
    """A reduction over `axes` of an array of `shape`, with the reduced axes kept as 1 or not."""
    if keepdims:
        return reduced.reshape(tuple(1 if a in axes else d for a, d in enumerate(shape)))
    return reduced.reshape(tuple(d for a, d in enumerate(shape) if a not in axes))


# _pairwise works along the first axis, in place, for arrays up to this many elements: each level
# along the last axis writes a new array (and along short rows numpy's strided loops cost more).
_SMALL_TREE = 1 << 16


def _pairwise(values: np.ndarray, axis: int, combine) -> np.ndarray:
    """Reduce `axis` (0 or -1) of `values` with `combine` in a fixed binary tree, in float64, and
    return the result without that axis. `values` (any float type) is not modified.

    With m values v[0..m-1] live, one level computes v[i] = combine(v[i], v[i + h]) for
    i < h = m // 2 and, when m is odd, moves v[m-1] to v[h]; levels repeat until one value is
    left. The tree depends only on the length n (depth ceil(log2 n)). The first level converts
    to float64 (exactly) as it combines. Along the last axis each level writes a new array, which
    no input overlaps (numpy would otherwise copy the interleaved halves)."""
    count, owned = values.shape[axis], False
    if axis == -1 and count > 16 and values.size <= _SMALL_TREE:
        # small arrays: every level along the first axis, in place in one float64 copy (the
        # same sums: a level adds the same pairs whatever the axis they lie along)
        values = np.moveaxis(values, -1, 0).astype(np.float64, order="C")
        axis, owned = 0, True
    while count > 1:
        half, odd = count // 2, count % 2
        if axis == -1 and count <= 16:  # short rows: finish along the first axis
            values, axis = values.transpose((-1,) + tuple(range(values.ndim - 1))), 0
            continue
        if axis == 0:  # contiguous halves: in place once the levels own the array
            if owned:  # float64 already: no type to resolve
                level = values[: half + odd]
                combine(values[:half], values[half : 2 * half], out=level[:half])
            else:
                level = np.empty((half + odd,) + values.shape[1:])
                combine(values[:half], values[half : 2 * half], out=level[:half], dtype=np.float64)
            if odd:
                level[half] = values[count - 1]
        else:
            level = np.empty(values.shape[:-1] + (half + odd,))
            head, tail = values[..., :half], values[..., half : 2 * half]
            combine(head, tail, out=level[..., :half], dtype=np.float64)
            if odd:
                level[..., half] = values[..., count - 1]
        values, count, owned = level, half + odd, True
    return (values[0] if axis == 0 else values[..., 0]).astype(np.float64)


def _sum64(x, axes: tuple[int, ...], before=None) -> np.ndarray:
    """The float64 sum over `axes` (kept axes only), in _pairwise's tree over the reduced
    elements in C order; `before` (a ufunc, in float64) is applied to each element first."""
    values, axis = _gather(x, axes)
    if values.shape[axis] == 0:
        return np.zeros(np.delete(values.shape, axis))
    if before is not None:
        values = before(values, dtype=np.float64)
    return _pairwise(values, axis, np.add)


# --- reductions -----------------------------------------------------------------------------------


def exact_sum(x, axis=None, *, keepdims=False, dtype=None):
    """Sum over `axis` (an int, a tuple, or None for all), like np.sum, but in a fixed order.

    Order: the elements, converted to float64 (exactly), are summed in float64 along the reduced
    elements taken in C order, pairwise: with m partial sums s[0..m-1], one level adds
    s[i] + s[i + m // 2] for i < m // 2 (an odd last one moves down); the final float64 sum is
    rounded once to `dtype` (default: x's float type; np.float64 keeps it unrounded).
    Accuracy: |error| <= ceil(log2 n) * 2**-53 * sum(|x|) before the final rounding.
    The sum of nothing is 0."""
    x = np.asarray(x)
    axes = _axes(x.ndim, axis)
    total = _restore(_sum64(x, axes), x.shape, axes, keepdims)
    return _rounded(total, x.dtype if dtype is None else dtype)


def _mean64(x, axes: tuple[int, ...]) -> np.ndarray:
    count = math.prod(x.shape[a] for a in axes)
    return _sum64(x, axes) / max(count, 1)


def exact_mean(x, axis=None, *, keepdims=False, dtype=None):
    """Mean over `axis`: exact_sum's float64 sum divided (one IEEE division) by the count, then
    rounded once to `dtype` (default x's type). The mean of nothing is 0."""
    x = np.asarray(x)
    axes = _axes(x.ndim, axis)
    mean = _restore(_mean64(x, axes), x.shape, axes, keepdims)
    return _rounded(mean, x.dtype if dtype is None else dtype)


def _var64(x, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) over `axes`, float64, with the reduced axes kept as 1."""
    mean = _restore(_mean64(x, axes), x.shape, axes, True)
    centered = _float64(x) - mean
    count = math.prod(x.shape[a] for a in axes)
    variance = _sum64(centered, axes, before=np.square) / max(count, 1)
    return mean, _restore(variance, x.shape, axes, True)


def exact_var(x, axis=None, *, keepdims=False, dtype=None):
    """Population variance over `axis`, two passes in float64: m = exact_mean (unrounded),
    then the float64 squares of (x - m) summed as exact_sum sums, divided by the count, rounded
    once to `dtype` (default x's type)."""
    x = np.asarray(x)
    axes = _axes(x.ndim, axis)
    variance = _var64(x, axes)[1]
    if not keepdims:
        variance = _restore(variance, x.shape, axes, False)
    return _rounded(variance, x.dtype if dtype is None else dtype)


def exact_standardize(x, axes, epsilon):
    """The normalizations' building block: (x - mean) * inv_std over `axes`, with mean and
    inv_std = 1 / sqrt(variance + epsilon) (reduced axes kept as 1), all of x's type.

    Order: mean and variance as exact_var computes them (float64); inv_std = 1 / sqrt(variance +
    epsilon) in float64; mean and inv_std rounded to x's type; then, in x's type, centered =
    x - mean and centered * inv_std (one IEEE operation each). x is float32 or float64 (the
    normalization kernels compute float16 and bfloat16 in float32)."""
    x = np.asarray(x)
    axes = _axes(x.ndim, axes)
    mean64, variance64 = _var64(x, axes)
    mean = _rounded(mean64, x.dtype)
    inv_std = _rounded(1.0 / np.sqrt(variance64 + float(epsilon)), x.dtype)
    return (x - mean) * inv_std, mean, inv_std


def _reduce_kernel(x, axes, keepdims, noop_with_empty_axes, before=None, after=None):
    """after(sum(before(x))) over `axes` in float64 (as exact_sum sums), rounded to x's type."""
    x = np.asarray(x)
    axes = _axes(x.ndim, axes, noop_with_empty_axes)
    if axes == ():  # reduce nothing: only the elementwise steps
        values = _float64(x)
        if before is not None:
            values = before(values)
    else:
        values = _restore(_sum64(x, axes, before), x.shape, axes, keepdims)
    if after is not None:
        values = after(values, x, axes)
    return _rounded(values, x.dtype)


def exact_reduce_sum(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    """ONNX ReduceSum of floats in exact_sum's order (float64 pairwise tree, one rounding)."""
    return _reduce_kernel(data, axes, keepdims, noop_with_empty_axes)


def exact_reduce_sum_square(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    """ONNX ReduceSumSquare of floats: each x*x in float64 (exact for float32 and narrower), summed
    in exact_sum's order, rounded once."""
    return _reduce_kernel(data, axes, keepdims, noop_with_empty_axes, before=np.square)


def exact_reduce_l1(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    """ONNX ReduceL1 of floats: |x| summed in exact_sum's order, rounded once."""
    return _reduce_kernel(data, axes, keepdims, noop_with_empty_axes, before=np.abs)


def exact_reduce_l2(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    """ONNX ReduceL2 of floats: sqrt of the float64 sum of x*x (as exact_reduce_sum_square sums
    it), the float64 sqrt rounded once to the data's type."""
    return _reduce_kernel(
        data, axes, keepdims, noop_with_empty_axes, np.square, lambda s, x, axes: np.sqrt(s)
    )


def _divide_by_count(total, x, axes):
    return total / max(math.prod(x.shape[a] for a in axes), 1)


def exact_reduce_mean(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    """ONNX ReduceMean: exact_sum's float64 sum divided by the count (float64), rounded once to
    the data's float type, or truncated toward zero for integer data (as np.mean's float64 mean
    cast back, which the fast variant computes). The mean of nothing is 0 (as
    runtime_support.reduce_mean)."""
    return _reduce_kernel(data, axes, keepdims, noop_with_empty_axes, after=_divide_by_count)


def exact_reduce_prod(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    """ONNX ReduceProd of floats: float64 products in _pairwise's tree over the reduced elements
    (C order), rounded once. The product of nothing is 1."""
    x = np.asarray(data)
    axes = _axes(x.ndim, axes, noop_with_empty_axes)
    if axes == ():
        return x.copy()
    values, axis = _gather(x, axes)
    if values.shape[axis]:
        product = _pairwise(values, axis, np.multiply)
    else:
        product = np.ones(np.delete(values.shape, axis))
    return _rounded(_restore(product, x.shape, axes, keepdims), x.dtype)


def exact_cumsum(x, axis, *, exclusive=0, reverse=0):
    """ONNX CumSum of floats along `axis` (an int, or a scalar or one-element array).

    Order: float64 running sums by doubling steps (Hillis-Steele): starting from the elements,
    for s = 1, 2, 4, ... < n every position i >= s adds the value at i - s of the previous step,
    s[i] = s[i] + s[i - s]; position i then holds the sum of elements 0..i in a tree of depth
    ceil(log2 n). `reverse` runs the same on the reversed axis; `exclusive` shifts the result
    one place (the first becomes 0). Rounded once to x's type."""
    x = np.asarray(x)
    axis = int(np.asarray(axis).reshape(-1)[0]) % x.ndim
    values = np.moveaxis(_float64(x), axis, -1)
    if reverse:
        values = values[..., ::-1]
    count = values.shape[-1]
    step = 1
    while step < count:
        level = np.empty(values.shape)
        level[..., :step] = values[..., :step]
        np.add(values[..., step:], values[..., :-step], out=level[..., step:])
        values = level
        step *= 2
    if exclusive and count:
        values = np.concatenate([np.zeros_like(values[..., :1]), values[..., :-1]], axis=-1)
    if reverse:
        values = values[..., ::-1]
    return _rounded(np.moveaxis(values, -1, axis), x.dtype)


def exact_cumprod(x, axis, *, exclusive=0, reverse=0):
    """ONNX CumProd of floats along `axis` (an int, or a scalar or one-element array).

    Order: sequential, in float64: p[0] = x[0], p[i] = p[i - 1] * x[i], one correctly rounded
    IEEE multiplication per step, so every p[i] is a fixed function of the input bits (no tree,
    no reassociation). numpy's multiply.accumulate is this recurrence: its inner loop takes
    (p[i - 1], x[i]) -> p[i] one element at a time (a running product cannot be vectorized along
    the axis), and elementwise multiplication is correctly rounded on every SIMD level. `reverse`
    runs the same on the reversed axis; `exclusive` shifts the result one place (the first
    becomes 1). Rounded once to x's type (float16, bfloat16 and float32 values convert to float64
    exactly, so those products carry 53 bits where the type has at most 24)."""
    x = np.asarray(x)
    axis = int(np.asarray(axis).reshape(-1)[0]) % x.ndim
    values = np.moveaxis(_float64(x), axis, -1)
    if reverse:
        values = values[..., ::-1]
    with np.errstate(all="ignore"):  # overflow to inf and 0 * inf = NaN, as IEEE defines them
        running = np.multiply.accumulate(values, axis=-1)
    if exclusive and values.shape[-1]:
        running = np.concatenate([np.ones_like(running[..., :1]), running[..., :-1]], axis=-1)
    if reverse:
        running = running[..., ::-1]
    return _rounded(np.moveaxis(running, -1, axis), x.dtype)


# --- softmax --------------------------------------------------------------------------------------


def _exponentials(x: np.ndarray, axis) -> tuple[tuple[int, ...], np.ndarray]:
    """(axes, d = x - max over axes), d in x's type: one correctly rounded subtraction (float16
    and bfloat16 subtract in float32 and round to the type, which is their correctly rounded
    difference: 24 >= 2 * 11 + 2 bits, so the double rounding is innocuous)."""
    axes = _axes(x.ndim, axis)
    if x.dtype.itemsize >= 4:  # np.max's value, without its Python wrapper
        return axes, x - np.maximum.reduce(x, axis=axes, keepdims=True)
    wide = x.astype(np.float32)
    return axes, _rounded(wide - np.max(wide, axis=axes, keepdims=True), x.dtype)


def _sum_in_type(e: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """The sum of `e` over `axes` (kept as 1) in e's type, as numpy and ml_dtypes sum that type.

    float16, float32, float64: exact_sum's float64 tree, rounded once (numpy accumulates float16
    in float32 and rounds once; a float64 sum is that wherever float32 is exact). bfloat16: one
    bfloat16 addition at a time over the reduced elements in C order, s = RN(s + e[i]), as
    ml_dtypes sums bfloat16 (no wider accumulator); each addition is float32's, rounded to
    bfloat16, which is the correctly rounded bfloat16 sum (24 >= 2 * 8 + 2)."""
    if e.dtype in _NUMPY_FLOATS or e.dtype.name != "bfloat16":  # (dtype.name is slow)
        return _rounded(_restore(_sum64(e, axes), e.shape, axes, True), e.dtype)
    values, axis = _gather(e, axes)
    values = np.moveaxis(values, axis, 0)
    total = values[0].astype(e.dtype)
    for value in values[1:]:
        total = (total.astype(np.float32) + value).astype(e.dtype)
    return _restore(total, e.shape, axes, True)


_SOFTMAX_CORE_LIMIT = 700.0  # exp_double_length's double-length range without a bias


def _double_exponentials(x: np.ndarray, axis) -> tuple[tuple[int, ...], tuple, tuple]:
    """float64 softmax's first steps, double-length: (axes, d, e) with d = d_hi + d_lo = x - max
    exactly (Knuth's two-sum; d_lo = 0 where d_hi is not finite) and e = e_hi + e_lo = exp(d)
    (exp_double_length)."""
    axes = _axes(x.ndim, axis)
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, as in the other types
        d_hi, d_lo = _two_sum(x, -np.max(x, axis=axes, keepdims=True))
    d_lo[~np.isfinite(d_hi)] = 0.0
    return axes, (d_hi, d_lo), exp_double_length(d_hi, d_lo)


def _double_sum(e_hi: np.ndarray, e_lo: np.ndarray, axes: tuple[int, ...]) -> tuple:
    """sum(e_hi + e_lo) over `axes` (kept as 1) as S_hi + S_lo: _pairwise's tree over the
    reduced elements in C order, each node (a_hi, a_lo) + (b_hi, b_lo) = (s, a_lo + b_lo + err)
    with s, err Knuth's two-sum of the heads; S_hi is then the tree's float64 sum of the heads and
    S_lo every rounding error and tail added up (for positive terms, relative error near
    n * 2**-106 + the tails' own). Renormalised at the end by Fast2Sum."""
    hi, axis = _gather(e_hi, axes)
    lo, _ = _gather(e_lo, axes)
    if axis == -1:
        hi, lo = np.moveaxis(hi, -1, 0), np.moveaxis(lo, -1, 0)
    count = hi.shape[0]
    with np.errstate(invalid="ignore"):
        while count > 1:
            half, odd = count // 2, count % 2
            total, err = _two_sum(hi[:half], hi[half : 2 * half])
            err += lo[:half]
            err += lo[half : 2 * half]
            if odd:
                total = np.concatenate([total, hi[count - 1 :]])
                err = np.concatenate([err, lo[count - 1 :]])
            hi, lo, count = total, err, half + odd
        total, err = _fast_two_sum(hi[0], lo[0])
    return _restore(total, e_hi.shape, axes, True), _restore(err, e_hi.shape, axes, True)


def _softmax64(x: np.ndarray, axis) -> np.ndarray:
    """float64 softmax, double-length (see exact_softmax)."""
    axes, (d_hi, d_lo), (e_hi, e_lo) = _double_exponentials(x, axis)
    s_hi, s_lo = _double_sum(e_hi, e_lo, axes)
    with np.errstate(invalid="ignore"):
        q, q_lo = _divide(e_hi, e_lo, s_hi, s_lo)
        result = q + q_lo
        result = np.where(np.isfinite(q), result, q)
        # d < -700: the exponential again as 2**-512 (hi + lo), both normal, the quotient in that
        # scale and one rounding by the exact scaling back (the first e_hi was rounded alone).
        far = d_hi < -_SOFTMAX_CORE_LIMIT
        if far.any():
            f_hi, f_lo = exp_double_length(d_hi[far], d_lo[far], bias=-512)
            total_hi = np.broadcast_to(s_hi, x.shape)[far]
            total_lo = np.broadcast_to(s_lo, x.shape)[far]
            f_q, f_q_lo = _divide(f_hi, f_lo, total_hi, total_lo)
            result[far] = (f_q + f_q_lo) * math.ldexp(1.0, -512)
    return _rounded(result, np.float64)


def _log_softmax64(x: np.ndarray, axis) -> np.ndarray:
    """float64 log-softmax, double-length (see exact_log_softmax)."""
    axes, (d_hi, d_lo), (e_hi, e_lo) = _double_exponentials(x, axis)
    s_hi, s_lo = _double_sum(e_hi, e_lo, axes)
    with np.errstate(all="ignore"):
        usable = np.isfinite(s_hi) & (s_hi > 0.0)
        l_hi, l_lo = _log_double(np.where(usable, s_hi, 1.0))
        l_lo += s_lo / s_hi  # log(S_hi + S_lo) = log(S_hi) + S_lo / S_hi to 2**-106
        l_hi = np.where(usable, l_hi, exact_log(s_hi))
        y, err = _two_sum(d_hi, -l_hi)
        err += d_lo
        err -= l_lo
        result = y + err
    return _rounded(np.where(np.isfinite(y), result, y), np.float64)


@kernel(exact=True)
def exact_softmax(x, axis=-1):
    """Softmax over `axis` (an int or a tuple of axes, for the 2-D coercion before opset 13).

    float16, bfloat16, float32: every step in x's type as the ONNX reference computes it (the
    half-precision backend data round each step to the type): m = max over the axis (exact);
    d = x - m; e = exact_exp(d) (the library's own, correctly rounded for float16 and bfloat16)
    in x's type; s = the sum of e (_sum_in_type: a float64 tree rounded once, bfloat16 one
    bfloat16 addition at a time); e / s in float64, rounded once to x's type (the correctly
    rounded quotient).

    float64, double-length so that the result stays within about half an ulp (rounding d to
    float64 alone would cost up to |d| / 2 ulps): d = x - m as d_hi + d_lo exactly (two-sum);
    e = exp(d_hi + d_lo) as e_hi + e_lo (exp_double_length); S = S_hi + S_lo their double-length
    sum in a fixed tree (_double_sum); the quotient q = e_hi / S_hi, its remainder
    (e_hi - q S_hi by Dekker's product, + e_lo - q S_lo) / S_hi, and q + remainder rounded once.
    Rows holding NaN or +inf give NaN, as in the other types."""
    x = np.asarray(x)
    if x.size == 0:
        return x.copy()
    if x.dtype == np.float64:
        return _softmax64(x, axis)
    axes, shifted = _exponentials(x, axis)
    powers = exact_exp(shifted)
    if x.dtype == np.float32 and x.ndim >= 2 and axes == (x.ndim - 1,):
        # _sum_in_type's value (the tree over the last axis, which _gather would only reshape)
        # without its reshaping and its NaN pass: a NaN sum makes a NaN quotient, made np.nan
        # below; a sum of at most n values of at most 1 cannot overflow
        total = _pairwise(powers, -1, np.add).astype(np.float32)[..., None]
    else:
        total = _sum_in_type(powers, axes)
    if x.dtype == np.float32:
        # float32 division is correctly rounded, and so is float64 division rounded to float32
        # (53 >= 2 * 24 + 2: the double rounding is innocuous), so one float32 division gives the
        # bits of the float64 quotient rounded once, without the three conversions.
        with np.errstate(all="ignore"):
            quotient = np.divide(powers, total, out=powers)
        if np.isnan(np.maximum.reduce(quotient, axis=None)):
            quotient[np.isnan(quotient)] = np.nan
        return quotient
    return _rounded(_float64(powers) / _float64(total), x.dtype)


@kernel(exact=True)
def exact_log_softmax(x, axis=-1):
    """LogSoftmax over `axis` (an int or a tuple of axes).

    float16, bfloat16, float32: every step in x's type as in exact_softmax: m = max over the axis
    (exact), d = x - m, s = the sum of exact_exp(d) (_sum_in_type); d - exact_log(s) in x's
    type, the difference in float64 rounded once to x's type.

    float64, double-length: d = d_hi + d_lo and S = S_hi + S_lo as in exact_softmax; log S as
    L_hi + L_lo, log(S_hi) by the double-length logarithm of float64 pow (_log_double, relative
    error near 2**-70) with S_lo / S_hi added to L_lo; then d_hi - L_hi by a two-sum, its error
    + d_lo - L_lo added, rounded once."""
    x = np.asarray(x)
    if x.size == 0:
        return x.copy()
    if x.dtype == np.float64:
        return _log_softmax64(x, axis)
    axes, shifted = _exponentials(x, axis)
    total = _sum_in_type(exact_exp(shifted), axes)
    return _rounded(_float64(shifted) - _float64(exact_log(total)), x.dtype)


# --- matrix products ------------------------------------------------------------------------------


def _slice_width(inner: int) -> int:
    """The bits b of one slice for a block of `inner` terms: inner * (2**b - 1)**2 < 2**53, so a
    block's slice products sum exactly in float64 in any order. 21 at 2048 terms, 26 at one."""
    return (53 - max(inner - 1, 0).bit_length()) // 2


def _slice_count(dtype) -> int:
    """Slices per operand: two for float32 and narrower (3 products), three for float64 (6).
    One slice (each operand rounded once to w bits of its line's scale) was the definition for
    part of session 8's history: it lost the low-power bins of real log-mel front ends, whose
    frames span several decades under filters nonzero on a few bins (docs/exact-kernels.md "The
    product's definition"). The one-slice paths stay for a caller that asks for one."""
    return 3 if np.dtype(dtype) == np.float64 else 2


@functools.lru_cache(maxsize=64)
def _pair_slice_count(a, b) -> int:
    """_slice_count of the product of dtypes a and b (numpy's result type), settled once."""
    return _slice_count(np.result_type(a, b))


def _tops(x: np.ndarray, axis: int) -> np.ndarray:
    """Per line along `axis` (kept as 1): the largest magnitude (NaN if any is NaN; 0 if none),
    as max(max x, -min x): two reductions, no array of magnitudes (the same value, up to the
    sign of a zero, which no caller reads: only its frexp exponent, 0 either way)."""
    high = np.max(x, axis=axis, keepdims=True, initial=0)
    low = np.min(x, axis=axis, keepdims=True, initial=0)
    np.negative(low, out=low)
    return np.maximum(high, low, out=high)


def _slices(y: np.ndarray, width: int, count: int, stacked=False):
    """Integer-valued float64 slices y_0, y_1, ... of float64 `y` (|y| < 2**width, consumed):
    y_0 = trunc(y), y = (y - y_0) * 2**width, y_1 = trunc(y), ..., so that y = y_0 +
    y_1 2**-width + ... up to the truncated rest, |y_s| < 2**width. A list of the slices, or with
    `stacked` one array (..., count, M, K) holding y_s at [..., s, :, :] (y is (..., M, K)), so
    that products with several slices are one product."""
    if count == 1:  # the one slice is rounded to nearest (half the error of truncation)
        np.rint(y, out=y)
        return y[..., None, :, :] if stacked else [y]
    if stacked:
        out = np.empty(y.shape[:-2] + (count,) + y.shape[-2:])
        for s in range(count - 1):
            head = np.trunc(y, out=out[..., s, :, :])
            y -= head
            y *= 2.0**width
        np.trunc(y, out=out[..., count - 1, :, :])
        return out
    slices = []
    for _ in range(count - 1):
        head = np.trunc(y)
        slices.append(head)
        y -= head
        y *= 2.0**width
    slices.append(np.trunc(y, out=y))
    return slices


def _special_values(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """C with IEEE's non-finite results where A or B (float64) hold NaN or infinities (C is the
    product of A and B with those entries zeroed).

    A result is NaN when its row of A or column of B holds a NaN, when an infinity meets a zero,
    or when products of both infinite signs occur; else +inf or -inf when some product is
    infinite; else C. The products are counted exactly (float64 sums of 0/1 indicators) over
    only the inner indices where a non-finite value occurs."""
    finite_a = np.isfinite(A).reshape(-1, A.shape[-1]).all(axis=0)
    finite_b = np.isfinite(np.moveaxis(B, -2, 0)).reshape(B.shape[-2], -1).all(axis=1)
    inner = np.flatnonzero(~(finite_a & finite_b))
    if inner.size == 0:
        return C
    a, b = A[..., inner], B[..., inner, :]

    def indicator(mask):
        return mask.astype(np.float64)

    a_pos, a_neg, b_pos, b_neg = (indicator(v) for v in (a > 0, a < 0, b > 0, b < 0))
    a_inf_pos, a_inf_neg = indicator(a == np.inf), indicator(a == -np.inf)
    b_inf_pos, b_inf_neg = indicator(b == np.inf), indicator(b == -np.inf)
    positive = a_inf_pos @ b_pos + a_inf_neg @ b_neg + a_pos @ b_inf_pos + a_neg @ b_inf_neg
    negative = a_inf_pos @ b_neg + a_inf_neg @ b_pos + a_pos @ b_inf_neg + a_neg @ b_inf_pos
    invalid = (a_inf_pos + a_inf_neg) @ indicator(b == 0) + indicator(a == 0) @ (
        b_inf_pos + b_inf_neg
    )
    nan = (
        np.isnan(a).any(axis=-1)[..., :, None]
        | np.isnan(b).any(axis=-2)[..., None, :]
        | (invalid > 0)
        | ((positive > 0) & (negative > 0))
    )
    C = np.where(positive > 0, np.inf, C)
    C = np.where(negative > 0, -np.inf, C)
    return np.where(nan, np.nan, C)


# Slices of constant operands (weights: a MatMul's or Gemm's right-hand matrix, a Conv's filters),
# per owning array: computing them is most of a small product's cost, and they depend only on the
# operand's bits, the side it is on, the slice width and count. An entry lives as long as the array
# that owns the memory (a weak reference removes it).
_PREPARED: dict[int, tuple[weakref.ref, dict]] = {}


def _inner_block(x: np.ndarray, axis: int, start: int) -> np.ndarray:
    """Inner indices start .. start + MATMUL_BLOCK of x along `axis` (-1: A's, -2: B's)."""
    block = slice(start, start + MATMUL_BLOCK)
    return x[..., block] if axis == -1 else x[..., block, :]


# Operands up to this many elements find their line scales through an array of magnitudes (two
# numpy calls, where _tops makes four): the calls' fixed cost is what small products pay.
_SMALL_OPERAND = 1 << 16


# The same entries found by the array object the caller was given (a module's weight, whose
# transposed or reshaped view is a new object at every call), keyed by (id(owner), the caller's
# tag for how x derives from it, axis, width, count) and checked against the owner's shape,
# strides and dtype (which numpy lets one reassign on the same object): one dict lookup instead of the walk
# to the memory's owner and the address of x, about 3 us of a batch-1 product's 10 us of fixed
# cost. An entry is made only when x's memory is immutable, and lives as long as the owner.
_BY_OWNER: dict[tuple, tuple] = {}


def _owner_entry(owner: tuple | None, axis: int, width: int, count: int):
    """The _BY_OWNER key and the prepared slices found under it (None if none)."""
    if owner is None:
        return None, None
    array, tag = owner
    key = (id(array), tag, axis, width, count)
    entry = _BY_OWNER.get(key)
    if (
        entry is not None
        and entry[0]() is array
        and entry[1] == (array.shape, array.strides, array.dtype)
    ):
        return key, entry[2]
    return key, None


def _prepared_slices(x: np.ndarray, axis: int, width: int, count: int, owner=None):
    """(per-line exponents, whether x is all finite, the slices of each inner block, and for one
    slice the per-line scales 2**(exponent - width) as float64) of one operand of a product:
    axis=-1 for the left-hand one (its rows, exponents e_i), axis=-2 for the right-hand one (its
    columns, f_j). Non-finite values are zeroed before splitting. Cached when x's memory can never
    change (_immutable_root); `owner`, (array, tag), names the array x was made from by a fixed
    transformation the tag names (x = array.T for tag "T"), under which the entry is found too."""
    owner_key, found = _owner_entry(owner, axis, width, count)
    if found is not None:
        return found
    prepared = _prepared_by_memory(x, axis, width, count)
    if owner_key is not None and _immutable_root(x) is not None:
        array = owner[0]
        forget = lambda _, key=owner_key: _BY_OWNER.pop(key, None)  # noqa: E731
        layout = (array.shape, array.strides, array.dtype)
        _BY_OWNER[owner_key] = (weakref.ref(array, forget), layout, prepared)
    return prepared


def _prepared_by_memory(x: np.ndarray, axis: int, width: int, count: int):
    """_prepared_slices without the owner: cached by the memory that owns x when it is
    immutable."""
    root = _immutable_root(x)
    key = None
    if root is not None:
        address = x.__array_interface__["data"][0]
        key = (address, x.shape, x.strides, x.dtype.str, axis, width, count)
        entry = _PREPARED.get(id(root))
        if entry is not None and entry[0]() is root and key in entry[1]:
            return entry[1][key]
    elif axis == -1 and x.ndim == 2 and x.shape[0] == 1 and x.dtype.itemsize <= 4:
        prepared = _one_row(x, width, count)
        if prepared is not None:
            return prepared
    if x.size <= _SMALL_OPERAND:  # the same largest magnitude (NaN if any), up to a zero's sign
        top = np.maximum.reduce(np.abs(x), axis=axis, keepdims=True, initial=0)
    else:
        top = _tops(x, axis)
    finite = math.isfinite(np.maximum.reduce(top, axis=None, initial=0))  # NaN, inf: False
    if not finite:
        x = np.where(np.isfinite(x), x, 0)
        top = _tops(x, axis)
    exponent = np.frexp(top)[1]  # max|x| < 2**exponent per line
    prepared = _split_blocks(x, axis, exponent, finite, width, count)
    if key is not None:
        if count == 2 and prepared[3] is not None:  # kept: worth folding the scales in once
            prepared = _folded(prepared, axis, width)
        root_id = id(root)
        entry = _PREPARED.get(root_id)
        if entry is None or entry[0]() is not root:
            forget = lambda _, root_id=root_id: _PREPARED.pop(root_id, None)  # noqa: E731
            entry = _PREPARED[root_id] = (weakref.ref(root, forget), {})
        entry[1][key] = prepared
    return prepared


def _one_row(x, width, count):
    """_prepared_by_memory's entry for one row of float32 or narrower that is not cached (the
    activation of a batch-1 product), or None when it holds NaN or an infinity: the values of
    _split_blocks with the line's largest magnitude, exponent and scales as Python numbers (the
    same numbers: math.frexp and math.ldexp of the float32 value converted exactly) instead of
    five numpy calls on one-element arrays."""
    top = float(np.maximum.reduce(np.abs(x), axis=None, initial=0))
    if not math.isfinite(top):
        return None
    exponent = math.frexp(top)[1]  # 0 for a zero row, as np.frexp
    scaled = x.astype(np.float64)
    scaled *= math.ldexp(1.0, width - exponent)  # exact, as in _split_blocks
    blocks = [
        _slices(_inner_block(scaled, -1, start), width, count, True)
        for start in range(0, max(x.shape[-1], 1), MATMUL_BLOCK)
    ]
    line = np.array([[exponent]], dtype=np.int32)  # as np.frexp's, for a float64 partner
    return (line, True, blocks, math.ldexp(2.0**-width, exponent), False)


def _split_blocks(x, axis, exponent, finite, width, count):
    """_prepared_by_memory's entry for several slices or blocks: the slices of ldexp(x, width -
    exponent) per inner block."""
    if x.dtype.itemsize <= 4:
        # 2**(exponent - width), the line scale of float32 and narrower (whose products are
        # scaled by it in place). x * 2**(width - exponent) is ldexp(x, width - exponent): the
        # reciprocal of a normal power of two is exact, and so is the product (|x| < 2**exponent,
        # a float32 or narrower value: a normal float64 below 2**width). Converted first, then
        # multiplied in place (a multiplication that converts as it goes is slower; ldexp, the
        # method before, takes about as long: one method for every slice count).
        scale = np.ldexp(2.0**-width, exponent)
        scaled = x.astype(np.float64)
        np.multiply(scaled, 1.0 / scale, out=scaled)
    else:  # float64 exponents reach +-1074 (the products would leave the normal range)
        scale = None
        scaled = np.ldexp(x, width - exponent, dtype=np.float64)
    blocks = [
        _slices(_inner_block(scaled, axis, start), width, count, axis == -1)
        for start in range(0, max(x.shape[axis], 1), MATMUL_BLOCK)
    ]
    return (exponent, finite, blocks, scale, False)


def _folded(prepared, axis: int, width: int):
    """A kept two-slice entry of float32 or narrower with its line scales multiplied into the
    slices, which _matmul64 then leaves out of the product's combination (the last element,
    True, says so). Left-hand (axis -1): each block is (the stack [A_0 s; A_1 s 2**-w], A_0 s
    2**-w) for the products with B_0 and B_1, s the rows' scales, so that the combination
    needs neither the product by 2**-w nor the one by the row scales; right-hand: the slices
    [B_0 s, B_1 s], s the columns' scales (the product by the column scales left out).

    The same bits: every value is a slice times a power of two, so each BLAS entry is that
    power of two times the exact integer sum (all partial sums are such multiples, below 2**53
    times it), and each rounded addition of the combination adds the same numbers times the
    same power of two, whose rounding scales with them: the line scales lie in [2**-174,
    2**108], so no value leaves the normal range (the smallest nonzero is 2**-200, the largest
    below 2**170)."""
    exponent, finite, blocks, scale, _ = prepared
    if axis == -1:
        low = scale * 2.0**-width  # exact: a power of two
        folded = []
        for stack in blocks:
            head = stack[..., 0, :, :] * scale
            folded.append(
                (np.stack([head, stack[..., 1, :, :] * low], axis=-3), head * 2.0**-width)
            )
    else:
        folded = [[block * scale for block in slices] for slices in blocks]
    return (exponent, finite, folded, scale, True)


def _matmul64(A, B, a_owner=None, b_owner=None) -> np.ndarray:
    """The float64 value exact_matmul rounds (see there), with numpy's matmul shapes; `a_owner`,
    `b_owner`: (array, tag) for _prepared_slices, when A or B is a fixed view of an array the
    caller holds (default: B itself, when it is an ndarray)."""
    if b_owner is None and isinstance(B, np.ndarray):
        b_owner = (B, "")
    A, B = np.asarray(A), np.asarray(B)
    vector_a, vector_b = A.ndim == 1, B.ndim == 1
    if vector_a:
        A = A[None, :]
    if vector_b:
        B = B[:, None]
    if A.shape[-1] != B.shape[-2]:
        raise ValueError(f"matmul: inner dimensions differ, {A.shape} and {B.shape}")
    # Operands in a numpy float type that holds them exactly (bfloat16 as float32).
    a = A if A.dtype.kind == "f" else A.astype(np.float32)
    b = B if B.dtype.kind == "f" else B.astype(np.float32)
    inner = a.shape[-1]
    width = _slice_width(min(inner, MATMUL_BLOCK))
    count = _pair_slice_count(A.dtype, B.dtype)
    if a is not A or vector_a:  # an owner's tag names the view given, not this conversion
        a_owner = None
    if b is not B or vector_b:
        b_owner = None
    row_exp, finite_a, a_blocks, row_scale, a_folded = _prepared_slices(
        a, -1, width, count, a_owner
    )
    col_exp, finite_b, b_blocks, col_scale, b_folded = _prepared_slices(
        b, -2, width, count, b_owner
    )
    finite = finite_a and finite_b
    total = None
    rows = a.shape[-2]
    for a_stack, b_slices in zip(a_blocks, b_blocks):
        if count == 1:  # float32 and narrower: the block's one exact product
            if total is None:
                total = a_stack[..., 0, :, :] @ b_slices[0]
            else:
                total += a_stack[..., 0, :, :] @ b_slices[0]
            continue
        if count == 2:  # float32 and narrower: the loops below for two slices, written out
            a_stack, a_head = a_stack if a_folded else (a_stack, a_stack[..., 0, :, :])
            both = a_stack.reshape(a_stack.shape[:-3] + (2 * rows, a_stack.shape[-1]))
            both = both @ b_slices[0]  # A_0 @ B_0 over A_1 @ B_0
            value = a_head @ b_slices[1]  # A_0 @ B_1
            value += both[..., rows:, :]  # level 1 in increasing s
            if not a_folded:  # (folded: A_1 and the A_0 of this product carry the 2**-w)
                value *= 2.0**-width
            head = both[..., :rows, :]
            head += value
            if total is None:
                total = head
            else:
                total += head
            continue
        # P[t][..., s, :, :] = A_s @ B_t for s + t < count: one BLAS product per slice of B, with
        # A's slices stacked as rows (B_t is read once; every entry is exact either way).
        P = []
        for t in range(count):
            left = a_stack[..., : count - t, :, :]
            left = left.reshape(left.shape[:-3] + ((count - t) * rows, left.shape[-1]))
            product = left @ b_slices[t]
            P.append(product.reshape(product.shape[:-2] + (count - t, rows, product.shape[-1])))
        # Levels d = s + t < count, each the sum of its products in increasing s; combined by
        # Horner from the deepest level: v = (... (L[count-1] * 2**-w + L[count-2]) ...) + L[0].
        value = None
        for level in reversed(range(count)):
            products = P[level][..., 0, :, :]  # A_0 @ B_level, used nowhere else
            for s in range(1, level + 1):
                products += P[level - s][..., s, :, :]
            if value is not None:
                value *= 2.0**-width  # exact (a power of two), in place: value is not used again
                products += value
            value = products
        if total is None:
            total = value
        else:
            total += value
    if a.dtype.itemsize <= 4 and b.dtype.itemsize <= 4:
        # float32 and narrower: a nonzero |total| is at least 2**-w (integers, the deeper
        # slice levels scaled by 2**-w) and
        # far below 2**900, the line exponents lie in [-148, 129], so both products by powers of
        # two stay normal: exact, the bits of the single ldexp, without an (M, N) array of
        # exponents.
        if not a_folded:
            total *= row_scale
        if not b_folded:
            total *= col_scale
        C = total
    else:  # float64 exponents reach +-1074: one ldexp, which rounds only a subnormal result
        C = np.ldexp(total, row_exp + col_exp - 2 * width)
    if not finite:
        C = _special_values(_float64(A), _float64(B), C)
    if vector_a:
        C = C[..., 0, :]
    if vector_b:
        C = C[..., 0]
    return C


def exact_matmul(A, B):
    """The matrix product with numpy's matmul shapes (1-D operands, broadcast batch dims),
    rounded to the operands' float type; integers go to np.matmul (integer arithmetic).

    What is computed, for float operands: per row i of A the power of two 2**e_i just above its
    largest finite magnitude, per column j of B likewise 2**f_j; w = (53 - ceil(log2 k)) // 2 for
    blocks of k = min(K, 2048) terms (w >= 21).

    float32, float16, bfloat16 (one slice): A's row is scaled to 2**w * a / 2**e_i and rounded to
    the nearest integer (half to even), A_0; B's column likewise, B_0 (|A_0|, |B_0| <= 2**w).
    For each block of 2048 inner indices (in order) BLAS computes A_0 @ B_0: a sum of at most
    2048 integers of magnitude at most 2**(2w), every partial sum an integer of magnitude at most
    2**53, hence exact in any order. Blocks are added in order in float64; the sum is scaled by
    2**(e_i + f_j - 2w) and rounded once to the output type.

    float64 (three slices): A's scaled row is cut into S = 3 integer-valued slices of w bits,
    A = sum_s A_s 2**(-w s) (truncated toward zero after S slices); B likewise. Per block the
    slice products A_s @ B_t with s + t < S run by BLAS (each exact as above); the products of one
    level s + t are added in increasing s, levels are combined by Horner from the deepest, blocks
    are added in order, all in float64, and the sum is scaled by 2**(e_i + f_j - 2w) (ldexp).

    Accuracy: float32 and narrower, |C_ij - sum_k a_ik b_kj| <= K 2**(e_i + f_j) (2**-w +
    blocks 2**-53) plus half an ulp of the output (each term's error is at most 2**(e_i + f_j -
    w): rounding each operand to w bits of its row's or column's scale); the terms' errors are
    independent, so the typical error grows like sqrt(K), as a float32 BLAS's accumulation error
    does. float64: <= K 2**(e_i + f_j) (5 2**(-3w) + (blocks + 2) 2**-53) plus half an ulp.
    Elements far below their row's (column's) largest one lose their low bits; the result is +0.0
    when it is zero.

    Special values: infinities and NaNs are zeroed for the computation above; then a result is
    NaN where its row of A or column of B holds a NaN, an infinity meets a zero, or infinite
    products of both signs occur; else +-inf where a product is infinite (the finite terms do not
    matter, as in exact arithmetic); a finite sum too large for the output type gives +-inf."""
    A, B = np.asarray(A), np.asarray(B)
    if A.dtype.kind in "biu" and B.dtype.kind in "biu":
        return np.matmul(A, B)
    return _rounded(_matmul64(A, B), A.dtype)


def exact_gemm(A, B, C=None, *, alpha=1.0, beta=1.0, transA=0, transB=0):
    """ONNX Gemm: alpha * A' @ B' + beta * C, A' = A.T if transA, B' = B.T if transB.

    Order: P = A' @ B' as exact_matmul computes it, kept in float64; then alpha * P, then
    (beta * C) added, C broadcast to P's shape, all in float64 (alpha and beta, float32
    attributes, rounded to float32 first); rounded once to A's (float) type. Integers (operands
    whose type the compiler did not know, as in a Scan body) as the fast variant computes them."""
    A, B = np.asarray(A), np.asarray(B)
    a = A.T if transA else A
    b = B.T if transB else B
    if A.dtype.kind in "iu":  # integer arithmetic is exact already (the fast rule's formula)
        product = a @ b
        if alpha != 1.0:
            product = A.dtype.type(alpha) * product
        if C is None or beta == 0.0:
            return product
        return product + (C if beta == 1.0 else A.dtype.type(beta) * C)
    result = _matmul64(a, b, (A, "T") if transA else None, (B, "T" if transB else ""))
    if alpha != 1.0:  # a product by 1.0 changes no bit (NaNs are made np.nan at the end)
        result *= float(np.float32(alpha))
    if C is not None:  # C broadcasts to the product's (M, N): in place into the fresh product
        C = np.asarray(C)
        if beta == 1.0 and C.dtype in _NUMPY_FLOATS:  # the ufunc's conversion is exact too
            np.add(result, C, out=result)
        else:
            result += _float64(C) if beta == 1.0 else _float64(C) * float(np.float32(beta))
    return _rounded(result, A.dtype)


# --- convolution ----------------------------------------------------------------------------------


# A Conv whose groups have at most DIRECT_MAPS output maps each and at most DIRECT_TERMS terms per
# output (C/group * prod(kernel)), on float32 or narrower data, is summed directly (exact_conv).
DIRECT_MAPS = 4
DIRECT_TERMS = 1024


@functools.lru_cache(maxsize=256)
def _conv_geometry(x_shape, w_shape, itemsize, pads, strides, dilations, auto_pad):
    """exact_conv's shapes, settled once per geometry (the arguments are hashable: a node passes
    the same ones at every run): (strides, dilations, explicit pads, output shape, and for
    im2col's strided copy with pads >= 0 the padded shape, the input's place in it, and the
    copied view's shape and byte strides, else None)."""
    from runtime_support._windows import settled_pads, window_positions

    kernel_shape = w_shape[2:]
    rank = len(kernel_shape)
    strides = tuple(strides or (1,) * rank)
    dilations = tuple(dilations or (1,) * rank)
    pads = tuple(settled_pads(x_shape[2:], kernel_shape, strides, dilations, pads, auto_pad))
    padded = tuple(n + pads[i] + pads[i + rank] for i, n in enumerate(x_shape[2:]))
    out_shape = window_positions(padded, kernel_shape, strides, dilations)
    copy = None
    if min(pads, default=0) >= 0 and min(out_shape, default=1) > 0 and math.prod(x_shape) > 0:
        # the padded input is C-contiguous: its byte strides follow from the shape
        step = [itemsize]
        for n in reversed(x_shape[1:2] + padded):
            step.insert(0, step[0] * n)
        sample, channel, spatial = step[0], step[1], step[2:]
        taps = tuple(d * s for d, s in zip(dilations, spatial))
        moves = tuple(t * s for t, s in zip(strides, spatial))
        view_shape = (x_shape[1],) + tuple(kernel_shape) + (x_shape[0],) + tuple(out_shape)
        interior = (slice(None), slice(None)) + tuple(
            slice(b, b + n) for b, n in zip(pads[:rank], x_shape[2:])
        )
        copy = (x_shape[:2] + padded, interior, view_shape, (channel,) + taps + (sample,) + moves)
    return strides, dilations, pads, out_shape, copy


def _columns(X, copy, group, kernel_size) -> np.ndarray:
    """im2col's matrix (G, C/G * prod(kernel), N * prod(out)) of X (N, C, *in), `copy` from
    _conv_geometry: rows over (input channel, kernel tap) in C order, columns over (sample,
    output position), padding reading 0. One C-order copy of a strided view (C, *kernel, N, *out)
    of the padded input, whose innermost axis runs along an output row: numpy copies it a row at
    a time."""
    from runtime_support._limits import check_allocation

    padded_shape, interior, view_shape, view_strides = copy
    if padded_shape == X.shape:
        padded = np.ascontiguousarray(X)
    else:
        check_allocation(padded_shape, X.dtype, "padded input")  # pads can be absurd values
        padded = np.zeros(padded_shape, X.dtype)
        padded[interior] = X
    view = np.ndarray(view_shape, padded.dtype, buffer=padded, strides=view_strides)
    return view.reshape(group, X.shape[1] // group * kernel_size, -1)


def _hashable(value):
    """A tuple for a list or array argument (None and tuples as they are)."""
    return value if value is None or type(value) is tuple else tuple(np.asarray(value).tolist())


def _direct_conv64(X, W, pads, strides, dilations, group) -> np.ndarray:
    """exact_conv's direct sum (see there) in float64, shape (N, M, *out) (a view)."""
    from runtime_support._windows import crop_grid, flat_taps

    batch, channels = X.shape[:2]
    maps, kernel_shape = W.shape[0], W.shape[2:]
    per_group, maps_per_group = channels // group, maps // group
    kernel_size = math.prod(kernel_shape)
    x = X if X.dtype.kind == "f" else X.astype(np.float32)  # bfloat16: exactly, as float32
    # One contiguous (N, C, V) row per tap on flat_taps' grid, already float64 (exact).
    views, grid, out = flat_taps(x, pads, 0, kernel_shape, strides, dilations, dtype=np.float64)
    size = math.prod(grid)
    # weights[c, t]: (G, M/G, 1), tap t of input channel c of each group, for every map
    weights = _float64(W).reshape(group, maps_per_group, per_group, kernel_size)
    weights = weights.transpose(2, 3, 0, 1)[..., None]
    Y = np.zeros((batch, group, maps_per_group, size))
    term = np.empty_like(Y)
    first = True
    with np.errstate(invalid="ignore"):  # inf * 0 and inf - inf give NaN, as IEEE defines them
        for c in range(per_group):
            for t, view in enumerate(views):
                operand = view.reshape(batch, group, per_group, size)[:, :, c, None, :]
                if first:  # the sum starts with the first product, not with 0 + it
                    np.multiply(operand, weights[c, t], out=Y)
                    first = False
                else:
                    np.multiply(operand, weights[c, t], out=term)
                    Y += term
    return crop_grid(Y.reshape(batch, maps, size), grid, out)


@kernel(exact=True)
def exact_conv(
    X, W, B=None, *, pads=None, strides=None, dilations=None, group=1, auto_pad="NOTSET"
):
    """ONNX Conv (the arguments of runtime_support.conv): X (N, C, *in) with W (M, C/group, *k).

    Two methods, chosen by the shapes and the type alone (so always the same one for a node):

    - Direct sum, when X is float32, float16 or bfloat16, each group has at most DIRECT_MAPS (4)
      output maps and each output sums at most DIRECT_TERMS (1024) products (K = C/group *
      prod(k)): depthwise convolutions and other small-reduction ones. Each product w * x of two
      float32 (or narrower) values is exact in float64 (24 + 24 bits <= 53). Per output element
      the K products are added in float64 one at a time, s = p_0, s = s + p_1, ..., in C order
      of (input channel of the group, kernel tap), padding contributing its zeros like any
      value; the bias is added last in float64; rounded once to X's type. Every step is one
      correctly rounded elementwise IEEE operation, so the bits are the same everywhere.
      Accuracy: |error| <= (K - 1) * 2**-53 * sum |w x| before the final rounding (the sum is
      not always exact: the products' exponents may spread beyond float64's 53 bits).
      Non-finite values follow IEEE arithmetic (inf * 0 is NaN, inf - inf is NaN).
    - im2col otherwise: for each group g, the windows become a matrix (C/group * prod(k),
      N * prod(out)) whose rows run over (input channel, kernel tap) in C order, and the filters
      a matrix (M/group, C/group * prod(k)); the product is exact_matmul's float64 value (each
      output position is one column, so its scale is that of its window); the bias B is added in
      float64; rounded once to X's type. Accuracy: exact_matmul's, with K = C/group * prod(k).
      Constant filters (read-only weights) have their slices cached as exact_matmul caches a
      constant operand."""
    from runtime_support._windows import pad_spatial, window_view

    X, W = np.asarray(X), np.asarray(W)
    batch, channels = X.shape[:2]
    maps = W.shape[0]
    kernel_shape = W.shape[2:]
    rank = len(kernel_shape)
    strides, dilations, pads, out_shape, copy = _conv_geometry(
        X.shape,
        W.shape,
        X.dtype.itemsize,
        _hashable(pads),
        _hashable(strides),
        _hashable(dilations),
        auto_pad,
    )
    pads = list(pads)
    kernel_size = math.prod(kernel_shape)
    per_group = channels // group
    narrow = X.dtype.itemsize <= 4 and W.dtype.itemsize <= 4
    if narrow and maps // group <= DIRECT_MAPS and per_group * kernel_size <= DIRECT_TERMS:
        Y = _direct_conv64(X, W, pads, strides, dilations, group)
        if B is not None:
            Y += _float64(B).reshape((maps,) + (1,) * rank)
        return _rounded(Y, X.dtype)
    out_size = math.prod(out_shape)
    if copy is not None:
        # the transposing copy of the windows view below runs one short loop per window (conv1
        # of the example model, 3 x 32 x 32: 57 us), a gather through an index 22 us, this 11
        columns = _columns(X, copy, group, kernel_size)
    else:
        windows = window_view(pad_spatial(X, pads, 0), kernel_shape, strides, dilations)
        # (N, G, C/G, O, K) -> (G, C/G, K, N, O) -> (G, C/G * K, N * O)
        columns = windows.reshape(batch, group, per_group, out_size, kernel_size)
        columns = columns.transpose(1, 2, 4, 0, 3).reshape(group, per_group * kernel_size, -1)
    filters = W.reshape(group, maps // group, per_group * kernel_size)
    Y = _matmul64(filters, columns, (W, ("conv", group))).reshape(maps, batch, out_size)
    if B is not None:  # in place: the product is a fresh array
        B = np.asarray(B)
        np.add(Y, (B if B.dtype in _NUMPY_FLOATS else _float64(B)).reshape(maps, 1, 1), out=Y)
    Y = Y.transpose(1, 0, 2)
    return _rounded(Y.reshape((batch, maps) + out_shape), X.dtype)


# --- Einsum and Det -------------------------------------------------------------------------------


def _einsum_terms(equation: str, operands) -> tuple[list[list], list]:
    """Each operand's labels and the output's: letters as str, the ellipsis's dims as ints
    (right-aligned, 0 the outermost of the broadcast ellipsis). Without '->', numpy's implicit
    output: the ellipsis, then the letters used exactly once, sorted."""
    inputs, arrow, output = equation.replace(" ", "").partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: {equation!r} names {len(terms)} operands, given {len(operands)}")
    spans = [x.ndim - len(t.replace("...", "")) for t, x in zip(terms, operands) if "..." in t]
    rank = max(spans, default=0)

    def labels(term: str, span: int) -> list:
        head, dots, tail = term.partition("...")
        middle = list(range(rank - span, rank)) if dots else []
        return list(head) + middle + list(tail)

    inputs = [
        labels(t, x.ndim - len(t.replace("...", "")) if "..." in t else 0)
        for t, x in zip(terms, operands)
    ]
    if arrow:
        return inputs, labels(output, rank)
    letters = [label for term in inputs for label in term if isinstance(label, str)]
    once = sorted(label for label in set(letters) if letters.count(label) == 1)
    return inputs, list(range(rank)) + once


def _diagonals(x: np.ndarray, labels: list) -> tuple[np.ndarray, list]:
    """x with each repeated label reduced to its diagonal (data movement), and its labels."""
    labels = list(labels)
    for label in dict.fromkeys(labels):
        while labels.count(label) > 1:
            first = labels.index(label)
            second = labels.index(label, first + 1)
            x = np.diagonal(x, axis1=first, axis2=second)  # the diagonal becomes the last axis
            labels = [l for i, l in enumerate(labels) if i not in (first, second)] + [label]
    return x, labels


def _sum_out(x: np.ndarray, labels: list, keep) -> tuple[np.ndarray, list]:
    """x summed (exact_sum, rounded to x's type) over the labels not in `keep`."""
    axes = tuple(i for i, label in enumerate(labels) if label not in keep)
    if not axes:
        return x, labels
    return exact_sum(x, axis=axes), [label for label in labels if label in keep]


def _arranged(x: np.ndarray, labels: list, batch: list, first: list, second: list, sizes: dict):
    """x transposed to batch + first + second, its size-1 dims of `first` and `second` broadcast
    to the labels' sizes (batch dims are left to matmul's broadcasting)."""
    order = batch + first + second
    x = x.transpose([labels.index(l) for l in order])
    return np.broadcast_to(x, x.shape[: len(batch)] + tuple(sizes[l] for l in first + second))


def exact_einsum(equation: str, *operands):
    """ONNX Einsum (numpy's einsum notation, with '...' and the implicit output) of float operands
    (integers, whose type the compiler may not know in a Scan body, by numpy's einsum: exact).

    Order: repeated labels within an operand become its diagonal (data movement). Then, from the
    left, each operand is folded into the running result: first every label that neither the
    running result's partner, a later operand nor the output uses is summed out (exact_sum,
    rounded to the type); then the two are contracted by exact_matmul, rounded to the type, with
    the labels both share and something later uses as batch dims, the other shared labels
    flattened (in the running result's order) into the inner dimension, and each side's own
    labels as the rows and columns. Size-1 dims broadcast. Last, labels the output lacks are
    summed out and the result is transposed to the output's order."""
    operands = [np.asarray(x) for x in operands]
    if operands and operands[0].dtype.kind in "iub":  # integer sums are exact in any order
        return np.einsum(equation, *operands, optimize=True)
    terms, output = _einsum_terms(equation, operands)
    pairs = [_diagonals(x, t) for x, t in zip(operands, terms)]
    sizes = {}
    for x, labels in pairs:
        for label, size in zip(labels, x.shape):
            sizes[label] = size if sizes.get(label, 1) == 1 else sizes[label]
    result, labels = pairs[0]
    for index in range(1, len(pairs) + 1):
        later = set(output).union(*(t for _, t in pairs[index + 1 :]))
        if index == len(pairs):
            result, labels = _sum_out(result, labels, set(output))
            break
        x, x_labels = pairs[index]
        result, labels = _sum_out(result, labels, later | set(x_labels))
        x, x_labels = _sum_out(x, x_labels, later | set(labels))
        batch = [l for l in labels if l in x_labels and l in later]
        inner = [l for l in labels if l in x_labels and l not in later]
        rows = [l for l in labels if l not in x_labels]
        columns = [l for l in x_labels if l not in labels]
        depth = math.prod(sizes[l] for l in inner)
        left = _arranged(result, labels, batch, rows, inner, sizes)
        right = _arranged(x, x_labels, batch, inner, columns, sizes)
        row_shape = left.shape[len(batch) : len(batch) + len(rows)]
        column_shape = right.shape[len(batch) + len(inner) :]
        left = left.reshape(left.shape[: len(batch)] + (math.prod(row_shape), depth))
        right = right.reshape(right.shape[: len(batch)] + (depth, math.prod(column_shape)))
        product = exact_matmul(left, right)
        result = product.reshape(product.shape[:-2] + row_shape + column_shape)
        labels = batch + rows + columns
    return result.transpose([labels.index(l) for l in output]).copy()


def exact_det(X):
    """ONNX Det of floats: the determinant of each (..., n, n) matrix by Gaussian elimination with
    partial pivoting, in float64, in a fixed order.

    Order: for k = 0..n-1: the pivot row is the first row r >= k with the largest |a[r, k]|
    (NaN counts as infinite); rows k and r swap (a swap negates the determinant); det = det *
    a[k, k]; for each row i > k, l = a[i, k] / a[k, k] and a[i, j] = a[i, j] - l * a[k, j] for
    j > k (each one IEEE operation; a zero pivot column leaves the rows as they are).
    det starts at 1 (the sign of the swaps folded in as it goes) and is rounded once to X's type."""
    X = np.asarray(X)
    a = _float64(X).copy()
    n = a.shape[-1]
    batch = a.shape[:-2]
    det = np.ones(batch)
    flat = a.reshape((math.prod(batch), n, n))
    det_flat = det.reshape(-1)
    positions = np.arange(flat.shape[0])
    for k in range(n):
        column = np.abs(flat[:, k:, k])
        pivot = k + np.argmax(np.where(np.isnan(column), np.inf, column), axis=1)
        swapped = pivot != k
        rows_k = flat[positions, k].copy()
        flat[positions, k] = flat[positions, pivot]
        flat[positions, pivot] = rows_k
        det_flat[:] = np.where(swapped, -det_flat, det_flat) * flat[:, k, k]
        diagonal = flat[:, k, k]
        safe = np.where(diagonal == 0, 1.0, diagonal)
        factors = flat[:, k + 1 :, k] / safe[:, None]
        flat[:, k + 1 :, k + 1 :] -= factors[:, :, None] * flat[:, k, None, k + 1 :]
    return _rounded(det_flat.reshape(batch), X.dtype)
