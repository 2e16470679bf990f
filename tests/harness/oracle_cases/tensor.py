"""Oracle cases of the tensor and indexing families (onemodel_compile/ops/tensor.py, indexing.py).

Not covered here, with the reason:
- bfloat16 anywhere: onnxruntime's Python binding takes and returns no bfloat16 arrays (the backend
  cases test Cast/CastLike to and from bfloat16; docs/dtypes.md records how they round);
- BitCast: onnxruntime 1.31.1 has no kernel for it;
- Cast's `saturate` on a non-float8 target: onnxruntime refuses the attribute there (the compiler
  ignores it, as the specification says it only concerns float8);
- a scalar Squeeze `axes` input: onnxruntime wants a vector (docs/contract.md settles a scalar as one axis);
- versions above opset 26 (Range's stash_type, SpaceToDepth's mode): onnxruntime 1.31.1 loads the
  default domain up to opset 26 only.
"""

from __future__ import annotations

import numpy as np
import onnx

from tests.harness.oracle import INT64_MAX, Case, c, v, w, x

OPERATORS = (
    "Cast",
    "CastLike",
    "CenterCropPad",
    "Compress",
    "DepthToSpace",
    "EyeLike",
    "GatherElements",
    "GatherND",
    "NonZero",
    "OneHot",
    "Pad",
    "Range",
    "ReverseSequence",
    "Scatter",
    "ScatterElements",
    "ScatterND",
    "SpaceToDepth",
    "TensorScatter",
    "TfIdfVectorizer",
    "Tile",
    "Trilu",
    "Unique",
)

T = onnx.TensorProto
_B = {"n": (1, 3)}
_NGRAMS = {  # the pool of the backend cases: 1-grams 2 3 5 4, 2-grams (5 6) (7 8) (6 7)
    "pool_int64s": [2, 3, 5, 4, 5, 6, 7, 8, 6, 7],
    "ngram_counts": [0, 4],
    "ngram_indexes": [0, 1, 2, 3, 4, 5, 6],
}

CASES = [
    # Cast: pairs of in-scope types beyond the main table's
    Case(
        "cast_float_to_int8_in_range",
        "Cast",
        13,
        (x("n", 9, gen="uniform", low=-128.9, high=127.9),),
        attrs={"to": T.INT8},
        dims=_B,
    ),
    Case(
        "cast_float_to_uint16_in_range",
        "Cast",
        19,
        (x(3, 7, gen="uniform", low=-0.9, high=65535.9),),
        attrs={"to": T.UINT16},
    ),
    Case(
        "cast_float16_to_int64",
        "Cast",
        21,
        (x(2, 8, dtype="float16", gen="uniform", low=-2000, high=2000),),
        attrs={"to": T.INT64},
    ),
    Case(
        "cast_float64_to_uint32",
        "Cast",
        13,
        (x(5, 3, dtype="float64", gen="uniform", low=0, high=4e9),),
        attrs={"to": T.UINT32},
    ),
    Case(
        "cast_int32_to_int8_wraps",
        "Cast",
        13,
        (x(4, 5, dtype="int32", gen="int", low=-1000, high=1000),),
        attrs={"to": T.INT8},
    ),
    Case(
        "cast_int64_to_uint8_wraps",
        "Cast",
        9,
        (x(6, dtype="int64", gen="int", low=-(10**12), high=10**12),),
        attrs={"to": T.UINT8},
    ),
    Case(
        "cast_uint64_to_float32",
        "Cast",
        13,
        (v([2**64 - 1, 2**63 + 2**39 + 1, 2**24 + 1, 0, 12345678901234567], "uint64"),),
        attrs={"to": T.FLOAT},
    ),
    Case(
        "cast_int64_to_float16_overflow",
        "Cast",
        13,
        (x(3, 6, dtype="int64", gen="int", low=-70000, high=70000),),
        attrs={"to": T.FLOAT16},
    ),
    Case(
        "cast_float64_to_float16",
        "Cast",
        13,
        (x(4, 5, dtype="float64", scale=3e4, special=True),),
        attrs={"to": T.FLOAT16},
    ),
    Case(
        "cast_float_to_bool_special",
        "Cast",
        21,
        (x("n", 7, special=True),),
        attrs={"to": T.BOOL},
        dims=_B,
    ),
    Case(
        "cast_int16_to_bool",
        "Cast",
        13,
        (x(3, 4, dtype="int16", gen="int", low=-2, high=2),),
        attrs={"to": T.BOOL},
    ),
    Case("cast_bool_to_int8", "Cast", 13, (x(5, dtype="bool", gen="bool"),), attrs={"to": T.INT8}),
    Case(
        "cast_uint8_to_float64",
        "Cast",
        7,
        (x(2, 9, dtype="uint8", gen="int", low=0, high=255),),
        attrs={"to": T.DOUBLE},
    ),
    Case("cast_same_type", "Cast", 13, (x(2, 3, special=True),), attrs={"to": T.FLOAT}),
    Case("cast_empty", "Cast", 13, (x(0, 4, dtype="int32", gen="int"),), attrs={"to": T.FLOAT16}),
    Case(
        "castlike_float16_to_int16",
        "CastLike",
        15,
        (
            x("n", 5, dtype="float16", gen="uniform", low=-3000, high=3000),
            x(2, dtype="int16", gen="int"),
        ),
        dims=_B,
    ),
    Case(
        "castlike_int8_to_float64",
        "CastLike",
        21,
        (x(3, 3, dtype="int8", gen="int", low=-128, high=127), c(np.zeros(0), "float64")),
    ),
    # GatherElements
    Case(
        "gather_elements_axis1",
        "GatherElements",
        13,
        (x(3, 5), w(3, 4, dtype="int64", gen="index", index_of=(0, 1))),
        attrs={"axis": 1},
    ),
    Case(
        "gather_elements_negative_axis_int32",
        "GatherElements",
        11,
        (
            x(2, 3, 4, dtype="int64", gen="int"),
            x(2, 3, 6, dtype="int32", gen="index", index_of=(0, 2)),
        ),
        attrs={"axis": -1},
    ),
    Case(
        "gather_elements_smaller_indices",
        "GatherElements",
        13,
        (x(4, 5), x(2, 3, dtype="int64", gen="index", index_of=(0, 0))),
    ),
    Case("gather_elements_empty", "GatherElements", 13, (x(3, 2), c(np.zeros((0, 2), np.int64)))),
    # GatherND
    Case(
        "gathernd_full_tuples",
        "GatherND",
        11,
        (x(4, 4), x(5, 2, dtype="int64", gen="index", index_of=(0, 0))),
    ),
    Case(
        "gathernd_slices",
        "GatherND",
        13,
        (x(5, 3, 2), w(2, 2, 1, dtype="int64", gen="index", index_of=(0, 0))),
    ),
    Case(
        "gathernd_batch_dims1",
        "GatherND",
        12,
        (x(2, 3, 4), x(2, 5, 1, dtype="int64", gen="index", index_of=(0, 1))),
        attrs={"batch_dims": 1},
    ),
    Case(
        "gathernd_batch_dims2_int32",
        "GatherND",
        13,
        (
            x(2, 3, 4, 4, dtype="int32", gen="int"),
            c([[[[1, 0]], [[-1, 3]], [[0, -4]]], [[[2, 2]], [[3, 1]], [[-2, 0]]]]),
        ),
        attrs={"batch_dims": 2},
    ),
    # Scatter (opsets 9 and 10), ScatterElements
    Case(
        "scatter_opset10_axis1",
        "Scatter",
        10,
        (x(3, 5), c([[4, 0], [1, 3], [2, -1]]), x(3, 2)),
        attrs={"axis": 1},
    ),
    Case(
        "scatter_opset9_default_axis",
        "Scatter",
        9,
        (
            x(3, 3, dtype="int32", gen="int"),
            c([[1, 0, 2], [0, 2, 1]]),
            x(2, 3, dtype="int32", gen="int"),
        ),
    ),
    Case(
        "scatter_elements_none",
        "ScatterElements",
        11,
        (x(4, 3), c([[3, 0, -1], [1, 2, 0]]), x(2, 3)),
    ),
    Case(
        "scatter_elements_add_duplicates",
        "ScatterElements",
        16,
        (x(4, 3), x(6, 3, dtype="int64", gen="index", index_of=(0, 0)), x(6, 3)),
        attrs={"reduction": "add"},
    ),
    Case(
        "scatter_elements_mul_negative_axis",
        "ScatterElements",
        16,
        (
            x(2, 5, gen="uniform", low=0.5, high=2),
            x(2, 7, dtype="int64", gen="index", index_of=(0, 1)),
            x(2, 7, gen="uniform", low=0.5, high=2),
        ),
        attrs={"axis": -1, "reduction": "mul"},
    ),
    Case(
        "scatter_elements_max_int32",
        "ScatterElements",
        18,
        (
            x(3, 4, dtype="int32", gen="int", low=-50, high=50),
            x(3, 6, dtype="int64", gen="index", index_of=(0, 1)),
            x(3, 6, dtype="int32", gen="int", low=-50, high=50),
        ),
        attrs={"axis": 1, "reduction": "max"},
    ),
    Case(
        "scatter_elements_min",
        "ScatterElements",
        18,
        (x(5, 2), x(7, 2, dtype="int64", gen="index", index_of=(0, 0)), x(7, 2)),
        attrs={"reduction": "min"},
    ),
    # ScatterND
    Case("scatternd_slices", "ScatterND", 11, (x(4, 5, 2), c([[1], [-1]]), x(2, 5, 2))),
    Case(
        "scatternd_elements",
        "ScatterND",
        13,
        (
            x(3, 4, dtype="int64", gen="int"),
            c([[0, 1], [2, -1], [1, 0]]),
            x(3, dtype="int64", gen="int"),
        ),
    ),
    Case(
        "scatternd_add_duplicates",
        "ScatterND",
        16,
        (x(6), x(9, 1, dtype="int64", gen="index", index_of=(0, 0)), x(9)),
        attrs={"reduction": "add"},
    ),
    Case(
        "scatternd_mul",
        "ScatterND",
        16,
        (x(3, 4, gen="uniform", low=0.5, high=2), c([[[2], [0]], [[2], [1]]]), x(2, 2, 4)),
        attrs={"reduction": "mul"},
    ),
    Case(
        "scatternd_max_int64",
        "ScatterND",
        18,
        (
            x(5, dtype="int64", gen="int"),
            x(8, 1, dtype="int64", gen="index", index_of=(0, 0)),
            x(8, dtype="int64", gen="int"),
        ),
        attrs={"reduction": "max"},
    ),
    Case(
        "scatternd_min",
        "ScatterND",
        18,
        (x(4, 3), c([[1], [1], [3]]), x(3, 3)),
        attrs={"reduction": "min"},
    ),
    # TensorScatter
    Case(
        "tensor_scatter_linear",
        "TensorScatter",
        24,
        (x(2, 3, 8, 4), x(2, 3, 2, 4), v([1, 5])),
        attrs={"mode": "linear"},
    ),
    Case(
        "tensor_scatter_circular_axis1",
        "TensorScatter",
        24,
        (x(2, 6, 3), x(2, 4, 3), v([4, 0])),
        attrs={"mode": "circular", "axis": 1},
    ),
    Case(
        "tensor_scatter_no_indices",
        "TensorScatter",
        24,
        (x(3, 5, 2), x(3, 2, 2)),
        attrs={"axis": 1},
    ),
    # Compress
    Case(
        "compress_axis0",
        "Compress",
        11,
        (x("n", 3), x("n", dtype="bool", gen="bool")),
        attrs={"axis": 0},
        dims={"n": (2, 6)},
    ),
    Case(
        "compress_flattened_short_condition",
        "Compress",
        9,
        (x(2, 3, dtype="int32", gen="int"), c([True, False, True, True], "bool")),
    ),
    Case(
        "compress_negative_axis",
        "Compress",
        11,
        (x(2, 3, 4), c([False, True, True, False], "bool")),
        attrs={"axis": -1},
    ),
    Case(
        "compress_nothing",
        "Compress",
        11,
        (x(3, 2), c([False, False, False], "bool")),
        attrs={"axis": 0},
    ),
    # NonZero
    Case("nonzero_float_special", "NonZero", 13, (x(3, 4, special=True),)),
    Case("nonzero_int_3d", "NonZero", 9, (x(2, 3, 4, dtype="int32", gen="int", low=-1, high=1),)),
    Case("nonzero_bool_1d", "NonZero", 13, (x("n", dtype="bool", gen="bool"),), dims={"n": (1, 9)}),
    Case("nonzero_empty", "NonZero", 13, (x(0, 3),)),
    # OneHot
    Case(
        "onehot_out_of_range",
        "OneHot",
        11,
        (x(3, 4, dtype="int64", gen="int", low=-7, high=7), c(5), c([0.0, 1.0], "float32")),
    ),
    Case(
        "onehot_axis0_float_indices",
        "OneHot",
        11,
        (x(4, gen="uniform", low=-3, high=5), c(5.0, "float32"), c([-1.5, 2.5], "float32")),
        attrs={"axis": 0},
        divergence="non-integer indices: the specification casts them to int64 (3.8 -> 3, "
        "-1.2 -> -1 -> 4), onnxruntime compares the float values with the positions "
        "(nothing matches a fractional index)",
    ),
    Case(
        "onehot_opset9_float_depth",
        "OneHot",
        9,
        (
            x(2, 3, dtype="int64", gen="int", low=-4, high=4),
            c(4.0, "float32"),
            c([0.5, -2.0], "float32"),
        ),
    ),
    Case(
        "onehot_negative_axis_int64_values",
        "OneHot",
        11,
        (x(2, 3, dtype="int64", gen="int", low=0, high=3), c([4]), c([3, 7])),
        attrs={"axis": -2},
    ),
    Case(
        "onehot_runtime_depth",
        "OneHot",
        11,
        (x("n", dtype="int64", gen="int", low=-3, high=3), v(3), c([0, 1], "int64")),
        dims=_B,
    ),
    # Tile
    Case("tile_constant_repeats", "Tile", 13, (x("n", 3), c([2, 1])), dims=_B),
    Case("tile_runtime_repeats", "Tile", 7, (x(2, 3, dtype="int32", gen="int"), v([1, 3]))),
    Case("tile_zero_repeat", "Tile", 13, (x(2, 2), c([0, 2]))),
    # Pad
    Case("pad_constant_value", "Pad", 11, (x(3, 4), c([1, 0, 2, 1]), c(1.5, "float32"))),
    Case(
        "pad_reflect",
        "Pad",
        13,
        (x("n", 5), c([0, 2, 0, 3])),
        attrs={"mode": "reflect"},
        dims={"n": (2, 4)},
    ),
    Case("pad_edge_runtime_pads", "Pad", 11, (x(3, 4), v([1, 1, 0, 2])), attrs={"mode": "edge"}),
    Case("pad_wrap", "Pad", 19, (x(3, 4), c([2, 1, 1, 1])), attrs={"mode": "wrap"}),
    Case("pad_axes_negative", "Pad", 18, (x(2, 3, 4), c([1, 2]), None, c([-1]))),
    Case(
        "pad_runtime_axes_value",
        "Pad",
        18,
        (x(2, 3, 4, dtype="int32", gen="int"), c([2, 0, 1, 1]), v(-7, "int32"), v([0, 2])),
    ),
    Case("pad_negative_crops", "Pad", 13, (x(4, 5), c([-1, 1, 0, -2]), c(9.0, "float32"))),
    Case(
        "pad_opset2_attributes",
        "Pad",
        7,
        (x(2, 3),),
        attrs={"pads": [0, 1, 1, 0], "value": 2.0, "mode": "constant"},
    ),
    Case(
        "pad_opset2_reflect", "Pad", 10, (x(3, 4),), attrs={"pads": [1, 2, 1, 0], "mode": "reflect"}
    ),
    Case("pad_bool", "Pad", 13, (x(2, 2, dtype="bool", gen="bool"), c([1, 1, 0, 0]))),
    # CenterCropPad
    Case("center_crop_pad_mixed", "CenterCropPad", 18, (x(5, 3, 7), c([2, 6, 7]))),
    Case(
        "center_crop_pad_axes", "CenterCropPad", 18, (x(4, 6, 3), c([7, 3])), attrs={"axes": [0, 1]}
    ),
    Case(
        "center_crop_pad_negative_axes",
        "CenterCropPad",
        18,
        (x(3, 8, 5, dtype="int64", gen="int"), c([4, 2])),
        attrs={"axes": [-2, -1]},
    ),
    # DepthToSpace, SpaceToDepth
    Case(
        "depth_to_space_dcr",
        "DepthToSpace",
        13,
        (x("n", 8, 2, 3),),
        attrs={"blocksize": 2},
        dims=_B,
    ),
    Case(
        "depth_to_space_crd",
        "DepthToSpace",
        13,
        (x(2, 9, 2, 2),),
        attrs={"blocksize": 3, "mode": "CRD"},
    ),
    Case("depth_to_space_opset7", "DepthToSpace", 7, (x(1, 4, 2, 3),), attrs={"blocksize": 2}),
    Case("space_to_depth", "SpaceToDepth", 13, (x("n", 2, 4, 6),), attrs={"blocksize": 2}, dims=_B),
    Case("space_to_depth_opset7", "SpaceToDepth", 7, (x(2, 3, 6, 3),), attrs={"blocksize": 3}),
    # Trilu
    Case("triu_constant_k", "Trilu", 14, (x(3, 4, 5), c(1))),
    Case("tril_runtime_k", "Trilu", 14, (x("n", 4, 4), v(-1)), attrs={"upper": 0}, dims=_B),
    Case("triu_default_int", "Trilu", 14, (x(2, 3, 3, dtype="int64", gen="int"),)),
    Case("tril_k_beyond", "Trilu", 14, (x(3, 5), c(-4)), attrs={"upper": 0}),
    # EyeLike
    Case("eyelike_upper_diagonal", "EyeLike", 9, (x(3, 5),), attrs={"k": 2}),
    Case(
        "eyelike_dtype",
        "EyeLike",
        22,
        (x(4, 3, dtype="int32", gen="int"),),
        attrs={"k": -1, "dtype": T.DOUBLE},
    ),
    Case("eyelike_dynamic", "EyeLike", 9, (x("n", 4, dynamic=True),), dims={"n": (2, 5)}),
    # ReverseSequence
    Case("reverse_sequence_time_major", "ReverseSequence", 10, (x(4, 3, 2), c([4, 2, 1]))),
    Case(
        "reverse_sequence_batch_major",
        "ReverseSequence",
        10,
        (x(3, 5, dtype="int32", gen="int"), v([1, 5, 3])),
        attrs={"batch_axis": 0, "time_axis": 1},
    ),
    # Unique
    Case(
        "unique_sorted_flat",
        "Unique",
        11,
        (x(3, 4, dtype="int64", gen="int", low=0, high=5),),
        outputs=4,
    ),
    Case(
        "unique_not_sorted",
        "Unique",
        11,
        (x(12, dtype="int64", gen="int", low=-3, high=3),),
        attrs={"sorted": 0},
        outputs=4,
    ),
    Case(
        "unique_rows_axis0",
        "Unique",
        11,
        (x(7, 2, gen="int", low=0, high=1),),
        attrs={"axis": 0},
        outputs=4,
    ),
    Case(
        "unique_slices_negative_axis",
        "Unique",
        11,
        (x(2, 6, dtype="int64", gen="int", low=0, high=1),),
        attrs={"axis": -1, "sorted": 0},
        outputs=4,
    ),
    Case(
        "unique_y_only_not_sorted",
        "Unique",
        11,
        (x(9, dtype="int64", gen="int", low=0, high=4),),
        attrs={"sorted": 0},
    ),
    Case(
        "unique_skipped_outputs",
        "Unique",
        11,
        (x(10, gen="int", low=-2, high=2),),
        outputs=4,
        skip_outputs=(1,),
    ),
    Case(
        "unique_signed_zero_nan",
        "Unique",
        11,
        (v([1.0, np.nan, -0.0, 1.0, np.nan, 0.0], "float32"),),
        outputs=4,
        divergence="NaN never equals NaN (docs/contract.md settled semantics): each NaN is its own unique "
        "value, sorted last; onnxruntime's comparison lumps NaN with other values "
        "([-0, 1] for [1, nan, -0, 1, nan, 0])",
    ),
    # TfIdfVectorizer
    Case(
        "tfidf_tf_bigrams_skip",
        "TfIdfVectorizer",
        9,
        (x(2, 8, dtype="int32", gen="int", low=2, high=8),),
        attrs={
            **_NGRAMS,
            "mode": "TF",
            "min_gram_length": 2,
            "max_gram_length": 2,
            "max_skip_count": 2,
        },
    ),
    Case(
        "tfidf_tf_uni_and_bigrams_1d",
        "TfIdfVectorizer",
        9,
        (x(12, dtype="int64", gen="int", low=2, high=8),),
        attrs={
            **_NGRAMS,
            "mode": "TF",
            "min_gram_length": 1,
            "max_gram_length": 2,
            "max_skip_count": 3,
        },
    ),
    Case(
        "tfidf_idf_weights",
        "TfIdfVectorizer",
        9,
        (x(3, 10, dtype="int64", gen="int", low=2, high=8),),
        attrs={
            **_NGRAMS,
            "mode": "IDF",
            "min_gram_length": 1,
            "max_gram_length": 2,
            "max_skip_count": 0,
            "weights": [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 4.0],
        },
    ),
    Case(
        "tfidf_tfidf_permuted_columns",
        "TfIdfVectorizer",
        9,
        (x(2, 10, dtype="int64", gen="int", low=2, high=8),),
        attrs={
            **_NGRAMS,
            "ngram_indexes": [3, 0, 5, 1, 6, 2, 4],
            "mode": "TFIDF",
            "min_gram_length": 1,
            "max_gram_length": 2,
            "max_skip_count": 1,
            "weights": [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 4.0],
        },
    ),
    Case(
        "tfidf_tfidf_no_weights",
        "TfIdfVectorizer",
        9,
        (x(2, 9, dtype="int32", gen="int", low=2, high=8),),
        attrs={
            **_NGRAMS,
            "mode": "TFIDF",
            "min_gram_length": 1,
            "max_gram_length": 1,
            "max_skip_count": 5,
        },
    ),
    # Range (float: start + i * delta in the inputs' type)
    Case(
        "range_float_runtime",
        "Range",
        11,
        (v(-2.5, "float32"), v(7.25, "float32"), v(0.75, "float32")),
    ),
    # np.arange would step by float32(1e7 + 0.3) - 1e7 = 0 here: ten times 1e7
    Case(
        "range_float_large_start",
        "Range",
        11,
        (v(1e7, "float32"), v(1e7 + 3, "float32"), v(0.3, "float32")),
    ),
    Case(
        "range_float64_negative_delta",
        "Range",
        11,
        (c(3.0, "float64"), c(-1.1, "float64"), v(-0.4, "float64")),
    ),
    Case("range_int16", "Range", 11, (v(-7, "int16"), v(20, "int16"), v(4, "int16"))),
    # existing tensor operators at their edges
    Case("unsqueeze_scalar_axes_runtime", "Unsqueeze", 13, (x(3, 2), v(-1))),
    Case("reshape_allowzero_runtime", "Reshape", 14, (x(0, 3), v([3, 0])), attrs={"allowzero": 1}),
    Case(
        "slice_runtime_negative_steps",
        "Slice",
        13,
        (x(5, 6), v([-1, INT64_MAX]), v([-6, 0]), v([0, 1]), v([-2, -3])),
    ),
    Case(
        "gather_runtime_negative_indices",
        "Gather",
        13,
        (x(3, 4, 2), x(2, 3, dtype="int64", gen="index", index_of=(0, 1))),
        attrs={"axis": 1},
    ),
    Case("expand_runtime_bool", "Expand", 13, (x(3, 1, dtype="bool", gen="bool"), v([2, 1, 4]))),
    Case(
        "constant_of_shape_bool",
        "ConstantOfShape",
        21,
        (v([2, 3]),),
        attrs={"value": np.array([True])},
    ),
    Case(
        "shape_runtime_slice_dims",
        "Shape",
        21,
        (x("n", 3, 4, dynamic=True),),
        attrs={"start": -2, "end": 10},
        dims=_B,
    ),
    Case(
        "split_runtime_dim_uneven",
        "Split",
        18,
        (x("n", 2, dynamic=True),),
        attrs={"num_outputs": 2},
        outputs=2,
        dims={"n": (3, 7)},
    ),
]
