"""Helpers shared by emitter families: axes, attribute-or-input lookups, spatial geometry."""

from __future__ import annotations

import numpy as np

from onemodel_compile.errors import CompileError
from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import attr, binop, call, index, method
from runtime_support._dtypes import is_float_dtype


def normalize_axis(axis: int, rank: int, view: NodeView) -> int:
    if not -rank <= axis < max(rank, 1):
        raise CompileError(f"{view.node.label}: axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def axis_of(view: NodeView, axis: int, index: int = 0) -> int | pyir.Expr:
    """`axis` normalized against the rank of input `index`: the int when the rank is known at
    compile time, else code normalizing it at run time against the value's `ndim`
    (`rt.normalize_axis`, the same rule, raising for an axis out of range). Either way the
    result is a non-negative axis, so the code it goes into works for any rank."""
    operand = view.inputs[index]
    if operand.rank is not None:
        return normalize_axis(axis, operand.rank, view)
    return call("rt.normalize_axis", int(axis), attr(operand, "ndim"))


def axes_of(view: NodeView, axes, index: int = 0) -> tuple[int, ...] | pyir.Expr:
    """`axes` (a non-empty list) sorted, distinct and normalized against the rank of input
    `index`, as axis_of: a tuple when the rank is known, else code computing it at run time
    (`rt.normalize_axes`)."""
    operand = view.inputs[index]
    if operand.rank is not None:
        return tuple(sorted({normalize_axis(a, operand.rank, view) for a in axes}))
    return call("rt.normalize_axes", tuple(int(a) for a in axes), attr(operand, "ndim"))


def code_of(value) -> pyir.Expr:
    """An axis or axes from axis_of / axes_of as code: the literal, or the run-time expression."""
    return pyir.expr(value)


class RunTime:
    """Marks an int list (axes, starts, sizes...) known only at run time: the operand giving it.
    Builders take it as code (`node`); `expr` is its source, for messages."""

    def __init__(self, operand):
        self.node = operand.node
        self._operand = operand

    @property
    def expr(self) -> str:
        return self._operand.expr

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
        return RunTime(operand)
    return [int(v) for v in np.asarray(operand.const).reshape(-1)]


def span(start=None, stop=None, step=None) -> pyir.Slice:
    """The slice `start:stop:step` as a subscript (ints, nodes or None for an omitted bound)."""
    return pyir.Slice(*(None if part is None else pyir.expr(part) for part in (start, stop, step)))


def optional_arguments(view: NodeView, names: dict[int, str]) -> tuple[list, dict]:
    """The node's inputs as a kernel's arguments (pyir.optional_arguments): positional up to the
    first absent one, the present ones after it as keywords named by `names` (input index -> the
    kernel's parameter name of an optional input); an absent input not in `names` is an error."""
    for i, operand in enumerate(view.inputs):
        if operand is None and i not in names:
            raise CompileError(f"{view.node.label}: input {i} is required")
    parameters = [names.get(i) for i in range(len(view.inputs))]
    return pyir.optional_arguments(parameters, view.inputs)


def is_float(dtype) -> bool:
    return dtype is not None and is_float_dtype(dtype)


def along_axis_rule(kernel: str):
    """The emit rule of Softmax, LogSoftmax and Hardmax: `rt.<kernel>(X, axis=...)` along `axis`
    from opset 13. Before 13 the input is coerced to 2-D [prod(dims before axis), prod(dims from
    axis)] and the kernel runs along the rows (default axis 1). For an input of unknown rank the
    axis is normalized at run time (axis_of), and the coercion is Flatten's kernel (`rt.flatten`,
    which normalizes its axis against the input's rank)."""
    function = f"rt.{kernel}"

    def emit(view: NodeView) -> pyir.Expr:
        X = view.inputs[0]
        rank = X.rank
        axis = view.attr("axis")
        if rank is None:
            if view.opset >= 13:
                return call(function, X, axis=axis_of(view, axis))
            rows = call("rt.flatten", X, axis=int(axis))
            return method(call(function, rows, axis=1), "reshape", attr(X, "shape"))
        axis = normalize_axis(axis, rank, view)
        if view.opset >= 13 or axis == rank - 1:
            return call(function, X, axis=axis)
        shape = X.shape
        if all(isinstance(d, int) for d in shape):
            outer, inner = int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))
            return method(
                call(function, method(X, "reshape", outer, inner), axis=1), "reshape", tuple(shape)
            )
        leading = call("int", call("np.prod", index(attr(X, "shape"), span(stop=axis))))
        matrix = method(X, "reshape", leading, -1)
        return method(call(function, matrix, axis=1), "reshape", attr(X, "shape"))

    return emit


def exact_for_integers(why: str):
    """An exactness rule: integer inputs are exact; float inputs are refused, saying `why`."""

    def rule(view: NodeView) -> str | None:
        dtype = view.inputs[0].dtype
        if dtype is not None and not is_float(dtype):
            return None
        return f"of {getattr(dtype, 'name', 'unknown')} values has no exact implementation ({why})"

    return rule


def leaky_selection(X, slope, slopes) -> pyir.Expr | None:
    """x * slope below 0, x elsewhere, as max(x * slope, x) where every slope is at most 1, or
    min(x * slope, x) where every one is at least 1 (the product is on the right side of x for
    either sign of x): two passes with no branch. np.where's selection mispredicts a branch per
    element on signs mixed at random, 3-10 times slower (PRelu on 67,760 float32 values: 88-229
    against 20 us; MTCNN's PRelus). Only for float32/float64 slopes known at compile time that are
    finite and not 0 (inf * 0 is NaN, which the maximum would keep; every other input gives the
    selection's value, but -0 times a negative slope, +0 where np.where keeps -0); else None."""
    if slopes is None or X.dtype not in (np.float32, np.float64):
        return None
    values = np.asarray(slopes, dtype=np.float64).reshape(-1)
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values == 0):
        return None
    if np.all(values <= 1):
        return call("np.maximum", binop("*", X, slope), X)
    if np.all(values >= 1):
        return call("np.minimum", binop("*", X, slope), X)
    return None
