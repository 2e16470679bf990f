"""Window views shared by convolution and pooling.

Spatial attributes arrive resolved by the compiler: explicit `pads` (begin values of every spatial
axis, then end values, as in ONNX), `strides` and `dilations` for every spatial axis.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def window_view(x, kernel_shape, strides, dilations):
    """View of every pooling/convolution window: shape (N, C, *out, *kernel), no copy."""
    spatial = tuple(range(2, x.ndim))
    reach = tuple((k - 1) * d + 1 for k, d in zip(kernel_shape, dilations))
    view = sliding_window_view(x, reach, axis=spatial)
    index = (slice(None), slice(None))
    index += tuple(slice(None, None, s) for s in strides)
    index += tuple(slice(None, None, d) for d in dilations)
    return view[index]


def output_extent(size, begin, end, kernel, stride, dilation, ceil_mode):
    reach = (kernel - 1) * dilation + 1
    span = size + begin + end - reach
    count = (-(-span // stride) if ceil_mode else span // stride) + 1
    # A window that would start inside the end padding only is dropped (ceil_mode).
    if ceil_mode and (count - 1) * stride >= size + begin:
        count -= 1
    return count, (count - 1) * stride + reach - (size + begin + end)


def pad_spatial(x, pads, value, extra=None):
    """Pad the spatial axes by `pads` (+ `extra` at the end of each), with `value`."""
    rank = x.ndim - 2
    extra = extra or (0,) * rank
    widths = [(0, 0), (0, 0)] + [(pads[i], pads[i + rank] + max(extra[i], 0)) for i in range(rank)]
    if not any(b or e for b, e in widths):
        return x
    return np.pad(x, widths, mode="constant", constant_values=value)
