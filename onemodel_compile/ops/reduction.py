"""Reductions. Axes come from an attribute before the opset where they became an input (13 for
ReduceSum, 18 for the others). numpy's float reductions sum pairwise in an order that depends on
memory layout and SIMD width, so they are not exact."""

from __future__ import annotations

from runtime_support.reduction import lowest

from onemodel_compile.ops.code import dtype_expr, number, py
from onemodel_compile.ops.common import RunTime, ints_from, is_float, need_rank, normalize_axis
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter

# op type -> (numpy function, runtime_support kernel for run-time axes, opset of the axes input)
REDUCTIONS = {
    "ReduceSum": ("np.sum", "rt.reduce_sum", 13),
    "ReduceMean": ("np.mean", "rt.reduce_mean", 18),
    "ReduceMax": ("np.max", "rt.reduce_max", 18),
}


def reduce_axes(view: NodeView, axes_input_since: int):
    """The normalized axes to reduce, None to reduce all, () for a no-op, or RunTime."""
    rank = need_rank(view)
    axes = ints_from(view, "axes", 1, since=axes_input_since)
    if isinstance(axes, RunTime):
        return axes
    if not axes:
        return () if view.attr("noop_with_empty_axes", 0) else None
    return tuple(sorted(normalize_axis(a, rank, view) for a in axes))


def _rule(function: str, kernel: str, since: int):
    def emit(view: NodeView) -> str:
        X = view.inputs[0]
        axes = reduce_axes(view, since)
        if isinstance(axes, RunTime):
            return (
                f"{kernel}({X}, {axes}, keepdims={view.attr('keepdims', 1)}, "
                f"noop_with_empty_axes={view.attr('noop_with_empty_axes', 0)})"
            )
        if axes == ():
            return f"{X}.copy()"
        keepdims = bool(view.attr("keepdims", 1))
        extra = ""
        if function == "np.sum" and not is_float(X.dtype):
            extra = f", dtype={dtype_expr(X.dtype)}"  # numpy widens small integer sums
        if function == "np.max" and _may_be_empty(X.shape, axes):
            extra = f", initial={number(lowest(X.dtype))}"
        call = f"{function}({X}, axis={py(axes)}, keepdims={keepdims}{extra})"
        if function == "np.mean" and not is_float(X.dtype):
            call += f".astype({dtype_expr(X.dtype)})"
        return call

    return emit


def _may_be_empty(shape, axes) -> bool:
    if shape is None:
        return True
    selected = range(len(shape)) if axes is None else axes
    return any(not isinstance(shape[a], int) or shape[a] == 0 for a in selected)


for _op, (_function, _kernel, _since) in REDUCTIONS.items():
    emitter(_op, since=1, exact=False)(_rule(_function, _kernel, _since))
