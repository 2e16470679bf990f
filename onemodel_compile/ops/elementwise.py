"""Elementwise operators: arithmetic, math functions, comparisons and logic, activations.

Rules are data where they can be: a table maps each simple operator to its numpy ufunc. Exactness:
IEEE + - * / and sqrt are correctly rounded on every machine, comparisons and selections are exact;
numpy's transcendental functions are not (their bits vary with SIMD level and numpy version).
"""

from __future__ import annotations

import numpy as np

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
    "Exp": ("np.exp", False, 6),
    "Log": ("np.log", False, 6),
    "Tanh": ("np.tanh", False, 6),
    "Erf": ("rt.erf", False, 9),
    "Sigmoid": ("rt.sigmoid", False, 6),
    "Not": ("np.logical_not", True, 1),
}
BINARY = {
    "Add": ("np.add", True),
    "Sub": ("np.subtract", True),
    "Mul": ("np.multiply", True),
    "Equal": ("np.equal", True),
    "Less": ("np.less", True),
    "Greater": ("np.greater", True),
    "And": ("np.logical_and", True),
    "Or": ("np.logical_or", True),
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
for _op, (_function, _exact) in BINARY.items():
    emitter(_op, since=7, exact=_exact)(_binary_rule(_function))


@emitter("Div", since=7, exact=True)
def div(view: NodeView) -> str:
    A, B = view.inputs[:2]
    if is_float(A.dtype):
        return f"np.divide({A}, {B})"
    return f"rt.div_integer({A}, {B})"  # ONNX integer division truncates toward zero


@emitter("Pow", since=7, exact=False)
def pow_(view: NodeView) -> str:
    X, Y = view.inputs[:2]
    if X.dtype == Y.dtype:
        return f"np.power({X}, {Y})"
    return f"np.power({X}, {Y}).astype({dtype_expr(X.dtype)})"  # Pow's result has the base's type


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


@emitter("Where", since=9, exact=True)
def where(view: NodeView) -> str:
    condition, X, Y = view.inputs[:3]
    return f"np.where({condition}, {X}, {Y})"
