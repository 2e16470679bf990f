"""Normalization kernels."""

from __future__ import annotations

import numpy as np

__all__ = ["batch_normalization", "layer_normalization"]


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
