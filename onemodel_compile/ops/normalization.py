"""Normalizations (inference). Their means and variances are float reductions: not exact."""

from __future__ import annotations

from onemodel_compile.errors import UnsupportedError
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter


@emitter("BatchNormalization", since=7, exact=False)
def batch_normalization(view: NodeView) -> str:
    training = view.attr("training_mode", 0)
    if training or len([o for o in view.outputs if o is not None]) > 1:
        raise UnsupportedError(
            f"{view.node.label}: BatchNormalization in training mode is not supported"
        )
    X, scale, B, mean, var = view.inputs[:5]
    return f"rt.batch_normalization({X}, {scale}, {B}, {mean}, {var}, epsilon={view.attr('epsilon')!r})"


@emitter("LayerNormalization", since=17, exact=False)
def layer_normalization(view: NodeView) -> str:
    X, scale, B = view.inputs[0], view.inputs[1], view.input(2)
    bias = f", {B}" if B is not None else ""
    call = (
        f"rt.layer_normalization({X}, {scale}{bias}, axis={view.attr('axis')}, "
        f"epsilon={view.attr('epsilon')!r}, stash_type={view.attr('stash_type')})"
    )
    count = len(view.outputs)
    return f"{call}[0]" if count == 1 else call if count == 3 else f"{call}[:{count}]"
