"""Pooling kernels (see runtime_support._windows for the geometry conventions).

Max pooling, MaxUnpool and MaxRoiPool select and move values (exact). Average pooling adds the
kernel taps in a fixed order and divides once (exact); Lp pooling takes powers (not exact), and
GlobalLpPool sums in numpy's order.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from runtime_support._kernels import kernel
from runtime_support._limits import check_allocation
from runtime_support._windows import (
    accumulator,
    explicit_pads,
    output_extent,
    pad_spatial,
    reduce_windows,
    settled_pads,
    taps,
    tile_view,
    tiling,
    window_positions,
    window_view,
)
from runtime_support.exact import exact_sum
from runtime_support.exact_math import exact_pow

__all__ = [
    "average_pool",
    "exact_average_pool",
    "global_average_pool",
    "exact_global_lp_pool",
    "exact_lp_pool",
    "global_lp_pool",
    "lp_pool",
    "max_pool",
    "max_roi_pool",
    "max_unpool",
]


def _pool_geometry(x, kernel_shape, pads, strides, dilations, ceil_mode):
    """The room ceil_mode adds at the end of each spatial axis (0 without ceil_mode)."""
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
    X,
    *,
    kernel_shape,
    pads=None,
    strides,
    dilations,
    ceil_mode=0,
    storage_order=0,
    with_indices=False,
    auto_pad="NOTSET",
):
    """MaxPool; with `with_indices`, also the flat index in X (int64) of each window's maximum:
    its first occurrence inside X in window order (padding never counts), the spatial part of
    the index in row-major order, or column-major with `storage_order` 1. A window holding NaN
    gives NaN, and the index of its first NaN."""
    geometry = (kernel_shape, pads, strides, dilations, ceil_mode, auto_pad)
    try:
        pads, extra, out, path = _max_pool_plan(X.shape, *geometry)
    except TypeError:  # lists for the geometry (a caller other than generated code)
        geometry = tuple(
            v if v is None or isinstance(v, (int, str)) else tuple(v) for v in geometry
        )
        pads, extra, out, path = _max_pool_plan(X.shape, *geometry)
    rank = len(kernel_shape)
    lowest = _lowest(X.dtype)
    if path == "tiles":
        Y = _tile_max(X, kernel_shape, out)
    elif path == "flat separable":
        Y = _flat_separable(X, pads, lowest, kernel_shape, strides, dilations, extra, np.maximum)
    elif path == "channels last":
        # few output positions, many channels: channels last, one inner loop per position
        # (as reduce_windows); the same maxima in the same order
        last = np.ascontiguousarray(np.moveaxis(X, (0, 1), (-2, -1)))
        Y = _separable_max(last, pads, lowest, kernel_shape, strides, dilations, extra, lead=0)
        Y = np.ascontiguousarray(np.moveaxis(Y, (-2, -1), (0, 1)))
    elif path == "flat taps":
        # overlapping small windows (ResNet's 3x3, stride 2): the taps in C order on flat_taps'
        # contiguous blocks, one long inner loop per maximum (the separable passes run one
        # short loop per output row: 147 -> 95 us on a 64-channel 32x32 map, batch 2)
        Y = reduce_windows(X, pads, lowest, kernel_shape, strides, dilations, np.maximum, extra)
        Y = np.ascontiguousarray(Y)
    else:
        Y = np.ascontiguousarray(
            _separable_max(X, pads, lowest, kernel_shape, strides, dilations, extra)
        )
    if not with_indices:
        return Y
    windows = window_view(pad_spatial(X, pads, lowest, extra), kernel_shape, strides, dilations)
    spatial = X.shape[2:]
    plane = math.prod(spatial)
    grid = np.arange(plane, dtype=np.int64)
    grid = grid.reshape(spatial[::-1]).transpose() if storage_order else grid.reshape(spatial)
    # Each window's positions in X; -1 in the padding.
    positions = window_view(
        pad_spatial(grid[None, None], pads, -1, extra), kernel_shape, strides, dilations
    )
    peak = Y.reshape(Y.shape + (1,) * rank)
    hit = windows == peak
    if X.dtype.kind == "f":
        hit |= np.isnan(windows) & np.isnan(peak)
    hit &= positions >= 0
    taps = math.prod(kernel_shape)
    first = hit.reshape(Y.shape + (taps,)).argmax(axis=-1)
    flat_positions = positions.reshape(positions.shape[: 2 + rank] + (taps,))
    spatial_index = np.take_along_axis(flat_positions, first[..., None], axis=-1)[..., 0]
    batch, channels = X.shape[:2]
    base = np.arange(batch * channels, dtype=np.int64).reshape((batch, channels) + (1,) * rank)
    return Y, spatial_index + base * plane


@functools.lru_cache(maxsize=256)
def _max_pool_plan(shape, kernel_shape, pads, strides, dilations, ceil_mode, auto_pad):
    """max_pool's settled facts for one input shape: the explicit pads, the room ceil_mode adds
    at each axis's end, the output's spatial dims and the path (a few us of Python a call on
    LeNet-sized maps, settled once)."""
    spatial = shape[2:]
    rank = len(kernel_shape)
    pads = tuple(settled_pads(spatial, kernel_shape, strides, dilations, pads, auto_pad))
    extra = tuple(
        output_extent(spatial[i], pads[i], pads[i + rank], kernel_shape[i], strides[i],
                      dilations[i], ceil_mode)[1]
        for i in range(rank)
    )  # fmt: skip
    out = tuple(
        (n + pads[a] + pads[a + rank] + extra[a] - (k - 1) * d - 1) // s + 1
        for a, (n, k, s, d) in enumerate(zip(spatial, kernel_shape, strides, dilations))
    )
    size = math.prod(shape)
    if _small_tiles(size, kernel_shape, pads, strides, dilations, extra, out):
        return pads, extra, out, "tiles"
    if _flat_separable_wins(len(shape), size, out, kernel_shape, strides):
        return pads, extra, out, "flat separable"
    if 2 * math.prod(out) <= shape[0] * shape[1] and min(out, default=1) > 0:
        return pads, extra, out, "channels last"
    if (
        math.prod(kernel_shape) <= _FLAT_MAX_TAPS
        and tuple(kernel_shape) != tuple(strides)
        and min(out, default=1) > 0
    ):
        return pads, extra, out, "flat taps"
    return pads, extra, out, "separable"


# Maps of at most this many values whose windows tile them (LeNet's 2x2/2 pools) take the maxima
# of the tiles' taps as strided views (`_tile_max`): three calls for a 2x2 window where the other
# paths pad, split or copy first. Thread CPU time per call, hot: 6 x 24 x 24 14.1 -> 11.4 us,
# 16 x 8 x 8 13.2 -> 10.3 (lenet_b1's run 97.9 -> 92.3); at 2 x 64 x 56 x 56 (401,408 values) the
# strided reads lose (162 -> 189 us).
_TILE_MAX_SIZE = 16384


def _small_tiles(size, kernel_shape, pads, strides, dilations, extra, out) -> bool:
    """Whether max_pool's windows are the tiles of a small map of `size` values
    (_windows.tiling, no ceil_mode room, some output, at most _TILE_MAX_SIZE values)."""
    return (
        size <= _TILE_MAX_SIZE
        and tiling(kernel_shape, strides, dilations, pads)
        and not any(extra)
        and min(out, default=0) > 0
    )


def _tile_max(x, kernel_shape, out):
    """The maxima of the tiles (N, C, *out) of x (_windows.tile_view), the taps combined in C
    order with np.maximum (the bits of the other paths: NaN propagates, a tie of zeros gives the
    later tap)."""
    tiles = tile_view(x, kernel_shape, out)
    indices = _tap_indices(tuple(kernel_shape))
    Y = np.maximum(tiles[indices[0]], tiles[indices[1]])
    for index in indices[2:]:
        np.maximum(Y, tiles[index], out=Y)
    return Y


@functools.lru_cache(maxsize=64)
def _tap_indices(kernel_shape):
    """Each tap's index into a (N, C, o1, k1, o2, k2, ...) tile view, in C order (taps)."""
    return [
        (slice(None), slice(None)) + tuple(i for t in tap for i in (slice(None), t))
        for tap in taps(kernel_shape)
    ]


# MaxPool windows of at most this many taps, overlapping, combine the taps directly (max_pool);
# larger ones (and 2x2 windows at stride 2: two passes) go one spatial axis at a time.
_FLAT_MAX_TAPS = 9


def _flat_separable_wins(ndim, size, out, kernel_shape, strides) -> bool:
    """Whether _flat_separable is the way for these windows: some output, a window of more
    than one tap, strides no larger than the window (it computes every position at full
    resolution, so it wastes the work of the positions that larger strides skip), no window
    covering a whole plane of more than a few positions (a reduction over the plane is one
    pass), and a map of at least _FLAT_MIN_SIZE values (on LeNet's 6 x 28 x 28 its dozen
    numpy calls cost more than the passes they save: 12 against 15 us)."""
    return (
        ndim > 2
        and size >= _FLAT_MIN_SIZE
        and math.prod(kernel_shape) > 1
        and min(out, default=0) > 0
        and all(s <= k for s, k in zip(strides, kernel_shape))
        and not (math.prod(out) == 1 and math.prod(kernel_shape) > 16)
    )


_FLAT_MIN_SIZE = 8192


def _flat_separable(x, pads, value, kernel_shape, strides, dilations, extra, combine, dtype=None):
    """Every window's combination (np.maximum, np.add) of x (N, C, *spatial) padded with
    `value` (the identity of `combine`: the lowest value, 0), one spatial axis at a time (the
    last first), each pass one long contiguous loop: the array flattened, the taps of an axis are
    the flat array shifted by multiples of the axis's flat step, so a pass combines whole shifted
    copies of it at full resolution (positions whose windows run past their row or plane get
    values that are never used); then one copy picks the outputs along that axis (its stride)
    and the windows that reach into the padding are combined from the taps inside x alone, so
    nothing is padded. numpy's loops over short rows or strided elements run 2-10 times slower
    per element than over one contiguous block: squeezenet's 3x3/2 MaxPool of 64 x 111 x 111
    takes about half the thread time of per-tap passes over stride phases (flat_taps).

    Maxima: the same bits as the taps in C order (the last axis first, each pass in tap order:
    _separable_max's argument; a padding tap changes nothing, see there). Sums: rows first,
    then their sums: a fixed order of IEEE additions, not the C order (average_pool's;
    exact_average_pool keeps the C order). Returns a new contiguous array."""
    rank = len(kernel_shape)
    dtype = x.dtype if dtype is None else np.dtype(dtype)
    y = x.astype(dtype, copy=False)
    for axis in reversed(range(rank)):
        k, s, d, begin = kernel_shape[axis], strides[axis], dilations[axis], pads[axis]
        n = y.shape[2 + axis]
        count = n + begin + pads[axis + rank] + max(extra[axis], 0) - (k - 1) * d - 1
        count = count // s + 1
        y = _combine_axis(y, 2 + axis, k, s, d, begin, count, value, combine)
    return y if not np.may_share_memory(y, x) else y.copy()


def _combine_axis(y, axis, k, s, d, begin, count, value, combine):
    """_flat_separable's pass along `axis` of the contiguous y: the `count` outputs, output o
    combining y[o * s - begin + t * d] for the taps t inside y, in tap order."""
    n = y.shape[axis]
    inner = math.prod(y.shape[axis + 1 :])
    full = n - (k - 1) * d  # positions whose whole window lies inside y
    if full > 0 and k > 1:
        flat = np.ascontiguousarray(y).reshape(-1)
        step = inner * d
        length = flat.size - (k - 1) * step
        grid = np.empty_like(flat)
        grid[length:] = value  # positions no output uses: defined values only
        part = grid[:length]
        combine(flat[:length], flat[step : step + length], out=part)
        for j in range(2, k):
            combine(part, flat[j * step : j * step + length], out=part)
        grid = grid.reshape(y.shape)
    elif full > 0:
        grid = y
    shape = y.shape[:axis] + (count,) + y.shape[axis + 1 :]
    result = np.empty(shape, y.dtype)
    before = (slice(None),) * axis
    first = -(-begin // s)  # the first output whose window starts inside y
    last = min(count - 1, (full - 1 + begin) // s) if full > 0 else first - 1
    if last >= first:
        start = first * s - begin
        result[before + (slice(first, last + 1),)] = grid[
            before + (slice(start, start + (last - first) * s + 1, s),)
        ]
    for o in [*range(min(first, count)), *range(max(last + 1, first), count)]:
        # a window reaching into the padding: its taps inside y, in tap order
        where = [o * s - begin + t * d for t in range(k)]
        inside = [y[before + (p,)] for p in where if 0 <= p < n]
        target = result[before + (o,)]
        if not inside:
            target[...] = value
        elif len(inside) == 1:
            target[...] = inside[0]
        else:
            combine(inside[0], inside[1], out=target)
            for tap in inside[2:]:
                combine(target, tap, out=target)
    return result


def _separable_max(x, pads, lowest, kernel_shape, strides, dilations, extra, lead=2):
    """Every window's maximum of x padded with `lowest`, one spatial axis at a time: the maximum
    over a box is the maximum along the first axes of the maxima along the last, so a k1 x k2
    window takes about k1 + k2 elementwise maxima instead of k1 * k2 - 1.

    Same bits as combining the window's taps in C order: np.maximum returns its second operand
    on a tie (+0 and -0), so the C-order result is the last tied tap in C order; reducing the
    last axis first, each pass in tap order, picks the same one. Nothing is padded: a tap only
    meets the outputs whose position it reads inside x (a `lowest` padding term changes nothing:
    max(a, lowest) is a, or a tie won by an equal value); outputs that some tap misses start
    from `lowest`. Only arrays made here are written. The spatial axes follow `lead` others
    (N, C; none when x is channels last)."""
    y = x
    for axis in reversed(range(len(kernel_shape))):
        k, s, d, begin = kernel_shape[axis], strides[axis], dilations[axis], pads[axis]
        size = y.shape[lead + axis]
        count = size + begin + pads[axis + len(kernel_shape)] + extra[axis] - (k - 1) * d - 1
        count = count // s + 1
        before = (slice(None),) * (lead + axis)
        ranges = []  # (first output, stop output, first input) of each tap reading inside y
        for j in range(k):
            offset = j * d - begin  # output o reads o * s + offset
            first = max(0, -(offset // s))
            stop = min(count, (size - 1 - offset) // s + 1)
            if stop > first:
                ranges.append((first, stop, first * s + offset))
        shape = y.shape[: lead + axis] + (count,) + y.shape[lead + axis + 1 :]
        if ranges and ranges[0][:2] == (0, count):
            start = ranges[0][2]
            result = y[before + (slice(start, start + (count - 1) * s + 1, s),)]
            if len(ranges) > 1 and ranges[1][:2] == (0, count):
                # the first maximum makes the result: no copy of the first tap
                start = ranges[1][2]
                term = y[before + (slice(start, start + (count - 1) * s + 1, s),)]
                result = np.maximum(result, term)
                ranges = ranges[2:]
            else:
                result = result.copy()
                ranges = ranges[1:]
        elif len(ranges) > 1 and ranges[1][:2] == (0, count):
            # only the first tap misses some outputs (a begin pad): start from the second, and
            # take the first's maximum with it where it reads, operands in tap order, as
            # max(max(lowest, a), b) is max(a, b)
            start = ranges[1][2]
            result = y[before + (slice(start, start + (count - 1) * s + 1, s),)].copy()
            first, stop, start = ranges[0]
            term = y[before + (slice(start, start + (stop - first - 1) * s + 1, s),)]
            target = result[before + (slice(first, stop),)]
            np.maximum(term, target, out=target)
            ranges = ranges[2:]
        else:
            result = np.full(shape, lowest, y.dtype)
        for first, stop, start in ranges:
            term = y[before + (slice(start, start + (stop - first - 1) * s + 1, s),)]
            target = result[before + (slice(first, stop),)]
            np.maximum(target, term, out=target)
        y = result
    return y


@kernel(exact=False, exact_twin="rt.exact_average_pool")
def average_pool(
    X,
    *,
    kernel_shape,
    pads=None,
    strides,
    dilations,
    ceil_mode=0,
    count_include_pad=0,
    auto_pad="NOTSET",
):
    """AveragePool as the fast variant computes it: the divisor as exact_average_pool's; the
    window's sum one spatial axis at a time in one long pass per tap of each axis
    (_flat_separable: about half the passes of summing every tap, each over one contiguous
    block), or, for a window covering a whole plane, numpy's sum over it. Float16 and bfloat16
    sum in float32. Not exact: the order of the additions is not exact_average_pool's."""
    pads = explicit_pads(X, kernel_shape, strides, dilations, pads, auto_pad)
    extra = _pool_geometry(X, kernel_shape, pads, strides, dilations, ceil_mode)
    acc = accumulator(X.dtype)
    rank = len(kernel_shape)
    padded = [n + pads[i] + pads[i + rank] + max(extra[i], 0) for i, n in enumerate(X.shape[2:])]
    out = window_positions(padded, kernel_shape, strides, dilations)
    if list(kernel_shape) == list(X.shape[2:]) and not any(pads) and not any(extra):
        total = _plane_sums(X, acc)  # one window per plane
    elif _flat_separable_wins(X.ndim, X.size, out, kernel_shape, strides):
        with np.errstate(over="ignore", invalid="ignore"):  # inf - inf as onnxruntime: NaN
            total = _flat_separable(
                X, pads, 0, kernel_shape, strides, dilations, extra, np.add, acc
            )
    else:
        total = reduce_windows(X, pads, 0, kernel_shape, strides, dilations, np.add, extra, acc)
    return _divided(X, total, pads, kernel_shape, strides, dilations, count_include_pad, acc)


@kernel(exact=True)
def exact_average_pool(
    X,
    *,
    kernel_shape,
    pads=None,
    strides,
    dilations,
    ceil_mode=0,
    count_include_pad=0,
    auto_pad="NOTSET",
):
    """AveragePool. The divisor counts the window's taps inside X, or with `count_include_pad`
    inside X and its explicit pads (never the extra end room that ceil_mode adds). The taps are
    added in a fixed order (float16 and bfloat16 in float32), then divided once: exact."""
    pads = explicit_pads(X, kernel_shape, strides, dilations, pads, auto_pad)
    extra = _pool_geometry(X, kernel_shape, pads, strides, dilations, ceil_mode)
    acc = accumulator(X.dtype)
    total = reduce_windows(X, pads, 0, kernel_shape, strides, dilations, np.add, extra, acc)
    return _divided(X, total, pads, kernel_shape, strides, dilations, count_include_pad, acc)


def _divided(X, total, pads, kernel_shape, strides, dilations, count_include_pad, acc):
    """The window sums `total` (in `acc`) divided by their divisors, in X's type (a new array)."""
    counts = _divisors(
        X.shape[2:],
        tuple(pads),
        tuple(kernel_shape),
        tuple(strides),
        tuple(dilations),
        tuple(total.shape[2:]),
        bool(count_include_pad),
        acc,
    )
    return np.divide(total, counts).astype(X.dtype, copy=False)


@kernel(fresh=True, exact=False)
def global_average_pool(X):
    """GlobalAveragePool as the fast variant computes it: each plane's sum divided by its size,
    spatial dims kept as 1 (float16 and bfloat16 sum in float32). Not exact: einsum's order."""
    total = _plane_sums(X, accumulator(X.dtype))
    np.divide(total, total.dtype.type(math.prod(X.shape[2:])), out=total)
    return total.astype(X.dtype, copy=False)


def _plane_sums(X, acc):
    """The sum of each (sample, channel) plane of X, shaped (N, C, 1, ...), in `acc`: for float32
    and float64 numpy's einsum over the flattened planes (3-12 us where np.sum over the spatial
    axes takes 10-40 on EfficientNet's and ResNet's maps, which it runs as short rows; a BLAS
    product with ones was a little faster alone but makes every plane sum a BLAS call, which
    at 2 threads waits for OpenBLAS's other thread), else numpy's sum."""
    lead, rank = X.shape[:2], X.ndim - 2
    if X.dtype == acc and acc in (np.float32, np.float64) and X.size:
        total = np.einsum("ij->i", X.reshape(-1, math.prod(X.shape[2:])))
    else:
        total = np.add.reduce(X.reshape(lead + (-1,)), axis=-1, dtype=acc)
    return total.reshape(lead + (1,) * rank)


@functools.lru_cache(maxsize=1024)
def _divisors(spatial, pads, kernel_shape, strides, dilations, out, include_pad, acc):
    """average_pool's divisors, settled once per shape: the taps inside X (or its explicit
    pads) of each window, a product of per-axis counts; a scalar when they are all equal."""
    rank = len(kernel_shape)
    counts = np.ones((1,) * rank, acc)
    for axis in range(rank):
        begin, size = pads[axis], spatial[axis]
        stop = begin + size + pads[axis + rank] if include_pad else begin + size
        first = np.arange(out[axis]) * strides[axis]
        where = first[:, None] + np.arange(kernel_shape[axis]) * dilations[axis]
        inside = ((where >= (0 if include_pad else begin)) & (where < stop)).sum(axis=1)
        counts = counts * inside.astype(acc).reshape((-1,) + (1,) * (rank - 1 - axis))
    if (counts == counts.flat[0]).all():
        return counts.flat[0]  # one divisor: no array to broadcast
    counts.flags.writeable = False
    return counts


def _lp_power(x, p):
    """|x| ** p (numpy's power takes x * x for p = 2, |x| for p = 1)."""
    return np.power(np.abs(x), x.dtype.type(p))


def _lp_root(total, p):
    """total ** (1 / p) (numpy's power takes the square root for p = 2)."""
    return np.power(total, total.dtype.type(1 / p))


def _exact_lp_power(x, p):
    """|x| ** p: |x| for p = 1, x * x for p = 2, otherwise exact_pow (not for a float64 x)."""
    if p == 1:
        return np.abs(x)
    if p == 2:
        return x * x
    return exact_pow(np.abs(x), x.dtype.type(p))


def _exact_lp_root(total, p):
    """total ** (1 / p): total for p = 1, sqrt for p = 2, otherwise exact_pow."""
    if p == 1:
        return total
    if p == 2:
        return np.sqrt(total)
    return exact_pow(total, total.dtype.type(1 / p))


def _window_sum(powers, rank, pads, extra, kernel_shape, strides, dilations):
    return reduce_windows(powers, pads, 0, kernel_shape, strides, dilations, np.add, extra)


@kernel(exact=False, exact_twin="rt.exact_lp_pool")
def lp_pool(X, *, kernel_shape, pads=None, strides, dilations, ceil_mode=0, p=2, auto_pad="NOTSET"):
    """LpPool: (sum of |x| ** p over each window) ** (1 / p); padding adds nothing. Float16 and
    bfloat16 compute in float32."""
    return _lp_pool(X, kernel_shape, pads, strides, dilations, ceil_mode, p, auto_pad, False)


@kernel(exact=True)
def exact_lp_pool(
    X, *, kernel_shape, pads=None, strides, dilations, ceil_mode=0, p=2, auto_pad="NOTSET"
):
    """lp_pool exactly: |x| ** p as |x|, x * x or exact_pow; the window taps added in a fixed
    order; the root as itself, sqrt or exact_pow."""
    return _lp_pool(X, kernel_shape, pads, strides, dilations, ceil_mode, p, auto_pad, True)


def _lp_pool(X, kernel_shape, pads, strides, dilations, ceil_mode, p, auto_pad, exact):
    rank = len(kernel_shape)
    pads = explicit_pads(X, kernel_shape, strides, dilations, pads, auto_pad)
    extra = _pool_geometry(X, kernel_shape, pads, strides, dilations, ceil_mode)
    power, root = (_exact_lp_power, _exact_lp_root) if exact else (_lp_power, _lp_root)
    powers = power(X.astype(accumulator(X.dtype), copy=False), p)
    total = _window_sum(powers, rank, pads, extra, kernel_shape, strides, dilations)
    return root(total, p).astype(X.dtype, copy=False)


@kernel(exact=False, exact_twin="rt.exact_global_lp_pool")
def global_lp_pool(X, *, p=2):
    """GlobalLpPool: (sum of |x| ** p over the spatial axes) ** (1 / p), spatial dims kept as 1."""
    powers = _lp_power(X.astype(accumulator(X.dtype), copy=False), p)
    total = powers.sum(axis=tuple(range(2, X.ndim)), keepdims=True)
    return _lp_root(total, p).astype(X.dtype, copy=False)


@kernel(exact=True)
def exact_global_lp_pool(X, *, p=2):
    """global_lp_pool exactly: |x| ** p as in exact_lp_pool, the sum by exact_sum (float64 in a
    fixed order, rounded once), the root as in exact_lp_pool."""
    powers = _exact_lp_power(X.astype(accumulator(X.dtype), copy=False), p)
    total = exact_sum(powers, tuple(range(2, X.ndim)), keepdims=True)
    return _exact_lp_root(total, p).astype(X.dtype, copy=False)


def max_unpool(X, I, output_shape=None, *, kernel_shape, pads=None, strides=None):
    """MaxUnpool: zeros, with each value of X put at its index in I.

    An index is a flat position in the shape the pooling implies, (N, C, *spatial) with spatial
    (in - 1) * stride + kernel - pad begin - pad end. With `output_shape` it is re-based: the same
    coordinates in `output_shape` (as the ONNX backend data; onnxruntime reads it as a flat
    position in `output_shape`). An index outside either shape is an error. Where several values
    share an index, the last one (in C order) stays."""
    rank = len(kernel_shape)
    strides = tuple(strides or (1,) * rank)
    pads = tuple(pads or (0,) * (2 * rank))
    implied = tuple(X.shape[:2]) + tuple(
        (X.shape[2 + i] - 1) * strides[i] + kernel_shape[i] - pads[i] - pads[i + rank]
        for i in range(rank)
    )
    indices = np.asarray(I, dtype=np.int64).reshape(-1)
    values = X.reshape(-1)
    if indices.size != values.size:
        raise ValueError(f"MaxUnpool: {indices.size} indices for {values.size} values")
    size = math.prod(implied)
    outside = (indices < 0) | (indices >= size)
    if outside.any():
        raise ValueError(
            f"MaxUnpool: index {int(indices[outside][0])} is outside the pooled shape {implied}"
        )
    shape = check_allocation(implied, X.dtype)
    if output_shape is not None:
        shape = check_allocation(np.asarray(output_shape).reshape(-1), X.dtype)
        if len(shape) != X.ndim:
            raise ValueError(f"MaxUnpool: output_shape {shape} is not of rank {X.ndim}")
        coordinates = np.unravel_index(indices, implied)
        beyond = np.zeros(indices.shape, dtype=bool)
        for axis, dim in zip(coordinates, shape):
            beyond |= axis >= dim
        if beyond.any():
            where = tuple(int(axis[beyond][0]) for axis in coordinates)
            raise ValueError(f"MaxUnpool: position {where} is outside output_shape {shape}")
        indices = np.ravel_multi_index(coordinates, shape)
    # The last occurrence of each index wins: keep those only, so the assignment is ordered.
    last = indices.size - 1 - np.unique(indices[::-1], return_index=True)[1]
    Y = np.zeros(math.prod(shape), dtype=X.dtype)
    Y[indices[last]] = values[last]
    return Y.reshape(shape)


def _round_half_away(value) -> int:
    """C's round(): to the nearest integer, halves away from zero (the fraction is exact)."""
    magnitude = abs(float(value))
    whole = math.floor(magnitude)
    whole += magnitude - whole >= 0.5
    return int(whole if value >= 0 else -whole)


def max_roi_pool(X, rois, *, pooled_shape, spatial_scale=1.0):
    """MaxRoiPool over X (N, C, H, W) for rois (R, 5) rows [batch index, x1, y1, x2, y2]:
    Y (R, C, *pooled_shape).

    Corners are scaled by `spatial_scale` and rounded half away from zero (one multiplication in
    the rois' type); the region spans the rounded corners inclusive, at least one position. Bin
    (i, j) covers rows floor(i * h) to ceil((i + 1) * h) (h = region height / pooled height, one
    division in the rois' type), columns likewise, offset by the region's start and clipped to X.
    An empty bin gives 0, any other its maximum (as onnxruntime)."""
    pooled_h, pooled_w = (int(v) for v in pooled_shape)
    height, width = X.shape[2:]
    rois = np.asarray(rois)
    real = rois.dtype.type
    scale = real(spatial_scale)
    Y = np.zeros((rois.shape[0], X.shape[1], pooled_h, pooled_w), dtype=X.dtype)
    for r, roi in enumerate(rois):
        batch = int(roi[0])
        if not 0 <= batch < X.shape[0]:
            raise ValueError(f"MaxRoiPool: roi {r} names batch {batch} of {X.shape[0]}")
        x1, y1, x2, y2 = (_round_half_away(v * scale) for v in roi[1:5])
        bin_h = real(max(y2 - y1 + 1, 1)) / real(pooled_h)
        bin_w = real(max(x2 - x1 + 1, 1)) / real(pooled_w)
        for i in range(pooled_h):
            top = min(max(int(np.floor(real(i) * bin_h)) + y1, 0), height)
            bottom = min(max(int(np.ceil(real(i + 1) * bin_h)) + y1, 0), height)
            for j in range(pooled_w):
                left = min(max(int(np.floor(real(j) * bin_w)) + x1, 0), width)
                right = min(max(int(np.ceil(real(j + 1) * bin_w)) + x1, 0), width)
                if bottom > top and right > left:
                    Y[r, :, i, j] = X[batch, :, top:bottom, left:right].max(axis=(1, 2))
    return Y
