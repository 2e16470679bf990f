"""Operators of the project's own domain, `onemodel.fused`: what the fast variant's rewrites
(optimize.py) turn groups of the model's nodes into. They are never in a model; their provenance
comment names the model's nodes they replace.

- ScaleShift(X, factor, shift) = X * factor + shift in X's type: an inference
  BatchNormalization whose constant statistics became a per-channel factor and shift at compile
  time (factor and shift shaped to broadcast against X).
"""

from __future__ import annotations

from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import Expr, call
from onemodel_compile.ops.registry import emitter

DOMAIN = "onemodel.fused"


# Exact as arithmetic (one multiplication and one addition per element), but only the fast
# variant makes it: its factor and shift round differently from the BatchNormalization it replaces.
@emitter("ScaleShift", since=1, domain=DOMAIN, exact=True)
def scale_shift(view: NodeView) -> Expr:
    return call("rt.scale_shift", *view.inputs[:3])
