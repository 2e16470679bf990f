"""Normalizations (inference): BatchNormalization, InstanceNormalization, GroupNormalization,
LayerNormalization, RMSNormalization, LpNormalization, MeanVarianceNormalization and LRN.

Exactness: inference BatchNormalization is elementwise IEEE arithmetic in a fixed order (exact);
the others take means, sums or powers (float reductions, `**`): not exact. Every one runs as a
kernel of runtime_support/normalization.py. The exact variant runs InstanceNormalization,
GroupNormalization, LayerNormalization, RMSNormalization, LpNormalization,
MeanVarianceNormalization and LRN (not float64) through the kernels' exact twins.
"""

from __future__ import annotations


from onemodel_compile.errors import CompileError, UnsupportedError
from onemodel_compile.ops.code import py
from onemodel_compile.ops.common import axes_of, axis_of, code_of
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter

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


def _operands(view: NodeView) -> str:
    """The node's inputs as call arguments (an absent optional input is None)."""
    operands = [str(o) if o is not None else "None" for o in view.inputs]
    while operands and operands[-1] == "None":
        operands.pop()
    return ", ".join(operands)


@emitter("BatchNormalization", since=7, exact=True)
def batch_normalization(view: NodeView) -> str:
    if view.attr("training_mode", 0) or any(o is not None for o in view.outputs[1:]):
        raise UnsupportedError(
            f"{view.node.label}: BatchNormalization in training mode is not supported"
        )
    return f"rt.batch_normalization({_operands(view)}, epsilon={py(view.attr('epsilon'))})"


# Each rule emits a call of `rt.<prefix><kernel>`; the exact variant's prefix "exact_" names the
# kernels' exact twins (statistics by exact_standardize or exact_mean: float64 sums in a fixed
# order, one rounding each; the rest elementwise IEEE operations in a fixed order).


def _instance_normalization(prefix: str):
    def emit(view: NodeView) -> str:
        return (
            f"rt.{prefix}instance_normalization({_operands(view)}, "
            f"epsilon={py(view.attr('epsilon'))})"
        )

    return emit


def _group_normalization_18(prefix: str):
    def emit(view: NodeView) -> str:
        """Opset 18: scale and bias hold one value per group, repeated here over its channels."""
        X, scale, bias = view.inputs
        groups = view.attr("num_groups")
        channels = X.shape[1] if X.shape is not None and isinstance(X.shape[1], int) else None
        per_group = py(channels // groups) if channels is not None else f"{X}.shape[1] // {groups}"
        return (
            f"rt.{prefix}group_normalization({X}, np.repeat({scale}, {per_group}), "
            f"np.repeat({bias}, {per_group}), num_groups={groups}, "
            f"epsilon={py(view.attr('epsilon'))})"
        )

    return emit


def _group_normalization(prefix: str):
    def emit(view: NodeView) -> str:
        """Opset 21: scale and bias per channel; statistics in the stash type."""
        return (
            f"rt.{prefix}group_normalization({_operands(view)}, "
            f"num_groups={view.attr('num_groups')}, epsilon={py(view.attr('epsilon'))}, "
            f"stash_type={_stash_type(view)})"
        )

    return emit


def _axis_keywords(view: NodeView) -> str:
    axis = axis_of(view, view.attr("axis"))
    return f"axis={axis}, epsilon={py(view.attr('epsilon'))}, stash_type={_stash_type(view)}"


def _layer_normalization(prefix: str):
    def emit(view: NodeView) -> str:
        """The kernel returns (Y, Mean, InvStdDev); the node may list fewer outputs. The fast
        kernel computes Y alone with stats=False (no statistics arrays for a node without them)."""
        call = f"rt.{prefix}layer_normalization({_operands(view)}, {_axis_keywords(view)}"
        count = len(view.outputs)
        if not prefix and all(o is None for o in view.outputs[1:]):
            y_alone = f"{call}, stats=False)"
            return y_alone if count == 1 else [f"{view.outputs[0]} = {y_alone}"]
        return f"{call})[0]" if count == 1 else f"{call})" if count == 3 else f"{call})[:{count}]"

    return emit


def _rms_normalization(prefix: str):
    def emit(view: NodeView) -> str:
        return f"rt.{prefix}rms_normalization({_operands(view)}, {_axis_keywords(view)})"

    return emit


for _prefix, _variant, _exact in (("", None, False), ("exact_", "exact", True)):
    emitter("InstanceNormalization", since=6, variant=_variant, exact=_exact)(
        _instance_normalization(_prefix)
    )
    emitter("GroupNormalization", since=18, until=20, variant=_variant, exact=_exact)(
        _group_normalization_18(_prefix)
    )
    emitter("GroupNormalization", since=21, variant=_variant, exact=_exact)(
        _group_normalization(_prefix)
    )
    emitter("LayerNormalization", since=17, variant=_variant, exact=_exact)(
        _layer_normalization(_prefix)
    )
    emitter("RMSNormalization", since=23, variant=_variant, exact=_exact)(
        _rms_normalization(_prefix)
    )


def _lp_normalization(prefix: str):
    def emit(view: NodeView) -> str:
        p = view.attr("p")
        if p not in (1, 2):
            raise CompileError(f"{view.node.label}: LpNormalization supports p 1 and 2, not {p}")
        axis = axis_of(view, view.attr("axis"))
        return f"rt.{prefix}lp_normalization({view.inputs[0]}, axis={axis}, p={p})"

    return emit


def _mean_variance_normalization(prefix: str):
    def emit(view: NodeView) -> str:
        axes = code_of(axes_of(view, view.attr("axes")))
        return f"rt.{prefix}mean_variance_normalization({view.inputs[0]}, axes={axes})"

    return emit


for _prefix, _variant, _exact in (("", None, False), ("exact_", "exact", True)):
    emitter("LpNormalization", since=1, variant=_variant, exact=_exact)(_lp_normalization(_prefix))
    emitter("MeanVarianceNormalization", since=9, variant=_variant, exact=_exact)(
        _mean_variance_normalization(_prefix)
    )


def _lrn(prefix: str):
    def emit(view: NodeView) -> str:
        keywords = ", ".join(
            f"{name}={py(view.attr(name))}" for name in ("size", "alpha", "beta", "bias")
        )
        return f"rt.{prefix}lrn({view.inputs[0]}, {keywords})"

    return emit


emitter("LRN", since=1, exact=False)(_lrn(""))
emitter("LRN", since=1, variant="exact", exact=True)(_lrn("exact_"))
