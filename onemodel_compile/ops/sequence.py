"""Sequences (Python lists of arrays) and optionals (a value or None). Data movement: exact."""

from __future__ import annotations

import numpy as np

from onemodel_compile import ir
from onemodel_compile.ops import pyir
from onemodel_compile.ops.common import optional_arguments
from onemodel_compile.ops.control import outputs_of
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import Ref, binop, call, index, method
from onemodel_compile.ops.registry import emitter


@emitter("SequenceEmpty", since=11, exact=True, foldable=False)
def sequence_empty(view: NodeView) -> pyir.Expr:
    return pyir.List(())


@emitter("SequenceConstruct", since=11, exact=True, foldable=False)
def sequence_construct(view: NodeView) -> pyir.Expr:
    return pyir.List(tuple(pyir.expr(x) for x in view.inputs))


@emitter("SequenceInsert", since=11, exact=True, foldable=False)
def sequence_insert(view: NodeView) -> pyir.Expr:
    args, keywords = optional_arguments(view, {2: "position"})
    return call("rt.sequence_insert", *args, **keywords)


@emitter("SequenceErase", since=11, exact=True, foldable=False)
def sequence_erase(view: NodeView) -> pyir.Expr:
    args, keywords = optional_arguments(view, {1: "position"})
    return call("rt.sequence_erase", *args, **keywords)


@emitter("SequenceAt", since=11, exact=True, foldable=False)
def sequence_at(view: NodeView) -> pyir.Expr:
    return index(view.inputs[0], method(view.inputs[1], "item"))


@emitter("SequenceLength", since=11, exact=True, foldable=False)
def sequence_length(view: NodeView) -> pyir.Expr:
    return call("np.array", call("len", view.inputs[0]), dtype=np.int64)


@emitter("ConcatFromSequence", since=11, exact=True, foldable=False)
def concat_from_sequence(view: NodeView) -> pyir.Expr:
    function = "np.stack" if view.attr("new_axis", 0) else "np.concatenate"
    return call(function, view.inputs[0], axis=view.attr("axis"))


@emitter("SplitToSequence", since=11, exact=True, foldable=False)
def split_to_sequence(view: NodeView) -> pyir.Expr:
    args, keywords = optional_arguments(view, {1: "split"})
    keywords.update(axis=view.attr("axis"), keepdims=view.attr("keepdims"))
    return call("rt.split_to_sequence", *args, **keywords)


@emitter("SequenceMap", since=17, exact=True, foldable=False)
def sequence_map(view: NodeView) -> list[pyir.Assign]:
    body = Ref(view.body("body"))
    flags = tuple(isinstance(x.type, ir.SequenceType) for x in view.inputs)
    return outputs_of(view, call("rt.sequence_map", body, *view.inputs, is_sequence=flags))


@emitter("Optional", since=15, exact=True, foldable=False)
def optional(view: NodeView) -> pyir.Expr:
    return pyir.expr(view.input(0))  # None when absent: an empty optional


@emitter("OptionalHasElement", since=15, exact=True, foldable=False)
def optional_has_element(view: NodeView) -> pyir.Expr:
    return call("np.array", binop("is not", view.input(0), None))


@emitter("OptionalGetElement", since=15, exact=True, foldable=False)
def optional_get_element(view: NodeView) -> pyir.Expr:
    return call("rt.optional_get_element", view.inputs[0])
