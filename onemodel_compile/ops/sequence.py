"""Sequences (Python lists of arrays) and optionals (a value or None). Data movement: exact."""

from __future__ import annotations

from onemodel_compile.ops.code import py
from onemodel_compile.ops.control import targets
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter
from onemodel_compile import ir


def _or_none(view: NodeView, index: int) -> str:
    operand = view.input(index)
    return "None" if operand is None else str(operand)


@emitter("SequenceEmpty", since=11, exact=True, foldable=False)
def sequence_empty(view: NodeView) -> str:
    return "[]"


@emitter("SequenceConstruct", since=11, exact=True, foldable=False)
def sequence_construct(view: NodeView) -> str:
    return f"[{', '.join(str(x) for x in view.inputs)}]"


@emitter("SequenceInsert", since=11, exact=True, foldable=False)
def sequence_insert(view: NodeView) -> str:
    return f"rt.sequence_insert({view.inputs[0]}, {view.inputs[1]}, {_or_none(view, 2)})"


@emitter("SequenceErase", since=11, exact=True, foldable=False)
def sequence_erase(view: NodeView) -> str:
    return f"rt.sequence_erase({view.inputs[0]}, {_or_none(view, 1)})"


@emitter("SequenceAt", since=11, exact=True, foldable=False)
def sequence_at(view: NodeView) -> str:
    return f"{view.inputs[0]}[{view.inputs[1]}.item()]"


@emitter("SequenceLength", since=11, exact=True, foldable=False)
def sequence_length(view: NodeView) -> str:
    return f"np.array(len({view.inputs[0]}), dtype=np.int64)"


@emitter("ConcatFromSequence", since=11, exact=True, foldable=False)
def concat_from_sequence(view: NodeView) -> str:
    function = "np.stack" if view.attr("new_axis", 0) else "np.concatenate"
    return f"{function}({view.inputs[0]}, axis={view.attr('axis')})"


@emitter("SplitToSequence", since=11, exact=True, foldable=False)
def split_to_sequence(view: NodeView) -> str:
    split = view.input(1)
    return (
        f"rt.split_to_sequence({view.inputs[0]}, {_or_none(view, 1) if split else 'None'}, "
        f"axis={view.attr('axis', 0)}, keepdims={view.attr('keepdims', 1)})"
    )


@emitter("SequenceMap", since=17, exact=True, foldable=False)
def sequence_map(view: NodeView) -> list[str]:
    body = view.body("body")
    flags = tuple(isinstance(x.type, ir.SequenceType) for x in view.inputs)
    arguments = ", ".join(str(x) for x in view.inputs)
    return [f"{targets(view)} = rt.sequence_map({body}, {arguments}, is_sequence={py(flags)})"]


@emitter("Optional", since=15, exact=True, foldable=False)
def optional(view: NodeView) -> str:
    return _or_none(view, 0)


@emitter("OptionalHasElement", since=15, exact=True, foldable=False)
def optional_has_element(view: NodeView) -> str:
    return f"np.array({_or_none(view, 0)} is not None)"


@emitter("OptionalGetElement", since=15, exact=True, foldable=False)
def optional_get_element(view: NodeView) -> str:
    return f"rt.optional_get_element({view.inputs[0]})"
