"""Oracle cases of the sampling and geometry family (onemodel_compile/ops/sampling.py).

Not covered here, with the reason:
- Upsample from opset 10: deprecated (the checker refuses the model);
- bfloat16: onnxruntime's Python binding takes and returns no bfloat16 arrays;
- versions above opset 26: onnxruntime 1.31.1 loads the default domain up to opset 26 only;
  RoiAlign-22: onnxruntime 1.31.1 has no kernel for it (the compiler uses one rule from opset 10);
- infinities in linear and cubic Resize: a tap of weight zero times an infinity is NaN in
  onnxruntime and in the compiler alike, except where onnxruntime's bilinear kernel weighs a
  repeated edge sample 0.5 + 0.5 (the compiler gives 1 + 0, hence NaN).
"""

from __future__ import annotations

from tests.harness.oracle import Case, c, v, w, x

OPERATORS = ("AffineGrid", "GridSample", "NonMaxSuppression", "Resize", "RoiAlign", "Upsample")

_NCHW = {"n": (1, 2), "c": (1, 3), "h": (3, 7), "w": (3, 7)}
_EMPTY = c([], "float32")  # an empty roi or scales tensor

_ROIS = [[0.0, 0.0, 9.0, 9.0], [1.5, 2.0, 7.25, 4.0], [5.0, 5.0, 9.5, 8.0], [-2.0, -1.0, 3.0, 13.0]]

CASES = [
    # --- Upsample (opset 7: scales attribute; opset 9: scales input) ---------------------------
    Case(
        "upsample7_nearest_whole_factors",
        "Upsample",
        7,
        (x("n", "c", "h", "w"),),
        attrs={"mode": "nearest", "scales": [1.0, 1.0, 2.0, 3.0]},
        dims=_NCHW,
    ),
    Case(
        "upsample7_linear",
        "Upsample",
        7,
        (x(1, 2, 3, 4),),
        attrs={"mode": "linear", "scales": [1.0, 1.0, 2.0, 2.5]},
    ),
    Case(
        "upsample9_nearest_fractional",
        "Upsample",
        9,
        (x(2, 3, 4, 5), v([1.0, 1.0, 1.5, 2.25], "float32")),
        attrs={"mode": "nearest"},
    ),
    Case(
        "upsample9_linear_runtime_scales",
        "Upsample",
        9,
        (x(1, 2, 3, 5), v([1.0, 1.0, 2.5, 1.5], "float32")),
        attrs={"mode": "linear"},
    ),
    Case(
        "upsample9_nearest_int32_constant",
        "Upsample",
        9,
        (x(2, 3, 4, dtype="int32", gen="int", low=-50, high=50), c([1.0, 2.0, 3.0], "float32")),
        attrs={"mode": "nearest"},
    ),
    # --- Resize-10 (scales input; asymmetric; nearest floors growing, ceils shrinking axes) ------
    Case(
        "resize10_nearest_mixed",
        "Resize",
        10,
        (x("n", "c", "h", "w", special=True), c([1.0, 1.0, 0.6, 1.7], "float32")),
        attrs={"mode": "nearest"},
        dims=_NCHW,
    ),
    Case(
        "resize10_linear_runtime_scales",
        "Resize",
        10,
        (x(1, 3, 5, 6), v([1.0, 1.0, 0.7, 2.2], "float32")),
        attrs={"mode": "linear"},
    ),
    # --- Resize-11 and 13 ---------------------------------------------------------------------------
    Case(
        "resize11_linear_half_pixel",
        "Resize",
        11,
        (x("n", "c", "h", "w"), _EMPTY, c([1.0, 1.0, 1.7, 0.6], "float32")),
        attrs={"mode": "linear"},
        dims=_NCHW,
    ),
    Case(
        "resize11_cubic_align_corners_sizes",
        "Resize",
        11,
        (x(1, 2, 4, 5), _EMPTY, _EMPTY, v([1, 2, 7, 3])),
        attrs={"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
    ),
    Case(
        "resize11_nearest_tf_half_pixel_for_nn",
        "Resize",
        11,
        (x(1, 1, 5, 7), _EMPTY, c([1.0, 1.0, 1.6, 0.5], "float32")),
        attrs={
            "mode": "nearest",
            "coordinate_transformation_mode": "tf_half_pixel_for_nn",
            "nearest_mode": "round_prefer_ceil",
        },
    ),
    Case(
        "resize13_nearest_asymmetric_ceil",
        "Resize",
        13,
        (x(2, 3, 4, 6), None, v([1.0, 1.0, 2.5, 0.75], "float32")),
        attrs={
            "mode": "nearest",
            "coordinate_transformation_mode": "asymmetric",
            "nearest_mode": "ceil",
        },
    ),
    Case(
        "resize13_linear_align_corners_fractional_width",
        "Resize",
        13,
        (x(1, 2, 2, 4), None, c([1.0, 1.0, 1.0, 0.6], "float32")),
        attrs={"mode": "linear", "coordinate_transformation_mode": "align_corners"},
        divergence="the backend data (test_resize_downsample_scales_linear_align_corners) "
        "divides by the output width scale * size - 1 = 1.4; onnxruntime by the "
        "integer output size - 1 = 1",
    ),
    Case(
        "resize13_nearest_half_pixel_floor",
        "Resize",
        13,
        (x(1, 2, 6, 5), None, None, v([1, 2, 4, 11])),
        attrs={"mode": "nearest", "nearest_mode": "floor"},
    ),
    Case(
        "resize13_cubic_exclude_outside_pytorch",
        "Resize",
        13,
        (x(1, 2, 6, 5), None, c([1.0, 1.0, 0.5, 1.8], "float32")),
        attrs={
            "mode": "cubic",
            "cubic_coeff_a": -0.5,
            "exclude_outside": 1,
            "coordinate_transformation_mode": "pytorch_half_pixel",
        },
    ),
    Case(
        "resize13_tf_crop_and_resize_runtime_roi",
        "Resize",
        13,
        (x(1, 2, 5, 6), v([0, 0, -0.2, 0.3, 1, 1, 0.9, 1.25], "float32"), None, v([1, 2, 4, 5])),
        attrs={
            "mode": "linear",
            "coordinate_transformation_mode": "tf_crop_and_resize",
            "extrapolation_value": -7.5,
        },
    ),
    # Integer results are truncated toward zero, as onnxruntime does. Scales whose weights are
    # dyadic keep onnxruntime's float32 sums exact, so that both truncate the same values.
    Case(
        "resize13_linear_uint8",
        "Resize",
        13,
        (
            x(1, 3, 4, 4, dtype="uint8", gen="int", low=0, high=255),
            None,
            c([1.0, 1.0, 2.0, 4.0], "float32"),
        ),
        attrs={"mode": "linear"},
    ),
    Case(
        "resize13_linear_int8_down",
        "Resize",
        13,
        (
            x(2, 2, 6, 8, dtype="int8", gen="int", low=-128, high=127),
            None,
            c([1.0, 1.0, 0.5, 0.25], "float32"),
        ),
        attrs={"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
    ),
    Case(
        "resize13_nearest_empty",
        "Resize",
        13,
        (x(0, 2, 3, 4), None, c([1.0, 1.0, 2.0, 2.0], "float32")),
        attrs={"mode": "nearest"},
    ),
    # --- Resize-18 and 19: antialias, axes, keep_aspect_ratio_policy, half_pixel_symmetric ----------
    Case(
        "resize18_linear_antialias_down",
        "Resize",
        18,
        (x("n", "c", 9, 11), None, c([1.0, 1.0, 0.45, 0.3], "float32")),
        attrs={"mode": "linear", "antialias": 1},
        dims=_NCHW,
    ),
    Case(
        "resize18_cubic_antialias_sizes",
        "Resize",
        18,
        (x(1, 2, 10, 7), None, None, v([1, 2, 4, 9])),
        attrs={"mode": "cubic", "antialias": 1},
    ),
    Case(
        "resize18_linear_antialias_exclude_outside",
        "Resize",
        18,
        (x(1, 1, 8, 13), None, c([1.0, 1.0, 0.3, 0.6], "float32")),
        attrs={"mode": "linear", "antialias": 1, "exclude_outside": 1},
    ),
    Case(
        "resize18_nearest_axes_not_smaller",
        "Resize",
        18,
        (x(2, 3, 5, 4, special=True), None, None, c([7, 3])),
        attrs={"mode": "nearest", "axes": [3, 2], "keep_aspect_ratio_policy": "not_smaller"},
    ),
    Case(
        "resize18_nearest_negative_axes",
        "Resize",
        18,
        (x(2, 3, 5, 4), None, None, c([7, 3])),
        attrs={"mode": "nearest", "axes": [-1, -2], "keep_aspect_ratio_policy": "not_smaller"},
        divergence="onnxruntime leaves axes given as negative numbers unresized; the "
        "specification counts them from the back",
    ),
    Case(
        "resize18_linear_axes_not_larger",
        "Resize",
        18,
        (x(2, 6, 5, 3), None, None, v([4, 9])),
        attrs={"mode": "linear", "axes": [1, 2], "keep_aspect_ratio_policy": "not_larger"},
    ),
    Case(
        "resize19_linear_half_pixel_symmetric",
        "Resize",
        19,
        (x(1, 2, 5, 7), None, c([1.0, 1.0, 0.7, 1.45], "float32")),
        attrs={"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
    ),
    Case(
        "resize19_cubic_axes_scales",
        "Resize",
        19,
        (x(1, 2, 5, 4), None, v([1.5, 2.0], "float32")),
        attrs={"mode": "cubic", "axes": [2, 3], "coordinate_transformation_mode": "asymmetric"},
    ),
    # --- GridSample --------------------------------------------------------------------------------
    Case(
        "gridsample16_bilinear_zeros",
        "GridSample",
        16,
        (x("n", "c", "h", "w"), x("n", 4, 5, 2, gen="uniform", low=-1.3, high=1.3)),
        dims=_NCHW,
    ),
    Case(
        "gridsample16_bicubic_border_align_corners",
        "GridSample",
        16,
        (x(2, 2, 4, 6), x(2, 3, 5, 2, gen="uniform", low=-1.5, high=1.5)),
        attrs={"mode": "bicubic", "padding_mode": "border", "align_corners": 1},
    ),
    Case(
        "gridsample20_nearest_reflection",
        "GridSample",
        20,
        (x(1, 3, 5, 4), x(1, 6, 3, 2, gen="uniform", low=-3, high=3)),
        attrs={"mode": "nearest", "padding_mode": "reflection"},
    ),
    Case(
        "gridsample20_linear_reflection_align_corners",
        "GridSample",
        20,
        (x(1, 2, 4, 5), x(1, 4, 4, 2, gen="uniform", low=-2.5, high=2.5)),
        attrs={"mode": "linear", "padding_mode": "reflection", "align_corners": 1},
    ),
    Case(
        "gridsample22_cubic_zeros",
        "GridSample",
        22,
        (x(1, 2, 6, 5), x(1, 3, 4, 2, gen="uniform", low=-1.2, high=1.2)),
        attrs={"mode": "cubic"},
    ),
    Case(
        "gridsample22_volumetric_linear_border",
        "GridSample",
        22,
        (x(1, 2, 3, 4, 5), x(1, 2, 3, 4, 3, gen="uniform", low=-1.2, high=1.2)),
        attrs={"mode": "linear", "padding_mode": "border"},
    ),
    # --- AffineGrid ----------------------------------------------------------------------------------
    Case("affinegrid20_2d", "AffineGrid", 20, (x(2, 2, 3), c([2, 3, 5, 4]))),
    Case(
        "affinegrid20_2d_align_corners_runtime_size",
        "AffineGrid",
        20,
        (x(3, 2, 3), v([3, 1, 4, 7])),
        attrs={"align_corners": 1},
    ),
    Case(
        "affinegrid20_3d_align_corners",
        "AffineGrid",
        20,
        (x(1, 3, 4), c([1, 2, 3, 4, 5])),
        attrs={"align_corners": 1},
    ),
    Case("affinegrid20_3d_one_pixel_axes", "AffineGrid", 20, (x(2, 3, 4), v([2, 1, 1, 3, 1]))),
    Case(
        "affinegrid20_2d_one_pixel_axis_align_corners",
        "AffineGrid",
        20,
        (x(2, 2, 3), v([2, 1, 1, 4])),
        attrs={"align_corners": 1},
    ),
    # --- RoiAlign ------------------------------------------------------------------------------------
    Case(
        "roialign10_avg_adaptive_grid",
        "RoiAlign",
        10,
        (x(2, 3, 10, 12), v(_ROIS, "float32"), v([0, 1, 1, 0])),
        attrs={"output_height": 3, "output_width": 4, "spatial_scale": 0.75},
    ),
    Case(
        "roialign16_max_half_pixel",
        "RoiAlign",
        16,
        (x(1, 2, 11, 9), v(_ROIS, "float32"), v([0, 0, 0, 0])),
        attrs={"mode": "max", "output_height": 2, "output_width": 3, "sampling_ratio": 2},
    ),
    Case(
        "roialign16_avg_output_half_pixel",
        "RoiAlign",
        16,
        (x(1, 4, 8, 8), v(_ROIS[:3], "float32"), v([0, 0, 0])),
        attrs={
            "coordinate_transformation_mode": "output_half_pixel",
            "output_height": 4,
            "output_width": 2,
            "spatial_scale": 0.5,
        },
    ),
    Case(
        "roialign16_degenerate_rois",
        "RoiAlign",
        16,
        (
            x(1, 2, 8, 8),
            v(
                [[1, 1, 6, 6], [5, 5, 2, 2], [3, 3, 3, 3], [0, 0, 20, 1], [-30, -30, -20, -25]],
                "float32",
            ),
            v([0, 0, 0, 0, 0]),
        ),
        attrs={"mode": "max", "output_height": 2, "output_width": 3},
    ),
    # --- NonMaxSuppression ---------------------------------------------------------------------------
    Case(
        "nms10_all_inputs",
        "NonMaxSuppression",
        10,
        (
            x(2, 30, 4, gen="uniform", low=0, high=10),
            x(2, 3, 30, gen="uniform", low=0, high=1),
            c([6]),
            c([0.3], "float32"),
            c([0.25], "float32"),
        ),
    ),
    Case(
        "nms11_center_point_box_runtime_thresholds",
        "NonMaxSuppression",
        11,
        (
            x(1, 25, 4, gen="uniform", low=0.5, high=6),
            x(1, 2, 25, gen="uniform", low=0, high=1),
            v([10]),
            v([0.2], "float32"),
            v([0.4], "float32"),
        ),
        attrs={"center_point_box": 1},
    ),
    Case(
        "nms11_no_score_threshold",
        "NonMaxSuppression",
        11,
        (x(1, 20, 4, gen="uniform", low=-5, high=5), x(1, 1, 20), c([100]), c([0.1], "float32")),
    ),
    Case(
        "nms11_no_limit_selects_nothing",
        "NonMaxSuppression",
        11,
        (x(1, 8, 4, gen="uniform", low=0, high=1), x(1, 2, 8)),
    ),
    Case(
        "nms11_scalar_inputs",
        "NonMaxSuppression",
        11,
        (
            w(1, 12, 4, gen="uniform", low=0, high=4),
            x(1, 1, 12, gen="int", low=0, high=3, dtype="float32"),
            c(3),
            c(0.0, "float32"),
            None,
        ),
    ),
]
