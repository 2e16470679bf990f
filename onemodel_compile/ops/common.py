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


def axis_of(view: NodeView, axis: int, index: int = 0) -> int | str:
    """`axis` normalized against the rank of input `index`: the int when the rank is known at
    compile time, else code normalizing it at run time against the value's `ndim`
    (`rt.normalize_axis`, the same rule, raising for an axis out of range). Either way the
    result is a non-negative axis, so the code it goes into works for any rank."""
    operand = view.inputs[index]
    if operand.rank is not None:
        return normalize_axis(axis, operand.rank, view)
    return f"rt.normalize_axis({int(axis)}, {operand}.ndim)"


def axes_of(view: NodeView, axes, index: int = 0) -> tuple[int, ...] | str:
    """`axes` (a non-empty list) sorted, distinct and normalized against the rank of input
    `index`, as axis_of: a tuple when the rank is known, else code computing it at run time
    (`rt.normalize_axes`)."""
    operand = view.inputs[index]
    if operand.rank is not None:
        return tuple(sorted({normalize_axis(a, operand.rank, view) for a in axes}))
    return f"rt.normalize_axes({py(tuple(int(a) for a in axes))}, {operand}.ndim)"


def code_of(value) -> str:
    """An axis or axes from axis_of / axes_of as code: the literal, or the run-time expression."""
    return value if isinstance(value, str) else py(value)


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
    prod(dims from axis)] and the kernel runs along the rows (default axis 1). For an input of
    unknown rank the axis is normalized at run time (axis_of), and the coercion is Flatten's
    kernel (`rt.flatten`, which normalizes its axis against the input's rank)."""

    def emit(view: NodeView) -> str:
        X = view.inputs[0]
        rank = X.rank
        axis = view.attr("axis", 1 if view.opset < 13 else -1)
        if rank is None:
            if view.opset >= 13:
                return f"rt.{kernel}({X}, axis={axis_of(view, axis)}{keywords})"
            rows = f"rt.flatten({X}, axis={int(axis)})"
            return f"rt.{kernel}({rows}, axis=1{keywords}).reshape({X}.shape)"
        axis = normalize_axis(axis, rank, view)
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
