"""Training: BatchNormalization in training mode (the rule ops/normalization.py hands over to) and
the optimizers of the ai.onnx.preview.training domain, Adagrad, Adam and Momentum. Kernels in
runtime_support/training.py.

All exact (the kernels' docstrings say how). A model whose only opset import is
ai.onnx.preview.training (the backend's optimizer cases) loads with no default-domain opset, as
ai.onnx.ml models do.
"""

from __future__ import annotations

from onemodel_compile.errors import UnsupportedError
from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import call
from onemodel_compile.ops.registry import emitter

TRAINING = "ai.onnx.preview.training"


def batch_normalization_training(view: NodeView) -> pyir.Expr:
    """Opset 14 on: (Y, running_mean, running_var), the batch's own statistics normalizing X.
    Before 14 the training outputs were (mean, var, saved_mean, saved_var), of unsettled
    meaning: refused."""
    if view.opset < 14:
        raise UnsupportedError(
            f"{view.node.label}: BatchNormalization in training mode before opset 14 "
            f"(outputs mean, var, saved_mean, saved_var) is not supported"
        )
    return call(
        "rt.batch_normalization_training",
        *view.inputs[:5],
        epsilon=view.attr("epsilon", 1e-5),
        momentum=view.attr("momentum", 0.9),
        outputs=len(view.outputs),
    )


def _optimizer_rule(kernel: str, **defaults):
    """`rt.<kernel>(R, T, tensors..., attribute=value...)`, the attributes with their defaults."""

    def emit(view: NodeView) -> pyir.Expr:
        keywords = {name: view.attr(name, default) for name, default in defaults.items()}
        return call(f"rt.{kernel}", *view.inputs, **keywords)

    return emit


emitter("Adagrad", domain=TRAINING, since=1, exact=True)(
    _optimizer_rule("adagrad", decay_factor=0.0, epsilon=0.0, norm_coefficient=0.0)
)
emitter("Momentum", domain=TRAINING, since=1, exact=True)(
    _optimizer_rule("momentum", alpha=None, beta=None, mode=None, norm_coefficient=None)
)
emitter("Adam", domain=TRAINING, since=1, exact=True)(
    _optimizer_rule(
        "adam",
        alpha=0.9,
        beta=0.999,
        epsilon=0.0,
        norm_coefficient=0.0,
        norm_coefficient_post=0.0,
    )
)
