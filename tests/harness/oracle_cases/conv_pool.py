"""Oracle cases of the convolution and pooling families (onemodel_compile/ops/conv.py, pool.py):
Conv, ConvTranspose, Col2Im, MaxPool, AveragePool, LpPool, GlobalLpPool, GlobalAveragePool,
GlobalMaxPool, MaxUnpool, MaxRoiPool. The foundation table holds more Conv, MaxPool, AveragePool
and global pooling cases; these add the other operators, every path of each kernel (ConvTranspose
by matrix product with one or two spatial axes, by direct loops with three), run-time spatial dims
with auto_pad SAME_*, and the early opsets.

Not covered here, with the reason:
- bfloat16: onnxruntime's Python binding takes and returns no bfloat16 arrays;
- opsets above 26: onnxruntime 1.31.1 loads the default domain up to opset 26 only; it has no
  GlobalLpPool nor MaxRoiPool kernel from opset 22 on (the compiler's emitters are the same at
  every opset);
- float64 Conv, AveragePool and GlobalAveragePool: onnxruntime 1.31.1 has no CPU kernel for them;
  MaxRoiPool other than float32: likewise;
- opsets below 7: the compiler refuses them (LpPool-1's float p, MaxRoiPool-1);
- auto_pad SAME_* with dilations: onnxruntime refuses the combination;
- ConvTranspose output_shape larger than the full result by stride or more: onnxruntime refuses it
  (the compiler pads with zeros at the end, as for a smaller excess);
- MaxPool and GlobalMaxPool with NaN: see the foundation table (onnxruntime keeps a NaN only when
  it is the last element of the window).
"""

from __future__ import annotations

import numpy as np

from tests.harness.oracle import DOT, Case, c, v, w, x

OPERATORS = (
    "Conv",
    "ConvTranspose",
    "Col2Im",
    "MaxPool",
    "AveragePool",
    "LpPool",
    "GlobalLpPool",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "MaxUnpool",
    "MaxRoiPool",
    "DeformConv",
)

_B = {"n": (1, 3)}
_HW = {"n": (1, 2), "h": (4, 9), "w": (4, 9)}

_UNPOOL_RESHAPE = (
    "MaxUnpool with output_shape: onnxruntime reads each index as a flat position in output_shape; "
    "the ONNX backend data (test_maxunpool_export_with_output_shape), which docs/contract.md follows, "
    "read it in the shape the pooling implies and re-base its coordinates into output_shape"
)
_SAME_SHORT = (
    "ConvTranspose auto_pad SAME_* with a kernel reach shorter than the stride: the specification "
    "makes the output input * stride (zeros at the end, as for an output_shape longer than the "
    "full result); onnxruntime clamps the padding at 0 and returns the shorter full result"
)


def _unpool_indices(shape, kernel, strides, seed):
    """Indices a MaxPool of input `shape` (N, C, *spatial, no padding) could give: one random
    position in each window, as flat indices into `shape`."""
    rng = np.random.default_rng(seed)
    rank = len(kernel)
    pooled = [(shape[2 + i] - kernel[i]) // strides[i] + 1 for i in range(rank)]
    grids = np.meshgrid(*[np.arange(p) for p in pooled], indexing="ij")
    out = tuple(shape[:2]) + tuple(pooled)
    coords = [
        np.broadcast_to(np.arange(shape[0]).reshape((-1,) + (1,) * (rank + 1)), out),
        np.broadcast_to(np.arange(shape[1]).reshape((1, -1) + (1,) * rank), out),
    ]
    for i in range(rank):
        offset = rng.integers(0, kernel[i], out)
        coords.append(grids[i] * strides[i] + offset)
    return np.ravel_multi_index(coords, shape).astype(np.int64)


_ROIS = [
    [0, 0.0, 0.0, 5.0, 4.0],
    [1, 2.5, 1.5, 9.0, 7.5],  # halves round away from zero
    [0, 6.0, 3.0, 2.0, 1.0],  # inverted corners: a one-position region
    [1, -3.0, -2.0, 3.0, 30.0],  # clipped to the image
    [0, 40.0, 40.0, 44.0, 44.0],  # outside the image: every bin empty, zeros
]

CASES = [
    # Conv: the paths of rt.conv (im2col with group 1, einsum with groups) and run-time auto_pad
    Case(
        "conv1d_groups_dilations_strides_bias",
        "Conv",
        11,
        (x("n", 4, 13), w(6, 2, 3), w(6)),
        attrs={"group": 2, "dilations": [2], "strides": [2], "pads": [1, 2]},
        dims=_B,
        note=DOT,
    ),
    Case(
        "conv2d_same_upper_runtime_spatial",
        "Conv",
        11,
        (x("n", 2, "h", "w", dynamic=True), w(3, 2, 3, 2), w(3)),
        attrs={"auto_pad": "SAME_UPPER", "strides": [2, 2]},
        dims=_HW,
        note=DOT,
    ),
    Case(
        "conv2d_same_lower_runtime_spatial_groups",
        "Conv",
        22,
        (x(1, 4, "h", "w", dynamic=True), w(4, 1, 2, 3)),
        attrs={"auto_pad": "SAME_LOWER", "group": 4},
        dims=_HW,
        note=DOT,
    ),
    Case(
        "conv3d_groups_same_upper",
        "Conv",
        22,
        (x(1, 4, 4, 5, 3), w(2, 2, 2, 3, 2), w(2)),
        attrs={"group": 2, "auto_pad": "SAME_UPPER", "strides": [1, 2, 1]},
        note=DOT,
    ),
    Case(
        "conv2d_opset7",
        "Conv",
        7,
        (x(2, 3, 6, 5), w(4, 3, 2, 2)),
        attrs={"pads": [0, 1, 1, 0]},
        note=DOT,
    ),
    Case(
        "conv2d_float16_groups",
        "Conv",
        22,
        (x(1, 4, 6, 6, dtype="float16"), w(6, 2, 3, 3, dtype="float16"), w(6, dtype="float16")),
        attrs={"group": 2, "pads": [1, 1, 1, 1]},
    ),
    Case("conv2d_empty_batch", "Conv", 11, (x(0, 2, 5, 5), w(3, 2, 3, 3), w(3))),
    # ConvTranspose, one and two spatial axes: matrix product and Col2Im accumulation
    Case(
        "convtranspose1d_strides_pads_bias",
        "ConvTranspose",
        11,
        (x("n", 3, 5), w(3, 2, 4), w(2)),
        attrs={"strides": [3], "pads": [2, 1]},
        dims=_B,
        note=DOT,
    ),
    Case(
        "convtranspose2d_groups_dilations_output_padding",
        "ConvTranspose",
        22,
        (x(2, 4, 4, 5), w(4, 3, 3, 2), w(6)),
        attrs={"group": 2, "dilations": [2, 1], "strides": [2, 3], "output_padding": [1, 2]},
        note=DOT,
    ),
    Case(
        "convtranspose2d_output_shape_odd_crop",
        "ConvTranspose",
        11,
        (x(1, 2, 3, 4), w(2, 2, 3, 3)),
        attrs={"strides": [2, 2], "output_shape": [6, 8]},
        note=DOT,
    ),  # more removed in front
    Case(
        "convtranspose2d_output_shape_same_upper",
        "ConvTranspose",
        22,
        (x(1, 2, 3, 4), w(2, 1, 3, 3)),
        attrs={"strides": [2, 2], "output_shape": [6, 7], "auto_pad": "SAME_UPPER"},
        note=DOT,
    ),
    Case(
        "convtranspose2d_output_shape_larger_than_full",
        "ConvTranspose",
        11,
        (x(1, 1, 3, 3), w(1, 2, 3, 3)),
        attrs={"strides": [3, 3], "output_shape": [11, 10]},
        note=DOT,
    ),  # zeros at the end
    Case(
        "convtranspose2d_output_shape_ignores_pads",
        "ConvTranspose",
        11,
        (x(1, 2, 4, 3), w(2, 2, 2, 2)),
        attrs={"strides": [2, 2], "output_shape": [7, 5], "pads": [1, 1, 0, 0]},
        note=DOT,
    ),
    Case(
        "convtranspose2d_same_lower_runtime_spatial",
        "ConvTranspose",
        11,
        (x("n", 2, "h", "w", dynamic=True), w(2, 3, 3, 3), w(3)),
        attrs={"auto_pad": "SAME_LOWER", "strides": [2, 1]},
        dims=_HW,
        note=DOT,
    ),
    Case(
        "convtranspose2d_valid_opset7",
        "ConvTranspose",
        7,
        (x(1, 3, 4, 4), w(3, 2, 2, 3)),
        attrs={"auto_pad": "VALID", "strides": [2, 2]},
        note=DOT,
    ),
    Case(
        "convtranspose2d_kernel_smaller_than_stride_same_upper",
        "ConvTranspose",
        22,
        (x(1, 1, 3, 4), w(1, 1, 1, 2)),
        attrs={"auto_pad": "SAME_UPPER", "strides": [3, 3]},
        divergence=_SAME_SHORT,
    ),
    Case(
        "convtranspose2d_float16",
        "ConvTranspose",
        21,
        (x(1, 3, 4, 5, dtype="float16"), w(3, 2, 3, 3, dtype="float16"), w(2, dtype="float16")),
        attrs={"strides": [2, 2], "pads": [1, 1, 0, 0]},
    ),
    Case(
        "convtranspose2d_empty_batch",
        "ConvTranspose",
        11,
        (x(0, 2, 3, 3), w(2, 2, 2, 2), w(2)),
        attrs={"strides": [2, 2]},
    ),
    # ConvTranspose, three spatial axes: direct loops
    Case(
        "convtranspose3d_strides_pads_bias",
        "ConvTranspose",
        22,
        (x("n", 2, 3, 4, 3), w(2, 3, 3, 2, 2), w(3)),
        attrs={"strides": [2, 1, 2], "pads": [1, 0, 0, 0, 1, 1]},
        dims=_B,
    ),
    Case(
        "convtranspose3d_groups_dilations_output_shape",
        "ConvTranspose",
        11,
        (x(1, 4, 2, 3, 3), w(4, 1, 2, 2, 3), w(2)),
        attrs={"group": 2, "dilations": [2, 1, 1], "strides": [1, 2, 2], "output_shape": [4, 6, 7]},
    ),
    Case(
        "convtranspose3d_same_upper_output_padding",
        "ConvTranspose",
        22,
        (x(1, 2, 2, 2, 3), w(2, 2, 3, 3, 3)),
        attrs={"auto_pad": "SAME_UPPER", "strides": [2, 2, 1], "output_padding": [1, 0, 0]},
    ),
    Case(
        "convtranspose3d_float16",
        "ConvTranspose",
        21,
        (x(1, 2, 2, 3, 2, dtype="float16"), w(2, 2, 2, 2, 2, dtype="float16")),
        attrs={"strides": [1, 2, 2]},
    ),
    Case("convtranspose3d_empty_batch", "ConvTranspose", 11, (x(0, 2, 2, 2, 2), w(2, 1, 2, 2, 2))),
    # Col2Im (ORT 1.31 has it from opset 18)
    Case(
        "col2im_2d_strides_pads_dilations",
        "Col2Im",
        18,
        (x(2, 3 * 4, 16), c([7, 9]), c([2, 2])),
        attrs={"strides": [2, 2], "pads": [1, 0, 1, 1], "dilations": [1, 2]},
    ),
    Case("col2im_2d_runtime_shapes", "Col2Im", 18, (x(1, 2 * 6, 16), v([5, 6]), v([2, 3]))),
    Case("col2im_3d", "Col2Im", 18, (x(1, 2 * 8, 2 * 2 * 3), c([3, 3, 4]), c([2, 2, 2]))),
    Case(
        "col2im_2d_float16", "Col2Im", 21, (x(1, 2 * 4, 9, dtype="float16"), c([4, 4]), c([2, 2]))
    ),
    # MaxPool
    Case(
        "maxpool2d_ceil_dilations_indices",
        "MaxPool",
        12,
        (x(2, 2, 7, 8),),
        attrs={"kernel_shape": [2, 3], "strides": [2, 2], "dilations": [2, 1], "ceil_mode": 1},
        outputs=2,
    ),
    Case(
        "maxpool2d_pads_indices_column_major",
        "MaxPool",
        12,
        (x(1, 3, 5, 6, special="inf"),),
        attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "storage_order": 1},
        outputs=2,
    ),
    Case(
        "maxpool1d_indices_strides",
        "MaxPool",
        10,
        (x("n", 2, 11),),
        attrs={"kernel_shape": [3], "strides": [2], "pads": [1, 1]},
        dims=_B,
        outputs=2,
    ),
    Case(
        "maxpool3d_indices",
        "MaxPool",
        12,
        (x(1, 2, 4, 5, 4),),
        attrs={"kernel_shape": [2, 2, 2], "strides": [2, 1, 2]},
        outputs=2,
    ),
    Case(
        "maxpool2d_empty_batch_indices",
        "MaxPool",
        12,
        (x(0, 2, 4, 4),),
        attrs={"kernel_shape": [2, 2], "strides": [2, 2]},
        outputs=2,
    ),
    Case(
        "maxpool2d_int8_pads",
        "MaxPool",
        12,
        (x(1, 2, 6, 5, dtype="int8", gen="int", low=-128, high=127),),
        attrs={"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "strides": [2, 1]},
    ),
    Case(
        "maxpool2d_uint8_ceil",
        "MaxPool",
        22,
        (x(2, 1, 7, 7, dtype="uint8", gen="int", low=0, high=255),),
        attrs={"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
    ),
    Case(
        "maxpool2d_same_upper_runtime_spatial",
        "MaxPool",
        12,
        (x("n", 2, "h", "w", dynamic=True),),
        attrs={"kernel_shape": [3, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
        dims=_HW,
    ),
    Case(
        "maxpool2d_opset7",
        "MaxPool",
        7,
        (x(1, 2, 6, 7),),
        attrs={"kernel_shape": [2, 2], "pads": [1, 1, 0, 0]},
    ),
    Case(
        "maxpool2d_float16",
        "MaxPool",
        12,
        (x(1, 2, 6, 6, dtype="float16"),),
        attrs={"kernel_shape": [3, 3], "strides": [2, 2]},
    ),
    # AveragePool
    Case(
        "averagepool2d_same_lower_runtime_spatial_include",
        "AveragePool",
        11,
        (x("n", 2, "h", "w", dynamic=True),),
        attrs={
            "kernel_shape": [3, 3],
            "strides": [2, 1],
            "auto_pad": "SAME_LOWER",
            "count_include_pad": 1,
        },
        dims=_HW,
    ),
    Case(
        "averagepool3d_ceil_dilations",
        "AveragePool",
        19,
        (x(1, 2, 6, 7, 5),),
        attrs={
            "kernel_shape": [2, 2, 2],
            "strides": [2, 2, 2],
            "dilations": [1, 2, 1],
            "ceil_mode": 1,
            "pads": [1, 0, 0, 0, 1, 1],
        },
    ),
    Case(
        "averagepool2d_opset7_include_pad",
        "AveragePool",
        7,
        (x(1, 2, 5, 6),),
        attrs={"kernel_shape": [2, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    ),
    Case(
        "averagepool1d_ceil",
        "AveragePool",
        10,
        (x(2, 3, 10),),
        attrs={"kernel_shape": [4], "strides": [3], "ceil_mode": 1},
    ),
    Case(
        "averagepool2d_float16_large_window",
        "AveragePool",
        21,
        (x(1, 3, 12, 12, dtype="float16", scale=10.0),),
        attrs={"kernel_shape": [7, 7], "pads": [3, 3, 3, 3]},
    ),
    Case(
        "averagepool2d_empty_batch",
        "AveragePool",
        11,
        (x(0, 3, 4, 4),),
        attrs={"kernel_shape": [2, 2]},
    ),
    # LpPool
    Case(
        "lppool2d_p3_pads_strides",
        "LpPool",
        11,
        (x("n", 2, 7, 8),),
        attrs={"kernel_shape": [3, 3], "p": 3, "pads": [1, 1, 1, 0], "strides": [2, 2]},
        dims=_B,
    ),
    Case(
        "lppool2d_default_p_opset7", "LpPool", 7, (x(1, 3, 5, 6),), attrs={"kernel_shape": [2, 2]}
    ),
    Case(
        "lppool1d_p1_ceil_dilations",
        "LpPool",
        18,
        (x(2, 2, 11),),
        attrs={"kernel_shape": [3], "p": 1, "strides": [2], "dilations": [2], "ceil_mode": 1},
    ),
    Case(
        "lppool3d_p4",
        "LpPool",
        22,
        (x(1, 2, 4, 4, 5),),
        attrs={"kernel_shape": [2, 2, 3], "p": 4, "strides": [2, 1, 1]},
    ),
    Case(
        "lppool2d_same_upper_runtime_spatial",
        "LpPool",
        18,
        (x("n", 2, "h", "w", dynamic=True),),
        attrs={"kernel_shape": [2, 3], "p": 2, "auto_pad": "SAME_UPPER"},
        dims=_HW,
    ),
    Case(
        "lppool2d_float16",
        "LpPool",
        21,
        (x(1, 2, 6, 7, dtype="float16"),),
        attrs={"kernel_shape": [3, 3], "p": 3},
    ),
    # GlobalLpPool (onnxruntime: opsets 2 to 21)
    Case("globallppool2d_default_p", "GlobalLpPool", 7, (x("n", 3, 5, 6),), dims=_B),
    Case("globallppool1d_p3", "GlobalLpPool", 21, (x(2, 3, 9),), attrs={"p": 3}),
    Case("globallppool3d_p1", "GlobalLpPool", 11, (x(1, 2, 3, 4, 3),), attrs={"p": 1}),
    Case("globallppool2d_float16", "GlobalLpPool", 21, (x(1, 3, 6, 6, dtype="float16"),)),
    # GlobalAveragePool, GlobalMaxPool
    Case(
        "globalaveragepool2d_runtime_spatial",
        "GlobalAveragePool",
        22,
        (x("n", 3, "h", "w", dynamic=True),),
        dims=_HW,
    ),
    Case("globalaveragepool3d", "GlobalAveragePool", 7, (x(1, 2, 3, 4, 5),)),
    Case(
        "globalmaxpool2d_runtime_spatial",
        "GlobalMaxPool",
        22,
        (x("n", 3, "h", "w", dynamic=True, special="inf"),),
        dims=_HW,
    ),
    Case("globalmaxpool1d_float16", "GlobalMaxPool", 7, (x(2, 3, 9, dtype="float16"),)),
    # MaxUnpool
    Case(
        "maxunpool2d",
        "MaxUnpool",
        11,
        (x(2, 3, 3, 4), v(_unpool_indices((2, 3, 6, 8), (2, 2), (2, 2), seed=1))),
        attrs={"kernel_shape": [2, 2], "strides": [2, 2]},
    ),
    Case(
        "maxunpool1d_pads_opset9",
        "MaxUnpool",
        9,
        (x(1, 2, 4), v(_unpool_indices((1, 2, 9), (3,), (2,), seed=2))),
        attrs={"kernel_shape": [3], "strides": [2], "pads": [1, 0]},
    ),
    Case(
        "maxunpool3d",
        "MaxUnpool",
        22,
        (x(1, 2, 2, 2, 3), v(_unpool_indices((1, 2, 4, 4, 6), (2, 2, 2), (2, 2, 2), seed=3))),
        attrs={"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]},
    ),
    Case(
        "maxunpool2d_output_shape_of_the_pooling",
        "MaxUnpool",
        11,
        (x(1, 2, 2, 3), v(_unpool_indices((1, 2, 4, 6), (2, 2), (2, 2), seed=4)), c([1, 2, 4, 6])),
        attrs={"kernel_shape": [2, 2], "strides": [2, 2]},
    ),
    Case(
        "maxunpool2d_output_shape_larger",
        "MaxUnpool",
        11,
        (x(1, 2, 2, 3), v(_unpool_indices((1, 2, 4, 6), (2, 2), (2, 2), seed=5)), c([1, 2, 5, 7])),
        attrs={"kernel_shape": [2, 2], "strides": [2, 2]},
        divergence=_UNPOOL_RESHAPE,
    ),
    # MaxRoiPool (onnxruntime: float32)
    Case(
        "maxroipool_scaled",
        "MaxRoiPool",
        21,
        (x(2, 3, 10, 12, gen="uniform", low=0, high=10), v(_ROIS, "float32")),
        attrs={"pooled_shape": [3, 2], "spatial_scale": 0.5},
    ),
    Case(
        "maxroipool_unscaled_fine_bins",
        "MaxRoiPool",
        7,
        (x(2, 2, 8, 10, gen="uniform", low=0, high=10), v(_ROIS, "float32")),
        attrs={"pooled_shape": [4, 5]},
    ),
    Case(
        "maxroipool_negative_values",
        "MaxRoiPool",
        12,
        (x(2, 2, 8, 10, gen="uniform", low=-10, high=-1), v(_ROIS[:2], "float32")),
        attrs={"pooled_shape": [2, 2]},
    ),
    # DeformConv: offsets of a few pixels (some points fall outside the input and read zeros),
    # offset groups, groups, mask, bias, strides, dilations and asymmetric pads
    Case(
        "deformconv2d_groups_offset_groups_mask_bias",
        "DeformConv",
        19,
        (x(2, 4, 7, 6), w(6, 2, 3, 2), x(2, 24, 4, 5, scale=1.5), w(6), x(2, 12, 4, 5)),
        attrs={
            "group": 2,
            "offset_group": 2,
            "strides": [2, 1],
            "dilations": [1, 2],
            "pads": [1, 0, 2, 1],
        },
        note=DOT,
    ),
    Case(
        "deformconv2d_far_offsets_no_bias_no_mask",
        "DeformConv",
        19,
        (x(1, 3, 5, 5), w(2, 3, 3, 3), x(1, 18, 3, 3, scale=3.0)),
        note=DOT,
    ),
    Case(
        "deformconv2d_mask_without_bias",
        "DeformConv",
        22,
        (
            x(1, 2, 4, 4),
            w(2, 2, 2, 2),
            x(1, 8, 3, 3),
            None,
            x(1, 4, 3, 3, gen="uniform", low=0, high=1),
        ),
        note=DOT,
    ),
    Case(
        "deformconv2d_integer_offsets_offset_groups_4",
        "DeformConv",
        22,
        (x(1, 4, 6, 6), w(3, 4, 2, 2), x(1, 32, 5, 5, gen="int", low=-2, high=2)),
        attrs={"offset_group": 4, "pads": [0, 0, 0, 0]},
        note=DOT,
    ),
    Case(
        "deformconv2d_float64_kernel_shape_attribute",
        "DeformConv",
        22,
        (
            x(1, 2, 5, 4, dtype="float64"),
            w(2, 2, 2, 3, dtype="float64"),
            x(1, 12, 3, 2, dtype="float64"),
            w(2, dtype="float64"),
        ),
        attrs={"kernel_shape": [2, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    ),
]
