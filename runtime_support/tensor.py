"""Tensor kernels: shapes only known at run time, padding, block rearrangements, Range, Cast; and
the axis normalizers of code compiled for an input whose rank was unknown at compile time."""

from __future__ import annotations

import math

import numpy as np

from runtime_support._kernels import kernel
from runtime_support._limits import check_allocation

__all__ = [
    "dropout",
    "arange",
    "cast",
    "center_crop_pad",
    "clamp_bound",
    "constant_of_shape",
    "depth_to_space",
    "expand",
    "flatten",
    "normalize_axes",
    "normalize_axis",
    "pad",
    "pad_reflect_axis",
    "range_",
    "reshape",
    "slice_",
    "space_to_depth",
    "split",
    "squeeze",
    "tile",
    "unsqueeze",
]


def normalize_axis(axis: int, rank: int) -> int:
    """An ONNX axis attribute (-rank <= axis < rank) as a non-negative axis of an array of rank
    `rank`: what the compiler computes when it knows the rank, for code compiled without it. A
    scalar (rank 0) takes axis 0 alone, as the compiler does. Out of range is an error."""
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"axis {axis} is out of range for an input of rank {rank}")
    return axis % rank if rank else 0


def normalize_axes(axes, rank: int) -> tuple[int, ...]:
    """ONNX axes as sorted, distinct non-negative axes of an array of rank `rank` (each as
    normalize_axis takes it)."""
    return tuple(sorted({normalize_axis(int(a), rank) for a in axes}))


def flatten(input: np.ndarray, *, axis: int = 1) -> np.ndarray:
    """ONNX Flatten for an input whose rank was unknown at compile time: the 2-D
    (prod(dims before axis), prod(dims from axis)) view, -rank <= axis <= rank. (Also the 2-D
    coercion of Softmax, LogSoftmax and Hardmax before opset 13.)"""
    rank = input.ndim
    if not -rank <= axis <= rank:
        raise ValueError(f"Flatten: axis {axis} is out of range for an input of rank {rank}")
    axis = axis + rank if axis < 0 else axis
    return input.reshape(math.prod(input.shape[:axis]), math.prod(input.shape[axis:]))


def reshape(data: np.ndarray, shape: np.ndarray, *, allowzero: int = 0) -> np.ndarray:
    """ONNX Reshape: a 0 copies the input's dim (unless allowzero), one -1 is inferred."""
    dims = [int(d) for d in shape]
    if not allowzero:
        dims = [data.shape[i] if d == 0 else d for i, d in enumerate(dims)]
    return data.reshape(dims)


def _axes(axes, rank: int) -> tuple[int, ...]:
    return tuple(sorted(int(a) % rank if rank else 0 for a in np.asarray(axes).reshape(-1)))


def unsqueeze(data: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """ONNX Unsqueeze with axes known only at run time (negative axes count in the output)."""
    return np.expand_dims(data, _axes(axes, data.ndim + np.asarray(axes).size))


def squeeze(data: np.ndarray, axes: np.ndarray | None) -> np.ndarray:
    """ONNX Squeeze with axes known only at run time; no axes squeezes every 1."""
    if axes is None or np.asarray(axes).size == 0:
        return np.squeeze(data)
    return np.squeeze(data, _axes(axes, data.ndim))


def slice_(data, starts, ends, axes=None, steps=None) -> np.ndarray:
    """ONNX Slice with bounds known only at run time, clamped as ONNX clamps them."""
    starts = np.asarray(starts).reshape(-1)
    ends = np.asarray(ends).reshape(-1)
    axes = range(len(starts)) if axes is None else _axes_unsorted(axes, data.ndim)
    steps = np.ones(len(starts), dtype=np.int64) if steps is None else np.asarray(steps).reshape(-1)
    index = [slice(None)] * data.ndim
    for axis, start, end, step in zip(axes, starts, ends, steps):
        dim, start, end, step = data.shape[axis], int(start), int(end), int(step)
        if step == 0:
            raise ValueError("Slice: a step cannot be 0")
        index[axis] = slice(
            clamp_bound(start, dim, step, False), clamp_bound(end, dim, step, True), step
        )
    return data[tuple(index)]


def _axes_unsorted(axes, rank: int) -> list[int]:
    return [int(a) % rank for a in np.asarray(axes).reshape(-1)]


def clamp_bound(index: int, dim: int, step: int, is_end: bool):
    """ONNX's clamping of a slice bound on an axis of size `dim`, as a Python slice bound
    (None for "before the first element" when stepping backwards)."""
    if index < 0:
        index += dim
    if step > 0:
        return max(0, min(dim, index))
    index = max(-1, min(dim - 1, index)) if is_end else max(0, min(dim - 1, index))
    return None if index == -1 else index


def split(data: np.ndarray, split=None, *, axis: int, outputs: int) -> list[np.ndarray]:
    """ONNX Split into `outputs` parts with sizes `split` (known only at run time), or into equal
    parts (the last one smaller when the size does not divide)."""
    dim = data.shape[axis]
    if split is None or np.asarray(split).size == 0:
        chunk = -(-dim // outputs)
        sizes = [min(chunk, dim - i * chunk) for i in range(outputs)]
    else:
        sizes = [int(s) for s in np.asarray(split).reshape(-1)]
    return np.split(data, np.cumsum(sizes)[:-1], axis=axis)


def pad(data: np.ndarray, pads, constant_value=None, axes=None, *, mode: str = "constant"):
    """ONNX Pad with pads (begin values of the axes, then end values) or axes known only at run
    time, or negative pads (which remove elements, before any padding)."""
    rank = data.ndim
    if type(pads) is not tuple:  # the emitter passes known pads as a tuple of ints
        pads = [int(p) for p in np.asarray(pads).reshape(-1)]
    axes = range(rank) if axes is None else _axes_unsorted(axes, rank)
    widths = [(0, 0)] * rank
    for i, axis in enumerate(axes):
        widths[axis] = (pads[i], pads[len(pads) // 2 + i])
    if min(pads, default=0) < 0:
        kept = tuple(slice(max(-b, 0), d - max(-e, 0)) for (b, e), d in zip(widths, data.shape))
        widths = [(max(b, 0), max(e, 0)) for b, e in widths]
        data = data[kept]
    check_allocation([max(d, 0) + b + e for d, (b, e) in zip(data.shape, widths)], data.dtype)
    value = 0 if constant_value is None else constant_value
    if mode in _BORDERS and all(b < d and e < d for (b, e), d in zip(widths, data.shape)):
        return _pad_borders(data, widths, mode, value)
    if mode == "constant":
        return np.pad(data, widths, mode="constant", constant_values=value)
    return np.pad(data, widths, mode=mode)


def pad_reflect_axis(data: np.ndarray, axis: int, begin: int, end: int) -> np.ndarray:
    """ONNX Pad, mode reflect, of the one axis `axis` (non-negative, pads known, the axis's size
    not): the mirrored views and `data` in one np.concatenate when both pads are shorter than
    the axis, else pad's call (which takes longer pads as np.pad does). The fast variant's plan
    of a framing pad whose length is a symbolic dim (silero-vad's audio: 15 -> 3 us)."""
    dim = data.shape[axis]
    if begin >= dim or end >= dim or begin < 0 or end < 0:
        pads = [0] * (2 * data.ndim)
        pads[axis], pads[data.ndim + axis] = begin, end
        return pad(data, tuple(pads), mode="reflect")
    lead = (slice(None),) * axis
    parts = [data]
    if begin:
        parts.insert(0, data[(*lead, slice(begin, 0, -1))])
    if end:
        parts.append(data[(*lead, slice(-2, -2 - end, -1))])
    return np.concatenate(parts, axis=axis)


def _constant_border(result, axis, lower, upper, inner, value):
    result[lower] = value
    result[upper] = value


def _edge_border(result, axis, lower, upper, inner, value):
    result[lower] = result[_along(axis, slice(inner.start, inner.start + 1))]
    result[upper] = result[_along(axis, slice(inner.stop - 1, inner.stop))]


def _reflect_border(result, axis, lower, upper, inner, value):
    """The mirror image without the edge element (pads shorter than the axis only)."""
    b, e = lower[axis].stop, upper[axis].stop - upper[axis].start
    start, stop = inner.start, inner.stop
    result[lower] = result[_along(axis, slice(start + b, start, -1))]
    result[upper] = result[
        _along(axis, slice(stop - 2, stop - 2 - e if stop - 2 - e >= 0 else None, -1))
    ]


# np.pad's own machinery costs several microseconds per axis; a small pad (shorter than its axis,
# so one reflection suffices) is assigned directly, axis by axis as np.pad does, so that the
# corners are the same: each axis pads the result of the axes before it.
_BORDERS = {"constant": _constant_border, "edge": _edge_border, "reflect": _reflect_border}


def _along(axis: int, part: slice) -> tuple:
    return (slice(None),) * axis + (part,)


def _pad_borders(data, widths, mode, value):
    dims = [d + b + e for d, (b, e) in zip(data.shape, widths)]
    result = np.empty(dims, dtype=data.dtype)
    inner = tuple(slice(b, b + d) for (b, _), d in zip(widths, data.shape))
    result[inner] = data
    fill = _BORDERS[mode]
    for axis, (b, e) in enumerate(widths):
        if b or e:
            lower, upper = _along(axis, slice(0, b)), _along(
                axis, slice(dims[axis] - e, dims[axis])
            )
            fill(result, axis, lower, upper, inner[axis], value)
    return result


def center_crop_pad(input_data: np.ndarray, shape, *, axes=None) -> np.ndarray:
    """ONNX CenterCropPad: each of `axes` (default all) cropped or zero-padded to `shape`, the
    window centred; an odd difference puts the extra element at the end."""
    rank = input_data.ndim
    axes = range(rank) if axes is None else [a % rank for a in axes]
    kept = [slice(None)] * rank
    widths = [(0, 0)] * rank
    for axis, size in zip(axes, np.asarray(shape).reshape(-1)):
        dim, size = input_data.shape[axis], int(size)
        if size < dim:
            begin = (dim - size) // 2
            kept[axis] = slice(begin, begin + size)
        elif size > dim:
            begin = (size - dim) // 2
            widths[axis] = (begin, size - dim - begin)
    dims = [dim + begin + end for dim, (begin, end) in zip(input_data.shape, widths)]
    check_allocation(dims, input_data.dtype)
    return np.pad(input_data[tuple(kept)], widths)


def depth_to_space(input: np.ndarray, *, blocksize: int, mode: str = "DCR") -> np.ndarray:
    """ONNX DepthToSpace: (N, C, H, W) to (N, C/b^2, H*b, W*b); the channel index splits as
    (row, column, depth) in DCR mode, (depth, row, column) in CRD mode."""
    n, c, h, w = input.shape
    b = blocksize
    if mode == "DCR":
        blocks = input.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        blocks = input.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return blocks.reshape(n, c // (b * b), h * b, w * b)


def space_to_depth(input: np.ndarray, *, blocksize: int, mode: str = "DCR") -> np.ndarray:
    """ONNX SpaceToDepth, the inverse of DepthToSpace: (N, C, H, W) to (N, C*b^2, H/b, W/b)."""
    n, c, h, w = input.shape
    b = blocksize
    blocks = input.reshape(n, c, h // b, b, w // b, b)
    order = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    return blocks.transpose(order).reshape(n, c * b * b, h // b, w // b)


def range_(start, limit, delta) -> np.ndarray:
    """ONNX Range as the specification computes it, in the inputs' type: start + i * delta for i
    below max(ceil((limit - start) / delta), 0). (np.arange steps floats by the difference of its
    first two values, which can differ from delta.) Inputs are scalars or one-element tensors."""
    start, limit, delta = (np.asarray(v).reshape(()) for v in (start, limit, delta))
    if start.dtype.kind in "iu":
        if int(delta) == 0:
            raise ValueError("Range: delta is 0")
        count = -(-(int(limit) - int(start)) // int(delta))
    else:
        steps = np.ceil((limit - start) / delta)
        if not np.isfinite(steps):
            raise ValueError(f"Range: ({limit} - {start}) / {delta} is not a finite count")
        count = int(steps)
    (count,) = check_allocation([max(count, 0)], np.int64)
    return start + np.arange(count).astype(start.dtype) * delta


@kernel(fresh=True, exact=True)
def arange(start, limit, delta, *, dtype) -> np.ndarray:
    """ONNX Range of integers given as Python ints or 0-d arrays: np.arange once the element
    count, max(ceil((limit - start) / delta), 0), fits the allocation limit."""
    start, limit, delta = int(start), int(limit), int(delta)
    if delta == 0:
        raise ValueError("Range: delta is 0")
    check_allocation((max(-(-(limit - start) // delta), 0),), dtype)
    return np.arange(start, limit, delta, dtype=dtype)


def _dims(shape) -> tuple:
    """A shape given as a tuple of ints or as an int tensor, as a tuple."""
    return tuple(shape.reshape(-1).tolist()) if isinstance(shape, np.ndarray) else tuple(shape)


@kernel(fresh=True, exact=True)
def constant_of_shape(shape, value, *, dtype) -> np.ndarray:
    """ONNX ConstantOfShape: an array of `shape` (a tuple or an int tensor) filled with `value`,
    allocated only once it fits the allocation limit."""
    result = np.empty(check_allocation(_dims(shape), dtype), dtype=dtype)
    result.fill(value)  # (np.full's own overhead is several times this)
    return result


@kernel(fresh=True, exact=True)
def expand(input: np.ndarray, shape) -> np.ndarray:
    """ONNX Expand: `input` broadcast with `shape` in both directions (a tuple or an int
    tensor), as a new array, allocated only once it fits the allocation limit."""
    target, dims = _dims(shape), input.shape
    rank = max(len(dims), len(target))
    out = []
    for a, b in zip((1,) * (rank - len(dims)) + dims, (1,) * (rank - len(target)) + target):
        if a != b and a != 1 and b != 1:
            raise ValueError(f"Expand: shape {list(target)} does not broadcast with {list(dims)}")
        out.append(a if b == 1 else b)
    result = np.empty(check_allocation(out, input.dtype), dtype=input.dtype)
    result[...] = input  # (np.broadcast_to(...).copy() costs ten times as much on small arrays)
    return result


@kernel(fresh=True, exact=True)
def tile(input: np.ndarray, repeats) -> np.ndarray:
    """ONNX Tile: `input` repeated `repeats[i]` times along axis i (one repeat per axis), as
    np.tile lays it out, allocated only once the result fits the allocation limit."""
    repeats = tuple(map(int, _dims(repeats)))
    if len(repeats) != input.ndim:
        raise ValueError(f"Tile: {len(repeats)} repeats for an input of rank {input.ndim}")
    out = check_allocation([d * r for d, r in zip(input.shape, repeats)], input.dtype)
    # (repeat, dim) pairs broadcast from (1, dim): the copy np.tile makes, in one assignment
    blocks = np.empty([n for pair in zip(repeats, input.shape) for n in pair], dtype=input.dtype)
    blocks[...] = input.reshape([n for d in input.shape for n in (1, d)])
    return blocks.reshape(out)


def cast(x: np.ndarray, *, to) -> np.ndarray:
    """ONNX Cast from a float type to an integer type with the conversions ONNX leaves undefined
    defined, the same on every machine: truncation toward zero, NaN to 0, values beyond the
    target's range to its minimum or maximum."""
    info = np.iinfo(to)
    whole = np.trunc(x.astype(np.float64))  # float64 holds every float16/bfloat16/float32
    end = 2.0 ** (info.bits - (info.min < 0))  # one past the maximum, exact in float64
    inside = (whole >= info.min) & (whole < end)
    converted = np.where(inside, whole, 0).astype(to)
    converted[whole >= end] = info.max
    converted[whole < info.min] = info.min
    return converted


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
