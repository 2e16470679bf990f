"""Sequence and optional kernels. Sequences are Python lists of arrays; kernels never mutate the
list they are given (ONNX values are immutable), they return a new one."""

from __future__ import annotations

import numpy as np

__all__ = [
    "optional_get_element",
    "sequence_erase",
    "sequence_insert",
    "sequence_map",
    "split_to_sequence",
]


def sequence_insert(sequence: list, tensor: np.ndarray, position=None) -> list:
    """A new list with `tensor` at `position` (default: the end). A negative position p in
    [-n, -1] inserts at p + n, before the element it names (onnx's simple/test_sequence_model3,
    onnxruntime); only the default or n appends."""
    result = list(sequence)
    if position is None:
        result.append(tensor)
        return result
    index = np.asarray(position).item()
    if not -len(result) <= index <= len(result):
        raise IndexError(f"SequenceInsert: position {index} outside a sequence of {len(result)}")
    result.insert(index + len(result) if index < 0 else index, tensor)
    return result


def sequence_erase(sequence: list, position=None) -> list:
    """A new list without the element at `position` (default: the last)."""
    result = list(sequence)
    index = -1 if position is None else np.asarray(position).item()
    if not -len(result) <= index < len(result):
        raise IndexError(f"SequenceErase: position {index} outside a sequence of {len(result)}")
    del result[index]
    return result


def split_to_sequence(data: np.ndarray, split=None, *, axis: int = 0, keepdims: int = 1) -> list:
    """ONNX SplitToSequence: pieces of `split` sizes (a scalar: chunks of that size, the last one
    smaller), or every index of `axis` (dropping the axis unless keepdims)."""
    axis = axis % data.ndim
    dim = data.shape[axis]
    if split is None:
        pieces = np.split(data, dim, axis=axis)
        return pieces if keepdims else [np.squeeze(p, axis=axis) for p in pieces]
    split = np.asarray(split)
    if split.ndim == 0:
        size = int(split)
        bounds = list(range(size, dim, size))
    else:
        bounds = np.cumsum(split)[:-1].tolist()
    return np.split(data, bounds, axis=axis)


def sequence_map(body, sequence: list, *additional, is_sequence):
    """ONNX SequenceMap: `body` on each position of the sequence(s); tensors among the additional
    inputs are passed whole every time. Returns one list per body output."""
    results = []
    for index in range(len(sequence)):
        arguments = [sequence[index]] + [
            value[index] if flag else value for value, flag in zip(additional, is_sequence[1:])
        ]
        results.append(body(*arguments))
    if not results:
        return ([],)
    return tuple(list(column) for column in zip(*results))


def optional_get_element(value):
    """The value inside an optional; an empty optional is an error."""
    if value is None:
        raise ValueError("OptionalGetElement: the optional is empty")
    return value
