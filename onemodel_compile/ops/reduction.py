"""Reductions: the ten Reduce* operators (one table), ArgMax/ArgMin, CumSum/CumProd and TopK.

Axes come from an attribute before the opset where they became an input (13 for ReduceSum, 18 for
the others); axes known only at run time go to the runtime_support kernel named after the
operator, which follows the same conventions as the numpy code emitted for known axes (see
runtime_support/reduction.py): float16 and bfloat16 accumulate in float32, integers in their own
type; reducing nothing gives the reduction's identity (the mean of nothing is 0, as onnxruntime
gives; the backend data have no case); `noop_with_empty_axes` keeps the elementwise part.

Exactness: max, min, ArgMax/ArgMin and TopK compare and move data; integer sums and products are
integer arithmetic (and the integer ReduceL2 a correctly rounded sqrt of an exact integer).
numpy's float reductions sum pairwise in an order that depends on memory layout and SIMD width,
so they are not exact: the exact variant computes float sums, means, products, CumSum and CumProd
with runtime_support.exact's kernels (float64 in a fixed order, one rounding at the end), and
ReduceLogSum and ReduceLogSumExp with those sums and the library's own exp and log.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from onemodel_compile.ops import pyir
from onemodel_compile.ops.common import (
    RunTime,
    axes_of,
    axis_of,
    exact_for_integers,
    ints_from,
    is_float,
    normalize_axis,
)
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import binop, call, method
from onemodel_compile.ops.registry import emitter
from runtime_support.reduction import highest, lowest


@dataclass(frozen=True)
class Reduction:
    """How one Reduce* operator is computed: after(reduce(before(data))) over the axes."""

    reduce: str | None  # the numpy reduction; None: the kernel computes it in every case
    kernel: str  # the runtime_support kernel, for axes known only at run time
    axes_input_since: int  # the opset where `axes` moved from an attribute to an input
    before: str | None = None  # elementwise step on the data
    after: str | None = None  # elementwise step on the reduced values
    exact_kinds: str = ""  # dtype kinds (numpy's) the computation is exact for
    exact_kernel: str | None = None  # the exact variant's kernel for floats (every axes form)
    exact_kernel_integers: bool = False  # the exact kernel also computes integer data


_INTEGERS = "iu"
REDUCTIONS = {
    "ReduceSum": Reduction(
        "np.sum", "rt.reduce_sum", 13, exact_kinds=_INTEGERS, exact_kernel="rt.exact_reduce_sum"
    ),
    "ReduceSumSquare": Reduction(
        "np.sum",
        "rt.reduce_sum_square",
        18,
        before="np.square",
        exact_kinds=_INTEGERS,
        exact_kernel="rt.exact_reduce_sum_square",
    ),
    "ReduceL1": Reduction(
        "np.sum",
        "rt.reduce_l1",
        18,
        before="np.abs",
        exact_kinds=_INTEGERS,
        exact_kernel="rt.exact_reduce_l1",
    ),
    "ReduceL2": Reduction(
        "np.sum",
        "rt.reduce_l2",
        18,
        before="np.square",
        after="np.sqrt",
        exact_kinds=_INTEGERS,
        exact_kernel="rt.exact_reduce_l2",
    ),
    "ReduceLogSum": Reduction(
        "np.sum",
        "rt.reduce_log_sum",
        18,
        after="np.log",
        exact_kernel="rt.exact_reduce_log_sum",
    ),
    "ReduceLogSumExp": Reduction(
        None, "rt.reduce_log_sum_exp", 18, exact_kernel="rt.exact_reduce_log_sum_exp"
    ),
    "ReduceMean": Reduction(
        "np.mean",
        "rt.reduce_mean",
        18,
        exact_kernel="rt.exact_reduce_mean",
        exact_kernel_integers=True,
    ),
    "ReduceProd": Reduction(
        "np.prod", "rt.reduce_prod", 18, exact_kinds=_INTEGERS, exact_kernel="rt.exact_reduce_prod"
    ),
    "ReduceMax": Reduction("np.max", "rt.reduce_max", 18, exact_kinds="biufV"),
    "ReduceMin": Reduction("np.min", "rt.reduce_min", 18, exact_kinds="biufV"),
}


def _code(value) -> pyir.Expr:
    """An axis or axes from common.py's axis_of / axes_of / RunTime as a node."""
    return pyir.expr(value)


def reduce_axes(view: NodeView, axes_input_since: int):
    """The normalized axes to reduce, None to reduce all, () for a no-op, or RunTime. Axes known
    for an input of unknown rank come as the code normalizing them at run time (axes_of)."""
    rank = view.inputs[0].rank
    axes = ints_from(view, "axes", 1, since=axes_input_since)
    if isinstance(axes, RunTime):
        return axes
    if not axes:
        return () if view.attr("noop_with_empty_axes", 0) else None
    if rank is None and not view.variant.exact and min(axes) >= 0:
        # the fast variant: non-negative axes need no normalizing against the run-time rank
        # (rt.normalize_axes cost about 1.5 us a call; numpy refuses an axis beyond the rank)
        return tuple(sorted(set(axes)))
    if rank is None:
        return axes_of(view, axes)
    return tuple(sorted(normalize_axis(a, rank, view) for a in axes))


def _is_half(dtype) -> bool:
    return dtype is not None and is_float(dtype) and np.dtype(dtype).itemsize == 2


def _may_be_empty(shape, axes) -> bool:
    if shape is None or not (axes is None or isinstance(axes, tuple)):  # axes computed at run time
        return True
    selected = range(len(shape)) if axes is None else axes
    return any(not isinstance(shape[a], int) or shape[a] == 0 for a in selected)


def _exactness(spec: Reduction):
    def refusal(view: NodeView) -> str | None:
        dtype = view.inputs[0].dtype
        if dtype is not None and np.dtype(dtype).kind in spec.exact_kinds:
            return None
        return (
            f"of {getattr(dtype, 'name', 'unknown')} values has no exact implementation "
            "(numpy reduces floats in a machine-dependent order)"
        )

    return refusal


def _kernel_call(kernel: str, view: NodeView, axes) -> pyir.Expr:
    X = view.inputs[0]
    keepdims = view.attr("keepdims")
    if isinstance(axes, RunTime):
        noop = view.attr("noop_with_empty_axes")
        return call(kernel, X, _code(axes), keepdims=keepdims, noop_with_empty_axes=noop)
    if axes == ():
        return call(kernel, X, keepdims=keepdims, noop_with_empty_axes=1)
    if axes is None:
        return call(kernel, X, keepdims=keepdims)
    return call(kernel, X, _code(axes), keepdims=keepdims)


def _rule(spec: Reduction):
    def emit(view: NodeView) -> pyir.Expr:
        X = view.inputs[0]
        axes = reduce_axes(view, spec.axes_input_since)
        if axes == () and spec.before is None and spec.after is None:
            return method(X, "copy")
        if (
            isinstance(axes, RunTime)
            or spec.reduce is None
            or (spec.reduce == "np.mean" and _may_be_empty(X.shape, axes))
        ):
            return _kernel_call(spec.kernel, view, axes)
        integer = not is_float(X.dtype)
        widen = _is_half(X.dtype) and spec.reduce not in ("np.max", "np.min")
        data = method(X, "astype", np.float32) if widen else pyir.expr(X)
        if spec.before:
            data = call(spec.before, data)
        if axes == ():  # noop_with_empty_axes: only the elementwise part
            result = data
        else:
            extra = {}
            if integer and spec.reduce in ("np.sum", "np.prod"):
                extra["dtype"] = X.dtype  # numpy widens small integers
            elif spec.reduce in ("np.max", "np.min") and _may_be_empty(X.shape, axes):
                identity = lowest if spec.reduce == "np.max" else highest
                extra["initial"] = identity(np.dtype(X.dtype))
            keepdims = bool(view.attr("keepdims"))
            reduce = spec.reduce
            if not view.variant.exact and not integer and reduce in _UFUNC_REDUCTIONS:
                reduce = _UFUNC_REDUCTIONS[reduce]
            result = call(reduce, data, axis=_code(axes), keepdims=keepdims, **extra)
            if reduce != spec.reduce and spec.reduce == "np.mean":
                result = binop("/", result, pyir.Lit(_count(X.shape, axes)))
        if spec.after:
            result = call(spec.after, result)
        if widen or (integer and (spec.after or spec.reduce == "np.mean")):
            result = method(result, "astype", X.dtype)
        return result

    return emit


# The fast variant reduces floats with the ufuncs' own reduce, np.mean as the sum over the count
# (known: the axes are non-empty ints): np.mean, np.sum, np.max and np.min are Python functions
# around them, 2-6 us a call on the small tensors of streaming models (np.mean of a [1, 4]
# float32: 9.8 against 3.2 us, load 6). The same values: np.mean sums with np.add.reduce and
# divides by the count (one correctly rounded division either way).
_UFUNC_REDUCTIONS = {
    "np.mean": "np.add.reduce",
    "np.sum": "np.add.reduce",
    "np.max": "np.maximum.reduce",
    "np.min": "np.minimum.reduce",
    "np.prod": "np.multiply.reduce",
}


def _count(shape, axes) -> int:
    """The number of elements each reduced value covers (every dim an int here)."""
    return int(np.prod([shape[a] for a in (range(len(shape)) if axes is None else axes)]))


def _uses_exact_kernel(spec: Reduction, dtype) -> bool:
    if is_float(dtype):
        return True
    return spec.exact_kernel_integers and dtype is not None and np.dtype(dtype).kind in "iu"


def _exact_rule(spec: Reduction):
    """The exact variant: floats (and, for ReduceMean, integers) through the exact kernel, other
    types as in the fast variant. Not the fast kernels' twins: the fast rule reduces known axes
    with numpy inline, which has none."""
    fast = _rule(spec)

    def emit(view: NodeView) -> pyir.Expr:
        X = view.inputs[0]
        if not _uses_exact_kernel(spec, X.dtype):
            return fast(view)
        axes = reduce_axes(view, spec.axes_input_since)
        if axes == () and spec.before is None and spec.after is None:
            return method(X, "copy")
        return _kernel_call(spec.exact_kernel, view, axes)

    return emit


def _exact_kernel_exactness(spec: Reduction):
    """What the exact kernel computes is exact; other types as the fast rule says."""
    others = _exactness(spec)

    def refusal(view: NodeView) -> str | None:
        return None if _uses_exact_kernel(spec, view.inputs[0].dtype) else others(view)

    return refusal


for _op, _spec in REDUCTIONS.items():
    emitter(_op, since=1, exact=_exactness(_spec))(_rule(_spec))
    if _spec.exact_kernel is not None:
        emitter(_op, since=1, variant="exact", exact=_exact_kernel_exactness(_spec))(
            _exact_rule(_spec)
        )


# --- ArgMax, ArgMin ------------------------------------------------------------------------------


@emitter("ArgMax", "ArgMin", since=1, exact=True)
def arg_extreme(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    axis = _code(axis_of(view, view.attr("axis")))
    keepdims = view.attr("keepdims")
    function = view.op_type.lower()
    if view.attr("select_last_index", 0):
        return call(f"rt.{function}", X, axis=axis, keepdims=keepdims, select_last_index=1)
    return call(f"np.{function}", X, axis=axis, keepdims=bool(keepdims))


# --- CumSum, CumProd -----------------------------------------------------------------------------


_integers_only = exact_for_integers("float rounding depends on the machine's summation order")


def _cumulative_axis(view: NodeView):
    """The axis input: its normalized value when known at compile time, else the operand."""
    axis = view.inputs[1]
    if axis.const is None:
        return axis
    return _code(axis_of(view, int(np.asarray(axis.const).reshape(-1)[0])))


@emitter("CumSum", since=11, exact=_integers_only)
@emitter("CumProd", since=26, exact=_integers_only)
def cumulative(view: NodeView) -> pyir.Expr:
    X, axis = view.inputs[0], _cumulative_axis(view)
    function = "cumsum" if view.op_type == "CumSum" else "cumprod"
    exclusive, reverse = view.attr("exclusive"), view.attr("reverse")
    if view.inputs[1].const is not None and not (exclusive or reverse or _is_half(X.dtype)):
        dtype = {} if is_float(X.dtype) else {"dtype": X.dtype}
        return call(f"np.{function}", X, axis=axis, **dtype)
    return call(f"rt.{function}", X, axis, exclusive=exclusive, reverse=reverse)


@emitter("CumSum", since=11, variant="exact", exact=True)
@emitter("CumProd", since=26, variant="exact", exact=True)
def cumulative_exact(view: NodeView) -> pyir.Expr:
    """Floats through rt.exact_cumsum (float64 doubling-step sums) or rt.exact_cumprod (float64
    sequential products), rounded once; integers as in the fast variant."""
    X = view.inputs[0]
    if not is_float(X.dtype):
        return cumulative(view)
    function = "exact_cumsum" if view.op_type == "CumSum" else "exact_cumprod"
    keywords = {name: 1 for name in ("exclusive", "reverse") if view.attr(name)}
    return call(f"rt.{function}", X, _cumulative_axis(view), **keywords)


# --- TopK ----------------------------------------------------------------------------------------


@emitter("TopK", since=1, exact=True)
def top_k(view: NodeView) -> pyir.Expr:
    """Values and indices, always sorted (`sorted`=0 allows any order); ties by lower index."""
    X = view.inputs[0]
    axis = _code(axis_of(view, view.attr("axis")))
    if view.opset < 10:
        k = view.attr("k")
    elif view.const(1) is not None:
        k = int(np.asarray(view.const(1)).reshape(-1)[0])
    else:
        k = view.inputs[1]
    return call("rt.top_k", X, k, axis=axis, largest=view.attr("largest", 1))
