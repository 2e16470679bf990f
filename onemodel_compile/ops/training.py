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
        epsilon=view.attr("epsilon"),
        momentum=view.attr("momentum"),
        outputs=len(view.outputs),
    )


def _optimizer_rule(kernel: str, *attributes: str):
    """`rt.<kernel>(R, T, tensors..., attribute=value...)`; the schema fills absent attributes."""

    def emit(view: NodeView) -> pyir.Expr:
        keywords = {name: view.attr(name) for name in attributes}
        return call(f"rt.{kernel}", *view.inputs, **keywords)

    return emit


emitter("Adagrad", domain=TRAINING, since=1, exact=True)(
    _optimizer_rule("adagrad", "decay_factor", "epsilon", "norm_coefficient")
)
emitter("Momentum", domain=TRAINING, since=1, exact=True)(
    _optimizer_rule("momentum", "alpha", "beta", "mode", "norm_coefficient")
)
emitter("Adam", domain=TRAINING, since=1, exact=True)(
    _optimizer_rule("adam", "alpha", "beta", "epsilon", "norm_coefficient", "norm_coefficient_post")
)
