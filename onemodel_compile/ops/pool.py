"""Pooling. Kernels in runtime_support/pool.py.

Max pooling, MaxUnpool and MaxRoiPool select and move values, AveragePool adds the kernel taps in
a fixed order and divides once (exact). Lp pooling takes powers, GlobalAveragePool and
GlobalLpPool sum in numpy's order (not exact); the exact variant's GlobalAveragePool takes
rt.exact_mean, LpPool and GlobalLpPool the exact twins their kernels declare.
"""

from __future__ import annotations

from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import attr, call
from onemodel_compile.ops.registry import emitter
from onemodel_compile.ops.spatial import window_keywords


def _window(view: NodeView) -> dict:
    """kernel_shape, the window geometry and ceil_mode (0 before the attribute existed)."""
    kernel_shape = list(view.attr("kernel_shape"))
    geometry = window_keywords(view, kernel_shape)
    return {"kernel_shape": tuple(kernel_shape), **geometry, "ceil_mode": view.attr("ceil_mode", 0)}


@emitter("MaxPool", since=1, exact=True)
def max_pool(view: NodeView) -> pyir.Expr:
    keywords = _window(view)
    if view.output(1) is not None:
        keywords.update(storage_order=view.attr("storage_order"), with_indices=True)
    return call("rt.max_pool", view.inputs[0], **keywords)


@emitter("AveragePool", since=1, exact=True)
def average_pool(view: NodeView) -> pyir.Expr:
    count_include_pad = view.attr("count_include_pad")
    return call(
        "rt.average_pool", view.inputs[0], **_window(view), count_include_pad=count_include_pad
    )


def _p(view: NodeView) -> float | int:
    return view.attr("p")  # a float attribute in LpPool-1, an int from LpPool-2


# Exact through the kernel's twin rt.exact_lp_pool: |x| ** p and the root by |x|, x * x, sqrt or
# exact_pow, the window taps added in a fixed order.
@emitter("LpPool", since=1, exact=True)
def lp_pool(view: NodeView) -> pyir.Expr:
    return call("rt.lp_pool", view.inputs[0], **_window(view), p=_p(view))


def _global_rule(function: str):
    """`function(X, axis=<the spatial axes>, keepdims=True)`; the axes are taken from X's rank at
    run time when it is unknown."""

    def emit(view: NodeView) -> pyir.Expr:
        X = view.inputs[0]
        axes: pyir.Expr | tuple[int, ...]
        if X.rank is None:
            axes = call("tuple", call("range", 2, attr(X, "ndim")))
        else:
            axes = tuple(range(2, X.rank))
        return call(function, X, axis=axes, keepdims=True)

    return emit


# fast: rt.global_average_pool (each plane's sum by einsum over the flattened planes: several
# times faster than np.mean over the spatial axes on small maps)
@emitter("GlobalAveragePool", since=1, exact=False)
def global_average_pool(view: NodeView) -> pyir.Expr:
    return call("rt.global_average_pool", view.inputs[0])


# exact: the float64 sum over the spatial axes as exact_sum sums, one division, one rounding
# (not np.mean's twin: np.mean of integers or of other axes is no exact_mean)
emitter("GlobalAveragePool", since=1, variant="exact", exact=True)(_global_rule("rt.exact_mean"))
emitter("GlobalMaxPool", since=1, exact=True)(_global_rule("np.max"))


# Exact through the kernel's twin rt.exact_global_lp_pool: as exact_lp_pool, the sum by exact_sum.
@emitter("GlobalLpPool", since=1, exact=True)
def global_lp_pool(view: NodeView) -> pyir.Expr:
    return call("rt.global_lp_pool", view.inputs[0], p=_p(view))


@emitter("MaxUnpool", since=9, exact=True)
def max_unpool(view: NodeView) -> pyir.Expr:
    X, I, output_shape = view.inputs[0], view.inputs[1], view.input(2)
    operands: list[object] = [X, I]
    if output_shape is not None:
        value = output_shape.const
        operands.append(output_shape if value is None else tuple(int(v) for v in value.reshape(-1)))
    keywords = {"kernel_shape": tuple(view.attr("kernel_shape"))}
    keywords.update(
        {
            name: tuple(view.attr(name))
            for name in ("pads", "strides")
            if view.attr(name) is not None
        }
    )
    return call("rt.max_unpool", *operands, **keywords)


@emitter("MaxRoiPool", since=1, exact=True)
def max_roi_pool(view: NodeView) -> pyir.Expr:
    X, rois = view.inputs[:2]
    return call(
        "rt.max_roi_pool",
        X,
        rois,
        pooled_shape=tuple(view.attr("pooled_shape")),
        spatial_scale=view.attr("spatial_scale"),
    )
