"""Sampling and geometry: Resize and Upsample, GridSample, AffineGrid, RoiAlign, NonMaxSuppression.

Resize (and Upsample) is exact: runtime_support.resize computes in a fixed order of float64 IEEE
operations (its docstring gives the order), identical in both variants. AffineGrid and
NonMaxSuppression are exact too, and so are GridSample and RoiAlign: their kernels interpolate with
IEEE operations in a fixed order of taps and sample points (runtime_support/sampling.py).
"""

from __future__ import annotations

import numpy as np

from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import call, method
from onemodel_compile.ops.registry import emitter

# --- Resize and Upsample -----------------------------------------------------------------------

# rt.resize's tensor parameters, in order (the node's inputs)
_RESIZE_INPUTS = ("X", "roi", "scales", "sizes")


def _optional(view: NodeView, index: int):
    """An optional tensor input: None when absent or a constant empty tensor."""
    operand = view.input(index)
    if operand is None or (operand.const is not None and operand.const.size == 0):
        return None
    return operand


def _repeats(view: NodeView, scales) -> pyir.Expr | None:
    """Nearest upsampling by whole factors (the asymmetric, floor rule of Upsample and Resize-10)
    as numpy repeats; None when the scales are not all whole factors of at least 1."""
    scales = None if scales is None else np.asarray(scales, dtype=np.float32).reshape(-1)
    if scales is None or view.attr("mode") != "nearest" or view.inputs[0].rank != scales.size:
        return None
    if not all(s >= 1 and float(s).is_integer() for s in scales):
        return None
    code = pyir.expr(view.inputs[0])
    for axis, s in enumerate(scales):
        if s != 1:
            code = method(code, "repeat", int(s), axis=axis)
    return code


def _legacy(view: NodeView, scales, scales_code, nearest_mode: str) -> pyir.Expr:
    """Upsample and Resize-10: asymmetric coordinates, no other attribute than the mode."""
    repeated = _repeats(view, scales)
    if repeated is not None:
        return repeated
    return call(
        "rt.resize",
        view.inputs[0],
        scales=scales_code,
        mode=view.attr("mode"),
        coordinate_transformation_mode="asymmetric",
        nearest_mode=nearest_mode,
    )


@emitter("Upsample", since=7, until=8, exact=True)
def upsample_7(view: NodeView) -> pyir.Expr:
    scales = np.array(view.attr("scales"), dtype=np.float32)
    return _legacy(view, scales, pyir.Const(scales, "scales"), "floor")


@emitter("Upsample", since=9, exact=True)
def upsample_9(view: NodeView) -> pyir.Expr:
    return _legacy(view, view.const(1), view.inputs[1], "floor")


@emitter("Resize", since=10, until=10, exact=True)
def resize_10(view: NodeView) -> pyir.Expr:
    return _legacy(view, view.const(1), view.inputs[1], "opset10")


@emitter("Resize", since=11, exact=True)
def resize(view: NodeView) -> pyir.Expr:
    mode = view.attr("mode")
    transform = view.attr("coordinate_transformation_mode")
    keywords = {"mode": mode, "coordinate_transformation_mode": transform}
    if mode == "nearest":
        keywords["nearest_mode"] = view.attr("nearest_mode")
    if mode == "cubic":
        keywords["cubic_coeff_a"] = view.attr("cubic_coeff_a")
    if mode != "nearest" and view.attr("exclude_outside"):
        keywords["exclude_outside"] = 1
    if mode != "nearest" and view.attr("antialias", 0):
        keywords["antialias"] = 1
    if transform == "tf_crop_and_resize":
        keywords["extrapolation_value"] = view.attr("extrapolation_value")
    policy = view.attr("keep_aspect_ratio_policy", "stretch")
    if policy != "stretch":
        keywords["keep_aspect_ratio_policy"] = policy
    if view.attr("axes") is not None:
        keywords["axes"] = tuple(view.attr("axes"))
    roi = _optional(view, 1) if transform == "tf_crop_and_resize" else None
    inputs = [view.inputs[0], roi, _optional(view, 2), _optional(view, 3)]
    args, tensors = pyir.optional_arguments(_RESIZE_INPUTS, inputs)
    # The fast variant: tabled taps computed in the input's type (rt.resize_fast), where no
    # attribute beyond its own applies; the exact variant, and those cases, keep rt.resize.
    plain = {"exclude_outside", "antialias", "extrapolation_value"}.isdisjoint(keywords)
    if not view.variant.exact and plain and transform != "tf_crop_and_resize":
        return call("rt.resize_fast", *args, **tensors, **keywords)
    return call("rt.resize", *args, **tensors, **keywords)


# --- GridSample, AffineGrid -------------------------------------------------------------------


@emitter("GridSample", since=16, exact=True)
def grid_sample(view: NodeView) -> pyir.Expr:
    X, grid = view.inputs[0], view.inputs[1]
    keywords = {name: view.attr(name) for name in ("mode", "padding_mode", "align_corners")}
    return call("rt.grid_sample", X, grid, **keywords)


@emitter("AffineGrid", since=20, exact=True)
def affine_grid(view: NodeView) -> pyir.Expr:
    theta, size = view.inputs[0], view.inputs[1]
    return call("rt.affine_grid", theta, size, align_corners=view.attr("align_corners"))


# --- RoiAlign, NonMaxSuppression --------------------------------------------------------------


@emitter("RoiAlign", since=10, exact=True)
def roi_align(view: NodeView) -> pyir.Expr:
    # The attribute exists from opset 16 (default half_pixel); before, output_half_pixel applies.
    transform = view.attr("coordinate_transformation_mode", "output_half_pixel")
    X, rois, batch_indices = view.inputs[:3]
    keywords = {
        name: view.attr(name)
        for name in ("mode", "output_height", "output_width", "sampling_ratio", "spatial_scale")
    }
    return call(
        "rt.roi_align",
        X,
        rois,
        batch_indices,
        **keywords,
        coordinate_transformation_mode=transform,
    )


# rt.non_max_suppression's tensor parameters, in order (the node's inputs)
_NMS_INPUTS = ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold")


@emitter("NonMaxSuppression", since=10, exact=True)
def non_max_suppression(view: NodeView) -> pyir.Expr:
    inputs = [view.inputs[0], view.inputs[1]] + [_optional(view, i) for i in (2, 3, 4)]
    args, tensors = pyir.optional_arguments(_NMS_INPUTS, inputs)
    center = view.attr("center_point_box")
    keyword = {"center_point_box": center} if center else {}
    return call("rt.non_max_suppression", *args, **tensors, **keyword)
