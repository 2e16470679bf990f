"""Sampling and geometry: Resize and Upsample, GridSample, AffineGrid, RoiAlign, NonMaxSuppression.

Resize (and Upsample) is exact: runtime_support.resize computes in a fixed order of float64 IEEE
operations (its docstring gives the order), identical in both variants. AffineGrid and
NonMaxSuppression are exact too. GridSample and RoiAlign are refused by the exact variant.
"""

from __future__ import annotations

import numpy as np

from onemodel_compile.ops.code import literal, py
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter

# --- Resize and Upsample -----------------------------------------------------------------------


def _optional(view: NodeView, index: int) -> str:
    """An optional tensor input as code: None when absent or a constant empty tensor."""
    operand = view.input(index)
    if operand is None or (operand.const is not None and operand.const.size == 0):
        return "None"
    return str(operand)


def _repeats(view: NodeView, scales) -> str | None:
    """Nearest upsampling by whole factors (the asymmetric, floor rule of Upsample and Resize-10)
    as numpy repeats; None when the scales are not all whole factors of at least 1."""
    scales = None if scales is None else np.asarray(scales, dtype=np.float32).reshape(-1)
    if scales is None or view.attr("mode") != "nearest" or view.inputs[0].rank != scales.size:
        return None
    if not all(s >= 1 and float(s).is_integer() for s in scales):
        return None
    code = str(view.inputs[0])
    for axis, s in enumerate(scales):
        if s != 1:
            code += f".repeat({int(s)}, axis={axis})"
    return code


def _legacy(view: NodeView, scales, scales_code: str, nearest_mode: str) -> str:
    """Upsample and Resize-10: asymmetric coordinates, no other attribute than the mode."""
    repeated = _repeats(view, scales)
    if repeated is not None:
        return repeated
    return (
        f"rt.resize({view.inputs[0]}, None, {scales_code}, mode={py(view.attr('mode'))}, "
        f"coordinate_transformation_mode='asymmetric', nearest_mode={py(nearest_mode)})"
    )


@emitter("Upsample", since=7, until=8, exact=True)
def upsample_7(view: NodeView) -> str:
    scales = np.array(view.attr("scales"), dtype=np.float32)
    return _legacy(view, scales, literal(scales), "floor")


@emitter("Upsample", since=9, exact=True)
def upsample_9(view: NodeView) -> str:
    return _legacy(view, view.const(1), str(view.inputs[1]), "floor")


@emitter("Resize", since=10, until=10, exact=True)
def resize_10(view: NodeView) -> str:
    return _legacy(view, view.const(1), str(view.inputs[1]), "opset10")


@emitter("Resize", since=11, exact=True)
def resize(view: NodeView) -> str:
    mode = view.attr("mode")
    transform = view.attr("coordinate_transformation_mode")
    keywords = [f"mode={py(mode)}", f"coordinate_transformation_mode={py(transform)}"]
    if mode == "nearest":
        keywords.append(f"nearest_mode={py(view.attr('nearest_mode'))}")
    if mode == "cubic":
        keywords.append(f"cubic_coeff_a={py(view.attr('cubic_coeff_a'))}")
    if mode != "nearest" and view.attr("exclude_outside", 0):
        keywords.append("exclude_outside=1")
    if mode != "nearest" and view.attr("antialias", 0):
        keywords.append("antialias=1")
    if transform == "tf_crop_and_resize":
        keywords.append(f"extrapolation_value={py(view.attr('extrapolation_value'))}")
    policy = view.attr("keep_aspect_ratio_policy", "stretch")
    if policy != "stretch":
        keywords.append(f"keep_aspect_ratio_policy={py(policy)}")
    if view.attr("axes") is not None:
        keywords.append(f"axes={py(tuple(view.attr('axes')))}")
    roi = _optional(view, 1) if transform == "tf_crop_and_resize" else "None"
    inputs = [str(view.inputs[0]), roi, _optional(view, 2), _optional(view, 3)]
    while inputs[-1] == "None":
        inputs.pop()
    return f"rt.resize({', '.join(inputs + keywords)})"


# --- GridSample, AffineGrid -------------------------------------------------------------------


@emitter("GridSample", since=16, exact=False)
def grid_sample(view: NodeView) -> str:
    X, grid = view.inputs[0], view.inputs[1]
    return (
        f"rt.grid_sample({X}, {grid}, mode={py(view.attr('mode'))}, "
        f"padding_mode={py(view.attr('padding_mode'))}, "
        f"align_corners={py(view.attr('align_corners'))})"
    )


@emitter("AffineGrid", since=20, exact=True)
def affine_grid(view: NodeView) -> str:
    theta, size = view.inputs[0], view.inputs[1]
    return f"rt.affine_grid({theta}, {size}, align_corners={py(view.attr('align_corners'))})"


# --- RoiAlign, NonMaxSuppression --------------------------------------------------------------


@emitter("RoiAlign", since=10, exact=False)
def roi_align(view: NodeView) -> str:
    # The attribute exists from opset 16 (default half_pixel); before, output_half_pixel applies.
    transform = view.attr("coordinate_transformation_mode", "output_half_pixel")
    X, rois, batch_indices = view.inputs[:3]
    return (
        f"rt.roi_align({X}, {rois}, {batch_indices}, mode={py(view.attr('mode'))}, "
        f"output_height={py(view.attr('output_height'))}, "
        f"output_width={py(view.attr('output_width'))}, "
        f"sampling_ratio={py(view.attr('sampling_ratio'))}, "
        f"spatial_scale={py(view.attr('spatial_scale'))}, "
        f"coordinate_transformation_mode={py(transform)})"
    )


@emitter("NonMaxSuppression", since=10, exact=True)
def non_max_suppression(view: NodeView) -> str:
    arguments = [str(view.inputs[0]), str(view.inputs[1])] + [_optional(view, i) for i in (2, 3, 4)]
    while arguments[-1] == "None":
        arguments.pop()
    center = view.attr("center_point_box", 0)
    keyword = f", center_point_box={center}" if center else ""
    return f"rt.non_max_suppression({', '.join(arguments)}{keyword})"
