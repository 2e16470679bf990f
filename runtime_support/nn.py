"""Neural-network kernels: convolution, pooling, normalization, softmax.

Spatial attributes arrive resolved by the compiler: explicit `pads` (begin values of every spatial
axis, then end values, as in ONNX), `strides` and `dilations` for every spatial axis.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = [
    "average_pool",
    "batch_normalization",
    "conv",
    "dropout",
    "layer_normalization",
    "log_softmax",
    "max_pool",
    "softmax",
]


def _windows(x, kernel_shape, strides, dilations):
    """View of every pooling/convolution window: shape (N, C, *out, *kernel), no copy."""
    spatial = tuple(range(2, x.ndim))
    reach = tuple((k - 1) * d + 1 for k, d in zip(kernel_shape, dilations))
    view = sliding_window_view(x, reach, axis=spatial)
    index = (slice(None), slice(None))
    index += tuple(slice(None, None, s) for s in strides)
    index += tuple(slice(None, None, d) for d in dilations)
    return view[index]


def _output_extent(size, begin, end, kernel, stride, dilation, ceil_mode):
    reach = (kernel - 1) * dilation + 1
    span = size + begin + end - reach
    count = (-(-span // stride) if ceil_mode else span // stride) + 1
    # A window that would start inside the end padding only is dropped (ceil_mode).
    if ceil_mode and (count - 1) * stride >= size + begin:
        count -= 1
    return count, (count - 1) * stride + reach - (size + begin + end)


def _pad_spatial(x, pads, value, extra=None):
    """Pad the spatial axes by `pads` (+ `extra` at the end of each), with `value`."""
    rank = x.ndim - 2
    extra = extra or (0,) * rank
    widths = [(0, 0), (0, 0)] + [(pads[i], pads[i + rank] + max(extra[i], 0)) for i in range(rank)]
    if not any(b or e for b, e in widths):
        return x
    return np.pad(x, widths, mode="constant", constant_values=value)


def conv(X, W, B=None, *, pads, strides, dilations, group=1):
    """Convolution (cross-correlation) of X (N, C, *in) with W (M, C/group, *k); Y (N, M, *out)."""
    batch, channels = X.shape[:2]
    maps = W.shape[0]
    kernel_shape = W.shape[2:]
    rank = len(kernel_shape)
    windows = _windows(_pad_spatial(X, pads, 0), kernel_shape, strides, dilations)
    out_shape = windows.shape[2 : 2 + rank]
    out_size = int(np.prod(out_shape))
    kernel_size = int(np.prod(kernel_shape))
    in_per_group = channels // group
    maps_per_group = maps // group
    # (N, G, C/G, O, K) windows against (G, M/G, C/G, K) filters.
    cols = windows.reshape(batch, group, in_per_group, out_size, kernel_size)
    filters = W.reshape(group, maps_per_group, in_per_group, kernel_size)
    if group == 1:
        # im2col: (N*O, C*K) @ (C*K, M)
        matrix = cols[:, 0].transpose(0, 2, 1, 3).reshape(batch * out_size, -1)
        Y = matrix @ filters[0].reshape(maps, -1).T
        Y = Y.reshape(batch, out_size, maps).transpose(0, 2, 1)
    else:
        Y = np.einsum("ngcok,gmck->ngmo", cols, filters, optimize=True)
    Y = Y.reshape((batch, maps) + out_shape)
    if B is not None:
        Y = Y + B.reshape((maps,) + (1,) * rank)
    return np.ascontiguousarray(Y, dtype=X.dtype)


def _pool_geometry(x, kernel_shape, pads, strides, dilations, ceil_mode):
    rank = len(kernel_shape)
    extents = [
        _output_extent(
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
    windows = _windows(
        _pad_spatial(X, pads, _lowest(X.dtype), extra), kernel_shape, strides, dilations
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
    windows = _windows(_pad_spatial(X, pads, 0, extra), kernel_shape, strides, dilations)
    total = windows.sum(axis=axes, dtype=X.dtype)
    # Count taps per window on a one-sample, one-channel mask.
    inside = np.ones((1, 1) + X.shape[2:], dtype=X.dtype)
    if count_include_pad:
        inside = _pad_spatial(inside, pads, 1)
        mask = _pad_spatial(inside, (0,) * (2 * rank), 0, extra)
    else:
        mask = _pad_spatial(inside, pads, 0, extra)
    counts = _windows(mask, kernel_shape, strides, dilations).sum(axis=axes, dtype=X.dtype)
    return (total / counts).astype(X.dtype, copy=False)


def batch_normalization(X, scale, B, input_mean, input_var, *, epsilon):
    """Inference BatchNormalization: statistics per channel (axis 1), or per activation when
    they have X's non-batch shape (opset 7, spatial=0)."""
    shape = (-1,) + (1,) * (X.ndim - 2) if scale.ndim == 1 else scale.shape
    dtype = X.dtype
    factor = scale.reshape(shape) / np.sqrt(input_var.reshape(shape) + dtype.type(epsilon))
    return ((X - input_mean.reshape(shape)) * factor + B.reshape(shape)).astype(dtype, copy=False)


def layer_normalization(X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1):
    """LayerNormalization over the axes from `axis` on; returns (Y, Mean, InvStdDev).

    stash_type 1 computes the statistics in float32 (float64 input stays float64)."""
    axis = axis % X.ndim
    dtype = X.dtype
    compute = np.float32 if stash_type == 1 and dtype.itemsize < 4 else dtype
    x = X.astype(compute, copy=False)
    axes = tuple(range(axis, X.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    variance = (centered * centered).mean(axis=axes, keepdims=True)
    inv_std = 1 / np.sqrt(variance + np.asarray(epsilon, dtype=compute))
    Y = centered * inv_std * Scale.astype(compute, copy=False)
    if B is not None:
        Y = Y + B.astype(compute, copy=False)
    return Y.astype(dtype, copy=False), mean, inv_std


def softmax(x, *, axis=-1):
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, *, axis=-1):
    """x - max - log(sum(exp(x - max))) along `axis`."""
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def dropout(X, ratio=None, training_mode=None, *, seed=None, with_mask=False):
    """Dropout. In inference (training_mode false or absent) the identity with an all-true mask;
    in training, a mask drawn from numpy's legacy RandomState(seed) stream, which numpy keeps
    stable across versions: keep where uniform(0, 1) >= ratio, scale kept values by 1/(1-ratio)."""
    ratio = 0.5 if ratio is None else float(ratio)
    if training_mode is None or not bool(training_mode) or ratio == 0:
        Y = X
        mask = np.ones(X.shape, dtype=bool)
    else:
        mask = np.random.RandomState(seed).uniform(0, 1.0, X.shape) >= ratio
        Y = (mask * X * X.dtype.type(1.0 / (1.0 - ratio))).astype(X.dtype, copy=False)
    return (Y, mask) if with_mask else Y
