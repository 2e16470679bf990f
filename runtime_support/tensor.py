"""Tensor kernels for shapes only known at run time."""

from __future__ import annotations

import numpy as np

__all__ = ["clamp_bound", "reshape", "slice_", "split", "squeeze", "unsqueeze"]


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
