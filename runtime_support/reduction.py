"""Reduction kernels: the Reduce* operators with axes known only at run time, and the reductions
numpy has no single function for (log-sum-exp, ArgMax/ArgMin of the last extreme, exclusive or
reversed cumulative sums and products, TopK).

Conventions, shared with the code the compiler emits when the axes are known at compile time:
- float16 and bfloat16 accumulate in float32 and round back once at the end;
- integers accumulate in their own type (wrapping), not in numpy's widened one; a float step
  (mean, sqrt, log) truncates back to the integer type;
- reducing nothing gives the reduction's identity: 0 for the sums (and for the mean, as
  onnxruntime does), 1 for the product, the lowest/highest value of the type for max/min, -inf for
  LogSum and LogSumExp;
- `noop_with_empty_axes` with empty axes reduces nothing but keeps the elementwise part
  (ReduceSumSquare squares, ReduceL1 takes the absolute value, ReduceLogSum the log).
"""

from __future__ import annotations

import numpy as np

from runtime_support.exact import exact_reduce_sum
from runtime_support.exact_math import exact_exp, exact_log

__all__ = [
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "exact_reduce_log_sum",
    "exact_reduce_log_sum_exp",
    "highest",
    "lowest",
    "reduce_l1",
    "reduce_l2",
    "reduce_log_sum",
    "reduce_log_sum_exp",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
    "reduce_sum_square",
    "top_k",
]


def lowest(dtype: np.dtype):
    """The identity of max over `dtype`: what the maximum of nothing is."""
    if dtype.kind == "b":
        return False
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return -np.inf


def highest(dtype: np.dtype):
    """The identity of min over `dtype`: what the minimum of nothing is."""
    if dtype.kind == "b":
        return True
    if dtype.kind in "iu":
        return np.iinfo(dtype).max
    return np.inf


def _widened(data: np.ndarray) -> np.ndarray:
    """`data` in the type its arithmetic runs in: float32 for float16 and bfloat16."""
    half = data.dtype.itemsize == 2 and data.dtype.kind in "fV"  # bfloat16's kind is "V"
    return data.astype(np.float32) if half else data


def _reduced_axes(data: np.ndarray, axes, noop_with_empty_axes) -> tuple[int, ...] | None:
    """The sorted non-negative axes to reduce: () reduces nothing, None every axis."""
    if axes is None or np.asarray(axes).size == 0:
        return () if noop_with_empty_axes else None
    return tuple(sorted(int(a) % data.ndim for a in np.asarray(axes).reshape(-1)))


def _reduce(reduce, data, axes, keepdims, noop_with_empty_axes, before=None, after=None):
    """after(reduce(before(data))) over `axes`, in the accumulation type, returned in data's."""
    values = _widened(data)
    if before is not None:
        values = before(values)
    dtype = values.dtype if values.dtype.kind in "iu" else None  # numpy widens small integers
    axes = _reduced_axes(data, axes, noop_with_empty_axes)
    values = reduce(values, axis=axes, keepdims=bool(keepdims), dtype=dtype)
    if after is not None:
        values = after(values)
    return np.asarray(values).astype(data.dtype, copy=False)


def _mean(values, axis, keepdims, dtype):
    """np.mean, except that the mean of nothing is 0 (onnxruntime) rather than NaN. Integers
    are summed in float64, as np.mean sums them."""
    total = np.sum(
        values, axis=axis, keepdims=keepdims, dtype=None if dtype is None else np.float64
    )
    return total / max(values.size // max(np.size(total), 1), 1)


def reduce_sum(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return _reduce(np.sum, data, axes, keepdims, noop_with_empty_axes)


def reduce_sum_square(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return _reduce(np.sum, data, axes, keepdims, noop_with_empty_axes, before=np.square)


def reduce_l1(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return _reduce(np.sum, data, axes, keepdims, noop_with_empty_axes, before=np.abs)


def reduce_l2(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return _reduce(np.sum, data, axes, keepdims, noop_with_empty_axes, np.square, np.sqrt)


def reduce_log_sum(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return _reduce(np.sum, data, axes, keepdims, noop_with_empty_axes, after=np.log)


def reduce_prod(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return _reduce(np.prod, data, axes, keepdims, noop_with_empty_axes)


def reduce_mean(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    if type(axes) is tuple and axes and data.size and data.dtype in _SUMMED_AS_IS:
        # the fast variant's call for an input of unknown shape (axes a literal tuple): _mean's
        # sum and division without _reduce's conversions (16 -> 4 us in silero-vad)
        total = np.add.reduce(data, axis=axes, keepdims=bool(keepdims))
        return np.asarray(total / (data.size // max(total.size, 1)))
    return _reduce(_mean, data, axes, keepdims, noop_with_empty_axes)


_SUMMED_AS_IS = (np.dtype(np.float32), np.dtype(np.float64))


def reduce_max(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    axes = _reduced_axes(data, axes, noop_with_empty_axes)
    return np.max(data, axis=axes, keepdims=bool(keepdims), initial=lowest(data.dtype))


def reduce_min(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    axes = _reduced_axes(data, axes, noop_with_empty_axes)
    return np.min(data, axis=axes, keepdims=bool(keepdims), initial=highest(data.dtype))


def reduce_log_sum_exp(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    """log(sum(exp(data))), computed as m + log(sum(exp(data - m))) with m the largest finite
    value reduced (0 when there is none) so that large values do not overflow. Integers go
    through float64."""
    values = data.astype(np.float64) if data.dtype.kind in "iu" else _widened(data)
    axes = _reduced_axes(data, axes, noop_with_empty_axes)
    finite = np.where(np.isfinite(values), values, -np.inf)
    shift = np.max(finite, axis=axes, keepdims=True, initial=-np.inf)
    shift = np.where(np.isfinite(shift), shift, 0).astype(values.dtype)
    result = np.log(np.sum(np.exp(values - shift), axis=axes, keepdims=True)) + shift
    if not keepdims:
        result = np.squeeze(result, axis=axes)
    return result.astype(data.dtype, copy=False)


def exact_reduce_log_sum(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    """ReduceLogSum of floats, exactly: the float64 sum in exact_sum's order rounded once to the
    compute type (float32 for float16 and bfloat16), then exact_log, rounded to data's type."""
    total = exact_reduce_sum(
        _widened(data), axes, keepdims=keepdims, noop_with_empty_axes=noop_with_empty_axes
    )
    return exact_log(total).astype(data.dtype, copy=False)


def exact_reduce_log_sum_exp(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    """ReduceLogSumExp of floats, exactly, in the compute type (float32 for float16 and bfloat16):
    m = the largest finite value reduced (0 when there is none; exact), d = x - m, exact_exp(d),
    their float64 sum in exact_sum's order rounded once, exact_log of it, + m; rounded to data's
    type."""
    values = _widened(data)
    reduced = _reduced_axes(data, axes, noop_with_empty_axes)
    finite = np.where(np.isfinite(values), values, -np.inf)
    shift = np.max(finite, axis=reduced, keepdims=True, initial=-np.inf)
    shift = np.where(np.isfinite(shift), shift, 0).astype(values.dtype)
    total = exact_reduce_sum(
        exact_exp(values - shift), axes, keepdims=1, noop_with_empty_axes=noop_with_empty_axes
    )
    result = exact_log(total) + shift
    if not keepdims:
        result = np.squeeze(result, axis=reduced)
    return result.astype(data.dtype, copy=False)


def _arg_extreme(find, data, axis, keepdims, select_last_index):
    if not select_last_index:
        return find(data, axis=axis, keepdims=bool(keepdims)).astype(np.int64, copy=False)
    last = data.shape[axis] - 1
    return last - find(np.flip(data, axis), axis=axis, keepdims=bool(keepdims)).astype(np.int64)


def argmax(data, *, axis=0, keepdims=1, select_last_index=0):
    """ONNX ArgMax: the index of the first (select_last_index: last) largest value."""
    return _arg_extreme(np.argmax, data, axis, keepdims, select_last_index)


def argmin(data, *, axis=0, keepdims=1, select_last_index=0):
    """ONNX ArgMin: the index of the first (select_last_index: last) smallest value."""
    return _arg_extreme(np.argmin, data, axis, keepdims, select_last_index)


def _cumulative(accumulate, identity, x, axis, exclusive, reverse):
    axis = int(np.asarray(axis).reshape(-1)[0]) % x.ndim
    values = _widened(x)
    if reverse:
        values = np.flip(values, axis)
    running = accumulate(values, axis=axis, dtype=values.dtype)  # integers are not widened
    if exclusive:  # shift one step along the axis, the identity first
        shifted = np.empty_like(running)
        head, tail, body = ([slice(None)] * x.ndim for _ in range(3))
        head[axis], tail[axis], body[axis] = slice(0, 1), slice(1, None), slice(None, -1)
        shifted[tuple(head)] = identity
        shifted[tuple(tail)] = running[tuple(body)]
        running = shifted
    if reverse:
        running = np.flip(running, axis)
    return running.astype(x.dtype)


def cumsum(x, axis, *, exclusive=0, reverse=0):
    """ONNX CumSum: running sums along `axis` (a scalar or 1-element array); `exclusive` leaves
    each element out of its own sum, `reverse` runs from the end."""
    return _cumulative(np.cumsum, 0, x, axis, exclusive, reverse)


def cumprod(x, axis, *, exclusive=0, reverse=0):
    """ONNX CumProd: running products along `axis`, as CumSum."""
    return _cumulative(np.cumprod, 1, x, axis, exclusive, reverse)


def top_k(x, k, *, axis=-1, largest=1):
    """ONNX TopK: the `k` largest (or smallest) values along `axis`, sorted, and their int64
    indices; equal values come in index order. NaN counts as larger than every number. Always
    sorted (with sorted=0 any order is allowed)."""
    k = int(np.asarray(k).reshape(-1)[0])
    axis %= x.ndim
    if largest:
        # A stable ascending sort of the reversed axis, read backwards: descending, and equal
        # values in ascending original index.
        last = x.shape[axis] - 1
        order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
        indices = last - np.flip(order, axis)
    else:
        indices = np.argsort(x, axis=axis, kind="stable")
    indices = np.take(indices, np.arange(k), axis=axis).astype(np.int64, copy=False)
    return np.take_along_axis(x, indices, axis=axis), indices
