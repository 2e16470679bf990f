"""Pooling kernels (see runtime_support._windows for the geometry conventions)."""

from __future__ import annotations

import numpy as np

from runtime_support._windows import output_extent, pad_spatial, window_view

__all__ = ["average_pool", "max_pool"]


def _pool_geometry(x, kernel_shape, pads, strides, dilations, ceil_mode):
    rank = len(kernel_shape)
    extents = [
        output_extent(
            x.shape[2 + i],
            pads[i],
            pads[i + rank],
            kernel_shape[i],
            strides[i],
            dilations[i],
            ceil_mode,
        )
        for i in range(rank)
    ]
    return tuple(e[1] for e in extents)


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def max_pool(
    X, *, kernel_shape, pads, strides, dilations, ceil_mode=0, storage_order=0, with_indices=False
):
    """MaxPool; with `with_indices`, also the flat index of each maximum in X (int64)."""
    rank = len(kernel_shape)
    extra = _pool_geometry(X, kernel_shape, pads, strides, dilations, ceil_mode)
    windows = window_view(
        pad_spatial(X, pads, _lowest(X.dtype), extra), kernel_shape, strides, dilations
    )
    axes = tuple(range(2 + rank, 2 + 2 * rank))
    Y = windows.max(axis=axes)
    if not with_indices:
        return Y
    flat = windows.reshape(windows.shape[: 2 + rank] + (-1,))
    arg = np.unravel_index(flat.argmax(axis=-1), tuple(kernel_shape))
    batch, channels = X.shape[:2]
    spatial = X.shape[2:]
    out = Y.shape[2:]
    grids = np.meshgrid(*[np.arange(n) for n in out], indexing="ij")
    coords = [grids[i] * strides[i] + arg[i] * dilations[i] - pads[i] for i in range(rank)]
    if storage_order:
        # column-major over the spatial axes
        spatial_index = np.zeros(Y.shape, dtype=np.int64)
        for i in reversed(range(rank)):
            spatial_index = spatial_index * spatial[i] + coords[i]
    else:
        spatial_index = np.zeros(Y.shape, dtype=np.int64)
        for i in range(rank):
            spatial_index = spatial_index * spatial[i] + coords[i]
    plane = int(np.prod(spatial))
    base = (np.arange(batch)[:, None] * channels + np.arange(channels)[None, :]) * plane
    indices = spatial_index + base.reshape((batch, channels) + (1,) * rank)
    return Y, indices.astype(np.int64)


def average_pool(X, *, kernel_shape, pads, strides, dilations, ceil_mode=0, count_include_pad=0):
    """AveragePool. The divisor counts the window's taps inside X, or with `count_include_pad`
    inside X and its explicit pads (never the extra end room that ceil_mode adds)."""
    rank = len(kernel_shape)
    extra = _pool_geometry(X, kernel_shape, pads, strides, dilations, ceil_mode)
    axes = tuple(range(2 + rank, 2 + 2 * rank))
    windows = window_view(pad_spatial(X, pads, 0, extra), kernel_shape, strides, dilations)
    total = windows.sum(axis=axes, dtype=X.dtype)
    # Count taps per window on a one-sample, one-channel mask.
    inside = np.ones((1, 1) + X.shape[2:], dtype=X.dtype)
    if count_include_pad:
        inside = pad_spatial(inside, pads, 1)
        mask = pad_spatial(inside, (0,) * (2 * rank), 0, extra)
    else:
        mask = pad_spatial(inside, pads, 0, extra)
    counts = window_view(mask, kernel_shape, strides, dilations).sum(axis=axes, dtype=X.dtype)
    return (total / counts).astype(X.dtype, copy=False)
