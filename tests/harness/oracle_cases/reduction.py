"""Oracle cases of the reduction family (onemodel_compile/ops/reduction.py: the Reduce* operators,
ArgMax/ArgMin, CumSum/CumProd, TopK) and of Einsum, Det and MatMulInteger (ops/linalg.py).

Not covered here, with the reason:
- opsets above 26 (ReduceLogSum and ReduceLogSumExp 28, Einsum 28): onnxruntime 1.31.1 loads the
  default domain up to opset 26 only;
- bfloat16: onnxruntime's Python binding takes and returns no bfloat16 arrays (the backend cases
  test Einsum in bfloat16);
- TopK with sorted=0: any order is allowed, and the compiler always sorts;
- float64 Det, uint32 ReduceSum: onnxruntime 1.31.1 has no kernel for them;
- integer reductions beyond 2**53 or overflowing: onnxruntime goes through double (int64 products
  round, int32 sums saturate), the compiler computes in the integer type and wraps, as the ONNX
  reference does; the specification does not say.
"""

from __future__ import annotations

import numpy as np

from tests.harness.oracle import Case, c, v, x

OPERATORS = (
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
    "ArgMax",
    "ArgMin",
    "CumSum",
    "CumProd",
    "TopK",
    "Einsum",
    "Det",
    "MatMulInteger",
)

_B = {"n": (1, 3)}
_EMPTY_AXES = np.zeros((0,), np.int64)

_NAN_ARG = (
    "NaN along the axis: onnxruntime's ArgMax/ArgMin skip or keep it depending on where "
    "it sits; numpy (the compiler) takes the first NaN as the extreme. Backend data have "
    "no NaN."
)


def _ints(*shape, dtype="int32", low=-20, high=20, **options):
    return x(*shape, dtype=dtype, gen="int", low=low, high=high, **options)


def _u8(*shape, **options):
    return _ints(*shape, dtype="uint8", low=0, high=255, **options)


def _i8(*shape, **options):
    return _ints(*shape, dtype="int8", low=-128, high=127, **options)


CASES = [
    # ReduceL1: attribute (before 18), then input
    Case(
        "reducel1_13_axes_attribute",
        "ReduceL1",
        13,
        (x("n", 3, 4, special="inf"),),
        attrs={"axes": [-1, 0]},
        dims=_B,
    ),
    Case("reducel1_11_all_no_keepdims", "ReduceL1", 11, (x(3, 4, 5),), attrs={"keepdims": 0}),
    Case("reducel1_18_axes_input", "ReduceL1", 18, (x(2, 3, 4), c([1])), attrs={"keepdims": 0}),
    Case("reducel1_18_runtime_axes", "ReduceL1", 18, (x(3, 5, 2), v([-1, 0]))),
    Case("reducel1_18_int32", "ReduceL1", 18, (_ints(4, 6), c([1]))),
    Case("reducel1_18_empty", "ReduceL1", 18, (x(2, 0, 3), c([1]))),
    Case(
        "reducel1_18_noop",
        "ReduceL1",
        18,
        (x(3, 4, special=True), c(_EMPTY_AXES)),
        attrs={"noop_with_empty_axes": 1},
    ),
    # ReduceL2
    Case(
        "reducel2_11_axes_attribute", "ReduceL2", 11, (x("n", 5, 3),), attrs={"axes": [1]}, dims=_B
    ),
    Case("reducel2_13_special", "ReduceL2", 13, (x(3, 6, special=True),), attrs={"axes": [-1]}),
    Case(
        "reducel2_18_runtime_axes_no_keepdims",
        "ReduceL2",
        18,
        (x(2, 3, 4), v([0, 2])),
        attrs={"keepdims": 0},
    ),
    Case("reducel2_18_int32_truncates", "ReduceL2", 18, (_ints(3, 5), c([1]))),
    Case("reducel2_18_float16", "ReduceL2", 18, (x(4, 30, dtype="float16", scale=20.0), c([1]))),
    Case("reducel2_18_empty", "ReduceL2", 18, (x(0, 3), c([0])), attrs={"keepdims": 0}),
    # ReduceLogSum
    Case(
        "reducelogsum_13_axes_attribute",
        "ReduceLogSum",
        13,
        (x("n", 4, 5, gen="uniform", low=0.1, high=10),),
        attrs={"axes": [1, 2]},
        dims=_B,
    ),
    Case("reducelogsum_11_all", "ReduceLogSum", 11, (x(3, 4, gen="uniform", low=0, high=3),)),
    Case(
        "reducelogsum_18_runtime_axes",
        "ReduceLogSum",
        18,
        (x(3, 4, 2, gen="uniform", low=0.5, high=2), v([-2])),
    ),
    Case("reducelogsum_18_empty", "ReduceLogSum", 18, (x(2, 0, 4), c([1]))),
    Case(
        "reducelogsum_18_noop_logs_each",
        "ReduceLogSum",
        18,
        (x(3, 4), c(_EMPTY_AXES)),
        attrs={"noop_with_empty_axes": 1},
    ),
    # ReduceLogSumExp: large values must not overflow
    Case(
        "reducelogsumexp_13_large",
        "ReduceLogSumExp",
        13,
        (x("n", 6, scale=100.0),),
        attrs={"axes": [1]},
        dims=_B,
    ),
    Case("reducelogsumexp_11_all_keepdims", "ReduceLogSumExp", 11, (x(2, 3, 4, scale=3.0),)),
    Case(
        "reducelogsumexp_18_infinities",
        "ReduceLogSumExp",
        18,
        (
            v(
                [
                    [-np.inf, -np.inf, -np.inf],
                    [np.inf, 1.0, 2.0],
                    [-np.inf, 3.0, 0.5],
                    [np.inf, -np.inf, 0.0],
                ],
                "float32",
            ),
            c([1]),
        ),
    ),
    Case(
        "reducelogsumexp_18_runtime_axes_float64",
        "ReduceLogSumExp",
        18,
        (x(3, 4, 5, dtype="float64", scale=50.0), v([0, -1])),
        attrs={"keepdims": 0},
    ),
    Case("reducelogsumexp_18_empty", "ReduceLogSumExp", 18, (x(2, 0, 4), c([1]))),
    # ReduceMin (the mirror of ReduceMax)
    Case(
        "reducemin_13_axes_attribute",
        "ReduceMin",
        13,
        (x("n", 4, 5, special="inf"),),
        attrs={"axes": [-1]},
        dims=_B,
    ),
    Case("reducemin_11_all_no_keepdims", "ReduceMin", 11, (x(3, 4),), attrs={"keepdims": 0}),
    Case(
        "reducemin_12_uint8",
        "ReduceMin",
        12,
        (_ints(3, 5, dtype="uint8", low=0, high=255),),
        attrs={"axes": [0]},
    ),
    Case(
        "reducemin_18_runtime_axes_int64",
        "ReduceMin",
        18,
        (_ints(3, 4, 2, dtype="int64", low=-(10**12), high=10**12), v([0, 2])),
    ),
    Case("reducemin_20_bool", "ReduceMin", 20, (x(4, 3, dtype="bool", gen="bool"), c([1]))),
    Case("reducemin_18_empty", "ReduceMin", 18, (x(2, 0, 3), c([1]))),
    Case("reducemin_18_empty_int32", "ReduceMin", 18, (_ints(0, 3), c([0]))),
    # ReduceProd
    Case(
        "reduceprod_13_axes_attribute",
        "ReduceProd",
        13,
        (x("n", 5, 3, gen="uniform", low=0.5, high=1.5),),
        attrs={"axes": [1]},
        dims=_B,
    ),
    Case(
        "reduceprod_7_all",
        "ReduceProd",
        7,
        (x(2, 3, gen="uniform", low=-2, high=2),),
        attrs={"keepdims": 0},
    ),
    Case(
        "reduceprod_18_runtime_axes_int32", "ReduceProd", 18, (_ints(3, 4, low=-5, high=5), v([1]))
    ),
    Case(
        "reduceprod_18_int64",
        "ReduceProd",
        18,
        (_ints(2, 6, dtype="int64", low=-400, high=400), c([1])),
    ),
    Case("reduceprod_18_empty", "ReduceProd", 18, (x(2, 0, 3), c([1]))),
    # ReduceSumSquare
    Case(
        "reducesumsquare_13_axes_attribute",
        "ReduceSumSquare",
        13,
        (x("n", 3, 4),),
        attrs={"axes": [0, 2]},
        dims=_B,
    ),
    Case("reducesumsquare_18_axes_input", "ReduceSumSquare", 18, (x(3, 5, special="inf"), c([-1]))),
    Case(
        "reducesumsquare_18_int64",
        "ReduceSumSquare",
        18,
        (_ints(3, 4, dtype="int64", low=-1000, high=1000), v([0])),
        attrs={"keepdims": 0},
    ),
    Case(
        "reducesumsquare_18_noop_squares",
        "ReduceSumSquare",
        18,
        (x(3, 4), c(_EMPTY_AXES)),
        attrs={"noop_with_empty_axes": 1},
    ),
    Case("reducesumsquare_18_empty", "ReduceSumSquare", 18, (x(0, 4), c([0]))),
    # ReduceSum, ReduceMean, ReduceMax beyond the core table: half precision, run-time axes, nothing
    Case("reducesum_13_float16", "ReduceSum", 13, (x(3, 64, dtype="float16"), c([1]))),
    Case(
        "reducesum_13_runtime_axes_noop",
        "ReduceSum",
        13,
        (x(2, 3), v(_EMPTY_AXES)),
        attrs={"noop_with_empty_axes": 1},
    ),
    Case(
        "reducesum_13_runtime_axes_int32",
        "ReduceSum",
        13,
        (_ints(4, 5, low=-(2**28), high=2**28), v([0])),
    ),
    Case("reducemean_18_empty_is_zero", "ReduceMean", 18, (x(2, 0, 3), c([1]))),
    Case(
        "reducemean_18_runtime_axes_empty",
        "ReduceMean",
        18,
        (x(0, 3), v([0])),
        attrs={"keepdims": 0},
    ),
    Case(
        "reducemean_13_dynamic_axis",
        "ReduceMean",
        13,
        (x("n", 4, dynamic=True),),
        attrs={"axes": [0]},
        dims=_B,
    ),
    Case(
        "reducemean_18_float16", "ReduceMean", 18, (x(2, 50, dtype="float16", scale=10.0), c([1]))
    ),
    Case("reducemax_20_bool", "ReduceMax", 20, (x(3, 4, dtype="bool", gen="bool"), v([0]))),
    Case(
        "reducemax_12_int8",
        "ReduceMax",
        12,
        (_ints(4, 5, dtype="int8", low=-128, high=127),),
        attrs={"axes": [1], "keepdims": 0},
    ),
    # ArgMax, ArgMin
    Case("argmax_7_default", "ArgMax", 7, (x("n", 4, 5),), dims=_B),
    Case(
        "argmax_11_negative_axis_no_keepdims",
        "ArgMax",
        11,
        (x(3, 4, 5),),
        attrs={"axis": -1, "keepdims": 0},
    ),
    Case("argmax_12_ties_first", "ArgMax", 12, (_ints(4, 7, low=0, high=2),), attrs={"axis": 1}),
    Case(
        "argmax_13_ties_last",
        "ArgMax",
        13,
        (_ints(5, 6, dtype="int64", low=0, high=2),),
        attrs={"axis": 0, "select_last_index": 1},
    ),
    Case("argmax_13_infinities", "ArgMax", 13, (x(4, 6, special="inf"),), attrs={"axis": 1}),
    Case(
        "argmax_13_nan",
        "ArgMax",
        13,
        (v([[1.0, np.nan, 2.0], [np.nan, 5.0, 1.0]], "float32"),),
        attrs={"axis": 1},
        divergence=_NAN_ARG,
    ),
    Case("argmin_7_axis1", "ArgMin", 7, (x(3, 4, 2),), attrs={"axis": 1}),
    Case(
        "argmin_12_ties_last_no_keepdims",
        "ArgMin",
        12,
        (_ints(3, 8, low=0, high=2),),
        attrs={"axis": -1, "keepdims": 0, "select_last_index": 1},
    ),
    Case("argmin_13_uint8", "ArgMin", 13, (_ints(6, 3, dtype="uint8", low=0, high=4),)),
    Case(
        "argmin_13_float64_dynamic",
        "ArgMin",
        13,
        (x("n", 5, dtype="float64", dynamic=True),),
        attrs={"axis": 1},
        dims=_B,
    ),
    # CumSum, CumProd: the axis is an input
    Case("cumsum_11_axis_constant", "CumSum", 11, (x("n", 6), c(1)), dims=_B),
    Case(
        "cumsum_14_exclusive_reverse",
        "CumSum",
        14,
        (x(4, 5), c(0)),
        attrs={"exclusive": 1, "reverse": 1},
    ),
    Case(
        "cumsum_14_runtime_axis_int32",
        "CumSum",
        14,
        (_ints(3, 4, 2), v(-2, "int32")),
        attrs={"exclusive": 1},
    ),
    Case(
        "cumsum_14_reverse_int64_negative_axis",
        "CumSum",
        14,
        (_ints(2, 7, dtype="int64", low=-(10**9), high=10**9), c([-1])),
        attrs={"reverse": 1},
    ),
    Case("cumsum_14_float64_special", "CumSum", 14, (x(3, 5, dtype="float64", special=True), c(1))),
    Case("cumsum_14_empty_axis_exclusive", "CumSum", 14, (x(2, 0), c(1)), attrs={"exclusive": 1}),
    Case(
        "cumprod_26_axis_constant",
        "CumProd",
        26,
        (x("n", 6, gen="uniform", low=0.5, high=1.5), c(1)),
        dims=_B,
    ),
    Case(
        "cumprod_26_exclusive_reverse",
        "CumProd",
        26,
        (x(5, 3, gen="uniform", low=-2, high=2), c(0)),
        attrs={"exclusive": 1, "reverse": 1},
    ),
    Case(
        "cumprod_26_runtime_axis_int64",
        "CumProd",
        26,
        (_ints(3, 5, dtype="int64", low=-4, high=4), v(1)),
        attrs={"exclusive": 1},
    ),
    # TopK: k attribute before 10, then input; largest/sorted from 11
    Case("topk_7_k_attribute", "TopK", 7, (x("n", 8),), attrs={"k": 3}, dims=_B, outputs=2),
    Case("topk_10_k_input", "TopK", 10, (x(3, 6, 4), c([2])), attrs={"axis": 1}, outputs=2),
    Case(
        "topk_11_smallest_negative_axis",
        "TopK",
        11,
        (x(4, 7), c([4])),
        attrs={"axis": -1, "largest": 0},
        outputs=2,
    ),
    Case("topk_11_ties_int32", "TopK", 11, (_ints(3, 9, low=0, high=3), c([5])), outputs=2),
    Case(
        "topk_11_ties_smallest_int64",
        "TopK",
        11,
        (_ints(2, 10, dtype="int64", low=0, high=2), c([6])),
        attrs={"largest": 0},
        outputs=2,
    ),
    Case("topk_11_runtime_k", "TopK", 11, (x(2, 9, dtype="float64"), v([3])), outputs=2),
    Case("topk_11_infinities", "TopK", 11, (x(3, 8, special="inf"), c([8])), outputs=2),
    Case("topk_11_k_zero", "TopK", 11, (x(3, 4), c([0])), outputs=2),
    # Einsum
    Case(
        "einsum_12_matmul",
        "Einsum",
        12,
        (x("n", 5), x(5, 3)),
        attrs={"equation": "ij,jk->ik"},
        dims=_B,
    ),
    Case(
        "einsum_12_batch_matmul",
        "Einsum",
        12,
        (x(2, 3, 4), x(2, 4, 5)),
        attrs={"equation": "bij,bjk->bik"},
    ),
    Case("einsum_12_transpose_implicit", "Einsum", 12, (x(3, 4, 2),), attrs={"equation": "kij"}),
    Case("einsum_12_trace_diagonal", "Einsum", 12, (x(2, 4, 4),), attrs={"equation": "bii->b"}),
    Case(
        "einsum_12_ellipsis_spaces",
        "Einsum",
        12,
        (x(2, 3, 4), x(4, 2)),
        attrs={"equation": "... i j , j k -> ... k i"},
    ),
    Case(
        "einsum_12_three_operands",
        "Einsum",
        12,
        (x(3, 4), x(4, 5), x(5)),
        attrs={"equation": "ij,jk,k->i"},
    ),
    Case(
        "einsum_12_outer_int32", "Einsum", 12, (_ints(4), _ints(3)), attrs={"equation": "i,j->ij"}
    ),
    Case(
        "einsum_12_sum_int64",
        "Einsum",
        12,
        (_ints(3, 5, dtype="int64"),),
        attrs={"equation": "ij->"},
    ),
    # Det
    Case("det_11_2d", "Det", 11, (x(3, 3),)),
    Case("det_11_batched", "Det", 11, (x("n", 2, 4, 4),), dims=_B),
    Case("det_11_singular", "Det", 11, (c([[1.0, 2.0], [2.0, 4.0]], "float32"),)),
    Case("det_22_1x1", "Det", 22, (x(3, 1, 1),)),
    # MatMulInteger (zero points: a scalar, or per column of B)
    Case(
        "matmulinteger_10_uint8_scalar_zero_points",
        "MatMulInteger",
        10,
        (_u8("n", 6), _u8(6, 4, init=True), c(np.uint8(128), "uint8"), c(np.uint8(3), "uint8")),
        dims=_B,
    ),
    Case("matmulinteger_10_no_zero_points", "MatMulInteger", 10, (_u8(3, 5), _i8(5, 2))),
    Case(
        "matmulinteger_10_int8_per_column",
        "MatMulInteger",
        10,
        (_i8(2, 3, 8), _i8(8, 5), c(np.int8(-3), "int8"), v([1, -2, 0, 5, -128], "int8")),
    ),
    Case(
        "matmulinteger_10_b_zero_point_only",
        "MatMulInteger",
        10,
        (_u8(4, 3), _u8(3, 2), None, c([7], "uint8")),
    ),
]
