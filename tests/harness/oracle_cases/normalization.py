"""Oracle cases of the normalization family (onemodel_compile/ops/normalization.py):
BatchNormalization, InstanceNormalization, GroupNormalization, LayerNormalization,
RMSNormalization, LpNormalization, MeanVarianceNormalization, LRN. The foundation table holds
more BatchNormalization and LayerNormalization cases; these add the other operators, each opset
where semantics changed (GroupNormalization 18 scales per group, 21 per channel), half precision,
run-time dims, and the settled rule that a zero norm gives zeros.

Not covered here, with the reason:
- bfloat16: onnxruntime's Python binding takes and returns no bfloat16 arrays;
- opsets above 26: onnxruntime 1.31.1 loads the default domain up to opset 26 only;
- GroupNormalization 18 to 20: onnx 1.23's checker refuses the deprecated opset-18 schema, so
  neither the compiler nor this harness loads such a model;
- LRN with an even size or other than 4-D input: onnxruntime refuses them (the compiler takes
  them: the window reaches floor((size - 1) / 2) channels before and ceil((size - 1) / 2) after);
- BatchNormalization in training mode: out of scope (the compiler refuses it).
"""

from __future__ import annotations

import numpy as np

from tests.harness.oracle import TRANSCENDENTAL, Case, c, v, w, x

OPERATORS = (
    "BatchNormalization",
    "InstanceNormalization",
    "GroupNormalization",
    "LayerNormalization",
    "RMSNormalization",
    "LpNormalization",
    "MeanVarianceNormalization",
    "LRN",
)

_NCHW = {"n": (1, 2), "c": (1, 4), "h": (2, 5), "w": (2, 5)}
_STATISTICS = (
    "means and variances: onnxruntime and numpy sum in different orders, a few ulps of the "
    "input's magnitude apart"
)
_CONSTANT_SLICE = (
    "a constant slice (zero deviation): docs/contract.md settles that it gives zeros; onnxruntime "
    "gives NaN"
)

# A 2 x 3 x 4 input whose first row along the last axis is all zeros and whose second row along
# axis 1 (for each n) is constant: the norms and deviations of those slices are zero.
_ZERO_SLICES = np.array(
    [
        [[0.0, 0.0, 0.0, 0.0], [1.5, -2.0, 0.25, 3.0], [0.1, 0.1, 0.1, 0.1]],
        [[-1.0, 2.0, 0.5, 4.0], [0.0, 0.0, 0.0, 0.0], [3.7, 3.7, 3.7, 3.7]],
    ],
    dtype=np.float32,
)

CASES = [
    # BatchNormalization (inference)
    Case(
        "norm_batchnorm14_special",
        "BatchNormalization",
        14,
        (
            x("n", "c", "h", special=True),
            w("c"),
            w("c"),
            w("c"),
            w("c", gen="uniform", low=0.1, high=2),
        ),
        dims={"n": (1, 3), "c": (2, 4), "h": (3, 6)},
    ),
    Case(
        "norm_batchnorm15_5d",
        "BatchNormalization",
        15,
        (x(2, 3, 2, 3, 2), w(3), w(3), w(3), w(3, gen="uniform", low=0.0, high=1)),
        attrs={"epsilon": 0.5},
    ),
    Case(
        "norm_batchnorm9_dynamic_batch",
        "BatchNormalization",
        9,
        (x("n", 4, 5, dynamic=True), w(4), w(4), w(4), w(4, gen="uniform", low=0.1, high=3)),
        dims={"n": (1, 4)},
    ),
    Case(
        "norm_batchnorm15_float16",
        "BatchNormalization",
        15,
        (
            x(2, 3, 4, dtype="float16"),
            w(3, dtype="float16"),
            w(3, dtype="float16"),
            w(3, dtype="float16"),
            w(3, dtype="float16", gen="uniform", low=0.1, high=2),
        ),
    ),
    # InstanceNormalization: statistics per (batch, channel) over the spatial axes
    Case(
        "norm_instancenorm7_nchw",
        "InstanceNormalization",
        7,
        (x("n", "c", "h", "w", scale=3.0), w("c"), w("c")),
        dims=_NCHW,
        note=_STATISTICS,
        atol=1e-4,
    ),
    Case(
        "norm_instancenorm22_ncl_epsilon",
        "InstanceNormalization",
        22,
        (x(2, 3, 7), w(3), w(3)),
        attrs={"epsilon": 0.1},
    ),
    Case(
        "norm_instancenorm22_single_position",  # variance 0: the result is B
        "InstanceNormalization",
        22,
        (x(3, 2, 1, 1), w(2), w(2)),
    ),
    Case(
        "norm_instancenorm7_float16",
        "InstanceNormalization",
        7,
        (x(2, 3, 4, 4, dtype="float16"), w(3, dtype="float16"), w(3, dtype="float16")),
    ),
    Case(
        "norm_instancenorm22_special",
        "InstanceNormalization",
        22,
        (x(2, 2, 5, special=True), w(2), w(2)),
    ),
    # GroupNormalization: 18 scales per group, 21 per channel
    Case(
        "norm_groupnorm21_per_channel",
        "GroupNormalization",
        21,
        (x("n", 6, "h", "w"), w(6), w(6)),
        attrs={"num_groups": 2},
        dims={"n": (1, 3), "h": (2, 4), "w": (2, 4)},
    ),
    Case(
        "norm_groupnorm21_groups_are_channels",
        "GroupNormalization",
        21,
        (x(2, 4, 6), w(4), w(4)),
        attrs={"num_groups": 4, "epsilon": 0.25},
    ),
    Case(
        "norm_groupnorm21_float16",
        "GroupNormalization",
        21,
        (x(2, 4, 3, 3, dtype="float16"), w(4, dtype="float16"), w(4, dtype="float16")),
        attrs={"num_groups": 2},
    ),
    # LayerNormalization (more in the foundation table)
    Case(
        "norm_layernorm17_float16_statistics",
        "LayerNormalization",
        17,
        (x(3, 8, dtype="float16"), w(8, dtype="float16"), w(8, dtype="float16")),
        outputs=3,
    ),
    Case(
        "norm_layernorm17_axis0_all_outputs",
        "LayerNormalization",
        17,
        (x(2, 3, 4), w(2, 3, 4), w(2, 3, 4)),
        attrs={"axis": 0, "epsilon": 0.5},
        outputs=3,
    ),
    Case(
        "norm_layernorm17_invstddev_only",
        "LayerNormalization",
        17,
        (x(4, 5, special=True), w(5)),
        outputs=3,
        skip_outputs=(1,),
    ),
    Case(
        "norm_layernorm17_broadcast_scale",
        "LayerNormalization",
        17,
        (x(2, 3, 6), w(1, 6), w(6)),
        attrs={"axis": 1},
    ),
    # RMSNormalization
    Case(
        "norm_rms23_default",
        "RMSNormalization",
        23,
        (x("n", 3, 8, scale=4.0), w(8)),
        dims={"n": (1, 3)},
    ),
    Case(
        "norm_rms23_axis_negative",
        "RMSNormalization",
        23,
        (x(2, 3, 4, 5), w(4, 5)),
        attrs={"axis": -2, "epsilon": 0.1},
    ),
    Case(
        "norm_rms23_axis0_special",
        "RMSNormalization",
        23,
        (x(3, 4, special=True), w(3, 4)),
        attrs={"axis": 0},
    ),
    Case(
        "norm_rms23_float16",
        "RMSNormalization",
        23,
        (x(2, 16, dtype="float16"), w(16, dtype="float16")),
    ),
    # LpNormalization
    Case(
        "norm_lp_p2_default",
        "LpNormalization",
        22,
        (x("n", 3, 5, scale=3.0),),
        dims={"n": (1, 3)},
    ),
    Case(
        "norm_lp7_p1_axis0",
        "LpNormalization",
        7,
        (x(4, 3),),
        attrs={"p": 1, "axis": 0},
    ),
    Case(
        "norm_lp22_p2_axis_negative_special",
        "LpNormalization",
        22,
        (x(2, 4, 3, special="inf"),),
        attrs={"axis": -2},
    ),
    Case(
        "norm_lp_float64",
        "LpNormalization",
        22,
        (x(3, 6, dtype="float64"),),
        attrs={"p": 1},
    ),
    Case(
        "norm_lp_zero_norm",
        "LpNormalization",
        22,
        (v(_ZERO_SLICES, "float32"),),
    ),
    # MeanVarianceNormalization
    Case(
        "norm_mvn9_default_axes",
        "MeanVarianceNormalization",
        9,
        (x("n", "c", "h", "w", scale=2.0),),
        dims=_NCHW,
        atol=1e-4,
        note=_STATISTICS,
    ),
    Case(
        "norm_mvn9_last_axes",
        "MeanVarianceNormalization",
        9,
        (x(2, 3, 4, 5),),
        attrs={"axes": [2, 3]},
        atol=1e-4,
        note=_STATISTICS,
    ),
    Case(
        "norm_mvn13_axis1_3d",
        "MeanVarianceNormalization",
        13,
        (x(3, 6, 2, gen="uniform", low=-100, high=100),),
        attrs={"axes": [1]},
        atol=1e-4,
        note=_STATISTICS,
    ),
    Case(
        "norm_mvn13_constant_slices",
        "MeanVarianceNormalization",
        13,
        (v(_ZERO_SLICES, "float32"),),
        attrs={"axes": [2]},
        divergence=_CONSTANT_SLICE,
    ),
    # LRN
    Case(
        "norm_lrn13_attributes",
        "LRN",
        13,
        (x("n", 6, "h", "w", scale=3.0),),
        attrs={"size": 5, "alpha": 0.01, "beta": 0.6, "bias": 1.5},
        dims={"n": (1, 2), "h": (2, 4), "w": (2, 4)},
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "norm_lrn7_alpha",
        "LRN",
        7,
        (x(2, 5, 3, 3),),
        attrs={"size": 3, "alpha": 0.5},
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "norm_lrn13_size_beyond_channels",
        "LRN",
        13,
        (x(1, 3, 4, 4, scale=10.0),),
        attrs={"size": 7, "beta": 1.0},
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "norm_lrn13_float16_const_input",
        "LRN",
        13,
        (c(np.linspace(-3, 3, 2 * 5 * 2 * 2).reshape(2, 5, 2, 2), "float16"),),
        attrs={"size": 3, "alpha": 0.3},
    ),
]
