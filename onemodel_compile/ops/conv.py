"""Convolutions: Conv, ConvTranspose, Col2Im. Kernels in runtime_support/conv.py.

Conv and the one- and two-dimensional ConvTranspose sum through BLAS, in an order that depends on
the build and the CPU: not exact. ConvTranspose with three spatial axes runs direct loops in a
fixed order (docs/contract.md, settled semantics) and Col2Im only adds in a fixed order: exact. The
exact variant calls the kernels' exact twins: Conv's rt.exact_conv and ConvTranspose's direct
loops for every rank.
"""

from __future__ import annotations

from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import call
from onemodel_compile.ops.registry import emitter
from onemodel_compile.ops.spatial import (
    auto_pad_of,
    kernel_shape_of,
    window_keywords,
)


def _operands(view: NodeView) -> list:
    X, W, B = view.inputs[0], view.inputs[1], view.input(2)
    return [X, W] + ([B] if B is not None else [])


def _window_keywords(view: NodeView) -> dict:
    return dict(window_keywords(view, kernel_shape_of(view)))


def conv_arguments(view: NodeView) -> tuple[list, dict]:
    """rt.conv's operands and keywords for a Conv (or a node with Conv's inputs and attributes:
    the fused ConvActivation of ops/fused.py); `bias_column` where optimize.py's
    conv-bias-column put the bias into the filters."""
    keywords = {**_window_keywords(view), "group": view.attr("group")}
    if view.attr("bias_column"):
        keywords["bias_column"] = True
    return _operands(view), keywords


# Exact through the kernel's twin rt.exact_conv (the arguments of rt.conv): the windows and
# filters as matrices multiplied by exact_matmul in float64, the bias added in float64, rounded
# once to X's type.
@emitter("Conv", since=1, exact=True)
def conv(view: NodeView) -> pyir.Expr:
    operands, keywords = conv_arguments(view)
    return call("rt.conv", *operands, **keywords)


def _ints(values) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _conv_transpose_keywords(view: NodeView) -> dict:
    """The ONNX attributes as given (the kernel settles the geometry, so spatial dims may be
    known only at run time); pads only where they count (no output_shape, no auto_pad)."""
    keywords: dict[str, object] = {}
    auto_pad = auto_pad_of(view)
    output_shape = view.attr("output_shape")
    if output_shape is not None:
        keywords["output_shape"] = _ints(output_shape)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        keywords["auto_pad"] = auto_pad
    elif output_shape is None and auto_pad == "NOTSET" and any(view.attr("pads") or ()):
        keywords["pads"] = _ints(view.attr("pads"))
    for name in ("strides", "dilations"):
        values = view.attr(name)
        if values is not None and any(v != 1 for v in values):
            keywords[name] = _ints(values)
    if any(view.attr("output_padding") or ()):
        keywords["output_padding"] = _ints(view.attr("output_padding"))
    if view.attr("group") != 1:
        keywords["group"] = view.attr("group")
    return keywords


# Exact through the kernel's twin rt.exact_conv_transpose: direct loops in a fixed order for
# every spatial rank (the fast kernel takes them for three spatial axes only).
@emitter("ConvTranspose", since=1, exact=True)
def conv_transpose(view: NodeView) -> pyir.Expr:
    return call("rt.conv_transpose", *_operands(view), **_conv_transpose_keywords(view))


def _shape_operand(view: NodeView, index: int):
    """A shape input as a tuple literal when known at compile time, else its value."""
    value = view.const(index)
    return view.inputs[index] if value is None else _ints(value.reshape(-1))


@emitter("Col2Im", since=18, exact=True)
def col2im(view: NodeView) -> pyir.Expr:
    keywords = {
        name: _ints(view.attr(name))
        for name in ("dilations", "pads", "strides")
        if view.attr(name) is not None
    }
    operands = [view.inputs[0], _shape_operand(view, 1), _shape_operand(view, 2)]
    return call("rt.col2im", *operands, **keywords)


def _deform_conv_keywords(view: NodeView) -> dict:
    """The geometry as given (the kernel takes the defaults along every spatial axis of the
    run-time input, so no rank need be known), group and offset_group where not 1."""
    keywords = {
        name: _ints(view.attr(name))
        for name in ("pads", "strides", "dilations")
        if view.attr(name) is not None
    }
    for name in ("group", "offset_group"):
        if view.attr(name, 1) != 1:
            keywords[name] = view.attr(name)
    return keywords


# Exact through the kernel's twin rt.exact_deform_conv: the windows sampled in float64 by
# fixed-order elementwise steps, the filters applied by exact_matmul's integer-exact products.
@emitter("DeformConv", since=19, exact=True)
def deform_conv(view: NodeView) -> pyir.Expr:
    # (imported here: this section is appended apart from the rest of the module, on its own)
    from onemodel_compile.errors import CompileError
    from onemodel_compile.ops.common import optional_arguments

    kernel_shape = view.attr("kernel_shape")
    W = view.inputs[1]
    if (
        kernel_shape is not None
        and W.shape is not None
        and tuple(W.shape[2:]) != tuple(kernel_shape)
    ):
        raise CompileError(
            f"{view.node.label}: kernel_shape {list(kernel_shape)} differs from the weights' "
            f"spatial dims {list(W.shape[2:])}"
        )
    arguments, optional = optional_arguments(view, {3: "B", 4: "mask"})
    return call("rt.deform_conv", *arguments, **optional, **_deform_conv_keywords(view))


# Exact through the kernel's twin rt.exact_causal_conv_with_state (exact_conv, exact_sigmoid).
# Its own rule, rather than onnx's function body: onnx builds that body only for inputs of known
# rank, and an unknown rank must never stop a compile (the kernel reads everything off the arrays).
@emitter("CausalConvWithState", since=27, exact=True)
def causal_conv_with_state(view: NodeView) -> pyir.Expr:
    from onemodel_compile.errors import CompileError
    from onemodel_compile.ops.common import optional_arguments

    activation = view.attr("activation", "none")
    if activation not in ("none", "silu", "swish"):
        raise CompileError(
            f"{view.node.label}: unknown activation {activation!r} (none, silu or swish)"
        )
    arguments, optional = optional_arguments(view, {2: "bias", 3: "past_state"})
    keywords = {"activation": activation} if activation != "none" else {}
    results = call("rt.causal_conv_with_state", *arguments, **optional, **keywords)
    return results if len(view.outputs) == 2 else pyir.index(results, 0)
