"""Pooling. Max pooling selects (exact); averages sum in numpy's order (not exact)."""

from __future__ import annotations

from onemodel_compile.ops.code import py
from onemodel_compile.ops.common import need_rank
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter
from onemodel_compile.ops.spatial import geometry_keywords, spatial_geometry


@emitter("MaxPool", since=1, exact=True)
def max_pool(view: NodeView) -> str:
    kernel_shape = list(view.attr("kernel_shape"))
    pads, strides, dilations = spatial_geometry(view, kernel_shape)
    keywords = (
        f"kernel_shape={py(kernel_shape)}, {geometry_keywords(pads, strides, dilations)}, "
        f"ceil_mode={view.attr('ceil_mode', 0)}"
    )
    if view.output(1) is not None:
        keywords += f", storage_order={view.attr('storage_order', 0)}, with_indices=True"
    return f"rt.max_pool({view.inputs[0]}, {keywords})"


@emitter("AveragePool", since=1, exact=False)
def average_pool(view: NodeView) -> str:
    kernel_shape = list(view.attr("kernel_shape"))
    pads, strides, dilations = spatial_geometry(view, kernel_shape)
    return (
        f"rt.average_pool({view.inputs[0]}, kernel_shape={py(kernel_shape)}, "
        f"{geometry_keywords(pads, strides, dilations)}, ceil_mode={view.attr('ceil_mode', 0)}, "
        f"count_include_pad={view.attr('count_include_pad', 0)})"
    )


def _global_rule(function: str):
    def emit(view: NodeView) -> str:
        axes = tuple(range(2, need_rank(view)))
        return f"{function}({view.inputs[0]}, axis={py(axes)}, keepdims=True)"

    return emit


emitter("GlobalAveragePool", since=1, exact=False)(_global_rule("np.mean"))
emitter("GlobalMaxPool", since=1, exact=True)(_global_rule("np.max"))
