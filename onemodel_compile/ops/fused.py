"""Operators of the project's own domain, `onemodel.fused`: what the fast variant's rewrites
(optimize.py) turn groups of the model's nodes into. They are never in a model; their provenance
comment names the model's nodes they replace.

- ScaleShift(X, factor, shift) = X * factor + shift in X's type: an inference
  BatchNormalization whose constant statistics became a per-channel factor and shift at compile
  time (factor and shift shaped to broadcast against X).
- ConvActivation(X, W[, B]) = a Conv and the activation after it (Relu, Clip with constant
  bounds, HardSwish, or SiLU as Sigmoid and Mul), the activation applied in place to the Conv's
  result in the same kernel call.
"""

from __future__ import annotations

from onemodel_compile.ops.conv import conv_arguments
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import Expr, call
from onemodel_compile.ops.registry import emitter

DOMAIN = "onemodel.fused"


# Exact as arithmetic (one multiplication and one addition per element), but only the fast
# variant makes it: its factor and shift round differently from the BatchNormalization it replaces.
@emitter("ScaleShift", since=1, domain=DOMAIN, exact=True)
def scale_shift(view: NodeView) -> Expr:
    return call("rt.scale_shift", *view.inputs[:3])


# Not exact: the convolution sums through BLAS (as Conv's fast kernel).
@emitter("ConvActivation", since=1, domain=DOMAIN, exact=False)
def conv_activation(view: NodeView) -> Expr:
    """ConvActivation(X, W[, B]) = the Conv (the model's Conv attributes) followed by
    `activation` ("relu", "clip", "hard_swish" or "silu"; Clip's bounds as the floats `low`,
    `high`, either absent): rt.conv_activation applies it in place to the Conv's new result."""
    operands, keywords = conv_arguments(view)
    bounds = {name: view.attr(name) for name in ("low", "high") if view.attr(name) is not None}
    return call(
        "rt.conv_activation", *operands, activation=view.attr("activation"), **bounds, **keywords
    )
