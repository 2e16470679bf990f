"""Kernels of the compiler's own operators (onemodel_compile/ops/fused.py): what the fast
variant's rewrites turn groups of a model's nodes into."""

from __future__ import annotations

import numpy as np

from runtime_support._kernels import kernel
from runtime_support._threads import blas_threads_for, run_ranges
from runtime_support.activation import rows_max, softmax, softmax_rows

__all__ = ["attention_heads"]


@kernel(fresh=True, exact=False)
def attention_heads(q, k, v, *, scale=None, mask=None, keep=None, fill=None):
    """softmax(where(keep, q @ k * scale, fill) + mask) @ v over the last two axes, for a stack
    of heads: q (..., S, D), k already transposed (..., D, T), v (..., T, Dv); keep (boolean),
    fill and mask broadcast against the scores (..., S, T); each of them optional.

    Two batched products (one BLAS call per head, views of the exporters' transposed heads as
    they are); the scale, the fill, the mask and the softmax in place in the scores: one scores
    array in all. (Scaling q instead measured the same, at the cost of a copy of q.)

    At more than one thread, heads whose products are under _threads.SMALL_BLAS_WORK each (all
    the benchmark transformers': 128 x 128 x 64 is 1 M) run them at one BLAS thread: OpenBLAS
    splits each such product over its threads and waits for the second at every head, which on
    a loaded machine took 340-360 ms of bert_op17's 800 ms run (docs/performance.md, session 9)."""
    largest = q.shape[-2] * k.shape[-1] * max(q.shape[-1], v.shape[-1]) if q.ndim >= 2 else 0
    with blas_threads_for(largest):
        return _attention_heads(q, k, v, scale, mask, keep, fill)


def _attention_heads(q, k, v, scale, mask, keep, fill):
    scores = np.matmul(q, k)
    if scale is not None:
        np.multiply(scores, scores.dtype.type(scale), out=scores)
    if keep is not None:
        scores = _in_place(scores, (keep, fill), lambda s: np.copyto(s, fill, where=~keep))
    if mask is not None:
        scores = _in_place(scores, (mask,), lambda s: np.add(s, mask, out=s))
    if not scores.size:  # no keys (or no queries): nothing to split, nor to reshape by rows
        return np.matmul(softmax(scores, axis=-1, out=scores), v)
    rows = scores.reshape(-1, scores.shape[-1])  # C-contiguous: a new product or a copy
    shift = rows_max(rows)  # of all the rows, whatever runs they are cut into

    def run(start, stop):
        softmax_rows(rows[start:stop], shift, out=rows[start:stop])

    # rows in runs of whole groups of 32 over the threads, as layer_normalization's: the bits of
    # the whole (softmax's sums are BLAS matrix-vector products)
    run_ranges(run, rows.shape[0], rows.shape[1], align=32)
    return np.matmul(scores, v)


def _in_place(scores, operands, update):
    """`update` applied to the scores in place; when the operands have more batch or head rows
    than the scores (numpy refuses to broadcast into `out`, before writing anything), to a copy
    of the scores broadcast to the larger shape. (Trying first: np.broadcast_shapes costs a few
    microseconds a call, a one-token decoder step's share of its attention.)"""
    try:
        update(scores)
        return scores
    except ValueError:
        shape = np.broadcast_shapes(scores.shape, *(np.shape(o) for o in operands))
        scores = np.broadcast_to(scores, shape).copy()
        update(scores)
        return scores
