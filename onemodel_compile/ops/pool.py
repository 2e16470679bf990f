"""Pooling. Kernels in runtime_support/pool.py.

Max pooling, MaxUnpool and MaxRoiPool select and move values, AveragePool adds the kernel taps in
a fixed order and divides once (exact). Lp pooling takes powers, GlobalAveragePool and
GlobalLpPool sum in numpy's order (not exact); the exact variant's GlobalAveragePool takes
rt.exact_mean, LpPool and GlobalLpPool exact twins of their kernels.
"""

from __future__ import annotations


from onemodel_compile.ops.code import number, py
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter
from onemodel_compile.ops.spatial import keywords_source, window_keywords


def _window(view: NodeView) -> str:
    """kernel_shape, the window geometry and ceil_mode (0 before the attribute existed)."""
    kernel_shape = list(view.attr("kernel_shape"))
    geometry = keywords_source(window_keywords(view, kernel_shape))
    return f"kernel_shape={py(kernel_shape)}, {geometry}, ceil_mode={view.attr('ceil_mode', 0)}"


@emitter("MaxPool", since=1, exact=True)
def max_pool(view: NodeView) -> str:
    keywords = _window(view)
    if view.output(1) is not None:
        keywords += f", storage_order={view.attr('storage_order', 0)}, with_indices=True"
    return f"rt.max_pool({view.inputs[0]}, {keywords})"


@emitter("AveragePool", since=1, exact=True)
def average_pool(view: NodeView) -> str:
    return (
        f"rt.average_pool({view.inputs[0]}, {_window(view)}, "
        f"count_include_pad={view.attr('count_include_pad', 0)})"
    )


@emitter("LpPool", since=1, exact=False)
def lp_pool(view: NodeView) -> str:
    # p is a float attribute in LpPool-1, an int from LpPool-2
    return f"rt.lp_pool({view.inputs[0]}, {_window(view)}, p={number(view.attr('p', 2))})"


@emitter("LpPool", since=1, variant="exact", exact=True)
def lp_pool_exact(view: NodeView) -> str:
    """rt.exact_lp_pool: |x| ** p and the root by |x|, x * x, sqrt or exact_pow, the window taps
    added in a fixed order."""
    return f"rt.exact_lp_pool({view.inputs[0]}, {_window(view)}, p={number(view.attr('p', 2))})"


def _global_rule(function: str):
    """`function(X, axis=<the spatial axes>, keepdims=True)`; the axes are taken from X's rank at
    run time when it is unknown."""

    def emit(view: NodeView) -> str:
        X = view.inputs[0]
        if X.rank is None:
            return f"{function}({X}, axis=tuple(range(2, {X}.ndim)), keepdims=True)"
        axes = tuple(range(2, X.rank))
        return f"{function}({X}, axis={py(axes)}, keepdims=True)"

    return emit


emitter("GlobalAveragePool", since=1, exact=False)(_global_rule("np.mean"))
# exact: the float64 sum over the spatial axes as exact_sum sums, one division, one rounding
emitter("GlobalAveragePool", since=1, variant="exact", exact=True)(_global_rule("rt.exact_mean"))
emitter("GlobalMaxPool", since=1, exact=True)(_global_rule("np.max"))


@emitter("GlobalLpPool", since=1, exact=False)
def global_lp_pool(view: NodeView) -> str:
    return f"rt.global_lp_pool({view.inputs[0]}, p={number(view.attr('p', 2))})"


@emitter("GlobalLpPool", since=1, variant="exact", exact=True)
def global_lp_pool_exact(view: NodeView) -> str:
    """rt.exact_global_lp_pool: as exact_lp_pool, the sum by exact_sum."""
    return f"rt.exact_global_lp_pool({view.inputs[0]}, p={number(view.attr('p', 2))})"


@emitter("MaxUnpool", since=9, exact=True)
def max_unpool(view: NodeView) -> str:
    X, I, output_shape = view.inputs[0], view.inputs[1], view.input(2)
    operands = [str(X), str(I)]
    if output_shape is not None:
        value = output_shape.const
        operands.append(
            str(output_shape) if value is None else py(tuple(int(v) for v in value.reshape(-1)))
        )
    keywords = [f"kernel_shape={py(list(view.attr('kernel_shape')))}"]
    keywords += [
        f"{name}={py(list(view.attr(name)))}"
        for name in ("pads", "strides")
        if view.attr(name) is not None
    ]
    return f"rt.max_unpool({', '.join(operands + keywords)})"


@emitter("MaxRoiPool", since=1, exact=True)
def max_roi_pool(view: NodeView) -> str:
    X, rois = view.inputs[:2]
    return (
        f"rt.max_roi_pool({X}, {rois}, pooled_shape={py(list(view.attr('pooled_shape')))}, "
        f"spatial_scale={number(view.attr('spatial_scale', 1.0))})"
    )
