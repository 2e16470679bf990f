"""Elementwise operators: arithmetic, math functions, comparisons and logic, activations.

Rules are data where they can be: a table maps each simple operator to its numpy ufunc. Exactness:
IEEE + - * / and sqrt are correctly rounded on every machine, comparisons and selections are exact;
numpy's transcendental functions are not (their bits vary with SIMD level and numpy version): the
exact variant calls their declared exact twins, and refuses the functions that have none.
Floor, ceil, rint and fmod are exact (fmod's remainder is always representable); Mod's floored
form adds the divisor once to fmod's remainder, a correctly rounded addition.
"""

from __future__ import annotations

import numpy as np

import runtime_support
from onemodel_compile.errors import CompileError
from onemodel_compile.ops import pyir
from onemodel_compile.ops.common import is_float, leaky_selection
from onemodel_compile.ops.node import NodeView, Operand
from onemodel_compile.ops.pyir import binop, call, method, scalar
from onemodel_compile.ops.registry import emitter
from runtime_support._kernels import properties

# op type -> (function, exact by itself, since); see below for the exact twins
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
    def emit(view: NodeView) -> pyir.Expr:
        return call(function, view.inputs[0])

    return emit


def _binary_rule(function: str):
    def emit(view: NodeView) -> pyir.Expr:
        return call(function, view.inputs[0], view.inputs[1])

    return emit


def _exact_twin(function: str) -> str | None:
    """The function's declared exact twin (runtime_support._kernels), or None."""
    return properties(function, {"np": np, "rt": runtime_support}).exact_twin


# A function that is not exact itself but declares an exact twin (numpy's in _kernels.NUMPY, a
# kernel's with @kernel) is exact through it: the exact variant calls the library's own
# polynomials of runtime_support/exact_math.py and exact_trig.py, computed in float64 from + - * /
# and rounded once to the input's type (each kernel's docstring gives its order of operations).
# Exp, Log, Tanh, Erf, Sigmoid, Sinh, Cosh, Asinh, Acosh, Atanh, Sin, Cos, Tan, Asin, Acos and
# Atan have one; a new twin needs no line here.
for _op, (_function, _exact, _since) in UNARY.items():
    _exact = _exact or _exact_twin(_function) is not None
    emitter(_op, since=_since, exact=_exact)(_unary_rule(_function))
for _op, (_function, _exact, _since) in BINARY.items():
    emitter(_op, since=_since, exact=_exact)(_binary_rule(_function))


@emitter("Div", since=7, exact=True)
def div(view: NodeView) -> pyir.Expr:
    A, B = view.inputs[:2]
    if is_float(A.dtype):
        return call("np.divide", A, B)
    return call("rt.div_integer", A, B)  # ONNX integer division truncates toward zero


def _is_integer(dtype) -> bool:
    return dtype is not None and np.dtype(dtype).kind in "iu"


def _pow_exactness(view: NodeView) -> str | None:
    X, Y = view.inputs[:2]
    if is_float(X.dtype) or is_float(Y.dtype):
        return "of float values has no exact implementation (numpy's pow differs across machines)"
    return None


@emitter("Pow", since=7, exact=_pow_exactness)
def pow_(view: NodeView) -> pyir.Expr:
    X, Y = view.inputs[:2]
    if _is_integer(X.dtype) and _is_integer(Y.dtype):
        non_negative = Y.dtype.kind == "u" or (Y.const is not None and (Y.const >= 0).all())
        if X.dtype != Y.dtype or not non_negative:
            return call("rt.pow_integer", X, Y)  # numpy refuses negative integer exponents
    if X.dtype == Y.dtype:
        return call("np.power", X, Y)
    return method(call("np.power", X, Y), "astype", X.dtype)  # Pow's result has the base's type


@emitter("Pow", since=7, variant="exact", exact=True)
def pow_exact(view: NodeView) -> pyir.Expr:
    """A float base or exponent through rt.exact_pow: exp(y * log|x|) in float64 (for a float64
    base with a double-length logarithm) with IEEE's special cases, rounded once to the base's
    type; an integer base's power is truncated to its type, the same on every machine. Integer
    base and exponent through rt.pow_integer (integer arithmetic, wrapping as np.power's does;
    np.power's exactness depends on its operands' types, so it has no twin). Not a twin: the fast
    rule casts a power of mixed types afterwards, exact_pow rounds once to the base's type."""
    X, Y = view.inputs[:2]
    if is_float(X.dtype) or is_float(Y.dtype):
        return call("rt.exact_pow", X, Y)
    return call("rt.pow_integer", X, Y)


@emitter("Mod", since=10, exact=True)
def mod(view: NodeView) -> pyir.Expr:
    A, B = view.inputs[:2]
    if view.attr("fmod"):
        return call("np.fmod", A, B)  # truncated quotient: the sign of A, as C's fmod
    return call("np.mod", A, B)  # floored quotient: the sign of B, as Python's %


@emitter("BitShift", since=11, exact=True)
def bit_shift(view: NodeView) -> pyir.Expr:
    # numpy shifts by a negative amount or by the bit width or more give 0 (-1 for a negative X
    # shifted right), and a signed left shift drops the bits shifted past the sign: as opset 28.
    X, Y = view.inputs[:2]
    direction = view.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise CompileError(f"{view.node.label}: direction must be LEFT or RIGHT, not {direction!r}")
    function = "np.left_shift" if direction == "LEFT" else "np.right_shift"
    return call(function, X, Y)


@emitter("IsInf", since=10, exact=True)
def is_inf(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    positive, negative = view.attr("detect_positive"), view.attr("detect_negative")
    if positive and negative:
        return call("np.isinf", X)
    if positive:
        return call("np.isposinf", X)
    if negative:
        return call("np.isneginf", X)
    return call("np.zeros_like", X, dtype=np.bool_)


# --- variadic operators: one to many inputs, multidirectional broadcasting ----------------------
# One input is passed through, as Identity (the module never writes into an array it computed).


def _variadic(view: NodeView) -> list:
    return [operand for operand in view.inputs if operand is not None]


def _sum(operands) -> pyir.Expr:
    """The operands added left to right."""
    total = pyir.expr(operands[0])
    for operand in operands[1:]:
        total = binop("+", total, operand)
    return total


@emitter("Sum", since=6, exact=True)
def sum_(view: NodeView) -> pyir.Expr:
    return _sum(_variadic(view))


@emitter("Mean", since=6, exact=True)
def mean(view: NodeView) -> pyir.Expr:
    operands = _variadic(view)
    if len(operands) == 1:
        return pyir.expr(operands[0])
    return binop("/", _sum(operands), scalar(len(operands), view.inputs[0].dtype))


@emitter("Max", "Min", since=6, exact=True)
def extreme(view: NodeView) -> pyir.Expr:
    # np.maximum and np.minimum propagate NaN, as onnxruntime and the backend data do.
    function = "np.maximum" if view.op_type == "Max" else "np.minimum"
    first, *others = _variadic(view)
    result = pyir.expr(first)
    for operand in others:
        result = call(function, result, operand)
    return result


@emitter("Relu", since=6, exact=False)
def relu(view: NodeView) -> pyir.Expr:
    """rt.relu (a clip, about three times faster than np.maximum with a scalar; -0 stays -0)
    for float32 and float64, np.maximum for the other types (np.clip turns bfloat16 into
    float32)."""
    X = view.inputs[0]
    if X.dtype in (np.float32, np.float64):
        return call("rt.relu", X)
    return relu_maximum(view)


# exact: a selection; -0 becomes +0 as the maximum with +0
@emitter("Relu", since=6, variant="exact", exact=True)
def relu_maximum(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    return call("np.maximum", X, scalar(0, X.dtype))


@emitter("LeakyRelu", since=6, exact=False)
def leaky_relu(view: NodeView) -> pyir.Expr:
    """common.leaky_selection (alpha is an attribute, so always known), else np.where."""
    X = view.inputs[0]
    alpha = scalar(view.attr("alpha"), X.dtype)
    selection = leaky_selection(X, alpha, view.attr("alpha"))
    return leaky_relu_where(view) if selection is None else selection


# exact: a selection of x or a correctly rounded product, -0 kept as -0
@emitter("LeakyRelu", since=6, variant="exact", exact=True)
def leaky_relu_where(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    alpha = scalar(view.attr("alpha"), X.dtype)
    return call("np.where", binop("<", X, 0), binop("*", X, alpha), X)


@emitter("Clip", since=6, until=10, exact=True)
def clip_attributes(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    low, high = scalar(view.attr("min"), X.dtype), scalar(view.attr("max"), X.dtype)
    return call("np.clip", X, low, high)


def _type_limit(dtype, upper: bool):
    """numeric_limits<T>::max() or ::lowest() of `dtype` (finite for floats)."""
    if is_float(dtype):
        import ml_dtypes  # knows bfloat16 as well as numpy's float types

        floats = ml_dtypes.finfo(dtype)
        return floats.max if upper else floats.min
    integers = np.iinfo(dtype)
    return integers.max if upper else integers.min


@emitter("Clip", since=11, exact=True)
def clip(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    low: Operand | pyir.Expr | None = view.input(1)
    high: Operand | pyir.Expr | None = view.input(2)
    if (low is None or high is None) and X.dtype is not None:
        # An absent bound is the type's lowest()/max() (finite), not infinity: -inf clips to
        # lowest(). As onnxruntime; the backend data never clip an infinity.
        low = scalar(_type_limit(X.dtype, False), X.dtype) if low is None else low
        high = scalar(_type_limit(X.dtype, True), X.dtype) if high is None else high
    if low is not None and high is not None:
        return call("np.clip", X, low, high)
    if low is not None:
        return call("np.maximum", X, low)
    if high is not None:
        return call("np.minimum", X, high)
    return method(X, "copy")


# Exact through the kernel's twin rt.exact_gelu: float64 arithmetic with the library's erf or
# tanh, rounded once.
@emitter("Gelu", since=20, exact=True)
def gelu(view: NodeView) -> pyir.Expr:
    return call("rt.gelu", view.inputs[0], approximate=view.attr("approximate"))


@emitter("Where", since=9, exact=True)
def where(view: NodeView) -> pyir.Expr:
    condition, X, Y = view.inputs[:3]
    return call("np.where", condition, X, Y)
