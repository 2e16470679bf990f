"""Activation functions: the exponential linear units, the hard and soft variants, Swish and its
gated form, Shrink, PRelu and Hardmax.

Exactness: the piecewise-linear activations (comparisons, selections and one IEEE operation per
step in a fixed order) are exact; those built on numpy's exp, log, tanh or sigmoid are not, and
the exact variant overrides them with kernels built on the library's own
(runtime_support/exact_math.py). Activations numpy has no function for run as kernels of
runtime_support/activation.py, the others inline.
"""

from __future__ import annotations

from onemodel_compile.errors import CompileError
from onemodel_compile.ops.code import py
from onemodel_compile.ops.common import along_axis_rule, leaky_selection
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import binop, call, method, scalar
from onemodel_compile.ops.registry import emitter


def _kernel_rule(kernel: str, *attributes: str):
    """`rt.<kernel>(inputs..., attribute=value...)`."""

    def emit(view: NodeView):
        keywords = {name: view.attr(name) for name in attributes}
        return call(f"rt.{kernel}", *view.inputs, **keywords)

    return emit


# Exact through the kernels' exact twins (float64 arithmetic in a fixed order with the library's
# own exp-family polynomials, rounded once; see each kernel's docstring).
emitter("Elu", since=6, exact=True)(_kernel_rule("elu", "alpha"))
emitter("Celu", since=12, exact=True)(_kernel_rule("celu", "alpha"))
emitter("Selu", since=6, exact=True)(_kernel_rule("selu", "alpha", "gamma"))
emitter("Mish", since=18, exact=True)(_kernel_rule("mish"))
emitter("Swish", since=24, exact=True)(_kernel_rule("swish", "alpha"))
emitter("SwiGLU", since=28, exact=True)(_kernel_rule("swiglu", "alpha"))
emitter("Softplus", since=1, variant="exact", exact=True)(_kernel_rule("exact_softplus"))
emitter("Shrink", since=9, exact=True)(_kernel_rule("shrink", "bias", "lambd"))
emitter("Hardmax", since=1, exact=True)(along_axis_rule("hardmax"))


@emitter("Softplus", since=1, exact=False)
def softplus(view: NodeView):
    X = view.inputs[0]
    return call("np.logaddexp", X, scalar(0, X.dtype))  # log(exp(x) + exp(0)) without overflow


@emitter("Softsign", since=1, exact=True)
def softsign(view: NodeView):
    X = view.inputs[0]
    return binop("/", X, binop("+", scalar(1, X.dtype), call("np.abs", X)))


@emitter("ThresholdedRelu", since=10, exact=True)
def thresholded_relu(view: NodeView):
    X = view.inputs[0]
    above = binop(">", X, scalar(view.attr("alpha"), X.dtype))
    return call("np.where", above, X, scalar(0, X.dtype))


def _clamp_unit(value, dtype):
    """min(max(value, 0), 1). Not np.clip, which turns bfloat16 into float32."""
    return call("np.minimum", call("np.maximum", value, scalar(0, dtype)), scalar(1, dtype))


@emitter("HardSigmoid", since=6, exact=True)
def hard_sigmoid(view: NodeView):
    X = view.inputs[0]
    alpha, beta = scalar(view.attr("alpha"), X.dtype), scalar(view.attr("beta"), X.dtype)
    return _clamp_unit(binop("+", binop("*", X, alpha), beta), X.dtype)


@emitter("HardSwish", since=14, exact=True)
def hard_swish(view: NodeView):
    X = view.inputs[0]
    six, half = scalar(6, X.dtype), scalar(0.5, X.dtype)
    return binop("*", X, _clamp_unit(binop("+", binop("/", X, six), half), X.dtype))


# The fast variant: one kernel (four passes, one temporary) that may write into its dying operand,
# a Conv's result (it takes `out=`); the exact variant keeps the inline formula above.
emitter("HardSwish", since=14, variant="fast", exact=False)(_kernel_rule("hard_swish"))


def _prelu_slope(view: NodeView):
    """The slope, shaped to broadcast to X. ONNX broadcasts it unidirectionally (numpy's rule,
    the result keeps X's shape). A 1-D slope that does not broadcast but whose length is the size
    of exactly one axis of X is laid along that axis (per-channel slopes of old exporters, as the
    onnx reference implementation accepts them)."""
    X, slope = view.inputs[:2]
    shapes = (X.shape, slope.shape)
    if any(s is None or not all(isinstance(d, int) for d in s) for s in shapes):
        return slope
    x_shape, slope_shape = shapes
    if len(slope_shape) <= len(x_shape) and all(
        s in (1, d) for s, d in zip(reversed(slope_shape), reversed(x_shape))
    ):
        return slope
    if len(slope_shape) == 1 and list(x_shape).count(slope_shape[0]) == 1:
        axis = list(x_shape).index(slope_shape[0])
        shape = tuple(d if i == axis else 1 for i, d in enumerate(x_shape))
        return method(slope, "reshape", shape)
    raise CompileError(
        f"{view.node.label}: slope of shape {py(tuple(slope_shape))} does not broadcast to the "
        f"input's shape {py(tuple(x_shape))}"
    )


@emitter("PRelu", since=7, exact=False)
def prelu(view: NodeView):
    """leaky_selection where the slope is a constant it takes, else prelu_where's."""
    X = view.inputs[0]
    selection = leaky_selection(X, _prelu_slope(view), view.const(1))
    return prelu_where(view) if selection is None else selection


# exact: a selection of x or a correctly rounded product, -0 kept as -0
@emitter("PRelu", since=7, variant="exact", exact=True)
def prelu_where(view: NodeView):
    X = view.inputs[0]
    below = binop("<", X, scalar(0, X.dtype))
    return call("np.where", below, binop("*", X, _prelu_slope(view)), X)


# Exact through the kernels' twins rt.exact_softmax and rt.exact_log_softmax, with the library's
# own exp and log (order of operations in their docstrings: exact max, difference, exp, float64
# sum, one division or one log and subtraction, one rounding).
emitter("Softmax", since=1, exact=True)(along_axis_rule("softmax"))
emitter("LogSoftmax", since=1, exact=True)(along_axis_rule("log_softmax"))
