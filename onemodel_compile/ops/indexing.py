"""Indexing operators: gathering and scattering by index, selection by mask, one-hot encoding,
unique values, sequence reversal and n-gram counting. All exact: data movement, comparisons and
integer counting; scatter reductions combine the updates one at a time in index order.

Choices where the specification leaves room (checked against onnxruntime 1.31.1 unless noted):
- GatherElements and ScatterElements accept indices smaller than the data on the other axes, as
  onnxruntime does; ScatterND/ScatterElements without reduction keep the last of duplicate indices.
- OneHot casts non-integer indices to int64 (truncation) before use, as the specification says;
  onnxruntime compares the float values instead (tests/harness/oracle_cases/tensor.py marks it).
- Unique: docs/contract.md's settled semantics (slices compared element by element, NaN never equal to
  NaN and sorted last; the first occurrence is kept, so of -0.0 and 0.0 the earlier one).
- TfIdfVectorizer: weights[i] belongs to pool n-gram i (the specification and onnxruntime; the
  ONNX reference implementation indexes the weights by output column instead).
"""

from __future__ import annotations

import numpy as np

from onemodel_compile.errors import UnsupportedError
from onemodel_compile.ops import pyir
from onemodel_compile.ops.common import axis_of, optional_arguments
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import binop, call, tuple_of
from onemodel_compile.ops.registry import emitter


def _axis(view: NodeView, default: int = 0, index: int = 0) -> int | pyir.Expr:
    """The `axis` attribute normalized against input `index`'s rank (at run time when unknown)."""
    return axis_of(view, view.attr("axis", default), index)


def _reduction(view: NodeView) -> dict:
    reduction = view.attr("reduction", "none")
    return {} if reduction == "none" else {"reduction": reduction}


@emitter("Gather", since=1, exact=True)
def gather(view: NodeView) -> pyir.Expr:
    data, indices = view.inputs[:2]
    return call("np.take", data, indices, axis=_axis(view))


def _same_shape_except(a, b, axis: int) -> bool:
    return (
        a is not None
        and b is not None
        and len(a) == len(b)
        and all(x == y and x is not None for i, (x, y) in enumerate(zip(a, b)) if i != axis)
    )


@emitter("GatherElements", since=11, exact=True)
def gather_elements(view: NodeView) -> pyir.Expr:
    data, indices = view.inputs[:2]
    axis = _axis(view)
    if isinstance(axis, int) and _same_shape_except(data.shape, indices.shape, axis):
        return call("np.take_along_axis", data, indices, axis=axis)
    return call("rt.gather_elements", data, indices, axis=axis)


@emitter("GatherND", since=11, exact=True)
def gathernd(view: NodeView) -> pyir.Expr:
    data, indices = view.inputs[:2]
    batch_dims = view.attr("batch_dims", 0)
    keywords = {"batch_dims": batch_dims} if batch_dims else {}
    return call("rt.gathernd", data, indices, **keywords)


@emitter("Scatter", since=9, exact=True)
@emitter("ScatterElements", since=11, exact=True)
def scatter_elements(view: NodeView) -> pyir.Expr:
    data, indices, updates = view.inputs[:3]
    return call("rt.scatter_elements", data, indices, updates, axis=_axis(view), **_reduction(view))


@emitter("ScatterND", since=11, exact=True)
def scatternd(view: NodeView) -> pyir.Expr:
    data, indices, updates = view.inputs[:3]
    return call("rt.scatternd", data, indices, updates, **_reduction(view))


@emitter("TensorScatter", since=24, exact=True)
def tensor_scatter(view: NodeView) -> pyir.Expr:
    args, keywords = optional_arguments(view, {2: "write_indices"})
    axis = _axis(view, -2)
    return call("rt.tensor_scatter", *args, **keywords, axis=axis, mode=view.attr("mode"))


@emitter("Compress", since=9, exact=True)
def compress(view: NodeView) -> pyir.Expr:
    X, condition = view.inputs[:2]
    if view.attr("axis") is None:  # the flattened input
        return call("np.compress", condition, X)
    return call("np.compress", condition, X, axis=_axis(view))


@emitter("NonZero", since=9, exact=True)
def nonzero(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    if X.rank is None:
        return call("rt.nonzero", X)
    if X.rank == 0:  # numpy refuses nonzero of a scalar: shape (0, 1) or (0, 0)
        return call("np.zeros", tuple_of([0, call("int", binop("!=", X, 0))]), dtype=np.int64)
    return call("np.array", call("np.nonzero", X), dtype=np.int64)


@emitter("OneHot", since=9, exact=True)
def onehot(view: NodeView) -> pyir.Expr:
    indices, depth, values = view.inputs[:3]
    return call("rt.onehot", indices, depth, values, axis=view.attr("axis"))


@emitter("Unique", since=11, exact=True)
def unique(view: NodeView) -> list[pyir.Assign]:
    """The kernel returns all four outputs; the ones the node does not list are bound to `_`."""
    X = view.inputs[0]
    keywords = {} if view.attr("axis") is None else {"axis": _axis(view)}
    keywords["sorted"] = view.attr("sorted")
    targets = [out.name if out is not None else None for out in view.outputs]
    targets += [None] * (4 - len(targets))
    return [pyir.assign(targets, call("rt.unique", X, **keywords))]


@emitter("ReverseSequence", since=10, exact=True)
def reverse_sequence(view: NodeView) -> pyir.Expr:
    X, lengths = view.inputs[:2]
    return call(
        "rt.reverse_sequence",
        X,
        lengths,
        batch_axis=view.attr("batch_axis"),
        time_axis=view.attr("time_axis"),
    )


_TFIDF_ATTRIBUTES = (
    "max_gram_length",
    "max_skip_count",
    "min_gram_length",
    "mode",
    "ngram_counts",
    "ngram_indexes",
    "pool_int64s",
    "weights",
)


@emitter("TfIdfVectorizer", since=9, exact=True)
def tfidfvectorizer(view: NodeView) -> pyir.Expr:
    if view.attr("pool_strings"):
        raise UnsupportedError(f"{view.node.label}: string n-gram pools are not supported")
    keywords = {name: view.attr(name) for name in _TFIDF_ATTRIBUTES if view.attr(name) is not None}
    return call("rt.tfidfvectorizer", view.inputs[0], **keywords)
