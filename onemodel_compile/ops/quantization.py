"""Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul,
ConvInteger, QLinearConv. Kernels in runtime_support/quantization.py.

All exact: IEEE divisions and products in a fixed order, half-to-even rounding, saturation by
comparison, and integer sums carried in float64 where every partial sum is an integer below 2**53
(see the kernels' module).

Targets and sources: 8- and 16-bit integers (and int32 inputs of DequantizeLinear), 4- and 2-bit
integers, float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ) and float4 E2M1; per-tensor, per-axis and
blocked scales (`block_size`). `saturate` concerns the float8 targets.
"""

from __future__ import annotations

import numpy as np

from onemodel_compile import ir
from onemodel_compile.errors import CompileError, UnsupportedError
from onemodel_compile.ops import pyir
from onemodel_compile.ops.common import optional_arguments
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import call
from onemodel_compile.ops.registry import emitter
from onemodel_compile.ops.spatial import kernel_shape_of, window_keywords

QUANTIZED = (
    "uint8",
    "int8",
    "uint16",
    "int16",
    "uint4",
    "int4",
    "uint2",
    "int2",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float4_e2m1fn",
)


def _axis_keywords(view: NodeView) -> dict:
    """`axis=` when the opset has the attribute (13 on) and a scale could be per axis;
    `block_size=` when the quantization is blocked (21 on)."""
    axis, block_size = view.attr("axis"), view.attr("block_size") or 0
    keywords = {} if axis is None else {"axis": axis}
    return {**keywords, "block_size": block_size} if block_size > 0 else keywords


@emitter("QuantizeLinear", since=10, exact=True)
def quantize_linear(view: NodeView) -> pyir.Expr:
    zero_point = view.input(2)
    code = view.attr("output_dtype") or 0
    if code:
        target = ir.element_dtype(code, view.node.label)
    elif zero_point is not None and zero_point.dtype is not None:
        target = zero_point.dtype
    elif zero_point is None:
        target = np.dtype(np.uint8)
    else:
        raise CompileError(f"{view.node.label}: the type of y_zero_point is unknown")
    if target.name not in QUANTIZED:
        raise UnsupportedError(
            f"{view.node.label}: quantization to {target.name} is not supported "
            f"(only {', '.join(QUANTIZED)})"
        )
    keywords = {**_axis_keywords(view), "output_dtype": target}
    if target.name.startswith("float8") and not view.attr("saturate"):
        keywords["saturate"] = False
    precision = view.attr("precision") or 0
    if precision:
        keywords["precision"] = ir.element_dtype(precision, view.node.label)
    args, zero_point_keyword = optional_arguments(view, {2: "y_zero_point"})
    return call("rt.quantize_linear", *args, **zero_point_keyword, **keywords)


@emitter("DequantizeLinear", since=10, exact=True)
def dequantize_linear(view: NodeView) -> pyir.Expr:
    X, scale = view.inputs[0], view.inputs[1]
    if X.dtype is not None and X.dtype.name not in QUANTIZED + ("int32",):
        raise UnsupportedError(
            f"{view.node.label}: dequantization of {X.dtype.name} is not supported"
        )
    code = view.attr("output_dtype") or 0
    if code:
        target = ir.element_dtype(code, view.node.label)
    elif scale.dtype is not None:
        target = scale.dtype
    else:
        raise CompileError(f"{view.node.label}: the type of x_scale is unknown")
    args, zero_point_keyword = optional_arguments(view, {2: "x_zero_point"})
    keywords = {**zero_point_keyword, **_axis_keywords(view), "output_dtype": target}
    return call("rt.dequantize_linear", *args, **keywords)


@emitter("DynamicQuantizeLinear", since=11, exact=True)
def dynamic_quantize_linear(view: NodeView) -> pyir.Expr:
    return call("rt.dynamic_quantize_linear", view.inputs[0])


@emitter("QLinearMatMul", since=10, exact=True)
def qlinear_matmul(view: NodeView) -> pyir.Expr:
    args, _ = optional_arguments(view, {})
    return call("rt.qlinear_matmul", *args)


def _conv_keywords(view: NodeView, weights: int) -> dict:
    """The geometry as Conv's (ops.spatial.window_keywords: settled at compile time when it can
    be, else at run time from the weights and input), and the group."""
    keywords = window_keywords(view, kernel_shape_of(view, weights), weights)
    return {**keywords, "group": view.attr("group")}


@emitter("ConvInteger", since=10, exact=True)
def conv_integer(view: NodeView) -> pyir.Expr:
    args, keywords = optional_arguments(view, {2: "x_zero_point", 3: "w_zero_point"})
    return call("rt.conv_integer", *args, **keywords, **_conv_keywords(view, 1))


@emitter("QLinearConv", since=10, exact=True)
def qlinear_conv(view: NodeView) -> pyir.Expr:
    args, keywords = optional_arguments(view, {8: "B"})
    return call("rt.qlinear_conv", *args, **keywords, **_conv_keywords(view, 3))
