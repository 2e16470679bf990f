"""Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul,
ConvInteger, QLinearConv. Kernels in runtime_support/quantization.py.

All exact: IEEE divisions and products in a fixed order, half-to-even rounding, saturation by
comparison, and integer sums carried in float64 where every partial sum is an integer below 2**53
(see the kernels' module).

In scope: 8- and 16-bit integer targets (and int32 inputs of DequantizeLinear), per-tensor and
per-axis scales. Out of scope and refused naming the node: blocked quantization (`block_size` > 0
or scales of rank 2 and more) and the float8, float4 and 4-/2-bit integer types. `saturate` only
concerns float8 targets, so it has no effect here.
"""

from __future__ import annotations

import numpy as np

from onemodel_compile import ir
from onemodel_compile.errors import CompileError, UnsupportedError
from onemodel_compile.ops.code import dtype_expr
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter
from onemodel_compile.ops.spatial import kernel_shape_of, window_keywords

QUANTIZED = ("uint8", "int8", "uint16", "int16")


def _refuse_blocked(view: NodeView, scale_index: int) -> None:
    block_size = view.attr("block_size") or 0
    scale = view.input(scale_index)
    if block_size > 0 or (scale.rank is not None and scale.rank > 1):
        raise UnsupportedError(
            f"{view.node.label}: blocked quantization (block_size {block_size}, scale of rank "
            f"{scale.rank}) is not supported"
        )


def _axis_keyword(view: NodeView) -> str:
    """`axis=` when the opset has the attribute (13 on) and a scale could be per axis."""
    axis = view.attr("axis")
    return "" if axis is None else f", axis={axis}"


@emitter("QuantizeLinear", since=10, exact=True)
def quantize_linear(view: NodeView) -> str:
    X, scale, zero_point = view.inputs[0], view.inputs[1], view.input(2)
    _refuse_blocked(view, 1)
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
    args = [str(X), str(scale)] + ([str(zero_point)] if zero_point is not None else [])
    keywords = f"{_axis_keyword(view)}, output_dtype={dtype_expr(target)}"
    precision = view.attr("precision") or 0
    if precision:
        keywords += f", precision={dtype_expr(ir.element_dtype(precision, view.node.label))}"
    return f"rt.quantize_linear({', '.join(args)}{keywords})"


@emitter("DequantizeLinear", since=10, exact=True)
def dequantize_linear(view: NodeView) -> str:
    X, scale, zero_point = view.inputs[0], view.inputs[1], view.input(2)
    _refuse_blocked(view, 1)
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
    args = [str(X), str(scale)] + ([str(zero_point)] if zero_point is not None else [])
    return (
        f"rt.dequantize_linear({', '.join(args)}{_axis_keyword(view)}, "
        f"output_dtype={dtype_expr(target)})"
    )


@emitter("DynamicQuantizeLinear", since=11, exact=True)
def dynamic_quantize_linear(view: NodeView) -> str:
    return f"rt.dynamic_quantize_linear({view.inputs[0]})"


@emitter("QLinearMatMul", since=10, exact=True)
def qlinear_matmul(view: NodeView) -> str:
    return f"rt.qlinear_matmul({', '.join(str(operand) for operand in view.inputs)})"


def _conv_keywords(view: NodeView, weights: int) -> str:
    """The geometry as Conv's (ops.spatial.window_keywords: settled at compile time when it can
    be, else at run time from the weights and input), and the group."""
    keywords = window_keywords(view, kernel_shape_of(view, weights), weights)
    return f"{keywords}, group={view.attr('group', 1)}"


def _arguments(view: NodeView) -> list[str]:
    """The node's inputs as positional arguments, an absent optional one as None (trailing
    absent ones dropped)."""
    args = [str(operand) if operand is not None else "None" for operand in view.inputs]
    while args and args[-1] == "None":
        args.pop()
    return args


@emitter("ConvInteger", since=10, exact=True)
def conv_integer(view: NodeView) -> str:
    return f"rt.conv_integer({', '.join(_arguments(view))}, {_conv_keywords(view, 1)})"


@emitter("QLinearConv", since=10, exact=True)
def qlinear_conv(view: NodeView) -> str:
    return f"rt.qlinear_conv({', '.join(_arguments(view))}, {_conv_keywords(view, 3)})"
