"""Convolution kernels (see runtime_support._windows for the geometry conventions)."""

from __future__ import annotations

import numpy as np

from runtime_support._windows import pad_spatial, window_view

__all__ = ["conv"]


def conv(X, W, B=None, *, pads, strides, dilations, group=1):
    """Convolution (cross-correlation) of X (N, C, *in) with W (M, C/group, *k); Y (N, M, *out)."""
    batch, channels = X.shape[:2]
    maps = W.shape[0]
    kernel_shape = W.shape[2:]
    rank = len(kernel_shape)
    windows = window_view(pad_spatial(X, pads, 0), kernel_shape, strides, dilations)
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
