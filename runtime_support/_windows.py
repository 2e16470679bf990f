"""Window geometry shared by convolution and pooling.

Spatial attributes reach the kernels as ONNX names them: `pads` (begin values of every spatial axis,
then end values), `strides` and `dilations` for every spatial axis. The compiler settles `auto_pad`
into explicit pads when it knows the spatial dims; otherwise a kernel receives `auto_pad` and
settles it here, at run time, with the same rule (`explicit_pads`).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from runtime_support._limits import check_allocation

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


def default_steps(kernel_shape, strides, dilations):
    """strides and dilations, None (absent in the model) meaning 1 on every spatial axis."""
    ones = (1,) * len(kernel_shape)
    return (ones if strides is None else strides), (ones if dilations is None else dilations)


def explicit_pads(x, kernel_shape, strides, dilations, pads, auto_pad):
    """The pads a window kernel applies to `x` (N, C, *spatial), whatever `auto_pad` says."""
    return settled_pads(x.shape[2:], kernel_shape, strides, dilations, pads, auto_pad)


def settled_pads(spatial, kernel_shape, strides, dilations, pads, auto_pad):
    """explicit_pads for an input of spatial dims `spatial`."""
    if auto_pad in SAME:
        return same_pads(spatial, kernel_shape, strides, dilations, auto_pad)
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


def output_extent(size, begin, end, kernel, stride, dilation, ceil_mode):
    reach = (kernel - 1) * dilation + 1
    span = size + begin + end - reach
    count = (-(-span // stride) if ceil_mode else span // stride) + 1
    # A window that would start inside the end padding only is dropped (ceil_mode).
    if ceil_mode and (count - 1) * stride >= size + begin:
        count -= 1
    return count, (count - 1) * stride + reach - (size + begin + end)


def pad_spatial(x, pads, value, extra=None):
    """Pad the spatial axes by `pads` (+ `extra` at the end of each), with `value`: a filled buffer
    of the padded shape with x copied into its interior (cheaper than np.pad)."""
    rank = x.ndim - 2
    extra = extra or (0,) * rank
    begins = pads[:rank]
    ends = [pads[i + rank] + max(extra[i], 0) for i in range(rank)]
    if not any(begins) and not any(ends):
        return x
    shape = x.shape[:2] + tuple(n + b + e for n, b, e in zip(x.shape[2:], begins, ends))
    check_allocation(shape, x.dtype, "padded input")  # pads can be the model's absurd values
    padded = np.zeros(shape, x.dtype) if value == 0 else np.full(shape, value, x.dtype)
    interior = tuple(slice(b, b + n) for b, n in zip(begins, x.shape[2:]))
    padded[(slice(None), slice(None)) + interior] = x
    return padded


def window_positions(spatial, kernel_shape, strides, dilations):
    """The output shape of windows slid over `spatial` (padding included)."""
    return tuple(
        (n - (k - 1) * d - 1) // s + 1
        for n, k, s, d in zip(spatial, kernel_shape, strides, dilations)
    )


def flat_taps(x, pads, value, kernel_shape, strides, dilations, extra=None, dtype=None):
    """Every kernel tap's operand as one contiguous block over all samples and channels, so that
    elementwise kernels and copies run one long inner loop instead of one short loop per row.

    x (N, C, *spatial) is padded by `pads` (+ `extra` at the end of each axis) with `value` and
    split into phase planes: the padded positions p = q * stride + a of one phase a, on the grid
    q of `planes` (ceil(padded / stride) on each axis). Output position o at tap t reads padded
    position o * stride + t * dilation, that is phase (t * dilation) % stride at q = o + shift,
    shift = (t * dilation) // stride: a constant offset into the flattened phase plane. The planes
    of one phase lie one after the other for every (sample, channel), so tap t's operand for all
    of them is the one contiguous slice [offset, offset + N * C * P) of that phase's buffer (P the
    plane's size): the results on the grid `planes`, of which [:out[0], ..., :out[-1]] are the
    windows' (`crop_grid`). The other grid positions read past their row or plane (into the
    next one, or the buffer's end room): values that are never used. Only the phases some tap
    reads are built.

    Returns (views, grid, out): one (N, C, P) contiguous view per tap in C order, the grid (the
    planes' shape), the output's spatial shape. `dtype`: the views' type (x's by default)."""
    rank = len(kernel_shape)
    plan = _flat_plan(
        x.shape,
        tuple(pads),
        tuple(kernel_shape),
        tuple(strides),
        tuple(dilations),
        tuple(extra or (0,) * rank),
    )
    copies, reads, reach, planes, size, out = plan
    dtype = x.dtype if dtype is None else dtype
    lead = x.shape[:2]
    used = lead[0] * lead[1] * size
    shape = (len(copies), used + reach)
    check_allocation(shape, dtype, "padded input")
    buffer = np.zeros(shape, dtype) if value == 0 else np.full(shape, value, dtype)
    every = (slice(None), slice(None))
    for k, inside in enumerate(copies):
        if inside is not None:
            plane = buffer[k, :used].reshape(lead + planes)
            plane[every + inside[0]] = x[every + inside[1]]
    return [buffer[k, o : o + used].reshape(lead + (size,)) for k, o in reads], planes, out


@functools.lru_cache(maxsize=1024)
def _flat_plan(shape, pads, kernel_shape, strides, dilations, extra):
    """flat_taps' geometry, settled once per shape: (the slices copying x into each phase plane
    built, (phase buffer, offset) of each tap, the largest offset, the planes' shape, a plane's
    size, the output's spatial shape)."""
    rank = len(kernel_shape)
    spatial = shape[2:]
    begins = pads[:rank]
    padded = [n + pads[i] + pads[i + rank] + max(extra[i], 0) for i, n in enumerate(spatial)]
    out = window_positions(padded, kernel_shape, strides, dilations)
    planes = tuple(-(-p // s) for p, s in zip(padded, strides))
    sizes = [math.prod(planes[i + 1 :]) for i in range(rank)]  # flat step of each axis
    reads = []  # (phase, offset) of each tap
    for tap in taps(kernel_shape):
        shifts = [t * d for t, d in zip(tap, dilations)]
        phase = tuple(u % s for u, s in zip(shifts, strides))
        reads.append((phase, sum(u // s * z for u, s, z in zip(shifts, strides, sizes))))
    phases = sorted({phase for phase, _ in reads})
    copies = tuple(_phase_slices(phase, spatial, begins, strides, planes) for phase in phases)
    reach = max(offset for _, offset in reads)
    reads = tuple((phases.index(phase), offset) for phase, offset in reads)
    return copies, reads, reach, planes, math.prod(planes), out


def _phase_slices(phase, spatial, begins, strides, planes):
    """(plane slices, x slices) of the elements of x in phase plane `phase`: padded position
    q * stride + a holds x[q * stride + a - begin]; None when the phase holds none."""
    inside, source = [], []
    for a, n, b, s, q in zip(phase, spatial, begins, strides, planes):
        first = max(0, -((a - b) // s))  # the smallest q with q * s + a >= b
        stop = min(q, (b + n - 1 - a) // s + 1)
        if stop <= first:
            return None
        inside.append(slice(first, stop))
        start = first * s + a - b
        source.append(slice(start, start + (stop - first - 1) * s + 1, s))
    return tuple(inside), tuple(source)


@functools.lru_cache(maxsize=32)
def window_index(shape, kernel_shape, pads, strides, dilations, order):
    """Every window's positions as indices into x (shape (N, C, *spatial)) flattened, for one
    gather (`gather_windows`) in place of a copy per tap: the axes channel "c", tap "t" (the
    kernel's axes, C order), sample "n" and output position "o" (the output's axes) in `order`
    (e.g. "ctno" for im2col's (C, K, N, V)); a position in the padding is x.size, the element
    `gather_windows` puts after x. Read-only, settled once per geometry (keep the arrays it is
    used for small: the index has one intp per gathered element)."""
    batch, channels = shape[:2]
    spatial = shape[2:]
    rank = len(kernel_shape)
    padded = [n + pads[i] + pads[i + rank] for i, n in enumerate(spatial)]
    out = window_positions(padded, kernel_shape, strides, dilations)
    # axes while building: (c, *taps, n, *out)
    dims = 2 + 2 * rank
    flat = np.zeros((1,) * dims, np.intp)
    inside = np.ones((1,) * dims, bool)
    step = 1
    for axis in reversed(range(rank)):
        where_shape = [1] * dims
        where_shape[1 + axis], where_shape[2 + rank + axis] = kernel_shape[axis], out[axis]
        tap = np.arange(kernel_shape[axis]).reshape(-1, 1) * dilations[axis]
        where = (np.arange(out[axis]) * strides[axis] + tap - pads[axis]).reshape(where_shape)
        inside = inside & (where >= 0) & (where < spatial[axis])
        flat = flat + where * step
        step *= spatial[axis]
    channel = (np.arange(channels) * step).reshape((-1,) + (1,) * (dims - 1))
    sample = np.arange(batch) * channels * step
    sample = sample.reshape((1,) * (1 + rank) + (-1,) + (1,) * rank)
    index = np.where(inside, flat + channel + sample, batch * channels * step)
    index = np.broadcast_to(index, (channels,) + tuple(kernel_shape) + (batch,) + tuple(out))
    groups = {"c": [0], "t": list(range(1, 1 + rank)), "n": [1 + rank]}
    groups["o"] = list(range(2 + rank, dims))
    axes = [axis for name in order for axis in groups[name]]
    index = np.ascontiguousarray(index.transpose(axes))
    index.flags.writeable = False
    return index


def gather_windows(x, index, value, dtype):
    """x's elements at `index` (window_index), positions in the padding reading `value`, in
    `dtype`: one copy of x into a buffer with `value` after it, then one gather."""
    source = np.empty(x.size + 1, dtype)
    source[:-1] = x.reshape(-1)
    source[-1] = value
    return source.take(index)


def crop_grid(y, grid, out):
    """y (..., V) computed on flat_taps' grid, as (..., *out): a view."""
    y = y.reshape(y.shape[:-1] + tuple(grid))
    if tuple(grid) == tuple(out):
        return y
    return y[(Ellipsis,) + tuple(slice(0, o) for o in out)]


def reduce_windows(
    x, pads, value, kernel_shape, strides, dilations, combine, extra=None, dtype=None
):
    """Combine (np.add, np.maximum) the kernel taps of every window of x (N, C, *spatial) padded
    with `value`, in C order of the taps, in `dtype` (x's by default): a fixed order of
    elementwise operations, so sums are the same bits everywhere. Returns the (N, C, *out)
    results (a view of flat_taps' grid, or a new array).

    The layout decides how many inner loops each combination runs: flat_taps' rows give one per
    (sample, channel), of the grid's length; with fewer output positions than half the samples
    times channels (late, small maps with many channels, global-size windows) the padded input
    is laid out channels last instead, one inner loop per output position, of N * C values."""
    rank = len(kernel_shape)
    extra = tuple(extra or (0,) * rank)
    padded = [n + pads[i] + pads[i + rank] + max(extra[i], 0) for i, n in enumerate(x.shape[2:])]
    out = window_positions(padded, kernel_shape, strides, dilations)
    if 2 * math.prod(out) > x.shape[0] * x.shape[1] or min(out, default=1) <= 0:
        views, grid, out = flat_taps(x, pads, value, kernel_shape, strides, dilations, extra, dtype)
        # the first combination makes the running result: no copy of tap 0
        result = combine(views[0], views[1]) if len(views) > 1 else views[0].copy()
        for view in views[2:]:
            combine(result, view, out=result)
        return crop_grid(result, grid, out)
    dtype = x.dtype if dtype is None else dtype
    # (*padded spatial, N, C): each tap's operand is a strided grid of rows of N * C values
    shape = tuple(padded) + x.shape[:2]
    check_allocation(shape, dtype, "padded input")
    buffer = np.zeros(shape, dtype) if value == 0 else np.full(shape, value, dtype)
    interior = tuple(slice(pads[i], pads[i] + n) for i, n in enumerate(x.shape[2:]))
    buffer[interior] = np.moveaxis(x, (0, 1), (-2, -1))
    reads = []
    for tap in taps(kernel_shape):
        starts = [t * d for t, d in zip(tap, dilations)]
        reads.append(
            buffer[tuple(slice(b, b + (o - 1) * s + 1, s) for b, o, s in zip(starts, out, strides))]
        )
    result = reads[0].copy()
    for view in reads[1:]:
        combine(result, view, out=result)
    return np.ascontiguousarray(np.moveaxis(result, (-2, -1), (0, 1)))


def tiling(kernel_shape, strides, dilations, pads) -> bool:
    """Whether the windows tile the input without overlap or gaps: strides equal to the kernel
    (more than one tap), no dilation, no pads (a ViT's patch embedding, LeNet's 2x2/2 pools)."""
    return (
        len(strides) == len(kernel_shape)
        and tuple(strides) == tuple(kernel_shape)
        and math.prod(kernel_shape) > 1
        and all(d == 1 for d in dilations)
        and not any(pads)
    )


def tile_view(x, kernel_shape, out):
    """x (N, C, *spatial) cropped to the `out` whole tiles of `kernel_shape` on each axis, viewed
    as (N, C, o1, k1, o2, k2, ...) (a copy only where the crop leaves x non-contiguous)."""
    crop, split = _tile_geometry(x.shape, tuple(kernel_shape), tuple(out))
    return (x if crop is None else x[crop]).reshape(split)


@functools.lru_cache(maxsize=256)
def _tile_geometry(shape, kernel_shape, out):
    """tile_view's crop (None when the tiles cover x) and split shape, settled once per shape."""
    whole = tuple(o * k for o, k in zip(out, kernel_shape))
    crop = None if whole == shape[2:] else (slice(None), slice(None)) + tuple(map(slice, whole))
    return crop, shape[:2] + tuple(d for o, k in zip(out, kernel_shape) for d in (o, k))


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
