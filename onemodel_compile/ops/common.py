"""Helpers shared by emitter families: axes, attribute-or-input lookups, spatial geometry."""

from __future__ import annotations

import numpy as np

from onemodel_compile.errors import CompileError
from onemodel_compile.ops.code import py
from onemodel_compile.ops.node import NodeView


def normalize_axis(axis: int, rank: int, view: NodeView) -> int:
    if not -rank <= axis < max(rank, 1):
        raise CompileError(f"{view.node.label}: axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def need_rank(view: NodeView, index: int = 0) -> int:
    rank = view.inputs[index].rank
    if rank is None:
        raise CompileError(f"{view.node.label}: the rank of input {index} is unknown")
    return rank


def need_shape(view: NodeView, index: int = 0) -> tuple[int, ...]:
    operand = view.inputs[index]
    if operand.shape is None or not all(isinstance(d, int) for d in operand.shape):
        raise CompileError(f"{view.node.label}: the shape of input {index} must be static")
    return tuple(operand.shape)


class RunTime:
    """Marks an int list (axes, starts, sizes...) known only at run time: `expr` computes it."""

    def __init__(self, expr: str):
        self.expr = expr

    def __str__(self) -> str:
        return self.expr


def ints_from(view: NodeView, attr: str, index: int, since: int) -> list[int] | RunTime | None:
    """An int list given as attribute `attr` before opset `since`, as input `index` from then on:
    the values when known at compile time, RunTime when not, None when absent."""
    if view.opset < since:
        value = view.attr(attr)
        return None if value is None else [int(v) for v in value]
    operand = view.input(index)
    if operand is None:
        return None
    if operand.const is None:
        return RunTime(operand.expr)
    return [int(v) for v in np.asarray(operand.const).reshape(-1)]


def is_float(dtype) -> bool:
    return dtype is not None and (np.dtype(dtype).kind == "f" or np.dtype(dtype).name == "bfloat16")


def along_axis_rule(kernel: str, keywords: str = ""):
    """The emit rule of Softmax, LogSoftmax and Hardmax: `rt.<kernel>(X, axis=...<keywords>)`
    along `axis` from opset 13. Before 13 the input is coerced to 2-D [prod(dims before axis),
    prod(dims from axis)] and the kernel runs along the rows (default axis 1)."""

    def emit(view: NodeView) -> str:
        X = view.inputs[0]
        rank = need_rank(view)
        axis = normalize_axis(view.attr("axis", 1 if view.opset < 13 else -1), rank, view)
        if view.opset >= 13 or axis == rank - 1:
            return f"rt.{kernel}({X}, axis={axis}{keywords})"
        shape = X.shape
        if all(isinstance(d, int) for d in shape):
            outer, inner = int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))
            return (
                f"rt.{kernel}({X}.reshape({outer}, {inner}), axis=1{keywords})"
                f".reshape({py(tuple(shape))})"
            )
        return (
            f"rt.{kernel}({X}.reshape(int(np.prod({X}.shape[:{axis}])), -1), axis=1{keywords})"
            f".reshape({X}.shape)"
        )

    return emit


def exact_for_integers(why: str):
    """An exactness rule: integer inputs are exact; float inputs are refused, saying `why`."""

    def rule(view: NodeView) -> str | None:
        dtype = view.inputs[0].dtype
        if dtype is not None and not is_float(dtype):
            return None
        return f"of {getattr(dtype, 'name', 'unknown')} values has no exact implementation ({why})"

    return rule
