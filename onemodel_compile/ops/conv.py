"""Convolutions. BLAS sums in an order that depends on the build and the CPU: not exact."""

from __future__ import annotations

from onemodel_compile.errors import CompileError
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter
from onemodel_compile.ops.spatial import geometry_keywords, spatial_geometry


@emitter("Conv", since=1, exact=False)
def conv(view: NodeView) -> str:
    X, W, B = view.inputs[0], view.inputs[1], view.input(2)
    kernel_shape = view.attr("kernel_shape") or (W.shape[2:] if W.shape is not None else None)
    if kernel_shape is None or not all(isinstance(k, int) for k in kernel_shape):
        raise CompileError(f"{view.node.label}: the kernel shape must be static")
    pads, strides, dilations = spatial_geometry(view, kernel_shape)
    bias = f", {B}" if B is not None else ""
    return (
        f"rt.conv({X}, {W}{bias}, {geometry_keywords(pads, strides, dilations)}, "
        f"group={view.attr('group', 1)})"
    )
