"""Oracle cases of the quantization family (onemodel_compile/ops/quantization.py).

Not covered here, with the reason:
- blocked quantization, float8, float4 and 4-/2-bit integers: out of scope (the compiler refuses
  them naming the node);
- opsets above 25 (QuantizeLinear and DequantizeLinear 28): onnxruntime 1.31.1 loads the default
  domain up to opset 26 only;
- bfloat16 scales: onnxruntime's Python binding takes and returns no bfloat16 arrays;
- int32 input of QuantizeLinear, and mixed int8/uint8 operands of QLinearMatMul: onnxruntime
  1.31.1 has no kernel for them.
"""

from __future__ import annotations

import onnx

from tests.harness.oracle import Case, c, v, w, x

OPERATORS = (
    "QuantizeLinear",
    "DequantizeLinear",
    "DynamicQuantizeLinear",
    "QLinearMatMul",
    "ConvInteger",
    "QLinearConv",
)

T = onnx.TensorProto
_B = {"n": (1, 3)}
_NCHW = {"n": (1, 2), "c": (2, 4), "h": (3, 7), "w": (3, 7)}


def _scale(*shape, dtype="float32", low=0.01, high=0.5, **options):
    return x(*shape, dtype=dtype, gen="uniform", low=low, high=high, **options)


def _ints(*shape, dtype="uint8", **options):
    info = {
        "uint8": (0, 255),
        "int8": (-128, 127),
        "uint16": (0, 65535),
        "int16": (-32768, 32767),
        "int32": (-(2**20), 2**20),
    }[dtype]
    return x(*shape, dtype=dtype, gen="int", low=info[0], high=info[1], **options)


def _zero(*shape, dtype="uint8", init=False):
    low, high = {
        "uint8": (0, 255),
        "int8": (-128, 127),
        "uint16": (0, 65535),
        "int16": (-32768, 32767),
    }[dtype]
    make = w if init else x
    return make(*shape, dtype=dtype, gen="int", low=low, high=high)


# Exact halves after division by 1: rounding is half to even (-2.5 -> -2, 0.5 -> 0, 3.5 -> 4).
_HALVES = [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 126.5, 127.5, -127.5, -128.5, 254.5]

CASES = [
    # QuantizeLinear
    Case(
        "quantize10_uint8_special",
        "QuantizeLinear",
        10,
        (x("n", 12, scale=40.0, special=True), c(0.25, "float32"), c(128, "uint8")),
        dims=_B,
    ),
    Case(
        "quantize10_no_zero_point", "QuantizeLinear", 10, (x(3, 7, scale=100.0), c(0.5, "float32"))
    ),
    Case(
        "quantize13_int8_per_axis",
        "QuantizeLinear",
        13,
        (
            x("n", "c", "h", "w", scale=20.0),
            _scale("c", init=True),
            _zero("c", dtype="int8", init=True),
        ),
        dims=_NCHW,
    ),
    Case(
        "quantize13_negative_axis_runtime_scale",
        "QuantizeLinear",
        13,
        (x(2, 3, "c", scale=30.0), _scale("c"), _zero("c")),
        attrs={"axis": -1},
        dims={"c": (2, 6)},
    ),
    Case(
        "quantize13_halves_to_even",
        "QuantizeLinear",
        13,
        (v(_HALVES, "float32"), c(1.0, "float32"), c(0, "int8")),
    ),
    Case("quantize13_empty", "QuantizeLinear", 13, (x(0, 4), c(0.1, "float32"), c(10, "uint8"))),
    Case(
        "quantize19_float16",
        "QuantizeLinear",
        19,
        (x("n", 9, dtype="float16", scale=20.0), c(0.125, "float16"), c(-7, "int8")),
        dims=_B,
    ),
    Case(
        "quantize21_int16",
        "QuantizeLinear",
        21,
        (x("n", 10, scale=5000.0, special=True), c(0.5, "float32"), c(-100, "int16")),
        dims=_B,
    ),
    Case(
        "quantize21_uint16_per_axis",
        "QuantizeLinear",
        21,
        (x(3, "c", scale=3000.0), _scale("c", init=True), _zero("c", dtype="uint16", init=True)),
        dims={"c": (2, 5)},
    ),
    Case(
        "quantize21_output_dtype_int16",
        "QuantizeLinear",
        21,
        (x(4, 5, scale=1e4), c(0.3, "float32")),
        attrs={"output_dtype": T.INT16},
    ),
    Case(
        "quantize21_output_dtype_int8",
        "QuantizeLinear",
        21,
        (x(6, scale=100.0), c(0.7, "float32")),
        attrs={"output_dtype": T.INT8},
    ),
    Case(
        "quantize23_precision_float",
        "QuantizeLinear",
        23,
        (x(3, 8, dtype="float16", scale=30.0), c(0.1, "float16"), c(3, "uint8")),
        attrs={"precision": T.FLOAT},
    ),
    # DequantizeLinear
    Case(
        "dequantize10_uint8",
        "DequantizeLinear",
        10,
        (_ints("n", 11), c(0.02, "float32"), c(131, "uint8")),
        dims=_B,
    ),
    Case(
        "dequantize10_int32_no_zero_point",
        "DequantizeLinear",
        10,
        (_ints(5, 4, dtype="int32"), c(0.001, "float32")),
    ),
    Case(
        "dequantize13_int8_per_axis",
        "DequantizeLinear",
        13,
        (
            _ints("n", "c", "h", dtype="int8"),
            _scale("c", init=True),
            _zero("c", dtype="int8", init=True),
        ),
        attrs={"axis": 1},
        dims={"n": (1, 2), "c": (2, 5), "h": (3, 6)},
    ),
    Case(
        "dequantize13_negative_axis_runtime",
        "DequantizeLinear",
        13,
        (_ints(2, "c", 3), _scale("c"), _zero("c")),
        attrs={"axis": -2},
        dims={"c": (2, 5)},
    ),
    Case(
        "dequantize13_empty",
        "DequantizeLinear",
        13,
        (x(0, 3, dtype="uint8", gen="int", low=0, high=255), c(0.5, "float32"), c(1, "uint8")),
    ),
    Case(
        "dequantize19_float16_scale",
        "DequantizeLinear",
        19,
        (_ints(4, 6, dtype="int8"), c(0.0625, "float16"), c(3, "int8")),
    ),
    Case(
        "dequantize21_int16",
        "DequantizeLinear",
        21,
        (_ints("n", 8, dtype="int16"), c(0.003, "float32"), c(-1200, "int16")),
        dims=_B,
    ),
    Case(
        "dequantize21_uint16_per_axis",
        "DequantizeLinear",
        21,
        (
            _ints("c", 5, dtype="uint16"),
            _scale("c", init=True),
            _zero("c", dtype="uint16", init=True),
        ),
        attrs={"axis": 0},
        dims={"c": (2, 4)},
    ),
    Case(
        "dequantize23_output_dtype_float16",
        "DequantizeLinear",
        23,
        (_ints(4, 5, dtype="int8"), c(0.07, "float32"), c(-5, "int8")),
        attrs={"output_dtype": T.FLOAT16},
    ),
    # DynamicQuantizeLinear
    Case(
        "dynamic_quantize_mixed",
        "DynamicQuantizeLinear",
        11,
        (x("n", 3, 8, scale=4.0),),
        outputs=3,
        dims=_B,
    ),
    Case(
        "dynamic_quantize_positive",
        "DynamicQuantizeLinear",
        11,
        (x(5, 7, gen="uniform", low=0.5, high=9.0),),
        outputs=3,
    ),
    Case(
        "dynamic_quantize_negative",
        "DynamicQuantizeLinear",
        11,
        (x(13, gen="uniform", low=-30.0, high=-0.1),),
        outputs=3,
    ),
    Case(
        "dynamic_quantize_zeros", "DynamicQuantizeLinear", 11, (c([0.0] * 6, "float32"),), outputs=3
    ),
    # QLinearMatMul
    Case(
        "qlinear_matmul10_uint8",
        "QLinearMatMul",
        10,
        (
            _ints("m", "k"),
            c(0.02, "float32"),
            c(120, "uint8"),
            _ints("k", "p"),
            c(0.015, "float32"),
            c(130, "uint8"),
            c(0.3, "float32"),
            c(125, "uint8"),
        ),
        dims={"m": (1, 5), "k": (1, 9), "p": (1, 6)},
    ),
    Case(
        "qlinear_matmul10_int8_batched",
        "QLinearMatMul",
        10,
        (
            _ints(2, "m", "k", dtype="int8"),
            c(0.05, "float32"),
            c(-3, "int8"),
            _ints("k", "p", dtype="int8"),
            c(0.04, "float32"),
            c(2, "int8"),
            c(1.5, "float32"),
            c(-1, "int8"),
        ),
        dims={"m": (2, 4), "k": (3, 8), "p": (2, 5)},
    ),
    Case(
        "qlinear_matmul21_runtime_scales",
        "QLinearMatMul",
        21,
        (
            _ints(3, 4),
            _scale(),
            _zero(),
            _ints(4, 5),
            _scale(),
            _zero(),
            _scale(low=1.0, high=4.0),
            _zero(),
        ),
    ),
    Case(
        "qlinear_matmul21_one_element_vectors",
        "QLinearMatMul",
        21,
        (
            _ints(2, 3, 6, dtype="int8"),
            c([0.03], "float32"),
            c([10], "int8"),
            _ints(2, 6, 4, dtype="int8"),
            c([0.01], "float32"),
            c([-9], "int8"),
            c([0.02], "float32"),
            c([5], "int8"),
        ),
    ),
    Case(
        "qlinear_matmul10_per_column_b",
        "QLinearMatMul",
        10,
        (
            _ints(3, 5),
            c(0.03, "float32"),
            c(100, "uint8"),
            _ints(5, "p"),
            _scale("p", init=True),
            _zero("p", init=True),
            c(0.4, "float32"),
            c(128, "uint8"),
        ),
        dims={"p": (2, 6)},
    ),
    # ConvInteger
    Case(
        "conv_integer_uint8_pads",
        "ConvInteger",
        10,
        (_ints("n", 2, "h", "w"), _ints(3, 2, 3, 3), c(7, "uint8"), c(140, "uint8")),
        attrs={"pads": [1, 0, 1, 2]},
        dims={"n": (1, 2), "h": (4, 7), "w": (4, 7)},
    ),
    Case(
        "conv_integer_strides_dilations_group",
        "ConvInteger",
        10,
        (
            _ints(1, 4, 9, 8),
            w(4, 2, 2, 3, dtype="uint8", gen="int", low=0, high=255),
            c(3, "uint8"),
        ),
        attrs={"strides": [2, 1], "dilations": [1, 2], "group": 2},
    ),
    Case(
        "conv_integer_same_upper_1d",
        "ConvInteger",
        10,
        (_ints(2, 3, 11), _ints(2, 3, 4)),
        attrs={"auto_pad": "SAME_UPPER", "strides": [2]},
    ),
    # QLinearConv
    Case(
        "qlinear_conv_uint8_bias",
        "QLinearConv",
        10,
        (
            _ints("n", 3, "h", "w"),
            c(0.02, "float32"),
            c(128, "uint8"),
            w(4, 3, 3, 3, dtype="uint8", gen="int", low=0, high=255),
            c(0.01, "float32"),
            c(120, "uint8"),
            c(0.6, "float32"),
            c(110, "uint8"),
            w(4, dtype="int32", gen="int", low=-2000, high=2000),
        ),
        attrs={"pads": [1, 1, 1, 1]},
        dims={"n": (1, 2), "h": (4, 8), "w": (4, 8)},
    ),
    Case(
        "qlinear_conv_int8_per_channel",
        "QLinearConv",
        10,
        (
            _ints(1, 4, 7, 6, dtype="int8"),
            c(0.05, "float32"),
            c(-2, "int8"),
            w(6, 2, 3, 2, dtype="int8", gen="int", low=-128, high=127),
            w(6, gen="uniform", low=0.001, high=0.02),
            c([0, 0, 0, 0, 0, 0], "int8"),
            c(0.08, "float32"),
            c(4, "int8"),
        ),
        attrs={"group": 2, "strides": [2, 1], "auto_pad": "SAME_LOWER"},
    ),
    Case(
        "qlinear_conv_1d_runtime_scales",
        "QLinearConv",
        10,
        (
            _ints(2, 2, 10),
            _scale(),
            _zero(),
            _ints(3, 2, 3),
            _scale(),
            _zero(),
            _scale(low=2.0, high=5.0),
            _zero(),
        ),
        attrs={"dilations": [2]},
    ),
]
