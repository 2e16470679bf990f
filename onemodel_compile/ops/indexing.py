"""Indexing operators: gathering and scattering by index, selection by mask, one-hot encoding,
unique values, sequence reversal and n-gram counting. All exact: data movement, comparisons and
integer counting; scatter reductions combine the updates one at a time in index order.

Choices where the specification leaves room (checked against onnxruntime 1.31.1 unless noted):
- GatherElements and ScatterElements accept indices smaller than the data on the other axes, as
  onnxruntime does; ScatterND/ScatterElements without reduction keep the last of duplicate indices.
- OneHot casts non-integer indices to int64 (truncation) before use, as the specification says;
  onnxruntime compares the float values instead (tools/oracle_cases/tensor.py marks it).
- Unique: docs/contract.md's settled semantics (slices compared element by element, NaN never equal to
  NaN and sorted last; the first occurrence is kept, so of -0.0 and 0.0 the earlier one).
- TfIdfVectorizer: weights[i] belongs to pool n-gram i (the specification and onnxruntime; the
  ONNX reference implementation indexes the weights by output column instead).
"""

from __future__ import annotations

from onemodel_compile.errors import UnsupportedError
from onemodel_compile.ops.code import py
from onemodel_compile.ops.common import axis_of
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter


def _axis(view: NodeView, default: int = 0, index: int = 0) -> int | str:
    """The `axis` attribute normalized against input `index`'s rank (at run time when unknown)."""
    return axis_of(view, view.attr("axis", default), index)


def _reduction(view: NodeView) -> str:
    reduction = view.attr("reduction", "none")
    return "" if reduction == "none" else f", reduction={py(reduction)}"


@emitter("Gather", since=1, exact=True)
def gather(view: NodeView) -> str:
    data, indices = view.inputs[:2]
    return f"np.take({data}, {indices}, axis={_axis(view)})"


def _same_shape_except(a, b, axis: int) -> bool:
    return (
        a is not None
        and b is not None
        and len(a) == len(b)
        and all(x == y and x is not None for i, (x, y) in enumerate(zip(a, b)) if i != axis)
    )


@emitter("GatherElements", since=11, exact=True)
def gather_elements(view: NodeView) -> str:
    data, indices = view.inputs[:2]
    axis = _axis(view)
    if _same_shape_except(data.shape, indices.shape, axis):
        return f"np.take_along_axis({data}, {indices}, axis={axis})"
    return f"rt.gather_elements({data}, {indices}, axis={axis})"


@emitter("GatherND", since=11, exact=True)
def gathernd(view: NodeView) -> str:
    data, indices = view.inputs[:2]
    batch_dims = view.attr("batch_dims", 0)
    keyword = f", batch_dims={batch_dims}" if batch_dims else ""
    return f"rt.gathernd({data}, {indices}{keyword})"


@emitter("Scatter", since=9, exact=True)
@emitter("ScatterElements", since=11, exact=True)
def scatter_elements(view: NodeView) -> str:
    data, indices, updates = view.inputs[:3]
    return (
        f"rt.scatter_elements({data}, {indices}, {updates}, axis={_axis(view)}"
        f"{_reduction(view)})"
    )


@emitter("ScatterND", since=11, exact=True)
def scatternd(view: NodeView) -> str:
    data, indices, updates = view.inputs[:3]
    return f"rt.scatternd({data}, {indices}, {updates}{_reduction(view)})"


@emitter("TensorScatter", since=24, exact=True)
def tensor_scatter(view: NodeView) -> str:
    operands = [str(x) for x in view.inputs if x is not None]
    axis = _axis(view, -2)
    return f"rt.tensor_scatter({', '.join(operands)}, axis={axis}, mode={py(view.attr('mode'))})"


@emitter("Compress", since=9, exact=True)
def compress(view: NodeView) -> str:
    X, condition = view.inputs[:2]
    if view.attr("axis") is None:  # the flattened input
        return f"np.compress({condition}, {X})"
    return f"np.compress({condition}, {X}, axis={_axis(view)})"


@emitter("NonZero", since=9, exact=True)
def nonzero(view: NodeView) -> str:
    X = view.inputs[0]
    if X.rank is None:
        return f"rt.nonzero({X})"
    if X.rank == 0:  # numpy refuses nonzero of a scalar: shape (0, 1) or (0, 0)
        return f"np.zeros((0, int({X} != 0)), dtype=np.int64)"
    return f"np.array(np.nonzero({X}), dtype=np.int64)"


@emitter("OneHot", since=9, exact=True)
def onehot(view: NodeView) -> str:
    indices, depth, values = view.inputs[:3]
    return f"rt.onehot({indices}, {depth}, {values}, axis={view.attr('axis', -1)})"


@emitter("Unique", since=11, exact=True)
def unique(view: NodeView) -> list[str]:
    X = view.inputs[0]
    axis = view.attr("axis")
    keywords = f"sorted={view.attr('sorted', 1)}"
    if axis is not None:
        keywords = f"axis={_axis(view)}, " + keywords
    targets = [out.name if out is not None else "_" for out in view.outputs]
    targets += ["_"] * (4 - len(targets))
    return [f"{', '.join(targets)} = rt.unique({X}, {keywords})"]


@emitter("ReverseSequence", since=10, exact=True)
def reverse_sequence(view: NodeView) -> str:
    X, lengths = view.inputs[:2]
    return (
        f"rt.reverse_sequence({X}, {lengths}, batch_axis={view.attr('batch_axis', 1)}, "
        f"time_axis={view.attr('time_axis', 0)})"
    )


@emitter("TfIdfVectorizer", since=9, exact=True)
def tfidfvectorizer(view: NodeView) -> str:
    if view.attr("pool_strings"):
        raise UnsupportedError(f"{view.node.label}: string n-gram pools are not supported")
    keywords = [
        f"{name}={py(view.attr(name))}"
        for name in (
            "max_gram_length",
            "max_skip_count",
            "min_gram_length",
            "mode",
            "ngram_counts",
            "ngram_indexes",
            "pool_int64s",
            "weights",
        )
        if view.attr(name) is not None
    ]
    return f"rt.tfidfvectorizer({view.inputs[0]}, {', '.join(keywords)})"
