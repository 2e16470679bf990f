"""Elementwise operators: arithmetic, math functions, comparisons and logic, activations.

Rules are data where they can be: a table maps each simple operator to its numpy ufunc. Exactness:
IEEE + - * / and sqrt are correctly rounded on every machine, comparisons and selections are exact;
numpy's transcendental functions are not (their bits vary with SIMD level and numpy version).
Floor, ceil, rint and fmod are exact (fmod's remainder is always representable); Mod's floored
form adds the divisor once to fmod's remainder, a correctly rounded addition.
"""

from __future__ import annotations

import numpy as np

from onemodel_compile.errors import CompileError
from onemodel_compile.ops.code import dtype_expr, scalar
from onemodel_compile.ops.common import is_float
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter

# op type -> (numpy function, exact, since)
UNARY = {
    "Abs": ("np.abs", True, 6),
    "Neg": ("np.negative", True, 6),
    "Sqrt": ("np.sqrt", True, 6),
    "Reciprocal": ("np.reciprocal", True, 6),
    "Ceil": ("np.ceil", True, 6),
    "Floor": ("np.floor", True, 6),
    "Round": ("np.rint", True, 11),  # halves to even, as rint
    "Sign": ("np.sign", True, 9),
    "IsNaN": ("np.isnan", True, 9),
    "Exp": ("np.exp", False, 6),
    "Log": ("np.log", False, 6),
    "Tanh": ("np.tanh", False, 6),
    "Erf": ("rt.erf", False, 9),
    "Sigmoid": ("rt.sigmoid", False, 6),
    "Sin": ("np.sin", False, 7),
    "Cos": ("np.cos", False, 7),
    "Tan": ("np.tan", False, 7),
    "Asin": ("np.arcsin", False, 7),
    "Acos": ("np.arccos", False, 7),
    "Atan": ("np.arctan", False, 7),
    "Sinh": ("np.sinh", False, 9),
    "Cosh": ("np.cosh", False, 9),
    "Asinh": ("np.arcsinh", False, 9),
    "Acosh": ("np.arccosh", False, 9),
    "Atanh": ("np.arctanh", False, 9),
    "Not": ("np.logical_not", True, 1),
    "BitwiseNot": ("np.invert", True, 18),
}
BINARY = {
    "Add": ("np.add", True, 7),
    "Sub": ("np.subtract", True, 7),
    "Mul": ("np.multiply", True, 7),
    "Equal": ("np.equal", True, 7),
    "Less": ("np.less", True, 7),
    "Greater": ("np.greater", True, 7),
    "LessOrEqual": ("np.less_equal", True, 12),
    "GreaterOrEqual": ("np.greater_equal", True, 12),
    "And": ("np.logical_and", True, 7),
    "Or": ("np.logical_or", True, 7),
    "Xor": ("np.logical_xor", True, 7),
    "BitwiseAnd": ("np.bitwise_and", True, 18),
    "BitwiseOr": ("np.bitwise_or", True, 18),
    "BitwiseXor": ("np.bitwise_xor", True, 18),
}


def _unary_rule(function: str):
    def emit(view: NodeView) -> str:
        return f"{function}({view.inputs[0]})"

    return emit


def _binary_rule(function: str):
    def emit(view: NodeView) -> str:
        return f"{function}({view.inputs[0]}, {view.inputs[1]})"

    return emit


for _op, (_function, _exact, _since) in UNARY.items():
    emitter(_op, since=_since, exact=_exact)(_unary_rule(_function))
for _op, (_function, _exact, _since) in BINARY.items():
    emitter(_op, since=_since, exact=_exact)(_binary_rule(_function))

# The exact variant's math functions: the library's own polynomials of
# runtime_support/exact_math.py and exact_trig.py, computed in float64 from + - * / and rounded once
# to the input's type (each kernel's docstring gives its order of operations).
EXACT_UNARY = {
    "Exp": "rt.exact_exp",
    "Log": "rt.exact_log",
    "Tanh": "rt.exact_tanh",
    "Erf": "rt.exact_erf",
    "Sigmoid": "rt.exact_sigmoid",
    "Sinh": "rt.exact_sinh",
    "Cosh": "rt.exact_cosh",
    "Asinh": "rt.exact_asinh",
    "Acosh": "rt.exact_acosh",
    "Atanh": "rt.exact_atanh",
    "Sin": "rt.exact_sin",
    "Cos": "rt.exact_cos",
    "Tan": "rt.exact_tan",
    "Asin": "rt.exact_asin",
    "Acos": "rt.exact_acos",
    "Atan": "rt.exact_atan",
}
for _op, _function in EXACT_UNARY.items():
    emitter(_op, since=UNARY[_op][2], variant="exact", exact=True)(_unary_rule(_function))


@emitter("Div", since=7, exact=True)
def div(view: NodeView) -> str:
    A, B = view.inputs[:2]
    if is_float(A.dtype):
        return f"np.divide({A}, {B})"
    return f"rt.div_integer({A}, {B})"  # ONNX integer division truncates toward zero


def _is_integer(dtype) -> bool:
    return dtype is not None and np.dtype(dtype).kind in "iu"


def _pow_exactness(view: NodeView) -> str | None:
    X, Y = view.inputs[:2]
    if is_float(X.dtype) or is_float(Y.dtype):
        return "of float values has no exact implementation (numpy's pow differs across machines)"
    return None


@emitter("Pow", since=7, exact=_pow_exactness)
def pow_(view: NodeView) -> str:
    X, Y = view.inputs[:2]
    if _is_integer(X.dtype) and _is_integer(Y.dtype):
        non_negative = Y.dtype.kind == "u" or (Y.const is not None and (Y.const >= 0).all())
        if X.dtype != Y.dtype or not non_negative:
            return f"rt.pow_integer({X}, {Y})"  # numpy refuses negative integer exponents
    if X.dtype == Y.dtype:
        return f"np.power({X}, {Y})"
    return f"np.power({X}, {Y}).astype({dtype_expr(X.dtype)})"  # Pow's result has the base's type


@emitter("Pow", since=7, variant="exact", exact=True)
def pow_exact(view: NodeView) -> str:
    """A float base or exponent through rt.exact_pow: exp(y * log|x|) in float64 (for a float64
    base with a double-length logarithm) with IEEE's special cases, rounded once to the base's
    type; an integer base's power is truncated to its type, the same on every machine. Integer
    base and exponent as in the fast variant (integer arithmetic)."""
    X, Y = view.inputs[:2]
    if is_float(X.dtype) or is_float(Y.dtype):
        return f"rt.exact_pow({X}, {Y})"
    return pow_(view)


@emitter("Mod", since=10, exact=True)
def mod(view: NodeView) -> str:
    A, B = view.inputs[:2]
    if view.attr("fmod"):
        return f"np.fmod({A}, {B})"  # truncated quotient: the sign of A, as C's fmod
    return f"np.mod({A}, {B})"  # floored quotient: the sign of B, as Python's %


@emitter("BitShift", since=11, exact=True)
def bit_shift(view: NodeView) -> str:
    # numpy shifts by a negative amount or by the bit width or more give 0 (-1 for a negative X
    # shifted right), and a signed left shift drops the bits shifted past the sign: as opset 28.
    X, Y = view.inputs[:2]
    direction = view.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise CompileError(f"{view.node.label}: direction must be LEFT or RIGHT, not {direction!r}")
    function = "np.left_shift" if direction == "LEFT" else "np.right_shift"
    return f"{function}({X}, {Y})"


@emitter("IsInf", since=10, exact=True)
def is_inf(view: NodeView) -> str:
    X = view.inputs[0]
    positive, negative = view.attr("detect_positive"), view.attr("detect_negative")
    if positive and negative:
        return f"np.isinf({X})"
    if positive:
        return f"np.isposinf({X})"
    if negative:
        return f"np.isneginf({X})"
    return f"np.zeros_like({X}, dtype=np.bool_)"


# --- variadic operators: one to many inputs, multidirectional broadcasting ----------------------
# One input is passed through, as Identity (the module never writes into an array it computed).


def _variadic(view: NodeView) -> list[str]:
    return [str(operand) for operand in view.inputs if operand is not None]


@emitter("Sum", since=6, exact=True)
def sum_(view: NodeView) -> str:
    return " + ".join(_variadic(view))  # added left to right


@emitter("Mean", since=6, exact=True)
def mean(view: NodeView) -> str:
    operands = _variadic(view)
    if len(operands) == 1:
        return operands[0]
    return f"({' + '.join(operands)}) / {scalar(len(operands), view.inputs[0].dtype)}"


@emitter("Max", "Min", since=6, exact=True)
def extreme(view: NodeView) -> str:
    # np.maximum and np.minimum propagate NaN, as onnxruntime and the backend data do.
    function = "np.maximum" if view.op_type == "Max" else "np.minimum"
    first, *others = _variadic(view)
    for operand in others:
        first = f"{function}({first}, {operand})"
    return first


@emitter("Relu", since=6, exact=True)
def relu(view: NodeView) -> str:
    X = view.inputs[0]
    return f"np.maximum({X}, {scalar(0, X.dtype)})"


@emitter("LeakyRelu", since=6, exact=True)
def leaky_relu(view: NodeView) -> str:
    X = view.inputs[0]
    alpha = scalar(view.attr("alpha"), X.dtype)
    return f"np.where({X} < 0, {X} * {alpha}, {X})"


@emitter("Clip", since=6, until=10, exact=True)
def clip_attributes(view: NodeView) -> str:
    X = view.inputs[0]
    low, high = scalar(view.attr("min"), X.dtype), scalar(view.attr("max"), X.dtype)
    return f"np.clip({X}, {low}, {high})"


def _type_limit(dtype, upper: bool):
    """numeric_limits<T>::max() or ::lowest() of `dtype` (finite for floats)."""
    if is_float(dtype):
        import ml_dtypes  # knows bfloat16 as well as numpy's float types

        info = ml_dtypes.finfo(dtype)
    else:
        info = np.iinfo(dtype)
    return info.max if upper else info.min


@emitter("Clip", since=11, exact=True)
def clip(view: NodeView) -> str:
    X, low, high = view.inputs[0], view.input(1), view.input(2)
    if (low is None or high is None) and X.dtype is not None:
        # An absent bound is the type's lowest()/max() (finite), not infinity: -inf clips to
        # lowest(). As onnxruntime; the backend data never clip an infinity.
        low = scalar(_type_limit(X.dtype, False), X.dtype) if low is None else low
        high = scalar(_type_limit(X.dtype, True), X.dtype) if high is None else high
    if low is not None and high is not None:
        return f"np.clip({X}, {low}, {high})"
    if low is not None:
        return f"np.maximum({X}, {low})"
    if high is not None:
        return f"np.minimum({X}, {high})"
    return f"{X}.copy()"


@emitter("Gelu", since=20, exact=False)
def gelu(view: NodeView) -> str:
    return f"rt.gelu({view.inputs[0]}, approximate={view.attr('approximate')!r})"


@emitter("Gelu", since=20, variant="exact", exact=True)
def gelu_exact(view: NodeView) -> str:
    """rt.exact_gelu: float64 arithmetic with the library's erf or tanh, rounded once."""
    return f"rt.exact_gelu({view.inputs[0]}, approximate={view.attr('approximate')!r})"


@emitter("Where", since=9, exact=True)
def where(view: NodeView) -> str:
    condition, X, Y = view.inputs[:3]
    return f"np.where({condition}, {X}, {Y})"
