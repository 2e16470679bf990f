"""Reductions whose axes are only known at run time (an `axes` input that is not a constant)."""

from __future__ import annotations

import numpy as np

__all__ = ["lowest", "reduce_max", "reduce_mean", "reduce_sum"]


def _reduce(function, data, axes, keepdims, noop_with_empty_axes, **extra):
    if axes is None or np.asarray(axes).size == 0:
        if noop_with_empty_axes:
            return data.copy()
        axes = tuple(range(data.ndim))
    else:
        axes = tuple(sorted(int(a) % data.ndim for a in np.asarray(axes).reshape(-1)))
    return function(data, axis=axes, keepdims=bool(keepdims), **extra)


def reduce_sum(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    dtype = data.dtype if data.dtype.kind in "iub" else None  # numpy widens small integer sums
    return _reduce(np.sum, data, axes, keepdims, noop_with_empty_axes, dtype=dtype)


def reduce_mean(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return _reduce(np.mean, data, axes, keepdims, noop_with_empty_axes).astype(
        data.dtype, copy=False
    )


def lowest(dtype: np.dtype):
    """The identity of max over `dtype`: what the maximum of nothing is."""
    if dtype.kind == "b":
        return False
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return -np.inf


def reduce_max(data, axes=None, *, keepdims=1, noop_with_empty_axes=0):
    return _reduce(np.max, data, axes, keepdims, noop_with_empty_axes, initial=lowest(data.dtype))
