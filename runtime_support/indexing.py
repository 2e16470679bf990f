"""Indexing kernels: gathering and scattering by index, one-hot, unique values, n-gram counts.

Indices may be negative (counted from the end, as in Python). Scatter reductions apply the updates
one at a time in the order of the index tensor (numpy's `ufunc.at`), so their results do not
depend on the machine.
"""

from __future__ import annotations

import numpy as np

from runtime_support._limits import check_allocation

__all__ = [
    "gather_elements",
    "gathernd",
    "nonzero",
    "onehot",
    "reverse_sequence",
    "scatter_elements",
    "scatternd",
    "tensor_scatter",
    "tfidfvectorizer",
    "unique",
]

_REDUCTIONS = {
    "add": np.add,
    "mul": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}


def _scatter(out: np.ndarray, index: tuple, updates: np.ndarray, reduction: str) -> np.ndarray:
    if reduction == "none":
        out[index] = updates
    else:
        _REDUCTIONS[reduction].at(out, index, updates)
    return out


def _along_axis_index(indices: np.ndarray, axis: int) -> tuple:
    """The full index tuple of the elements `indices` points at along `axis`."""
    index: list[np.ndarray] = list(np.indices(indices.shape, sparse=True))
    index[axis] = indices
    return tuple(index)


def gather_elements(data: np.ndarray, indices: np.ndarray, *, axis: int) -> np.ndarray:
    """ONNX GatherElements where `indices` is smaller than `data` on axes other than `axis`
    (np.take_along_axis covers equal shapes)."""
    return data[_along_axis_index(indices, axis)]


def scatter_elements(
    data: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, axis: int, reduction="none"
) -> np.ndarray:
    """ONNX ScatterElements (and Scatter): a copy of `data` with `updates[i...]` written (or
    combined by `reduction`) at the position `indices[i...]` along `axis`."""
    return _scatter(data.copy(), _along_axis_index(indices, axis), updates, reduction)


def scatternd(
    data: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, reduction="none"
) -> np.ndarray:
    """ONNX ScatterND: a copy of `data` with the slice at each index tuple (last axis of
    `indices`) replaced by, or combined by `reduction` with, the matching slice of `updates`."""
    index = tuple(np.moveaxis(indices, -1, 0))
    return _scatter(data.copy(), index, updates, reduction)


def gathernd(data: np.ndarray, indices: np.ndarray, *, batch_dims: int = 0) -> np.ndarray:
    """ONNX GatherND: the slices of `data` at the index tuples on the last axis of `indices`,
    the first `batch_dims` axes of both being matching batch axes."""
    batch = data.shape[:batch_dims]
    depth = indices.shape[-1]
    count = int(np.prod(batch, dtype=np.int64))
    tuples = int(np.prod(indices.shape[batch_dims:-1], dtype=np.int64))
    flat = data.reshape((count,) + data.shape[batch_dims:])
    index = indices.reshape(count, tuples, depth)
    rows = np.arange(count).reshape(count, 1)
    picked = flat[(rows,) + tuple(np.moveaxis(index, -1, 0))]
    return picked.reshape(indices.shape[:-1] + data.shape[batch_dims + depth :])


def tensor_scatter(
    past_cache: np.ndarray,
    update: np.ndarray,
    write_indices: np.ndarray | None = None,
    *,
    axis: int,
    mode: str = "linear",
) -> np.ndarray:
    """ONNX TensorScatter: a copy of the cache with, for each batch entry b, the update's
    sequence written along `axis` from position write_indices[b] on (modulo the cache length in
    circular mode)."""
    batch, length, steps = past_cache.shape[0], past_cache.shape[axis], update.shape[axis]
    if write_indices is None:
        write_indices = np.zeros(batch, dtype=np.int64)
    positions = write_indices.reshape(batch, 1) + np.arange(steps, dtype=np.int64)
    if mode == "circular":
        positions %= length
    shape = [1] * past_cache.ndim
    shape[0], shape[axis] = batch, steps
    present = past_cache.copy()
    np.put_along_axis(present, positions.reshape(shape), update, axis)
    return present


def nonzero(X: np.ndarray) -> np.ndarray:
    """ONNX NonZero for an input whose rank was unknown at compile time: the int64 indices of the
    non-zero elements, one row per axis; a scalar gives shape (0, 1) or (0, 0), as the compiler
    emits for a known scalar (numpy refuses nonzero of a 0-d array)."""
    if X.ndim == 0:
        return np.zeros((0, int(X != 0)), dtype=np.int64)
    return np.array(np.nonzero(X), dtype=np.int64)


def onehot(indices: np.ndarray, depth, values: np.ndarray, *, axis: int = -1) -> np.ndarray:
    """ONNX OneHot: values[1] where the one-hot axis position equals the index (negative ones
    counted from the end), values[0] elsewhere and for indices outside [-depth, depth-1].
    Non-integer indices and depth are truncated to int64 first."""
    depth = int(np.asarray(depth).reshape(-1)[0])
    indices = np.asarray(indices).astype(np.int64)
    check_allocation(indices.shape + (max(depth, 0),), np.asarray(values).dtype)
    indices = np.where(indices < 0, indices + depth, indices)
    axis = axis % (indices.ndim + 1)
    positions = np.arange(depth, dtype=np.int64).reshape((depth,) + (1,) * (indices.ndim - axis))
    hot = np.expand_dims(indices, axis) == positions
    return np.where(hot, values[1], values[0])


def reverse_sequence(
    input: np.ndarray, sequence_lens: np.ndarray, *, batch_axis: int = 1, time_axis: int = 0
) -> np.ndarray:
    """ONNX ReverseSequence: for each batch entry b, the first sequence_lens[b] steps along
    `time_axis` in reverse order, the others unchanged."""
    steps = np.arange(input.shape[time_axis], dtype=np.int64)
    lengths = sequence_lens.astype(np.int64).reshape(-1, 1)
    source = np.where(steps < lengths, lengths - 1 - steps, steps)  # (batch, time)
    if time_axis < batch_axis:
        source = source.T
    source = source.reshape(source.shape + (1,) * (input.ndim - 2))
    return np.take_along_axis(input, source, axis=time_axis)


def unique(X: np.ndarray, *, axis=None, sorted: int = 1):
    """ONNX Unique: (Y, indices, inverse_indices, counts).

    Without `axis` the elements of the flattened input are compared, with it the slices along
    `axis`. Slices are equal when every element is (NaN never equals NaN, -0.0 equals 0.0, and
    the first occurrence is the one kept); sorted order compares slices element by element, NaN
    after every number. With sorted=0 the unique values keep the order of their first occurrence.
    """
    if axis is None:
        X, axis = X.reshape(-1), 0
    rows = np.moveaxis(X, axis, 0)
    count = rows.shape[0]
    table = rows.reshape(count, int(np.prod(rows.shape[1:], dtype=np.int64)))
    keys = table.astype(np.float32) if table.dtype.name == "bfloat16" else table
    # Stable lexicographic sort (last key primary): equal slices keep their input order.
    order = np.lexsort(keys.T[::-1]) if keys.shape[1] else np.arange(count)
    ordered = keys[order]
    starts = np.ones(count, dtype=bool)
    starts[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    group = np.cumsum(starts) - 1  # group number of each sorted slice
    first = order[starts]  # first occurrence of each unique slice, in sorted order
    counts = np.diff(np.append(np.flatnonzero(starts), count))
    inverse = np.empty(count, dtype=np.int64)
    inverse[order] = group
    if not sorted:
        by_occurrence = np.argsort(first, kind="stable")
        rank = np.empty_like(by_occurrence)
        rank[by_occurrence] = np.arange(by_occurrence.size)
        first, counts, inverse = first[by_occurrence], counts[by_occurrence], rank[inverse]
    Y = np.moveaxis(rows[first], 0, axis)
    return Y, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """One opaque value per row of int64s, equal exactly when the rows are (for sorting and
    searching whole n-grams at once)."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    return rows.view(np.dtype((np.void, 8 * rows.shape[-1]))).reshape(rows.shape[:-1])


def tfidfvectorizer(
    X: np.ndarray,
    *,
    max_gram_length: int,
    max_skip_count: int,
    min_gram_length: int,
    mode: str,
    ngram_counts,
    ngram_indexes,
    pool_int64s,
    weights=None,
) -> np.ndarray:
    """ONNX TfIdfVectorizer over integer input [C] or [N, C]: float32 [E] or [N, E] with
    E = max(ngram_indexes) + 1.

    The pool holds the n-grams of each length n (from ngram_counts[n-1] on); pool n-gram i is
    counted in column ngram_indexes[i]. The n-grams of X are n items taken every d-th position
    from any start, for d from 1 to max_skip_count + 1 (d = 1 only for 1-grams) and n from
    min_gram_length to max_gram_length. TF gives the counts, IDF weights[i] (or 1) where the
    count of n-gram i is non-zero, TFIDF the counts times weights[i] (or 1).
    """
    rows = X.reshape(1, -1) if X.ndim < 2 else X
    columns = np.asarray(ngram_indexes, dtype=np.int64)
    width = int(columns.max()) + 1
    frequencies = np.zeros((rows.shape[0], width), dtype=np.int64)
    pool = np.asarray(pool_int64s, dtype=np.int64)
    bounds = list(ngram_counts) + [pool.size]
    first_id = 0
    for n in range(1, len(ngram_counts) + 1):
        grams = pool[bounds[n - 1] : bounds[n]].reshape(-1, n)
        ids = np.arange(first_id, first_id + grams.shape[0])
        first_id += grams.shape[0]
        if not min_gram_length <= n <= max_gram_length or not grams.size:
            continue
        keys = _row_keys(grams)
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        for skip in range(1, max_skip_count + 2 if n > 1 else 2):
            starts = rows.shape[1] - (n - 1) * skip
            if starts <= 0:
                break
            windows = np.stack([rows[:, k * skip : k * skip + starts] for k in range(n)], axis=-1)
            found = _row_keys(windows)
            position = np.minimum(np.searchsorted(keys, found), keys.size - 1)
            hit = keys[position] == found
            row = np.nonzero(hit)[0]
            np.add.at(frequencies, (row, columns[ids[order[position[hit]]]]), 1)
    scale = np.ones(width, dtype=np.float32)
    if weights:
        scale[columns] = np.asarray(weights, dtype=np.float32)
    if mode == "TF":
        Y = frequencies.astype(np.float32)
    elif mode == "IDF":
        Y = np.where(frequencies > 0, scale, np.float32(0))
    else:  # TFIDF
        Y = frequencies.astype(np.float32) * scale
    return Y.reshape(width) if X.ndim < 2 else Y
