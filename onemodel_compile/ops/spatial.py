"""Spatial geometry shared by convolution and pooling: auto_pad, strides and dilations are settled
at compile time when the input's spatial dims are known, so runtime_support kernels receive
explicit pads (all begins, then all ends, as in ONNX), strides and dilations. When an auto_pad
SAME_* input has spatial dims known only at run time, the kernel receives `auto_pad` instead of
`pads` and settles it with the same rule (runtime_support._windows.same_pads).

A kernel shape unknown at compile time (weights of unknown shape and no `kernel_shape` attribute)
is no obstacle: the kernels read it off the weights (W.shape[2:]) at run time. When the number of
spatial axes is unknown too (no input of known rank, no attribute giving it), the keywords whose
defaults depend on it are left out: the kernels take pads, strides and dilations of None as the
ONNX defaults (0 and 1 along every spatial axis of the run-time input)."""

from __future__ import annotations

from onemodel_compile.errors import CompileError
from onemodel_compile.ops.node import NodeView
from runtime_support._windows import SAME, same_pads


def kernel_shape_of(view: NodeView, weights: int = 1) -> list[int] | None:
    """The `kernel_shape` attribute, else the spatial dims of the weights input; None when they
    are not known at compile time (the kernels read them off the weights at run time)."""
    W = view.inputs[weights]
    shape = view.attr("kernel_shape") or (W.shape[2:] if W.shape is not None else None)
    if shape is None or not all(isinstance(k, int) for k in shape):
        return None
    return list(shape)


def spatial_rank(view: NodeView, weights: int = 1) -> int | None:
    """The number of spatial axes, from the kernel shape, the rank of the input or the weights,
    or the length of a geometry attribute; None when nothing known at compile time says."""
    kernel_shape = kernel_shape_of(view, weights)
    if kernel_shape is not None:
        return len(kernel_shape)
    for operand in (view.inputs[0], view.inputs[weights]):
        if operand.rank is not None:
            return operand.rank - 2
    for name, per_axis in (("strides", 1), ("dilations", 1), ("pads", 2)):
        if view.attr(name):
            return len(view.attr(name)) // per_axis
    return None


def _strides_dilations(view: NodeView, rank: int) -> tuple[list[int], list[int]]:
    return list(view.attr("strides") or [1] * rank), list(view.attr("dilations") or [1] * rank)


def _static_spatial(view: NodeView):
    shape = view.inputs[0].shape
    spatial = shape[2:] if shape is not None else None
    if spatial is None or not all(isinstance(d, int) for d in spatial):
        return None
    return spatial


def auto_pad_of(view: NodeView) -> str:
    """The auto_pad attribute (NOTSET when empty); an unknown value is an error."""
    auto_pad = view.attr("auto_pad") or "NOTSET"
    if auto_pad not in ("NOTSET", "VALID") + SAME:
        raise CompileError(f"{view.node.label}: unknown auto_pad {auto_pad!r}")
    return auto_pad


def spatial_geometry(view: NodeView, kernel_shape) -> tuple[list[int], list[int], list[int]]:
    """(pads, strides, dilations) with auto_pad resolved against the input's spatial shape."""
    rank = len(kernel_shape)
    strides, dilations = _strides_dilations(view, rank)
    auto_pad = auto_pad_of(view)
    if auto_pad == "NOTSET":
        pads = list(view.attr("pads") or [0] * (2 * rank))
    elif auto_pad == "VALID":
        pads = [0] * (2 * rank)
    else:
        spatial = _static_spatial(view)
        if spatial is None:
            raise CompileError(f"{view.node.label}: auto_pad {auto_pad} needs static spatial dims")
        pads = same_pads(spatial, kernel_shape, strides, dilations, auto_pad)
    return pads, strides, dilations


def geometry_keywords(pads, strides, dilations) -> dict:
    return {"pads": pads, "strides": strides, "dilations": dilations}


def window_keywords(view: NodeView, kernel_shape, weights: int = 1) -> dict:
    """The keywords `pads`, `strides`, `dilations` of a window kernel (plain values, for a
    builder's keywords); `auto_pad` in place of `pads` when auto_pad is SAME_* and the spatial
    dims or the kernel shape (None) are known only at run time. With the number of spatial axes
    unknown as well (so the model gives no pads, strides or dilations), `pads=None` or `auto_pad`
    alone: the kernels take the defaults (see the module docstring)."""
    auto_pad = auto_pad_of(view)
    if kernel_shape is None:
        rank = spatial_rank(view, weights)
        if rank is None:  # no attribute gives pads, strides or dilations: all default
            return {"auto_pad": auto_pad} if auto_pad in SAME else {"pads": None}
    else:
        rank = len(kernel_shape)
    if auto_pad in SAME and (kernel_shape is None or _static_spatial(view) is None):
        strides, dilations = _strides_dilations(view, rank)
        return {"auto_pad": auto_pad, "strides": strides, "dilations": dilations}
    # the kernel shape is known here, or auto_pad is NOTSET or VALID: only its length counts
    return geometry_keywords(*spatial_geometry(view, kernel_shape or [None] * rank))
