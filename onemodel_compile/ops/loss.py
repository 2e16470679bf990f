"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (kernels of runtime_support/loss.py).

NegativeLogLikelihoodLoss is exact: a lookup, a negation, one product per element and, for the sum
and mean, a correctly rounded sum (math.fsum) and one division. SoftmaxCrossEntropyLoss takes a
log-softmax first: the fast kernel with numpy's exp and log, its exact twin with exact_log_softmax.
"""

from __future__ import annotations

from onemodel_compile.errors import CompileError
from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import call, index
from onemodel_compile.ops.registry import emitter

REDUCTIONS = ("none", "sum", "mean")


def _call(kernel: str, view: NodeView) -> pyir.Call:
    reduction = view.attr("reduction")
    if reduction not in REDUCTIONS:
        raise CompileError(f"{view.node.label}: unknown reduction {reduction!r}")
    operands = [view.inputs[0], view.inputs[1]]
    if view.input(2) is not None:
        operands.append(view.input(2))  # the weights, the last parameter before the keywords
    keywords = {}
    if view.attr("ignore_index") is not None:
        keywords["ignore_index"] = view.attr("ignore_index")
    return call(f"rt.{kernel}", *operands, **keywords, reduction=reduction)


@emitter("NegativeLogLikelihoodLoss", since=12, exact=True)
def negative_log_likelihood_loss(view: NodeView) -> pyir.Expr:
    return _call("negative_log_likelihood_loss", view)


# Exact through the kernel's twin rt.exact_softmax_cross_entropy_loss (the same arguments).
@emitter("SoftmaxCrossEntropyLoss", since=12, exact=True)
def softmax_cross_entropy_loss(view: NodeView) -> pyir.Expr:
    """The kernel returns (loss, log_prob); the node may list the loss alone."""
    results = _call("softmax_cross_entropy_loss", view)
    return index(results, 0) if len(view.outputs) == 1 else results
