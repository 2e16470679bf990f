"""Normalizations (inference): BatchNormalization, InstanceNormalization, GroupNormalization,
LayerNormalization, RMSNormalization, LpNormalization, MeanVarianceNormalization and LRN.

Exactness: inference BatchNormalization is elementwise IEEE arithmetic in a fixed order (exact);
the others take means, sums or powers (float reductions, `**`): not exact. Every one runs as a
kernel of runtime_support/normalization.py. The exact variant runs InstanceNormalization,
GroupNormalization, LayerNormalization, RMSNormalization, LpNormalization,
MeanVarianceNormalization and LRN (not float64) through the kernels' exact twins.
"""

from __future__ import annotations

from onemodel_compile.errors import CompileError
from onemodel_compile.ops import pyir
from onemodel_compile.ops.common import axes_of, axis_of, code_of
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import attr, binop, call, index
from onemodel_compile.ops.registry import emitter
from onemodel_compile.ops.training import batch_normalization_training

# The element types a `stash_type` attribute may name (TensorProto numbers): float32, float16,
# float64, bfloat16.
_STASH_TYPES = (1, 10, 11, 16)


def _stash_type(view: NodeView) -> int:
    stash_type = view.attr("stash_type")
    if stash_type not in _STASH_TYPES:
        raise CompileError(
            f"{view.node.label}: stash_type {stash_type} is not a floating-point element type"
        )
    return stash_type


def _operands(view: NodeView) -> list:
    """The node's inputs as call arguments: every one but a trailing optional one (B of
    LayerNormalization) is required."""
    operands = list(view.inputs)
    while operands and operands[-1] is None:
        operands.pop()
    return operands


def _code(value) -> pyir.Expr:
    """An axis or axes from common.py's axis_of / axes_of as a node."""
    return pyir.expr(value)


@emitter("BatchNormalization", since=7, exact=True)
def batch_normalization(view: NodeView) -> pyir.Expr:
    if view.attr("training_mode", 0) or any(o is not None for o in view.outputs[1:]):
        return batch_normalization_training(view)  # ops/training.py
    return call("rt.batch_normalization", *_operands(view), epsilon=view.attr("epsilon"))


# Exact through the kernels' exact twins (runtime_support/normalization.py: statistics by
# exact_standardize or exact_mean, float64 sums in a fixed order, one rounding each; the rest
# elementwise IEEE operations in a fixed order).


@emitter("InstanceNormalization", since=6, exact=True)
def instance_normalization(view: NodeView) -> pyir.Expr:
    return call("rt.instance_normalization", *_operands(view), epsilon=view.attr("epsilon"))


@emitter("GroupNormalization", since=18, until=20, exact=True)
def group_normalization_18(view: NodeView) -> pyir.Expr:
    """Opset 18: scale and bias hold one value per group, repeated here over its channels."""
    X, scale, bias = view.inputs
    groups = view.attr("num_groups")
    channels = X.shape[1] if X.shape is not None and isinstance(X.shape[1], int) else None
    per_group = (
        channels // groups
        if channels is not None
        else binop("//", index(attr(X, "shape"), 1), groups)
    )
    return call(
        "rt.group_normalization",
        X,
        call("np.repeat", scale, per_group),
        call("np.repeat", bias, per_group),
        num_groups=groups,
        epsilon=view.attr("epsilon"),
    )


@emitter("GroupNormalization", since=21, exact=True)
def group_normalization(view: NodeView) -> pyir.Expr:
    """Opset 21: scale and bias per channel; statistics in the stash type."""
    return call(
        "rt.group_normalization",
        *_operands(view),
        num_groups=view.attr("num_groups"),
        epsilon=view.attr("epsilon"),
        stash_type=_stash_type(view),
    )


def _axis_keywords(view: NodeView) -> dict:
    axis = _code(axis_of(view, view.attr("axis")))
    return {"axis": axis, "epsilon": view.attr("epsilon"), "stash_type": _stash_type(view)}


@emitter("LayerNormalization", since=17, exact=True)
def layer_normalization(view: NodeView):
    """The kernel returns (Y, Mean, InvStdDev); the node may list fewer outputs. A node without
    the statistics computes Y alone with stats=False (no statistics arrays)."""
    operands, keywords = _operands(view), _axis_keywords(view)
    count = len(view.outputs)
    if all(o is None for o in view.outputs[1:]):
        y_alone = call("rt.layer_normalization", *operands, **keywords, stats=False)
        return y_alone if count == 1 else [pyir.assign((view.outputs[0].name,), y_alone)]
    results = call("rt.layer_normalization", *operands, **keywords)
    return results if count == 3 else index(results, pyir.Slice(None, pyir.Lit(count)))


@emitter("RMSNormalization", since=23, exact=True)
def rms_normalization(view: NodeView) -> pyir.Expr:
    return call("rt.rms_normalization", *_operands(view), **_axis_keywords(view))


@emitter("LpNormalization", since=1, exact=True)
def lp_normalization(view: NodeView) -> pyir.Expr:
    p = view.attr("p")
    if p not in (1, 2):
        raise CompileError(f"{view.node.label}: LpNormalization supports p 1 and 2, not {p}")
    axis = _code(axis_of(view, view.attr("axis")))
    return call("rt.lp_normalization", view.inputs[0], axis=axis, p=p)


@emitter("MeanVarianceNormalization", since=9, exact=True)
def mean_variance_normalization(view: NodeView) -> pyir.Expr:
    axes = _code(code_of(axes_of(view, view.attr("axes"))))
    return call("rt.mean_variance_normalization", view.inputs[0], axes=axes)


@emitter("LRN", since=1, exact=True)
def lrn(view: NodeView) -> pyir.Expr:
    keywords = {name: view.attr(name) for name in ("size", "alpha", "beta", "bias")}
    return call("rt.lrn", view.inputs[0], **keywords)
