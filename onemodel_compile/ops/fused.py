"""Operators of the project's own domain, `onemodel.fused`: what the fast variant's rewrites
(optimize.py, its RULES) turn groups of the model's nodes into. They are never in a model; their
provenance comment names the model's nodes they replace. Only the fast variant makes them: each
rounds differently from the nodes it replaces, whatever its kernel's own exactness.

- ScaleShift(X, factor, shift; low, high) = X * factor + shift in X's type, clamped to
  [low, high] when given: an inference BatchNormalization whose constant statistics became a
  per-channel factor and shift at compile time (factor and shift shaped to broadcast against X),
  with the per-channel affine nodes after it folded in and a Relu (low 0) or Clip after them.
- LayerNorm(X, scale[, bias]; axis, epsilon, stash_type): a decomposed LayerNorm (ReduceMean,
  Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add), computed as LayerNormalization-17 is.
- RMSNorm(X, scale; axis, epsilon, stash_type): x / sqrt(mean(x**2) + epsilon) * scale as llama
  and T5 exports write it, computed as RMSNormalization-23 is.
- Gelu(X; approximate): the five to eight nodes of the Erf or tanh form of Gelu, computed as
  Gelu-20 is.
- Attention(Q, K, V[, mask, keep, fill]; scale): softmax(where(keep, Q @ K * scale, fill) + mask)
  @ V over the last two axes, K already transposed (..., D, T), as exporters write attention
  before opset 23 (GPT-2's causal Where, BERT's additive mask); one kernel for all the heads
  (rt.attention_heads).
- HardSwish(X) = x * clip(x + 3, 0, 6) / 6 (or x * HardSigmoid(x) with alpha 1/6, beta 1/2)
  as exporters write HardSwish before opset 14, computed by HardSwish-14's fast kernel.
- ConvActivation(X, W[, B]) = a Conv and the activation after it (Relu, Clip with constant
  bounds, HardSwish, or SiLU as Sigmoid and Mul), the activation applied in place to the Conv's
  result in the same kernel call.
"""

from __future__ import annotations

from onemodel_compile.ops import elementwise, normalization
from onemodel_compile.ops.conv import conv_arguments
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import Expr, call
from onemodel_compile.ops.registry import emitter

DOMAIN = "onemodel.fused"


# Exact as arithmetic (one multiplication and one addition per element), but only the fast
# variant makes it: its factor and shift round differently from the BatchNormalization it replaces.
@emitter("ScaleShift", since=1, domain=DOMAIN, exact=True)
def scale_shift(view: NodeView) -> Expr:
    bounds = {name: view.attr(name) for name in ("low", "high") if view.attr(name) is not None}
    return call("rt.scale_shift", *view.inputs[:3], **bounds)


# The next three compute what the standard operator does, with its attributes: its emitter.
@emitter("LayerNorm", since=1, domain=DOMAIN, exact=False)
def layer_norm(view: NodeView):
    return normalization.layer_normalization(view)


@emitter("RMSNorm", since=1, domain=DOMAIN, exact=False)
def rms_norm(view: NodeView) -> Expr:
    return normalization.rms_normalization(view)


@emitter("Gelu", since=1, domain=DOMAIN, exact=False)
def gelu(view: NodeView) -> Expr:
    return elementwise.gelu(view)


@emitter("Attention", since=1, domain=DOMAIN, exact=False)
def attention(view: NodeView) -> Expr:
    scale = view.attr("scale")
    keywords: dict[str, object] = {} if scale is None else {"scale": float(scale)}
    Q, K, V = view.inputs[:3]
    for position, name in ((3, "mask"), (4, "keep"), (5, "fill")):
        if view.input(position) is not None:
            keywords[name] = view.input(position)
    return call("rt.attention_heads", Q, K, V, **keywords)


@emitter("HardSwish", since=1, domain=DOMAIN, exact=False)
def hard_swish(view: NodeView) -> Expr:
    return call("rt.hard_swish", view.inputs[0])


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
