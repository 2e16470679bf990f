"""Operator oracle: single-operator models, run by onnxruntime and by the compiled module, compared.

Each case of CASES (data, not code) names an operator, an opset, attributes and input specs. From
the case's seed the harness draws the named dims of its shapes and the input values, builds a
one-node ONNX model, runs it with onnxruntime (CPUExecutionProvider, default graph optimizations) and
with the module onemodel-compile generates for the requested variant, and compares every output:

- dtype and shape must be identical, and the module must return numpy arrays;
- floats agree within the case's rtol/atol (float32 default rtol 1e-4, atol 1e-5; looser only
  where a case says why), NaN where and only where onnxruntime gives NaN, infinities with their sign;
- integers and booleans are identical;
- the module leaves its input arrays untouched.

onnxruntime is the oracle: no expected value is written down here. Where onnxruntime disagrees with
the ONNX specification or its backend test data, the case carries `divergence` (the reason) and is
expected to mismatch; a compiler bug that is reported but not fixed yet carries `known_bug`. A marked
case that stops failing is reported ("divergence gone", "bug fixed"), so marks cannot go stale.

In the exact variant, a compile refused with ExactnessError is an expected outcome ("refused"),
provided the message names the operator.

    python -m tools.ops_coverage_oracle [--variant fast] [-k pattern] [--table NAME] [--seed-offset N] [-v]

prints one line per case and exits non-zero when a case fails. Cases come from the table below
("foundation") and from one module per operator family in tools/oracle_cases/. `--seed-offset` re-draws every
case's random shapes and values (a cheap fuzzer); the default run is the one the tests pin.
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib
import importlib.util
import sys
import tempfile
import traceback
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np
import onnx
from onnx import helper, numpy_helper

# onnx 1.23.2 writes IR version 14; onnxruntime 1.31.1 loads IR versions up to 13 (probed: 13 loads
# at every opset used here, 14 is refused). Models get the lowest IR version their opset needs,
# at least 4 (from IR 4 on, an initializer need not be a graph input: it is a constant) and at
# most this.
ORT_MAX_IR_VERSION = 13
MIN_IR_VERSION = 4

# Default tolerances per element type: (rtol, atol).
TOLERANCE = {
    "float16": (2e-3, 1e-3),  # a float16 ulp is 2**-10 relative: one rounding step apart
    "float32": (1e-4, 1e-5),
    "float64": (1e-9, 1e-12),
}

# What the oracle covers: every case's operator must be one of these, and each has cases.
OPERATORS = tuple(
    "Abs Add Sub Mul Div Neg Sqrt Reciprocal Pow Exp Log Erf Tanh Sigmoid Relu LeakyRelu Clip Gelu "
    "MatMul Gemm Conv MaxPool AveragePool GlobalAveragePool GlobalMaxPool BatchNormalization "
    "LayerNormalization Softmax LogSoftmax Flatten Reshape Transpose Concat Split Slice Gather Shape "
    "Size Unsqueeze Squeeze Expand Cast CastLike Constant ConstantOfShape Identity Where Equal Less "
    "Greater Not And Or ReduceMean ReduceSum ReduceMax Range Dropout".split()
)

STATUSES = (
    "pass",
    "refused",
    "divergence",
    "known bug",
    "mismatch",
    "divergence gone",
    "bug fixed",
    "compile error",
    "runtime error",
    "oracle error",
)
# Outcomes that do not fail a run: a refusal the exact variant is allowed, and failures the table
# records (divergences of onnxruntime, reported compiler bugs). A marked case that starts passing
# fails the run, so that its mark gets removed.
OK_STATUSES = ("pass", "refused", "divergence", "known bug")


# --- the case table's vocabulary --------------------------------------------------------------


@dataclass(frozen=True)
class Input:
    """One input of a case's node.

    shape: ints and dim names (drawn from the case's `dims`); ignored when `value` is given.
    gen: how values are drawn: "normal" (times `scale`), "uniform" (in [low, high)), "int" (in
      [low, high]), "nonzero" (int in [low, high] without 0), "bool", "index" (ints in [-n, n-1]
      with n the size of axis `index_of[1]` of input `index_of[0]`).
    special: plant NaN, +inf, -inf, +0.0 and -0.0 among float values ("inf": all but NaN).
    value: an explicit array (axes, shapes, scalars); `dtype` applies to it too.
    init: an initializer (known at compile time) rather than a graph input.
    dynamic: declare the named dims of a graph input as symbolic dims (by their names).
    """

    shape: tuple = ()
    dtype: str = "float32"
    gen: str = "normal"
    low: float = -10
    high: float = 10
    scale: float = 1.0
    special: bool | str = False
    value: object = None
    init: bool = False
    dynamic: bool = False
    index_of: tuple | None = None


def x(*shape, dtype="float32", **options) -> Input:
    """A graph input."""
    return Input(tuple(shape), dtype, **options)


def w(*shape, dtype="float32", **options) -> Input:
    """An initializer (constant at compile time) drawn at random."""
    return Input(tuple(shape), dtype, init=True, **options)


def c(value, dtype="int64") -> Input:
    """An explicit constant initializer (axes, shapes, pads, scalars)."""
    return Input(dtype=dtype, value=value, init=True)


def v(value, dtype="int64") -> Input:
    """An explicit value fed as a graph input (known only at run time)."""
    return Input(dtype=dtype, value=value, init=False)


@dataclass(frozen=True)
class Case:
    """One single-operator model. `inputs` holds Input specs, None for an omitted optional input.
    `outputs` is how many of the schema's outputs the node lists; `skip_outputs` leaves some of
    them unnamed (optional outputs not asked for). `seed` defaults to a hash of the name."""

    name: str
    op: str
    opset: int
    inputs: tuple
    attrs: Mapping = field(default_factory=dict)
    dims: Mapping = field(default_factory=dict)
    outputs: int = 1
    skip_outputs: tuple = ()
    seed: int | None = None
    rtol: float | None = None
    atol: float | None = None
    note: str = ""  # why the tolerance is looser than the default
    divergence: str = ""  # why onnxruntime is expected to differ (spec/backend data vs ORT)
    known_bug: str = ""  # a reported compiler bug not fixed yet: expected to fail until it is

    @property
    def base_seed(self) -> int:
        return self.seed if self.seed is not None else zlib.crc32(self.name.encode())

    def tolerance(self, dtype: np.dtype) -> tuple[float, float]:
        rtol, atol = TOLERANCE.get(np.dtype(dtype).name, (0.0, 0.0))
        return (
            self.rtol if self.rtol is not None else rtol,
            self.atol if self.atol is not None else atol,
        )


# Tolerance notes for case tables (`note=`).
TRANSCENDENTAL = "float32 transcendental functions: onnxruntime's and numpy's differ by a few ulps"
DOT = (
    "float32 dot products: BLAS/MLAS and numpy sum the terms in different orders, so a result "
    "near zero can differ by a few ulps of the terms' magnitude"
)

FLOAT_MAX = float(np.finfo(np.float32).max)
INT64_MAX = int(np.iinfo(np.int64).max)
INT64_MIN = int(np.iinfo(np.int64).min)

_B = {"n": (1, 3)}  # a batch dim
_NCHW = {"n": (1, 2), "c": (1, 3), "h": (5, 9), "w": (5, 9)}


# --- the case table ---------------------------------------------------------------------------

CASES: tuple[Case, ...] = (
    # elementwise unary
    Case("abs_special", "Abs", 13, (x("n", 5, special=True),), dims=_B),
    Case("abs_int32_opset6", "Abs", 7, (x(3, 4, dtype="int32", gen="int", low=-100, high=100),)),
    Case("abs_empty", "Abs", 13, (x(0, 3),)),
    Case("neg_special", "Neg", 13, (x("n", 4, special=True),), dims=_B),
    Case("neg_int64", "Neg", 7, (x(5, dtype="int64", gen="int", low=-1000, high=1000),)),
    Case("sqrt_positive", "Sqrt", 13, (x("n", 6, gen="uniform", low=0, high=100),), dims=_B),
    Case("sqrt_special", "Sqrt", 7, (x(3, 5, special=True),)),  # negative values give NaN
    Case("reciprocal_special", "Reciprocal", 13, (x(4, 5, special=True),)),
    Case("exp_special", "Exp", 13, (x("n", 7, scale=5.0, special=True),), dims=_B),
    Case("exp_overflow", "Exp", 7, (x(4, 8, gen="uniform", low=-110, high=95),)),  # inf and 0
    Case("exp_float64", "Exp", 13, (x(3, 4, dtype="float64", scale=3.0),)),
    Case(
        "log_special",
        "Log",
        13,
        (x("n", 6, gen="uniform", low=-1, high=50, special=True),),
        dims=_B,
    ),
    Case("log_opset7", "Log", 7, (x(2, 3, 4, gen="uniform", low=1e-6, high=1e6),)),
    Case("erf_normal", "Erf", 13, (x("n", 3, 4, scale=2.0, special=True),), dims=_B),
    Case("erf_opset9_wide", "Erf", 9, (x(5, 8, gen="uniform", low=-7, high=7),)),
    Case("tanh_special", "Tanh", 13, (x("n", 9, scale=4.0, special=True),), dims=_B),
    Case("tanh_float64", "Tanh", 7, (x(4, 4, dtype="float64", scale=3.0),)),
    Case("sigmoid_special", "Sigmoid", 13, (x("n", 9, scale=10.0, special=True),), dims=_B),
    Case("sigmoid_extreme", "Sigmoid", 7, (x(3, 6, gen="uniform", low=-120, high=120),)),
    Case("relu_special", "Relu", 14, (x("n", 3, 5, special=True),), dims=_B),
    Case("relu_int8", "Relu", 14, (x(4, 6, dtype="int8", gen="int", low=-128, high=127),)),
    Case("relu_opset7_empty", "Relu", 7, (x(2, 0, 3),)),
    Case("leaky_relu_default_alpha", "LeakyRelu", 16, (x("n", 6, special=True),), dims=_B),
    Case("leaky_relu_alpha", "LeakyRelu", 7, (x(3, 4, 5),), attrs={"alpha": 0.3}),
    Case("gelu_default", "Gelu", 20, (x("n", 8, scale=3.0, special=True),), dims=_B),
    Case("gelu_tanh", "Gelu", 20, (x(4, 8, scale=3.0),), attrs={"approximate": "tanh"}),
    # clip: attributes (6) versus optional inputs (11+)
    Case("clip6_attributes", "Clip", 7, (x(3, 5, scale=2.0),), attrs={"min": -0.5, "max": 0.7}),
    Case("clip6_default_range", "Clip", 7, (x(3, 5, special=True),)),
    Case(
        "clip11_initializers",
        "Clip",
        11,
        (x("n", 6, scale=2.0, special=True), c(-0.25, "float32"), c(1.5, "float32")),
        dims=_B,
    ),
    Case(
        "clip13_max_only", "Clip", 13, (x(4, 6, scale=2.0, special=True), None, c(0.1, "float32"))
    ),
    Case(
        "clip13_min_only_runtime",
        "Clip",
        13,
        (x(4, 6, scale=2.0, special=True), v(-0.3, "float32")),
    ),
    Case("clip13_min_above_max", "Clip", 13, (x(3, 4), c(1.0, "float32"), c(-1.0, "float32"))),
    Case("clip13_no_bounds", "Clip", 13, (x(2, 3, special=True),)),
    Case(
        "clip13_int32",
        "Clip",
        13,
        (x(3, 7, dtype="int32", gen="int", low=-50, high=50), c(-10, "int32"), c(20, "int32")),
    ),
    # binary arithmetic, broadcasting
    Case("add_broadcast", "Add", 14, (x("n", 3, 1, 4, special=True), x(5, 1)), dims=_B),
    Case(
        "add_opset7_int64",
        "Add",
        7,
        (
            x(2, 3, dtype="int64", gen="int", low=-(10**12), high=10**12),
            w(3, dtype="int64", gen="int", low=-(10**12), high=10**12),
        ),
    ),
    Case(
        "add_scalar_initializer", "Add", 13, (x("n", 4, dynamic=True), c(2.5, "float32")), dims=_B
    ),
    Case(
        "add_uint8_wraps",
        "Add",
        14,
        (
            x(3, 4, dtype="uint8", gen="int", low=0, high=255),
            x(4, dtype="uint8", gen="int", low=0, high=255),
        ),
    ),
    Case("add_empty", "Add", 14, (x(0, 3), x(1, 3))),
    Case("add_folded", "Add", 14, (w(2, 3), w(3))),  # every input constant: folded at compile time
    Case(
        "sub_broadcast",
        "Sub",
        14,
        (
            x(2, 1, 5),
            x("n", 1),
        ),
        dims={"n": (2, 4)},
    ),
    Case(
        "sub_int32_empty",
        "Sub",
        13,
        (x(3, 0, dtype="int32", gen="int"), x(1, dtype="int32", gen="int")),
    ),
    Case("mul_special", "Mul", 14, (x("n", 4, special=True), x("n", 4, special=True)), dims=_B),
    Case(
        "mul_int32_broadcast",
        "Mul",
        7,
        (
            x(4, 1, dtype="int32", gen="int", low=-1000, high=1000),
            x(1, 3, dtype="int32", gen="int", low=-1000, high=1000),
        ),
    ),
    Case(
        "div_float_special", "Div", 14, (x("n", 6, special=True), x("n", 6, special=True)), dims=_B
    ),  # 0/0, x/0, inf/inf
    Case(
        "div_int32_truncates",
        "Div",
        14,
        (
            x(5, 6, dtype="int32", gen="int", low=-100, high=100),
            x(6, dtype="int32", gen="nonzero", low=-7, high=7),
        ),
    ),
    Case(
        "div_int64_opset7",
        "Div",
        7,
        (
            x(4, 4, dtype="int64", gen="int", low=-(10**9), high=10**9),
            w(4, 4, dtype="int64", gen="nonzero", low=-1000, high=1000),
        ),
    ),
    Case(
        "pow_float", "Pow", 13, (x("n", 5, gen="uniform", low=0, high=4), x(5, scale=2.0)), dims=_B
    ),
    Case("pow_special", "Pow", 7, (x(3, 6, special=True), x(3, 6, gen="uniform", low=-3, high=3))),
    # (a negative base to a fractional power is NaN)
    Case(
        "pow_square_initializer", "Pow", 15, (x("n", 7, special=True), c(2.0, "float32")), dims=_B
    ),
    Case(
        "pow_int64_exponent",
        "Pow",
        15,
        (x(3, 5, gen="uniform", low=-3, high=3), w(5, dtype="int64", gen="int", low=0, high=4)),
    ),
    Case(
        "pow_int32",
        "Pow",
        13,
        (
            x(3, 4, dtype="int32", gen="int", low=-5, high=5),
            x(4, dtype="int32", gen="int", low=0, high=5),
        ),
    ),
    # comparisons and logic
    Case("equal_float_nan", "Equal", 13, (x("n", 6, special=True), x(6, special=True)), dims=_B),
    Case(
        "equal_int64_broadcast",
        "Equal",
        11,
        (
            x(4, 1, dtype="int64", gen="int", low=0, high=3),
            x(5, dtype="int64", gen="int", low=0, high=3),
        ),
    ),
    Case(
        "equal_bool",
        "Equal",
        13,
        (x(3, 4, dtype="bool", gen="bool"), x(4, dtype="bool", gen="bool")),
    ),
    Case("less_special", "Less", 13, (x("n", 8, special=True), x(8, special=True)), dims=_B),
    Case("less_opset7_float", "Less", 7, (x(3, 4, special=True), x(4))),
    Case(
        "less_int32_opset9",
        "Less",
        9,
        (
            x(3, 1, dtype="int32", gen="int", low=0, high=4),
            x(4, dtype="int32", gen="int", low=0, high=4),
        ),
    ),
    Case("greater_special", "Greater", 13, (x("n", 8, special=True), x(1, 8)), dims=_B),
    Case("greater_opset7_float", "Greater", 7, (x(2, 3, 1), x(1, 4, special=True))),
    Case("greater_int64_opset9", "Greater", 9, (x(2, 5, dtype="int64", gen="int"), c(0, "int64"))),
    Case("not_bool", "Not", 7, (x("n", 3, 4, dtype="bool", gen="bool"),), dims=_B),
    Case("not_empty", "Not", 7, (x(0, 2, dtype="bool", gen="bool"),)),
    Case(
        "and_broadcast",
        "And",
        7,
        (x(3, 1, 4, dtype="bool", gen="bool"), x(5, 4, dtype="bool", gen="bool")),
    ),
    Case(
        "or_broadcast",
        "Or",
        7,
        (x("n", 4, dtype="bool", gen="bool"), x(4, dtype="bool", gen="bool")),
        dims=_B,
    ),
    Case(
        "where_broadcast",
        "Where",
        16,
        (x("n", 1, dtype="bool", gen="bool"), x(1, 5, special=True), x(5)),
        dims=_B,
    ),
    Case(
        "where_int64_opset9",
        "Where",
        9,
        (x(3, 4, dtype="bool", gen="bool"), x(3, 4, dtype="int64", gen="int"), c(-1, "int64")),
    ),
    Case(
        "where_dynamic_int32",
        "Where",
        16,
        (
            x("n", 3, dtype="bool", gen="bool", dynamic=True),
            x("n", 1, dtype="int32", gen="int", dynamic=True),
            x(3, dtype="int32", gen="int"),
        ),
        dims={"n": (1, 4)},
    ),
    Case("where_empty", "Where", 16, (x(0, 3, dtype="bool", gen="bool"), x(1, 3), x(0, 1))),
    # matrix products
    Case("matmul_2d", "MatMul", 13, (x("m", 6), w(6, 4)), dims={"m": (1, 5)}),
    Case("matmul_batched_broadcast", "MatMul", 13, (x("n", 1, 3, 8), x(2, 8, 5)), dims=_B),
    Case("matmul_vector_matrix", "MatMul", 9, (x(7), x(7, 3))),
    Case("matmul_matrix_vector", "MatMul", 13, (x(2, 4, 7), x(7))),
    Case("matmul_vector_vector", "MatMul", 13, (x(16), x(16))),
    Case("matmul_empty_inner", "MatMul", 13, (x(3, 0), x(0, 4))),
    Case(
        "matmul_int64",
        "MatMul",
        13,
        (
            x(3, 5, dtype="int64", gen="int", low=-100, high=100),
            x(5, 2, dtype="int64", gen="int", low=-100, high=100),
        ),
    ),
    Case("gemm_default", "Gemm", 13, (x("m", 5), w(5, 4), w(4)), dims={"m": (1, 4)}),
    Case(
        "gemm_transposed_alpha_beta",
        "Gemm",
        11,
        (x(6, 3), x(4, 6), w(3, 1)),
        attrs={"transA": 1, "transB": 1, "alpha": 0.5, "beta": -2.0},
    ),
    Case(
        "gemm_scalar_c_opset7",
        "Gemm",
        7,
        (x(2, 5), x(5, 3), c(1.5, "float32")),
        attrs={"beta": 0.25},
    ),
    Case("gemm_no_c", "Gemm", 11, (x(3, 4), w(4, 2)), attrs={"alpha": 2.0}),
    # convolution
    Case(
        "conv1d_bias",
        "Conv",
        11,
        (x("n", 3, "l"), w(4, 3, 3), w(4)),
        dims={"n": (1, 2), "l": (6, 12)},
    ),
    Case(
        "conv2d_pads_strides",
        "Conv",
        11,
        (x("n", 2, "h", "w"), w(3, 2, 3, 3)),
        attrs={"pads": [1, 0, 2, 1], "strides": [2, 1]},
        dims={"n": (1, 2), "h": (5, 9), "w": (5, 9)},
    ),
    Case(
        "conv2d_dilations",
        "Conv",
        22,
        (x(1, 3, 9, 10), w(2, 3, 3, 2), w(2)),
        attrs={"dilations": [2, 3], "kernel_shape": [3, 2]},
    ),
    Case("conv2d_groups", "Conv", 11, (x(2, 4, 6, 6), w(6, 2, 3, 3)), attrs={"group": 2}),
    Case(
        "conv2d_depthwise",
        "Conv",
        11,
        (x(1, 3, 7, 5), w(3, 1, 3, 3), w(3)),
        attrs={"group": 3, "pads": [1, 1, 1, 1]},
    ),
    Case("conv2d_valid", "Conv", 11, (x(1, 2, 7, 8), w(2, 2, 3, 4)), attrs={"auto_pad": "VALID"}),
    Case(
        "conv2d_same_upper",
        "Conv",
        11,
        (x(1, 2, 7, 8), w(3, 2, 3, 4), w(3)),
        attrs={"auto_pad": "SAME_UPPER"},
    ),
    Case(
        "conv2d_same_lower_strided",
        "Conv",
        11,
        (x(1, 2, 8, 9), w(2, 2, 3, 4)),
        attrs={"auto_pad": "SAME_LOWER", "strides": [2, 2]},
    ),
    Case(
        "conv2d_same_upper_dynamic_batch",
        "Conv",
        22,
        (x("n", 1, 6, 7, dynamic=True), w(2, 1, 2, 2)),
        attrs={"auto_pad": "SAME_UPPER", "strides": [2, 1]},
        dims=_B,
    ),
    Case(
        "conv3d",
        "Conv",
        11,
        (x(1, 2, 4, 5, 6), w(3, 2, 2, 3, 2), w(3)),
        attrs={"pads": [0, 1, 1, 1, 0, 0], "strides": [1, 2, 1], "dilations": [2, 1, 1]},
    ),
    Case(
        "conv2d_dynamic_spatial",
        "Conv",
        11,
        (x("n", 2, "h", "w", dynamic=True), w(3, 2, 2, 3), w(3)),
        attrs={"pads": [1, 1, 0, 2], "strides": [1, 2]},
        dims={"n": (1, 2), "h": (3, 6), "w": (4, 7)},
    ),
    # (onnxruntime refuses auto_pad SAME_* with dilations: no oracle for that combination)
    Case(
        "conv1d_same_lower_strided",
        "Conv",
        22,
        (x(2, 2, 10), w(3, 2, 4)),
        attrs={"auto_pad": "SAME_LOWER", "strides": [3]},
    ),
    Case(
        "conv2d_pointwise_float16",
        "Conv",
        11,
        (x(1, 4, 3, 3, dtype="float16"), w(2, 4, 1, 1, dtype="float16")),
    ),
    # pooling
    Case(
        "maxpool2d_default",
        "MaxPool",
        12,
        (x("n", "c", "h", "w", special="inf"),),
        attrs={"kernel_shape": [2, 2]},
        dims=_NCHW,
    ),
    Case(
        "maxpool2d_pads_strides",
        "MaxPool",
        11,
        (x(1, 2, 7, 8),),
        attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 0], "strides": [2, 2]},
    ),
    Case(
        "maxpool2d_ceil_dilations",
        "MaxPool",
        12,
        (x(1, 1, 8, 9),),
        attrs={"kernel_shape": [2, 3], "strides": [2, 2], "dilations": [2, 1], "ceil_mode": 1},
    ),
    Case(
        "maxpool2d_same_upper",
        "MaxPool",
        8,
        (x(2, 2, 5, 6),),
        attrs={"kernel_shape": [3, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
    ),
    Case(
        "maxpool1d_same_lower",
        "MaxPool",
        12,
        (x(1, 3, 9),),
        attrs={"kernel_shape": [4], "auto_pad": "SAME_LOWER"},
    ),
    Case(
        "maxpool2d_dynamic_batch_same",
        "MaxPool",
        12,
        (x("n", 2, 5, 5, dynamic=True),),
        attrs={"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_LOWER"},
        dims=_B,
    ),
    Case(
        "maxpool3d",
        "MaxPool",
        12,
        (x(1, 2, 4, 5, 4),),
        attrs={"kernel_shape": [2, 2, 2], "strides": [1, 2, 2]},
    ),
    Case(
        "maxpool_indices",
        "MaxPool",
        12,
        (x(2, 2, 5, 5),),
        attrs={"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 0, 0]},
        outputs=2,
    ),
    Case(
        "maxpool_indices_column_major",
        "MaxPool",
        8,
        (x(1, 2, 4, 6),),
        attrs={"kernel_shape": [3, 2], "storage_order": 1},
        outputs=2,
    ),
    Case(
        "maxpool_nan",
        "MaxPool",
        12,
        (v([[[[1.0, np.nan, 2.0, 3.0], [4.0, 5.0, 6.0, np.nan]]]], "float32"),),
        attrs={"kernel_shape": [1, 4]},
        divergence="NaN in a max window: onnxruntime keeps it only when it is the window's last "
        "element (it folds m = m > x ? m : x); the ONNX reference ignores NaN "
        "(nanmax); the compiler propagates it (np.max). Backend data have no NaN.",
    ),
    Case(
        "maxpool_uint8",
        "MaxPool",
        12,
        (x(1, 2, 6, 6, dtype="uint8", gen="int", low=0, high=255),),
        attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
    ),
    Case(
        "averagepool2d_default",
        "AveragePool",
        11,
        (x("n", "c", "h", "w"),),
        attrs={"kernel_shape": [3, 2]},
        dims=_NCHW,
    ),
    Case(
        "averagepool2d_pads_exclude",
        "AveragePool",
        11,
        (x(1, 2, 6, 7),),
        attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
    ),
    Case(
        "averagepool2d_pads_include",
        "AveragePool",
        11,
        (x(1, 2, 6, 7),),
        attrs={"kernel_shape": [3, 3], "pads": [1, 0, 2, 1], "count_include_pad": 1},
    ),
    Case(
        "averagepool2d_ceil",
        "AveragePool",
        11,
        (x(1, 1, 7, 8),),
        attrs={"kernel_shape": [3, 3], "strides": [2, 3], "ceil_mode": 1},
    ),
    Case(
        "averagepool2d_ceil_pads_include",
        "AveragePool",
        19,
        (x(1, 2, 6, 7),),
        attrs={
            "kernel_shape": [3, 2],
            "strides": [2, 2],
            "pads": [1, 0, 1, 1],
            "ceil_mode": 1,
            "count_include_pad": 1,
        },
    ),
    Case(
        "averagepool2d_same_upper_include",
        "AveragePool",
        11,
        (x(1, 1, 5, 6),),
        attrs={"kernel_shape": [2, 3], "auto_pad": "SAME_UPPER", "count_include_pad": 1},
    ),
    Case(
        "averagepool2d_same_lower",
        "AveragePool",
        7,
        (x(1, 2, 5, 6),),
        attrs={"kernel_shape": [2, 3], "auto_pad": "SAME_LOWER"},
    ),
    Case(
        "averagepool1d_same_upper_strided",
        "AveragePool",
        11,
        (x(2, 3, 10),),
        attrs={"kernel_shape": [3], "strides": [3], "auto_pad": "SAME_UPPER"},
    ),
    Case(
        "averagepool3d",
        "AveragePool",
        11,
        (x(1, 2, 4, 4, 5),),
        attrs={"kernel_shape": [2, 2, 3], "strides": [2, 1, 1]},
    ),
    Case(
        "averagepool2d_dilations",
        "AveragePool",
        19,
        (x(1, 1, 8, 8),),
        attrs={"kernel_shape": [2, 2], "dilations": [2, 2], "strides": [1, 2]},
    ),
    Case("global_average_pool_2d", "GlobalAveragePool", 7, (x("n", "c", "h", "w"),), dims=_NCHW),
    Case("global_average_pool_1d", "GlobalAveragePool", 22, (x(2, 3, 7),)),
    Case(
        "global_max_pool_2d",
        "GlobalMaxPool",
        7,
        (x("n", "c", "h", "w", special="inf"),),
        dims=_NCHW,
    ),
    Case(
        "global_max_pool_nan",
        "GlobalMaxPool",
        7,
        (v([[[1.0, np.nan, 2.0, 3.0]], [[np.nan, -1.0, -2.0, -3.0]]], "float32"),),
        divergence="NaN in the pooled plane: onnxruntime keeps it only when it is the last "
        "element (m = m > x ? m : x); the ONNX reference (np.max) and the compiler "
        "propagate it. Backend data have no NaN.",
    ),
    Case("global_max_pool_3d", "GlobalMaxPool", 22, (x(1, 2, 3, 4, 2),)),
    # normalization
    Case(
        "batchnorm9_nchw",
        "BatchNormalization",
        9,
        (x("n", 3, "h", "w"), w(3), w(3), w(3), w(3, gen="uniform", low=0.1, high=2)),
        dims={"n": (1, 2), "h": (2, 5), "w": (2, 5)},
    ),
    Case(
        "batchnorm15_nc_float64",
        "BatchNormalization",
        15,
        (
            x(4, 5, dtype="float64"),
            w(5, dtype="float64"),
            w(5, dtype="float64"),
            w(5, dtype="float64"),
            w(5, dtype="float64", gen="uniform", low=0.1, high=2),
        ),
        attrs={"epsilon": 1e-3},
    ),
    Case(
        "batchnorm7_not_spatial",
        "BatchNormalization",
        7,
        (x(2, 3, 4), w(3, 4), w(3, 4), w(3, 4), w(3, 4, gen="uniform", low=0.1, high=2)),
        attrs={"spatial": 0},
    ),
    Case(
        "batchnorm7_spatial",
        "BatchNormalization",
        7,
        (x(2, 3, 6), w(3), w(3), w(3), w(3, gen="uniform", low=0.1, high=2)),
        attrs={"epsilon": 1e-2},
    ),
    Case("layernorm_last_axis", "LayerNormalization", 17, (x("n", 3, 8), w(8), w(8)), dims=_B),
    Case(
        "layernorm_axis1_no_bias",
        "LayerNormalization",
        17,
        (x(2, 3, 4, 5), w(3, 4, 5)),
        attrs={"axis": 1, "epsilon": 1e-3},
    ),
    Case(
        "layernorm_three_outputs",
        "LayerNormalization",
        17,
        (x(3, 4, 6), w(4, 6), w(4, 6)),
        attrs={"axis": -2},
        outputs=3,
    ),
    Case(
        "layernorm_dynamic",
        "LayerNormalization",
        17,
        (x("n", "m", 6, dynamic=True), w(6)),
        dims={"n": (1, 3), "m": (1, 3)},
    ),
    Case(
        "layernorm_axis0", "LayerNormalization", 17, (x(3, 4), w(3, 4), w(3, 4)), attrs={"axis": 0}
    ),
    Case(
        "layernorm_float16",
        "LayerNormalization",
        17,
        (x(2, 16, dtype="float16"), w(16, dtype="float16"), w(16, dtype="float16")),
    ),
    Case(
        "layernorm_mean_skipped",
        "LayerNormalization",
        17,
        (x(2, 10), w(10)),
        outputs=3,
        skip_outputs=(1,),
    ),
    # softmax: opset 11 coerces to 2-D at `axis` (default 1); 13 normalizes along `axis` (default -1)
    Case("softmax11_default_axis", "Softmax", 11, (x("n", 3, 4, scale=3.0),), dims=_B),
    Case("softmax11_axis_last", "Softmax", 11, (x(2, 3, 5, scale=3.0),), attrs={"axis": -1}),
    Case(
        "softmax11_axis0_dynamic",
        "Softmax",
        11,
        (x("n", 3, 2, dynamic=True),),
        attrs={"axis": 0},
        dims={"n": (2, 3)},
    ),
    Case("softmax13_default_axis", "Softmax", 13, (x("n", 3, 4, scale=30.0),), dims=_B),
    Case("softmax13_axis1", "Softmax", 13, (x(2, 5, 3, scale=3.0),), attrs={"axis": 1}),
    Case("softmax13_negative_axis", "Softmax", 13, (x(2, 4, 3, scale=3.0),), attrs={"axis": -2}),
    Case("softmax13_empty", "Softmax", 13, (x(0, 4),)),
    Case(
        "softmax13_infinities",
        "Softmax",
        13,
        (
            c(
                [[0.0, -np.inf, 1.0, 2.0], [-np.inf, -np.inf, 3.0, -1.0], [5.0, 5.0, 5.0, -np.inf]],
                "float32",
            ),
        ),
    ),
    Case("logsoftmax11_default_axis", "LogSoftmax", 11, (x("n", 4, 3, scale=3.0),), dims=_B),
    Case("logsoftmax13_axis0", "LogSoftmax", 13, (x(4, 3, scale=10.0),), attrs={"axis": 0}),
    Case(
        "logsoftmax13_infinities",
        "LogSoftmax",
        13,
        (c([[0.0, -np.inf, 1.0, 2.0], [-np.inf, -np.inf, 3.0, -1.0]], "float32"),),
    ),
    Case("logsoftmax13_default_axis", "LogSoftmax", 13, (x(2, 3, 6, scale=50.0),)),
    # shape manipulation
    Case("flatten_default", "Flatten", 13, (x("n", 3, 2, 2),), dims=_B),
    Case("flatten_axis0", "Flatten", 9, (x(2, 3, 4),), attrs={"axis": 0}),
    Case(
        "flatten_negative_axis_dynamic",
        "Flatten",
        13,
        (x("n", 3, 4, dynamic=True),),
        attrs={"axis": -1},
        dims=_B,
    ),
    Case("flatten_axis_rank", "Flatten", 13, (x(2, 3, 4),), attrs={"axis": 3}),
    Case("flatten_empty", "Flatten", 13, (x(2, 0, 3),), attrs={"axis": 2}),
    Case("reshape_zero_and_minus_one", "Reshape", 13, (x(2, 3, 4), c([0, -1, 2]))),
    Case(
        "reshape_dynamic_copy_dim", "Reshape", 14, (x("n", 6, dynamic=True), c([0, 3, 2])), dims=_B
    ),
    Case("reshape_allowzero_empty", "Reshape", 14, (x(0, 4), c([4, 0])), attrs={"allowzero": 1}),
    Case("reshape_minus_one_empty", "Reshape", 13, (x(0, 4), c([-1, 2]))),
    Case("reshape_runtime_shape", "Reshape", 13, (x(4, 6), v([3, -1, 2]))),
    Case("transpose_default", "Transpose", 13, (x("n", 3, 4),), dims=_B),
    Case("transpose_perm", "Transpose", 7, (x(2, 3, 4, 5),), attrs={"perm": [2, 0, 3, 1]}),
    Case(
        "transpose_dynamic",
        "Transpose",
        13,
        (x("n", 2, "m", dynamic=True),),
        attrs={"perm": [2, 0, 1]},
        dims={"n": (1, 3), "m": (1, 4)},
    ),
    Case("transpose_empty", "Transpose", 13, (x(0, 2, 3),), attrs={"perm": [1, 2, 0]}),
    Case(
        "concat_axis1",
        "Concat",
        13,
        (x("n", 2, 3), x("n", 4, 3), w("n", 1, 3)),
        attrs={"axis": 1},
        dims=_B,
    ),
    Case(
        "concat_negative_axis_int64",
        "Concat",
        11,
        (x(2, 3, dtype="int64", gen="int"), x(2, 1, dtype="int64", gen="int")),
        attrs={"axis": -1},
    ),
    Case("concat_single_input", "Concat", 13, (x(2, 3),), attrs={"axis": 0}),
    Case(
        "concat_dynamic",
        "Concat",
        13,
        (x("n", 2, dynamic=True), w(1, 2)),
        attrs={"axis": 0},
        dims=_B,
    ),
    Case("concat_with_empty", "Concat", 7, (x(0, 3), x(2, 3), x(1, 3)), attrs={"axis": 0}),
    Case("split11_equal", "Split", 11, (x(6, 4),), attrs={"axis": 0}, outputs=3),
    Case(
        "split11_sizes_attribute",
        "Split",
        11,
        (x(2, 7),),
        attrs={"axis": -1, "split": [2, 5]},
        outputs=2,
    ),
    Case("split13_sizes_input", "Split", 13, (x(3, 8), c([1, 4, 3])), attrs={"axis": 1}, outputs=3),
    Case(
        "split18_num_outputs_uneven",
        "Split",
        18,
        (x(7, 2),),
        attrs={"axis": 0, "num_outputs": 3},
        outputs=3,
    ),
    Case("split13_equal_no_sizes", "Split", 13, (x(2, 9),), attrs={"axis": -1}, outputs=3),
    Case("split13_one_output", "Split", 13, (x(3, 4),), attrs={"axis": 1}),
    Case("split13_runtime_sizes", "Split", 13, (x(5, 3), v([2, 3])), outputs=2),
    Case("split18_zero_size_part", "Split", 18, (x(2, 5), c([0, 5])), attrs={"axis": 1}, outputs=2),
    Case(
        "slice9_attributes",
        "Slice",
        9,
        (x(5, 6),),
        attrs={"starts": [1, -4], "ends": [4, 1000], "axes": [0, 1]},
    ),
    Case(
        "slice9_default_axes", "Slice", 9, (x(4, 5, 3),), attrs={"starts": [1, 0], "ends": [-1, 3]}
    ),
    Case(
        "slice13_steps_negative_axes",
        "Slice",
        13,
        (x(6, 7, 4), c([5, 1]), c([INT64_MIN, 7]), c([0, -2]), c([-2, 3])),
    ),
    Case(
        "slice13_reverse_to_start",
        "Slice",
        13,
        (x(5, 4), c([-1]), c([-INT64_MAX]), c([0]), c([-1])),
    ),
    Case("slice13_empty_result", "Slice", 13, (x(4, 5), c([3]), c([1]), c([1]))),
    Case(
        "slice13_dynamic_dim",
        "Slice",
        13,
        (x("n", 6, dynamic=True), c([1, -3]), c([INT64_MAX, -1]), c([0, 1])),
        dims={"n": (2, 5)},
    ),
    Case(
        "slice13_dynamic_negative_step",
        "Slice",
        13,
        (x("n", 4, dynamic=True), c([-1, INT64_MAX]), c([-INT64_MAX, -5]), c([0, 1]), c([-2, -1])),
        dims={"n": (1, 6)},
    ),
    Case("slice10_runtime_starts", "Slice", 10, (x(6, 5), v([1, 0]), v([5, -1]))),
    Case(
        "gather_axis0_negative_indices",
        "Gather",
        13,
        (x("n", 4), x(5, dtype="int64", gen="index", index_of=(0, 0))),
        dims={"n": (2, 6)},
    ),
    Case(
        "gather_axis1_2d_indices",
        "Gather",
        11,
        (x(3, 5, 2), w(2, 3, dtype="int64", gen="index", index_of=(0, 1))),
        attrs={"axis": 1},
    ),
    Case(
        "gather_scalar_index_negative_axis", "Gather", 13, (x(3, 4, 5), c(-2)), attrs={"axis": -1}
    ),
    Case(
        "gather_int32_indices_int64_data",
        "Gather",
        7,
        (x(6, 3, dtype="int64", gen="int"), x(2, 2, dtype="int32", gen="index", index_of=(0, 0))),
    ),
    Case(
        "gather_dynamic_data",
        "Gather",
        13,
        (x(3, "n", dynamic=True), c([0, -1, 1])),
        attrs={"axis": 1},
        dims={"n": (2, 5)},
    ),
    Case("gather_empty_indices", "Gather", 13, (x(4, 3), c(np.zeros((0,), np.int64)))),
    Case("shape13", "Shape", 13, (x(2, 3, 4),)),
    Case("shape13_dynamic", "Shape", 13, (x("n", 3, dynamic=True),), dims=_B),
    Case("shape15_start_end", "Shape", 15, (x(2, 3, 4, 5),), attrs={"start": 1, "end": -1}),
    Case("shape15_negative_start_empty", "Shape", 15, (x(2, 0, 3),), attrs={"start": -2}),
    Case("shape13_scalar", "Shape", 13, (x(),)),
    Case("size13", "Size", 13, (x(2, 3, 4),)),
    Case("size13_scalar", "Size", 13, (x(dtype="int32", gen="int"),)),
    Case("size_dynamic_empty", "Size", 7, (x("n", 0, dynamic=True),), dims=_B),
    Case("unsqueeze11_attribute", "Unsqueeze", 11, (x("n", 4),), attrs={"axes": [0, -1]}, dims=_B),
    Case("unsqueeze13_input_unsorted", "Unsqueeze", 13, (x(3, 4), c([3, 0]))),
    Case("unsqueeze13_scalar", "Unsqueeze", 13, (x(), c([0]))),
    Case("squeeze11_attribute", "Squeeze", 11, (x(1, 3, 1, 4),), attrs={"axes": [-2]}),
    Case("squeeze11_all", "Squeeze", 7, (x(1, 3, 1, 1),)),
    Case("squeeze13_input", "Squeeze", 13, (x(1, 3, 1, 4), c([0, -2]))),
    Case("squeeze13_runtime_axes", "Squeeze", 13, (x(1, 3, 1), v([-1]))),
    Case("unsqueeze13_runtime_axes", "Unsqueeze", 13, (x(3, 2), v([1, -1]))),
    Case("squeeze13_no_axes", "Squeeze", 13, (x(1, 1, 2, 1),)),
    Case("expand_broadcast", "Expand", 13, (x(3, 1), c([2, 3, 4]))),
    Case("expand_shape_lower_rank", "Expand", 8, (x(2, 1, 3), c([4, 1]))),
    Case("expand_runtime_shape", "Expand", 13, (x(1, 4), v([3, 1, 4]))),
    Case(
        "expand_dynamic_bool",
        "Expand",
        13,
        (x("n", 1, dtype="bool", gen="bool", dynamic=True), c([2, 1, 3])),
        dims=_B,
    ),
    Case("expand_int64_to_empty", "Expand", 13, (x(1, 3, dtype="int64", gen="int"), c([0, 3]))),
    # casts and constants
    Case(
        "cast_float_to_int32",
        "Cast",
        13,
        (x("n", 8, gen="uniform", low=-1000, high=1000),),
        attrs={"to": onnx.TensorProto.INT32},
        dims=_B,
    ),
    Case(
        "cast_float_to_float16",
        "Cast",
        13,
        (x(4, 6, scale=1000.0, special=True),),
        attrs={"to": onnx.TensorProto.FLOAT16},
    ),
    Case(
        "cast_float_to_bool",
        "Cast",
        9,
        (x(3, 5, special=True),),
        attrs={"to": onnx.TensorProto.BOOL},
    ),
    Case(
        "cast_bool_to_float",
        "Cast",
        13,
        (x(2, 7, dtype="bool", gen="bool"),),
        attrs={"to": onnx.TensorProto.FLOAT},
    ),
    Case(
        "cast_int64_to_float64",
        "Cast",
        19,
        (x(3, 4, dtype="int64", gen="int", low=-(10**15), high=10**15),),
        attrs={"to": onnx.TensorProto.DOUBLE},
    ),
    Case(
        "cast_float16_to_float32",
        "Cast",
        13,
        (x(3, 5, dtype="float16", scale=100.0, special=True),),
        attrs={"to": onnx.TensorProto.FLOAT},
    ),
    Case(
        "cast_float64_to_float32",
        "Cast",
        7,
        (x(3, 4, dtype="float64", scale=1e30, special=True),),
        attrs={"to": onnx.TensorProto.FLOAT},
    ),
    Case(
        "cast_int32_to_int64",
        "Cast",
        21,
        (x(0, 3, dtype="int32", gen="int"),),
        attrs={"to": onnx.TensorProto.INT64},
    ),
    Case(
        "castlike_float_to_int64",
        "CastLike",
        15,
        (x("n", 5, gen="uniform", low=-100, high=100), c(np.zeros((0,), np.int64))),
        dims=_B,
    ),
    Case(
        "castlike_int32_to_float",
        "CastLike",
        21,
        (x(2, 3, dtype="int32", gen="int"), x(1, dtype="float32")),
    ),
    Case(
        "constant_tensor",
        "Constant",
        13,
        (),
        attrs={"value": np.arange(6, dtype=np.float32).reshape(2, 3) / 7},
    ),
    Case("constant_value_float", "Constant", 13, (), attrs={"value_float": 0.1}),
    Case("constant_value_ints", "Constant", 13, (), attrs={"value_ints": [3, -1, 4]}),
    Case(
        "constant_large_int32",
        "Constant",
        11,
        (),
        attrs={"value": (np.arange(40, dtype=np.int32) - 20) * 7},
    ),
    Case("constant_of_shape_default", "ConstantOfShape", 9, (c([2, 3]),)),
    Case(
        "constant_of_shape_int32_value",
        "ConstantOfShape",
        20,
        (c([3, 1, 2]),),
        attrs={"value": np.array([7], dtype=np.int32)},
    ),
    Case(
        "constant_of_shape_runtime",
        "ConstantOfShape",
        9,
        (v([2, 4]),),
        attrs={"value": np.array([-1.5], dtype=np.float32)},
    ),
    Case(
        "constant_of_shape_empty_dim",
        "ConstantOfShape",
        21,
        (c([0, 3]),),
        attrs={"value": np.array([1.0], dtype=np.float64)},
    ),
    Case(
        "constant_of_shape_scalar",
        "ConstantOfShape",
        9,
        (c(np.zeros((0,), np.int64)),),
        attrs={"value": np.array([5], dtype=np.int64)},
    ),
    Case("identity_float", "Identity", 13, (x("n", 3, special=True),), dims=_B),
    Case("identity_bool", "Identity", 13, (x(4, dtype="bool", gen="bool"),)),
    Case("identity_int64_empty", "Identity", 16, (x(0, 2, dtype="int64", gen="int"),)),
    # reductions: axes as attribute, then as input (ReduceSum from 13, ReduceMean/Max from 18)
    Case(
        "reducemean13_axes_attribute",
        "ReduceMean",
        13,
        (x("n", 3, 4),),
        attrs={"axes": [1, -1]},
        dims=_B,
    ),
    Case("reducemean13_all_no_keepdims", "ReduceMean", 13, (x(3, 4, 5),), attrs={"keepdims": 0}),
    Case("reducemean18_axes_input", "ReduceMean", 18, (x(2, 3, 4), c([-2])), attrs={"keepdims": 0}),
    Case(
        "reducemean18_noop_empty_axes",
        "ReduceMean",
        18,
        (x(2, 3),),
        attrs={"noop_with_empty_axes": 1},
    ),
    Case(
        "reducemean_int32",
        "ReduceMean",
        13,
        (x(3, 4, dtype="int32", gen="int", low=-50, high=50),),
        attrs={"axes": [1]},
    ),
    Case(
        "reducesum11_axes_attribute", "ReduceSum", 11, (x("n", 5, 3),), attrs={"axes": [0]}, dims=_B
    ),
    Case("reducesum13_axes_input", "ReduceSum", 13, (x(2, 3, 4), c([0, 2])), attrs={"keepdims": 0}),
    Case("reducesum13_no_axes", "ReduceSum", 13, (x(3, 4, special=True),)),
    Case(
        "reducesum13_noop_empty_axes",
        "ReduceSum",
        13,
        (x(3, 4), c(np.zeros((0,), np.int64))),
        attrs={"noop_with_empty_axes": 1},
    ),
    Case(
        "reducesum13_int32",
        "ReduceSum",
        13,
        (x(4, 5, dtype="int32", gen="int", low=-1000, high=1000), c([1])),
    ),
    Case("reducesum13_empty_axis", "ReduceSum", 13, (x(2, 0, 3), c([1]))),
    Case(
        "reducemax13_axes_attribute",
        "ReduceMax",
        13,
        (x("n", 4, 5),),
        attrs={"axes": [-1]},
        dims=_B,
    ),
    Case("reducemax18_axes_input", "ReduceMax", 18, (x(3, 4, 2), c([0, 2])), attrs={"keepdims": 0}),
    Case("reducemax18_int64_all", "ReduceMax", 18, (x(3, 4, dtype="int64", gen="int"),)),
    Case(
        "reducemax13_infinities",
        "ReduceMax",
        13,
        (c([[-np.inf, 1.0, np.inf], [-np.inf, -np.inf, -3.0]], "float32"),),
        attrs={"axes": [1]},
    ),
    Case(
        "reducemax13_nan",
        "ReduceMax",
        13,
        (v([[1.0, np.nan, 2.0, 3.0], [5.0, 1.0, 2.0, np.nan]], "float32"),),
        attrs={"axes": [1]},
        divergence="NaN in a reduced row: onnxruntime's result depends on where the NaN sits "
        "(2 for [1, nan, 2, 3], 5 for [5, 1, 2, nan], nan for [nan, 1, 2, 3]); the "
        "ONNX reference (np.maximum.reduce) and the compiler propagate NaN.",
    ),
    Case("reducemax18_empty_axis", "ReduceMax", 18, (x(2, 0, 3), c([1]))),
    # the mean of nothing: the spec leaves it undefined, no backend case settles it: onnxruntime's 0
    Case("reducemean18_empty_axis", "ReduceMean", 18, (x(0, 3), c([0])), attrs={"keepdims": 0}),
    Case(
        "reducesum11_negative_axes_empty_tensor",
        "ReduceSum",
        11,
        (x(0, 2, 3),),
        attrs={"axes": [-1, 0], "keepdims": 0},
        divergence="onnxruntime ignores the negative axis when the input is empty: shape (2, 3) "
        "instead of (2,) (and warns that it contradicts the inferred shape); the ONNX "
        "reference and the compiler give (2,)",
    ),
    Case(
        "reducesum13_runtime_axes", "ReduceSum", 13, (x(2, 3, 4), v([-1, 0])), attrs={"keepdims": 0}
    ),
    Case(
        "reducemax18_runtime_axes", "ReduceMax", 18, (x("n", 3, 4, dynamic=True), v([1])), dims=_B
    ),
    Case("reducemean18_runtime_axes", "ReduceMean", 18, (x(3, 4, 2), v([0, 2]))),
    # Range
    Case("range_int64", "Range", 11, (c(2), c(17), c(3))),
    Case(
        "range_float_negative_delta",
        "Range",
        11,
        (c(1.5, "float32"), c(-2.0, "float32"), c(-0.5, "float32")),
    ),
    Case("range_int32_runtime", "Range", 11, (v(-3, "int32"), v(10, "int32"), v(4, "int32"))),
    Case("range_empty", "Range", 11, (v(5), v(2), v(1))),
    # Dropout in inference: the identity (and an all-true mask)
    Case("dropout7_ratio_attribute", "Dropout", 7, (x("n", 4),), attrs={"ratio": 0.3}, dims=_B),
    Case("dropout12_ratio_input", "Dropout", 12, (x(3, 4), c(0.5, "float32"))),
    Case(
        "dropout7_mask",
        "Dropout",
        7,
        (x(3, 4),),
        outputs=2,
        divergence="inference mask before opset 12: onnxruntime returns all zeros (float at "
        "opset 7, False at 10); the spec's mask marks kept elements, all of them in "
        "inference, as the ONNX reference and the compiler give (ones/True)",
    ),
    Case(
        "dropout10_mask",
        "Dropout",
        10,
        (x(2, 3),),
        outputs=2,
        divergence="inference mask before opset 12: onnxruntime returns all False; the ONNX "
        "reference and the compiler give True (every element kept)",
    ),
    Case("dropout13_mask", "Dropout", 13, (x(2, 5),), outputs=2),
    Case(
        "dropout13_training_false",
        "Dropout",
        13,
        (x(2, 3, 4), c(0.2, "float32"), c(False, "bool")),
        outputs=2,
    ),
)


# --- building a case's model and inputs -------------------------------------------------------


def _io_names(op: str, opset: int, count: int, outputs: bool) -> list[str]:
    """Names from the operator's schema (X, W, B; variadic ones numbered)."""
    try:
        schema = onnx.defs.get_schema(op, opset, "")
    except onnx.defs.SchemaError:
        return [f"{'out' if outputs else 'in'}{i}" for i in range(count)]
    formals = list(schema.outputs if outputs else schema.inputs)
    if not formals:
        return [f"{'out' if outputs else 'in'}{i}" for i in range(count)]
    names = []
    for i in range(count):
        formal = formals[min(i, len(formals) - 1)]
        variadic = formal.option == onnx.defs.OpSchema.FormalParameterOption.Variadic
        names.append(f"{formal.name}_{i - formals.index(formal)}" if variadic else formal.name)
    if outputs:  # never reuse an input's name for an output
        names = [f"{n}_out" if n in _io_names(op, opset, 8, False) else n for n in names]
    return names


def _draw(
    spec: Input, shape: tuple[int, ...], rng: np.random.Generator, arrays: list
) -> np.ndarray:
    dtype = np.dtype(spec.dtype)
    if spec.gen == "normal":
        data = rng.standard_normal(shape) * spec.scale
    elif spec.gen == "uniform":
        data = rng.uniform(spec.low, spec.high, shape)
    elif spec.gen == "int":
        data = rng.integers(int(spec.low), int(spec.high), shape, endpoint=True)
    elif spec.gen == "nonzero":
        data = rng.integers(int(spec.low), int(spec.high), shape, endpoint=True)
        data[data == 0] = 1
    elif spec.gen == "bool":
        data = rng.random(shape) < 0.5
    elif spec.gen == "index":
        source, axis = spec.index_of
        size = arrays[source].shape[axis]
        data = rng.integers(-size, size - 1, shape, endpoint=True)
    else:
        raise ValueError(f"unknown generator {spec.gen!r}")
    data = np.asarray(data).astype(dtype)
    if spec.special and dtype.kind == "f" and data.size:
        specials = (
            [np.inf, -np.inf, 0.0, -0.0]
            if spec.special == "inf"
            else [np.nan, np.inf, -np.inf, 0.0, -0.0]
        )
        specials = np.array(specials, dtype=dtype)
        flat = data.reshape(-1)  # a view: data is contiguous
        spots = rng.choice(flat.size, size=min(flat.size, len(specials)), replace=False)
        flat[spots] = specials[: len(spots)]
    return data


def case_arrays(case: Case, seed_offset: int = 0) -> tuple[dict[str, int], list]:
    """The drawn dims and one array (or None for an omitted input) per input spec."""
    rng = np.random.default_rng(case.base_seed + seed_offset)
    dims = {
        name: int(rng.integers(low, high, endpoint=True))
        for name, (low, high) in sorted(case.dims.items())
    }
    arrays: list = []
    for spec in case.inputs:
        if spec is None:
            arrays.append(None)
        elif spec.value is not None:
            arrays.append(np.array(spec.value, dtype=spec.dtype))
        else:
            shape = tuple(dims[d] if isinstance(d, str) else d for d in spec.shape)
            arrays.append(_draw(spec, shape, rng, arrays))
    return dims, arrays


def _attribute(value):
    return numpy_helper.from_array(value) if isinstance(value, np.ndarray) else value


def ir_version_for(opset: int) -> int:
    needed = helper.find_min_ir_version_for([helper.make_opsetid("", opset)])
    return min(max(needed, MIN_IR_VERSION), ORT_MAX_IR_VERSION)


def build(case: Case, seed_offset: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The case's one-node model and its feeds (graph inputs by name, in graph order)."""
    _, arrays = case_arrays(case, seed_offset)
    names = _io_names(case.op, case.opset, len(case.inputs), outputs=False)
    node_inputs, graph_inputs, initializers, feeds = [], [], [], {}
    for name, spec, array in zip(names, case.inputs, arrays):
        if spec is None:
            node_inputs.append("")
            continue
        node_inputs.append(name)
        if spec.init:
            initializers.append(numpy_helper.from_array(array, name))
            continue
        declared = list(array.shape)
        if spec.dynamic and spec.value is None:
            declared = [d if isinstance(d, str) else n for d, n in zip(spec.shape, array.shape)]
        elem = helper.np_dtype_to_tensor_dtype(array.dtype)
        graph_inputs.append(helper.make_tensor_value_info(name, elem, declared))
        feeds[name] = array
    out_names = _io_names(case.op, case.opset, case.outputs, outputs=True)
    out_names = ["" if i in case.skip_outputs else n for i, n in enumerate(out_names)]
    attrs = {key: _attribute(value) for key, value in case.attrs.items()}
    node = helper.make_node(case.op, node_inputs, out_names, name=case.name, **attrs)
    outputs = [helper.make_empty_tensor_value_info(n) for n in out_names if n]
    graph = helper.make_graph([node], case.name, graph_inputs, outputs, initializer=initializers)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", case.opset)],
        producer_name="ops_coverage_oracle",
    )
    model.ir_version = ir_version_for(case.opset)
    # Declare the outputs as an exporter would: the types onnx's inference gives them. Where it
    # knows no shape (a shape known only at run time), the rank of onnxruntime's result with
    # unknown dims (the checker wants a shape on every graph output); where it knows no type,
    # onnxruntime's.
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    types = {info.name: info for info in inferred.graph.output}
    ranks = None
    declared = []
    for position, name in enumerate(n for n in out_names if n):
        info = types.get(name)
        tensor_type = info.type.tensor_type if info is not None else None
        if tensor_type is None or not tensor_type.elem_type or not tensor_type.HasField("shape"):
            if ranks is None:
                ranks = [
                    (helper.np_dtype_to_tensor_dtype(r.dtype), r.ndim)
                    for r in run_onnxruntime(model, feeds)
                ]
            elem = (
                tensor_type.elem_type
                if tensor_type is not None and tensor_type.elem_type
                else ranks[position][0]
            )
            if tensor_type is not None and tensor_type.HasField("shape"):
                info = helper.make_tensor_value_info(name, elem, None)
                info.type.tensor_type.shape.CopyFrom(tensor_type.shape)
            else:
                info = helper.make_tensor_value_info(name, elem, [None] * ranks[position][1])
        declared.append(info)
    del model.graph.output[:]
    model.graph.output.extend(declared)
    onnx.checker.check_model(model, full_check=True)
    return model, feeds


# --- running and comparing --------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    case: str
    variant: str
    status: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status in OK_STATUSES


def run_onnxruntime(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    import onnxruntime

    options = onnxruntime.SessionOptions()  # graph optimizations stay at their default
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


def compile_and_import(model: onnx.ModelProto, variant: str, folder: Path, label: str):
    from onemodel_compile import compile_model

    path = compile_model(model, folder / "model.py", variant)
    spec = importlib.util.spec_from_file_location(f"oracle_{label}_{variant}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compare(expected: np.ndarray, actual, rtol: float, atol: float) -> str | None:
    """None when `actual` matches onnxruntime's `expected`, else what differs."""
    if not isinstance(actual, np.ndarray):
        return f"got {type(actual).__name__}, not a numpy array"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype}, onnxruntime gives {expected.dtype}"
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, onnxruntime gives {expected.shape}"
    if expected.dtype.kind == "f":
        e, a = expected.astype(np.float64), actual.astype(np.float64)
        nan_e, nan_a = np.isnan(e), np.isnan(a)
        finite = np.isfinite(e) & np.isfinite(a)  # an infinity must be met exactly, sign and all
        with np.errstate(invalid="ignore", over="ignore"):
            close = (e == a) | (finite & (np.abs(a - e) <= atol + rtol * np.abs(e)))
        bad = (nan_e != nan_a) | (~nan_e & ~close)
        if bad.any():
            where = tuple(int(i[0]) for i in np.nonzero(bad))
            return (
                f"{int(bad.sum())} of {e.size} values differ beyond rtol {rtol:g} atol {atol:g}; "
                f"first at {where}: {a[where]!r}, onnxruntime {e[where]!r}"
            )
        return None
    if not np.array_equal(expected, actual):
        bad = expected != actual
        where = tuple(int(i[0]) for i in np.nonzero(bad))
        return (
            f"{int(bad.sum())} of {expected.size} values differ; first at {where}: "
            f"{actual[where]!r}, onnxruntime {expected[where]!r}"
        )
    return None


def _same(before: np.ndarray, after: np.ndarray) -> bool:
    return before.shape == after.shape and np.array_equal(
        before, after, equal_nan=before.dtype.kind == "f"
    )


def run_case(case: Case, variant: str = "fast", seed_offset: int = 0) -> Outcome:
    from onemodel_compile import ExactnessError

    def outcome(status: str, detail: str = "") -> Outcome:
        if status == "pass" and case.divergence:
            return Outcome(
                case.name,
                variant,
                "divergence gone",
                f"matches onnxruntime although marked divergent ({case.divergence})",
            )
        if status == "mismatch" and case.divergence:
            return Outcome(case.name, variant, "divergence", f"{case.divergence} [{detail}]")
        if status == "pass" and case.known_bug:
            return Outcome(
                case.name,
                variant,
                "bug fixed",
                f"passes although marked as a known bug ({case.known_bug})",
            )
        if status in ("mismatch", "compile error", "runtime error") and case.known_bug:
            return Outcome(
                case.name, variant, "known bug", f"{case.known_bug} [{status}: {detail}]"
            )
        return Outcome(case.name, variant, status, detail)

    try:
        model, feeds = build(case, seed_offset)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            expected = run_onnxruntime(model, feeds)
    except Exception as exc:
        return Outcome(case.name, variant, "oracle error", f"{type(exc).__name__}: {_line(exc)}")

    with tempfile.TemporaryDirectory(prefix="oracle-") as folder:
        try:
            module = compile_and_import(model, variant, Path(folder), case.name)
        except ExactnessError as exc:
            if variant == "exact":
                return Outcome(case.name, variant, "refused", str(exc))
            return outcome("compile error", f"ExactnessError: {exc}")
        except Exception as exc:
            return outcome("compile error", f"{type(exc).__name__}: {_line(exc)}")
        given = {name: array.copy() for name, array in feeds.items()}
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                results = module.run(*feeds.values())
        except Exception as exc:
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            return outcome(
                "runtime error",
                f"{type(exc).__name__}: {_line(exc)} ({Path(frame.filename).name}:{frame.lineno})",
            )
    for name, array in feeds.items():
        if not _same(given[name], array):
            return outcome("mismatch", f"the module modified its input {name!r}")
    if len(results) != len(expected):
        return outcome("mismatch", f"{len(results)} outputs, onnxruntime gives {len(expected)}")
    for position, (e, a) in enumerate(zip(expected, results)):
        rtol, atol = case.tolerance(e.dtype)
        problem = compare(e, a, rtol, atol)
        if problem:
            return outcome(
                "mismatch", f"output {position} ({results._fields[position]}): {problem}"
            )
    return outcome("pass")


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# More case tables, one module per operator family, written in this module's vocabulary: each of
# tools/oracle_cases/<family>.py defines OPERATORS (what it covers) and CASES. The table above is
# the "foundation" one.
CASE_TABLES = Path(__file__).resolve().with_name("oracle_cases")


@functools.cache
def tables() -> dict[str, tuple[tuple[str, ...], tuple[Case, ...]]]:
    """Every case table by name: (operators it covers, its cases), in a stable order."""
    found = {"foundation": (OPERATORS, CASES)}
    for path in sorted(CASE_TABLES.glob("*.py")):
        if not path.stem.startswith("_"):
            module = importlib.import_module(f"tools.oracle_cases.{path.stem}")
            found[path.stem] = (tuple(module.OPERATORS), tuple(module.CASES))
    return found


def all_cases() -> list[Case]:
    return [case for _, cases in tables().values() for case in cases]


def select(pattern: str | None = None, table: str | None = None) -> list[Case]:
    """Cases whose name contains `pattern` or whose operator is `pattern`, of one table or all."""
    cases = tables()[table][1] if table else all_cases()
    return [case for case in cases if not pattern or pattern in case.name or pattern == case.op]


def render_report(runs: dict[str, list[tuple[Case, Outcome]]]) -> str:
    """docs/ops-coverage.md: cases per operator and variant, and every known divergence with its
    reason. `runs` maps each variant run to its (case, outcome) pairs, in case order."""
    variants = list(runs)
    per_op: dict[str, dict[tuple[str, str], int]] = {}
    for variant, outcomes in runs.items():
        for case, outcome in outcomes:
            row = per_op.setdefault(case.op, collections.Counter())
            row[(variant, outcome.status)] += 1
    shown = [
        (v, s) for v in variants for s in STATUSES if any(row[(v, s)] for row in per_op.values())
    ]
    outcomes = runs[variants[0]]
    totals = "; ".join(
        f"{v}: "
        + ", ".join(f"{sum(r[(v, s)] for r in per_op.values())} {s}" for w, s in shown if w == v)
        for v in variants
    )
    lines = [
        "# Operator coverage against onnxruntime 1.31.1",
        "",
        "Generated by `python -m tools.ops_coverage_oracle --variant fast --variant exact --report "
        "docs/ops-coverage.md` (`make coverage-report`) from a real run of the "
        f"{' and '.join(variants)} variant{'s' if len(variants) > 1 else ''}; do not edit by hand. "
        "Each case is a one-node model with seeded random shapes, attributes and inputs (tables in "
        "`tools/ops_coverage_oracle.py` and `tools/oracle_cases/`), run by onnxruntime and by the "
        "compiled module. In the exact variant, *refused* is a refusal-list operator.",
        "",
        f"{len(outcomes)} cases over {len(per_op)} operators. {totals}.",
        "",
        "| operator | cases | " + " | ".join(f"{v} {s}" for v, s in shown) + " |",
        "|---|---|" + "---|" * len(shown),
    ]
    for op in sorted(per_op):
        row = per_op[op]
        cases = sum(row[(variants[0], s)] for s in STATUSES)
        lines.append(f"| {op} | {cases} | " + " | ".join(str(row[key]) for key in shown) + " |")
    lines += [
        "",
        "## Known divergences",
        "",
        "Where onnxruntime disagrees with the ONNX specification or its backend test data, the "
        "compiler follows the backend data (docs/contract.md), and the case records why. A divergence "
        "that stops diverging fails the oracle, so this list cannot go stale.",
        "",
        "| case | operator | opset | reason |",
        "|---|---|---|---|",
    ]
    for case, _ in outcomes:
        if case.divergence:
            reason = case.divergence.replace("|", "\\|")
            lines.append(f"| {case.name} | {case.op} | {case.opset} | {reason} |")
    bugs = [(case, outcome) for case, outcome in outcomes if case.known_bug]
    if bugs:
        lines += ["", "## Known compiler bugs", "", "| case | operator | bug |", "|---|---|---|"]
        lines += [f"| {case.name} | {case.op} | {case.known_bug} |" for case, _ in bugs]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.ops_coverage_oracle",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--variant",
        action="append",
        choices=("fast", "exact"),
        help="variant(s) to run, in order (default: fast)",
    )
    parser.add_argument(
        "-k", dest="pattern", help="only cases whose name contains this (or of this op)"
    )
    parser.add_argument(
        "--table",
        choices=sorted(tables()),
        help="only the cases of this table (default: every table)",
    )
    parser.add_argument(
        "--seed-offset",
        type=int,
        default=0,
        help="added to every case's seed: other shapes and values",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print every case's seed and drawn dims (failing cases always show them)",
    )
    parser.add_argument(
        "--report",
        type=Path,
        help="write the coverage report (markdown) here; needs the whole table set (no -k)",
    )
    args = parser.parse_args(argv)
    if args.report and (args.pattern or args.table or args.seed_offset):
        parser.error("--report needs the default run: no -k, --table or --seed-offset")
    cases = select(args.pattern, args.table)
    if not cases:
        parser.error(f"no case matches {args.pattern!r}")
    runs = {}
    failed = False
    for variant in args.variant or ["fast"]:
        counts = dict.fromkeys(STATUSES, 0)
        outcomes = runs[variant] = []
        for case in cases:
            result = run_case(case, variant, args.seed_offset)
            outcomes.append((case, result))
            counts[result.status] += 1
            mark = {
                "pass": "PASS",
                "refused": "REFUSED",
                "divergence": "DIVERGES",
                "known bug": "KNOWN BUG",
            }.get(result.status, "FAIL")
            line = f"{mark} {case.name} ({case.op}, opset {case.opset}, {variant}): {result.status}"
            if result.detail:
                line += f": {result.detail}"
            if not result.ok or args.verbose:
                dims, _ = case_arrays(case, args.seed_offset)
                line += f" [seed {case.base_seed + args.seed_offset}, dims {dims}]"
            print(line, flush=True)
        summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        print(f"{variant}: {summary} (of {len(cases)} cases)")
        failed |= any(counts[s] for s in STATUSES if s not in OK_STATUSES)
    if args.report:
        args.report.write_text(render_report(runs))
        print(f"wrote {args.report}")
    return 1 if failed else 0


if __name__ == "__main__":
    # Run the importable module rather than __main__, so that the case tables of tools/oracle_cases
    # (which import tools.ops_coverage_oracle) share its classes.
    from tools.ops_coverage_oracle import main as _main

    sys.exit(_main())
