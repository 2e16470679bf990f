"""Spatial geometry shared by convolution and pooling: auto_pad, strides and dilations are settled
at compile time, so runtime_support kernels receive explicit pads (all begins, then all ends, as in
ONNX), strides and dilations."""

from __future__ import annotations

from onemodel_compile.errors import CompileError
from onemodel_compile.ops.code import py
from onemodel_compile.ops.node import NodeView


def spatial_geometry(view: NodeView, kernel_shape) -> tuple[list[int], list[int], list[int]]:
    """(pads, strides, dilations) with auto_pad resolved against the input's spatial shape."""
    X = view.inputs[0]
    rank = len(kernel_shape)
    strides = list(view.attr("strides") or [1] * rank)
    dilations = list(view.attr("dilations") or [1] * rank)
    auto_pad = view.attr("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", ""):
        pads = list(view.attr("pads") or [0] * (2 * rank))
    elif auto_pad == "VALID":
        pads = [0] * (2 * rank)
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        spatial = X.shape[2:] if X.shape is not None else None
        if spatial is None or not all(isinstance(d, int) for d in spatial):
            raise CompileError(f"{view.node.label}: auto_pad {auto_pad} needs static spatial dims")
        begins, ends = [], []
        for size, k, s, d in zip(spatial, kernel_shape, strides, dilations):
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            small, large = total // 2, total - total // 2
            begins.append(small if auto_pad == "SAME_UPPER" else large)
            ends.append(large if auto_pad == "SAME_UPPER" else small)
        pads = begins + ends
    else:
        raise CompileError(f"{view.node.label}: unknown auto_pad {auto_pad!r}")
    return pads, strides, dilations


def geometry_keywords(pads, strides, dilations) -> str:
    return f"pads={py(pads)}, strides={py(strides)}, dilations={py(dilations)}"
