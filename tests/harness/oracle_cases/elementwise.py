"""Oracle cases of the elementwise math family (onemodel_compile/ops/elementwise.py) added in issue 3.

onnxruntime 1.31.1 loads the default domain up to opset 26 only, so opset 28's additions have no
case here (the backend data cover them): Mod with fmod=0 on floats (onnxruntime refuses it at every
opset: "fmod attribute must be true for floating point types") and BitShift on signed integers.
"""

from __future__ import annotations

from tests.harness.oracle import TRANSCENDENTAL, Case, c, v, w, x

OPERATORS = (
    "Acos",
    "Acosh",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "BitShift",
    "BitwiseAnd",
    "BitwiseNot",
    "BitwiseOr",
    "BitwiseXor",
    "Ceil",
    "Cos",
    "Cosh",
    "Floor",
    "GreaterOrEqual",
    "IsInf",
    "IsNaN",
    "LessOrEqual",
    "Max",
    "Mean",
    "Min",
    "Mod",
    "Pow",
    "Round",
    "Sign",
    "Sin",
    "Sinh",
    "Sum",
    "Tan",
    "Xor",
)

_B = {"n": (1, 3)}

CASES = [
    # trigonometric functions and their inverses (outside the domain: NaN)
    Case(
        "sin_special",
        "Sin",
        7,
        (x("n", 9, scale=4.0, special=True),),
        dims=_B,
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "sin_float64_wide",
        "Sin",
        22,
        (x(3, 7, dtype="float64", gen="uniform", low=-100, high=100),),
    ),
    Case(
        "cos_special",
        "Cos",
        7,
        (x("n", 9, scale=4.0, special=True),),
        dims=_B,
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case("cos_empty", "Cos", 22, (x(0, 3),)),
    Case(
        "cos_wide",
        "Cos",
        22,
        (x(4, 6, gen="uniform", low=-50, high=50),),
        rtol=1e-5,
        atol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "tan_special",
        "Tan",
        7,
        (x("n", 8, scale=2.0, special=True),),
        dims=_B,
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "tan_wide",
        "Tan",
        22,
        (x(3, 5, gen="uniform", low=-10, high=10),),
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "asin_special",
        "Asin",
        7,
        (x("n", 9, gen="uniform", low=-1.2, high=1.2, special=True),),
        dims=_B,
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "asin_inside",
        "Asin",
        22,
        (x(4, 5, gen="uniform", low=-1, high=1),),
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "acos_special",
        "Acos",
        7,
        (x("n", 9, gen="uniform", low=-1.2, high=1.2, special=True),),
        dims=_B,
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "acos_edges",
        "Acos",
        22,
        (v([-1.0, 1.0, 0.0, -0.0, 0.5, -0.5, 1.0000001], "float32"),),
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "atan_special",
        "Atan",
        7,
        (x("n", 9, scale=10.0, special=True),),
        dims=_B,
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case("atan_wide", "Atan", 22, (x(2, 3, 4, scale=100.0),), rtol=1e-5, note=TRANSCENDENTAL),
    # hyperbolic functions and their inverses
    Case(
        "sinh_special",
        "Sinh",
        9,
        (x("n", 9, scale=3.0, special=True),),
        dims=_B,
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "sinh_overflow",
        "Sinh",
        22,
        (x(4, 6, gen="uniform", low=-95, high=95),),
        rtol=1e-5,
        note=TRANSCENDENTAL + "; sinh overflows to +-inf beyond 89.4",
    ),
    Case(
        "cosh_special",
        "Cosh",
        9,
        (x("n", 9, scale=3.0, special=True),),
        dims=_B,
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "cosh_overflow",
        "Cosh",
        22,
        (x(4, 6, gen="uniform", low=-95, high=95),),
        rtol=1e-5,
        note=TRANSCENDENTAL + "; cosh overflows to inf beyond 89.4",
    ),
    Case(
        "asinh_special",
        "Asinh",
        9,
        (x("n", 9, scale=20.0, special=True),),
        dims=_B,
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case("asinh_wide", "Asinh", 22, (x(3, 4, scale=1e3),), rtol=1e-5, note=TRANSCENDENTAL),
    Case(
        "acosh_special",
        "Acosh",
        9,
        (x("n", 9, gen="uniform", low=0.5, high=30, special=True),),
        dims=_B,
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),  # below 1: NaN
    Case(
        "acosh_edges",
        "Acosh",
        22,
        (v([1.0, 1.5, 1e30, 0.999, 2.0], "float32"),),
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "atanh_special",
        "Atanh",
        9,
        (x("n", 9, gen="uniform", low=-1.1, high=1.1, special=True),),
        dims=_B,
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),  # +-1: +-inf; beyond: NaN
    Case(
        "atanh_edges",
        "Atanh",
        22,
        (v([-1.0, 1.0, 0.0, -0.0, 0.999, -0.5], "float32"),),
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    # rounding (exact)
    Case("ceil_special", "Ceil", 13, (x("n", 9, scale=10.0, special=True),), dims=_B),
    Case("ceil_float64_opset7", "Ceil", 7, (x(3, 5, dtype="float64", scale=1e3),)),
    Case("floor_special", "Floor", 13, (x("n", 9, scale=10.0, special=True),), dims=_B),
    Case("floor_float16_opset7", "Floor", 7, (x(2, 6, dtype="float16", scale=50.0),)),
    Case(
        "round_halves",
        "Round",
        11,
        (v([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 3.5000002, 1e30, -0.0], "float32"),),
    ),
    Case("round_special", "Round", 22, (x("n", 3, 4, scale=10.0, special=True),), dims=_B),
    Case("round_float64", "Round", 11, (x(4, 5, dtype="float64", scale=100.0),)),
    Case("sign_special", "Sign", 13, (x("n", 8, special=True),), dims=_B),  # Sign(NaN) is NaN
    Case("sign_int32_opset9", "Sign", 9, (x(3, 5, dtype="int32", gen="int", low=-3, high=3),)),
    Case("sign_uint8", "Sign", 13, (x(7, dtype="uint8", gen="int", low=0, high=4),)),
    # classification (exact)
    Case("isnan_special", "IsNaN", 13, (x("n", 7, special=True),), dims=_B),
    Case("isnan_float16_opset9", "IsNaN", 9, (x(2, 5, dtype="float16", special=True),)),
    Case("isnan_float64", "IsNaN", 20, (x(3, 4, dtype="float64", special=True),)),
    Case("isinf_both", "IsInf", 10, (x("n", 7, special=True),), dims=_B),
    Case(
        "isinf_positive_only", "IsInf", 20, (x(3, 6, special=True),), attrs={"detect_negative": 0}
    ),
    Case(
        "isinf_negative_only_float64",
        "IsInf",
        10,
        (x(2, 8, dtype="float64", special=True),),
        attrs={"detect_positive": 0},
    ),
    Case(
        "isinf_neither",
        "IsInf",
        20,
        (x(2, 5, special=True),),
        attrs={"detect_positive": 0, "detect_negative": 0},
    ),
    # Mod: fmod=0 on integers has the divisor's sign (Python's %), fmod=1 the dividend's (C's fmod)
    Case(
        "mod_int32_mixed_sign",
        "Mod",
        13,
        (
            x("n", 6, dtype="int32", gen="int", low=-50, high=50),
            x(6, dtype="int32", gen="nonzero", low=-9, high=9),
        ),
        dims=_B,
    ),
    Case(
        "mod_int64_broadcast_opset10",
        "Mod",
        10,
        (
            x(3, 1, dtype="int64", gen="int", low=-(10**12), high=10**12),
            w(4, dtype="int64", gen="nonzero", low=-1000, high=1000),
        ),
    ),
    Case(
        "mod_uint8",
        "Mod",
        13,
        (
            x(4, 5, dtype="uint8", gen="int", low=0, high=255),
            x(5, dtype="uint8", gen="nonzero", low=1, high=20),
        ),
    ),
    Case(
        "mod_int8_scalar_divisor",
        "Mod",
        13,
        (x(3, 6, dtype="int8", gen="int", low=-128, high=127), c(-7, "int8")),
    ),
    Case(
        "mod_fmod_int64",
        "Mod",
        13,
        (
            x("n", 6, dtype="int64", gen="int", low=-100, high=100),
            x(6, dtype="int64", gen="nonzero", low=-9, high=9),
        ),
        attrs={"fmod": 1},
        dims=_B,
    ),
    Case(
        "mod_fmod_float32_special",
        "Mod",
        13,
        (x("n", 8, scale=10.0, special=True), x(8, scale=3.0, special=True)),
        attrs={"fmod": 1},
        dims=_B,
    ),  # inf % y, x % 0: NaN; x % inf: x
    Case(
        "mod_fmod_float64_broadcast",
        "Mod",
        10,
        (
            x(2, 3, 4, dtype="float64", scale=100.0),
            x(4, dtype="float64", gen="uniform", low=0.5, high=7),
        ),
        attrs={"fmod": 1},
    ),
    Case(
        "mod_fmod_float16",
        "Mod",
        13,
        (
            x(3, 4, dtype="float16", scale=20.0),
            x(4, dtype="float16", gen="uniform", low=-5, high=5),
        ),
        attrs={"fmod": 1},
    ),
    # Pow with mixed element types: the result has the base's type
    Case(
        "pow_float32_int32_exponent",
        "Pow",
        15,
        (
            x("n", 6, gen="uniform", low=-3, high=3, special=True),
            x(6, dtype="int32", gen="int", low=-4, high=5),
        ),
        dims=_B,
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "pow_float64_int64_exponent",
        "Pow",
        12,
        (
            x(3, 4, dtype="float64", gen="uniform", low=-2, high=2),
            x(4, dtype="int64", gen="int", low=-6, high=6),
        ),
    ),
    Case(
        "pow_int64_float32_exponent",
        "Pow",
        15,
        (x(3, 5, dtype="int64", gen="int", low=0, high=9), x(5, gen="uniform", low=0, high=3)),
        rtol=1e-5,
        note=TRANSCENDENTAL,
    ),
    Case(
        "pow_int32_negative_exponent",
        "Pow",
        13,
        (v([2, 1, -1, -1, 3, 0, -2, 5], "int32"), v([-1, -5, -3, -2, 0, 3, 3, 2], "int32")),
    ),
    Case(
        "pow_int64_int32_exponent",
        "Pow",
        15,
        (
            x(4, 3, dtype="int64", gen="int", low=-6, high=6),
            x(3, dtype="int32", gen="int", low=0, high=9),
        ),
    ),
    Case(
        "pow_int32_square_initializer",
        "Pow",
        15,
        (x("n", 5, dtype="int32", gen="int", low=-1000, high=1000), c(2, "int32")),
        dims=_B,
    ),
    # BitShift on unsigned integers (shifts of the bit width or more give 0)
    Case(
        "bitshift_left_uint8",
        "BitShift",
        11,
        (
            x("n", 6, dtype="uint8", gen="int", low=0, high=255),
            x(6, dtype="uint8", gen="int", low=0, high=7),
        ),
        attrs={"direction": "LEFT"},
        dims=_B,
    ),
    Case(
        "bitshift_right_uint32_broadcast",
        "BitShift",
        11,
        (
            x(3, 1, dtype="uint32", gen="int", low=0, high=2**32 - 1),
            x(5, dtype="uint32", gen="int", low=0, high=31),
        ),
        attrs={"direction": "RIGHT"},
    ),
    Case(
        "bitshift_left_uint64_wide",
        "BitShift",
        11,
        (
            x(2, 8, dtype="uint64", gen="int", low=0, high=2**40),
            v([0, 1, 63, 64, 65, 200, 7, 30], "uint64"),
        ),
        attrs={"direction": "LEFT"},
    ),
    Case(
        "bitshift_right_uint8_scalar",
        "BitShift",
        11,
        (x(4, 4, dtype="uint8", gen="int", low=0, high=255), c(3, "uint8")),
        attrs={"direction": "RIGHT"},
    ),
    # bitwise operators
    Case(
        "bitwise_and_int32_broadcast",
        "BitwiseAnd",
        18,
        (
            x("n", 1, 5, dtype="int32", gen="int", low=-1000, high=1000),
            x(3, 5, dtype="int32", gen="int", low=-1000, high=1000),
        ),
        dims=_B,
    ),
    Case(
        "bitwise_and_uint8",
        "BitwiseAnd",
        18,
        (x(4, 4, dtype="uint8", gen="int", low=0, high=255), c(0x5A, "uint8")),
    ),
    Case(
        "bitwise_or_int64",
        "BitwiseOr",
        18,
        (
            x("n", 6, dtype="int64", gen="int", low=-(10**15), high=10**15),
            x(6, dtype="int64", gen="int", low=-(10**15), high=10**15),
        ),
        dims=_B,
    ),
    Case(
        "bitwise_or_uint16_empty",
        "BitwiseOr",
        18,
        (
            x(0, 3, dtype="uint16", gen="int", low=0, high=65535),
            x(3, dtype="uint16", gen="int", low=0, high=65535),
        ),
    ),
    Case(
        "bitwise_xor_int8",
        "BitwiseXor",
        18,
        (
            x(3, 4, dtype="int8", gen="int", low=-128, high=127),
            x(1, 4, dtype="int8", gen="int", low=-128, high=127),
        ),
    ),
    Case(
        "bitwise_xor_uint32",
        "BitwiseXor",
        18,
        (
            x("n", 5, dtype="uint32", gen="int", low=0, high=2**32 - 1),
            x(5, dtype="uint32", gen="int", low=0, high=2**32 - 1),
        ),
        dims=_B,
    ),
    Case(
        "bitwise_not_int16",
        "BitwiseNot",
        18,
        (x("n", 7, dtype="int16", gen="int", low=-32768, high=32767),),
        dims=_B,
    ),
    Case(
        "bitwise_not_uint64",
        "BitwiseNot",
        18,
        (x(3, 4, dtype="uint64", gen="int", low=0, high=2**62),),
    ),
    # logic and ordered comparisons
    Case(
        "xor_broadcast",
        "Xor",
        7,
        (x("n", 1, 4, dtype="bool", gen="bool"), x(3, 4, dtype="bool", gen="bool")),
        dims=_B,
    ),
    Case(
        "xor_empty", "Xor", 7, (x(0, 2, dtype="bool", gen="bool"), x(2, dtype="bool", gen="bool"))
    ),
    Case(
        "greater_or_equal_special",
        "GreaterOrEqual",
        16,
        (x("n", 8, special=True), x(8, special=True)),
        dims=_B,
    ),
    Case(
        "greater_or_equal_int64_opset12",
        "GreaterOrEqual",
        12,
        (
            x(3, 1, dtype="int64", gen="int", low=0, high=4),
            x(5, dtype="int64", gen="int", low=0, high=4),
        ),
    ),
    Case(
        "greater_or_equal_float64_scalar",
        "GreaterOrEqual",
        16,
        (x(2, 5, dtype="float64", special=True), c(0.0, "float64")),
    ),
    Case(
        "less_or_equal_special",
        "LessOrEqual",
        16,
        (x("n", 8, special=True), x(1, 8, special=True)),
        dims=_B,
    ),
    Case(
        "less_or_equal_int32_opset12",
        "LessOrEqual",
        12,
        (
            x(4, 3, dtype="int32", gen="int", low=0, high=3),
            x(3, dtype="int32", gen="int", low=0, high=3),
        ),
    ),
    # variadic Sum, Mean, Max, Min: one to many inputs, broadcasting; Max and Min propagate NaN
    Case("sum_three_broadcast", "Sum", 13, (x("n", 1, 4, special="inf"), x(3, 1), x(4)), dims=_B),
    Case("sum_one_input", "Sum", 8, (x(2, 3, special=True),)),
    Case(
        "sum_float64_opset7", "Sum", 7, (x(3, 4, dtype="float64"), x(3, 4, dtype="float64"))
    ),  # before 8: equal shapes
    Case("mean_three_broadcast", "Mean", 13, (x("n", 3, 1), x(1, 5), x("n", 1, 5)), dims=_B),
    Case("mean_one_input", "Mean", 8, (x(4, special=True),)),
    Case(
        "mean_four_opset7", "Mean", 7, (x(2, 3), x(2, 3), x(2, 3), x(2, 3))
    ),  # before 8: equal shapes
    Case(
        "max_nan_broadcast",
        "Max",
        13,
        (x("n", 1, 6, special=True), x(4, 6, special=True), x(6)),
        dims=_B,
    ),
    Case("max_one_input", "Max", 8, (x(3, 2, special=True),)),
    Case(
        "max_int32_opset12",
        "Max",
        12,
        (x(3, 4, dtype="int32", gen="int"), x(4, dtype="int32", gen="int")),
    ),
    Case(
        "max_uint8_empty",
        "Max",
        13,
        (
            x(0, 3, dtype="uint8", gen="int", low=0, high=255),
            x(3, dtype="uint8", gen="int", low=0, high=255),
        ),
    ),
    Case(
        "min_nan_broadcast",
        "Min",
        13,
        (x("n", 5, special=True), x(1, 5, special=True), x(2, 1, 1)),
        dims=_B,
    ),
    Case("min_opset7", "Min", 7, (x(4, 3, special=True), x(4, 3))),
    Case(
        "min_int64_four",
        "Min",
        13,
        (
            x(2, 3, dtype="int64", gen="int", low=-(10**15), high=10**15),
            x(3, dtype="int64", gen="int"),
            c(0, "int64"),
            x(2, 1, dtype="int64", gen="int"),
        ),
    ),
]
