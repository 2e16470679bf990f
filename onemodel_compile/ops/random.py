"""Random generators: RandomUniform, RandomUniformLike, RandomNormal, RandomNormalLike, Bernoulli,
Multinomial.
Kernels in runtime_support/random.py, which says how seeds and exactness work.

Never folded at compile time: a generator's values belong to each call. RandomNormal's kernel has
an exact twin (Box-Muller with the library's log and cos); the others are exact as they are.
"""

from __future__ import annotations

import numpy as np

from onemodel_compile import ir
from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import attr, call
from onemodel_compile.ops.registry import emitter


def _dtype(view: NodeView, like=None) -> np.dtype:
    """The `dtype` attribute's type; for the *Like forms without one, the input's; else float32."""
    code = view.attr("dtype")
    if code:
        return ir.element_dtype(code, view.node.label)
    if like is not None and like.dtype is not None:
        return like.dtype
    return np.dtype(np.float32)


def _generator_rule(kernel: str, first: str, second: str, like: bool):
    """`rt.<kernel>(shape, first=, second=, dtype=, seed=)`: the shape is the attribute's, or the
    input's for the *Like forms."""

    def emit(view: NodeView) -> pyir.Expr:
        source = view.inputs[0] if like else None
        shape = attr(source, "shape") if like else tuple(view.attr("shape"))
        keywords = {first: view.attr(first), second: view.attr(second)}
        return call(
            f"rt.{kernel}", shape, **keywords, dtype=_dtype(view, source), seed=view.attr("seed")
        )

    return emit


for op_type, like in (("RandomUniform", False), ("RandomUniformLike", True)):
    emitter(op_type, since=1, exact=True, foldable=False)(
        _generator_rule("random_uniform", "low", "high", like)
    )
for op_type, like in (("RandomNormal", False), ("RandomNormalLike", True)):
    emitter(op_type, since=1, exact=True, foldable=False)(
        _generator_rule("random_normal", "mean", "scale", like)
    )


@emitter("Bernoulli", since=15, exact=True, foldable=False)
def bernoulli(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    return call("rt.bernoulli", X, dtype=_dtype(view, X), seed=view.attr("seed"))


@emitter("Multinomial", since=7, exact=True, foldable=False)
def multinomial(view: NodeView) -> pyir.Expr:
    """Draws of class indices (int32 unless `dtype` says int64); the kernel's exact twin takes
    the library's exp, so seeded draws are the same on every machine."""
    code = view.attr("dtype")
    dtype = ir.element_dtype(code, view.node.label) if code else np.dtype(np.int32)
    return call(
        "rt.multinomial",
        view.inputs[0],
        sample_size=view.attr("sample_size", 1),
        dtype=dtype,
        seed=view.attr("seed"),
    )
