"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (kernels of runtime_support/loss.py).

NegativeLogLikelihoodLoss is exact: a lookup, a negation, one product per element and, for the sum
and mean, a correctly rounded sum (math.fsum) and one division. SoftmaxCrossEntropyLoss takes a
log-softmax first (exp and log): not exact, refused by the exact variant (the docs/contract.md seed list).
"""

from __future__ import annotations

from onemodel_compile.errors import CompileError
from onemodel_compile.ops.code import py
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter

REDUCTIONS = ("none", "sum", "mean")


def _call(kernel: str, view: NodeView) -> str:
    reduction = view.attr("reduction")
    if reduction not in REDUCTIONS:
        raise CompileError(f"{view.node.label}: unknown reduction {py(reduction)}")
    operands = [str(view.inputs[0]), str(view.inputs[1])]
    if view.input(2) is not None:
        operands.append(str(view.input(2)))
    if view.attr("ignore_index") is not None:
        operands.append(f"ignore_index={view.attr('ignore_index')}")
    operands.append(f"reduction={py(reduction)}")
    return f"rt.{kernel}({', '.join(operands)})"


@emitter("NegativeLogLikelihoodLoss", since=12, exact=True)
def negative_log_likelihood_loss(view: NodeView) -> str:
    return _call("negative_log_likelihood_loss", view)


@emitter("SoftmaxCrossEntropyLoss", since=12, exact=False)
def softmax_cross_entropy_loss(view: NodeView) -> str:
    call = _call("softmax_cross_entropy_loss", view)
    return f"{call}[0]" if len(view.outputs) == 1 else call
