"""Window geometry shared by convolution and pooling.

Spatial attributes reach the kernels as ONNX names them: `pads` (begin values of every spatial axis,
then end values), `strides` and `dilations` for every spatial axis. The compiler settles `auto_pad`
into explicit pads when it knows the spatial dims; otherwise a kernel receives `auto_pad` and
settles it here, at run time, with the same rule (`explicit_pads`).
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

SAME = ("SAME_UPPER", "SAME_LOWER")


def accumulator(dtype) -> np.dtype:
    """The type sums run in: float32 for the narrower floats (float16, bfloat16), else `dtype`."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype.kind in "fV" and dtype.itemsize < 4 else dtype


def same_pads(spatial, kernel_shape, strides, dilations, auto_pad):
    """Pads for auto_pad SAME_UPPER / SAME_LOWER: the output has ceil(size / stride) positions on
    each axis; an odd total puts the extra element at the end (UPPER) or the beginning (LOWER)."""
    begins, ends = [], []
    for size, k, s, d in zip(spatial, kernel_shape, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return begins + ends


def explicit_pads(x, kernel_shape, strides, dilations, pads, auto_pad):
    """The pads a window kernel applies to `x` (N, C, *spatial), whatever `auto_pad` says."""
    if auto_pad in SAME:
        return same_pads(x.shape[2:], kernel_shape, strides, dilations, auto_pad)
    if auto_pad == "VALID" or pads is None:
        return [0] * (2 * len(kernel_shape))
    return list(pads)


def window_view(x, kernel_shape, strides, dilations):
    """View of every pooling/convolution window: shape (N, C, *out, *kernel), no copy."""
    spatial = tuple(range(2, x.ndim))
    reach = tuple((k - 1) * d + 1 for k, d in zip(kernel_shape, dilations))
    view = sliding_window_view(x, reach, axis=spatial)
    index = (slice(None), slice(None))
    index += tuple(slice(None, None, s) for s in strides)
    index += tuple(slice(None, None, d) for d in dilations)
    return view[index]


def reduce_windows(windows, rank, combine, dtype=None):
    """Combine (np.add, np.maximum) the kernel taps of `windows` (N, C, *out, *kernel) in C order
    of the taps: a fixed order of elementwise operations, so sums are the same bits everywhere
    (and faster than a reduction over a strided view). `dtype`: the type to combine in."""
    every = (slice(None),) * (windows.ndim - rank)
    kernel = taps(windows.shape[windows.ndim - rank :])
    result = np.array(windows[every + kernel[0]], dtype=dtype)
    for tap in kernel[1:]:
        combine(result, windows[every + tap], out=result)
    return result


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


def taps(kernel_shape):
    """Every kernel tap (a tuple of offsets), in C order."""
    return list(itertools.product(*(range(k) for k in kernel_shape)))


def tap_slices(tap, in_shape, out_shape, strides, dilations, begins):
    """Where kernel tap `tap` carries an input grid into an output grid, with output position
    o = i * stride + tap * dilation - begin on each axis: (input slices, output slices) of the
    positions i whose o lies inside the output, or None when there is none."""
    inputs, outputs = [], []
    for t, n, out, s, d, b in zip(tap, in_shape, out_shape, strides, dilations, begins):
        offset = t * d - b
        first = max(0, -(offset // s))  # smallest i with i * s + offset >= 0
        stop = min(n, (out - 1 - offset) // s + 1)  # one past the largest i with o < out
        if stop <= first:
            return None
        inputs.append(slice(first, stop))
        start = first * s + offset
        outputs.append(slice(start, start + (stop - first - 1) * s + 1, s))
    return tuple(inputs), tuple(outputs)


def add_windows(image, columns, strides, dilations, begins):
    """Col2Im's accumulation: `columns` (N, C, *kernel, *blocks) holds, for each kernel tap, the
    value each block adds at that tap's position of `image` (N, C, *spatial), which grows in
    place. Taps are added in C order: a fixed order of elementwise additions."""
    rank = image.ndim - 2
    kernel_shape = columns.shape[2 : 2 + rank]
    blocks = columns.shape[2 + rank :]
    every = (slice(None), slice(None))
    for tap in taps(kernel_shape):
        where = tap_slices(tap, blocks, image.shape[2:], strides, dilations, begins)
        if where is not None:
            image[every + where[1]] += columns[every + tap + where[0]]
    return image
