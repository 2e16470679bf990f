"""Convolutions: Conv, ConvTranspose, Col2Im. Kernels in runtime_support/conv.py.

Conv and the one- and two-dimensional ConvTranspose sum through BLAS, in an order that depends on
the build and the CPU: not exact. ConvTranspose with three spatial axes runs direct loops in a
fixed order (docs/contract.md, settled semantics) and Col2Im only adds in a fixed order: exact. The exact
variant runs Conv through rt.exact_conv and ConvTranspose of every rank through the direct loops.
"""

from __future__ import annotations

from onemodel_compile.ops.code import py
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter
from onemodel_compile.ops.spatial import (
    auto_pad_of,
    kernel_shape_of,
    keywords_source,
    window_keywords,
)


def _operands(view: NodeView) -> str:
    X, W, B = view.inputs[0], view.inputs[1], view.input(2)
    return f"{X}, {W}" + (f", {B}" if B is not None else "")


@emitter("Conv", since=1, exact=False)
def conv(view: NodeView) -> str:
    keywords = keywords_source(window_keywords(view, kernel_shape_of(view)))
    return f"rt.conv({_operands(view)}, {keywords}, group={view.attr('group', 1)})"


@emitter("Conv", since=1, variant="exact", exact=True)
def conv_exact(view: NodeView) -> str:
    """rt.exact_conv, the arguments of rt.conv: the windows and filters as matrices multiplied by
    exact_matmul in float64, the bias added in float64, rounded once to X's type."""
    keywords = keywords_source(window_keywords(view, kernel_shape_of(view)))
    return f"rt.exact_conv({_operands(view)}, {keywords}, group={view.attr('group', 1)})"


def _conv_transpose_exactness(view: NodeView) -> str | None:
    if view.inputs[1].rank == 5:
        return None
    return "with fewer than three spatial axes sums through a matrix product"


def _ints(values) -> str:
    return py(tuple(int(v) for v in values))


def _conv_transpose_keywords(view: NodeView) -> list[str]:
    """The ONNX attributes as given (the kernel settles the geometry, so spatial dims may be
    known only at run time); pads only where they count (no output_shape, no auto_pad)."""
    keywords = []
    auto_pad = auto_pad_of(view)
    output_shape = view.attr("output_shape")
    if output_shape is not None:
        keywords.append(f"output_shape={_ints(output_shape)}")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        keywords.append(f"auto_pad={py(auto_pad)}")
    elif output_shape is None and auto_pad == "NOTSET" and any(view.attr("pads") or ()):
        keywords.append(f"pads={_ints(view.attr('pads'))}")
    for name in ("strides", "dilations"):
        values = view.attr(name)
        if values is not None and any(v != 1 for v in values):
            keywords.append(f"{name}={_ints(values)}")
    if any(view.attr("output_padding") or ()):
        keywords.append(f"output_padding={_ints(view.attr('output_padding'))}")
    if view.attr("group", 1) != 1:
        keywords.append(f"group={view.attr('group')}")
    return keywords


@emitter("ConvTranspose", since=1, exact=_conv_transpose_exactness)
def conv_transpose(view: NodeView) -> str:
    return f"rt.conv_transpose({', '.join([_operands(view)] + _conv_transpose_keywords(view))})"


@emitter("ConvTranspose", since=1, variant="exact", exact=True)
def conv_transpose_exact(view: NodeView) -> str:
    """rt.exact_conv_transpose: direct loops in a fixed order for every spatial rank."""
    operands = [_operands(view)] + _conv_transpose_keywords(view)
    return f"rt.exact_conv_transpose({', '.join(operands)})"


def _shape_operand(view: NodeView, index: int) -> str:
    """A shape input as a tuple literal when known at compile time, else its value."""
    value = view.const(index)
    return str(view.inputs[index]) if value is None else _ints(value.reshape(-1))


@emitter("Col2Im", since=18, exact=True)
def col2im(view: NodeView) -> str:
    keywords = [
        f"{name}={_ints(view.attr(name))}"
        for name in ("dilations", "pads", "strides")
        if view.attr(name) is not None
    ]
    operands = [str(view.inputs[0]), _shape_operand(view, 1), _shape_operand(view, 2)]
    return f"rt.col2im({', '.join(operands + keywords)})"
