"""Stage 3b, fast variant only: rewrites of the resolved graph that save run time.

Runs after `resolve` (every type and constant is settled) and before emission. It only replaces
steps and adds constants; the constants reach the module through the normal weights path. The exact
variant never runs it: a rewrite rounds differently from the operators it replaces.

Rewrites:
- A Conv with constant weights (and bias) followed by a chain of per-channel affine nodes on its
  output -- inference BatchNormalization, or Mul, Add, Sub, Div by a per-channel constant -- becomes
  one Conv with weights W' = W * s and bias B' = B * s + t, where y -> y * s + t is the chain's map.
  Every value along the chain but the last must have no other reader and not be a graph output.
  The map is composed in float64 and rounded once to the weights' type.
- A BatchNormalization left over with constant statistics gets its per-channel factor and shift
  computed here, so the module does one multiply and one add: `rt.batch_normalization` with three
  operands (a node ONNX itself never has: BatchNormalization requires five).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Callable

import numpy as np

from onemodel_compile import ir
from onemodel_compile.resolve import ResolvedGraph, Step

FLOAT_TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))

Affine = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclasses.dataclass
class FusedStep(Step):
    """A step whose node absorbed the nodes in `fused` (in graph order); the module's provenance
    comment names them all."""

    fused: tuple[ir.Node, ...] = ()


def optimize(resolved: ResolvedGraph) -> ResolvedGraph:
    """Rewrite `resolved` in place, subgraph bodies included, and return it."""
    _Rewriter(_all_names(resolved)).graph(resolved)
    return resolved


class _Rewriter:
    def __init__(self, taken: set[str]):
        self.taken = taken  # every value name of the model: new constants get fresh ones

    def graph(self, resolved: ResolvedGraph) -> None:
        for step in resolved.steps:
            for body in step.bodies.values():
                self.graph(body)
        self.fold_conv_affine(resolved)
        self.precompute_batch_normalization(resolved)

    def constant(self, resolved: ResolvedGraph, base: str, value: np.ndarray) -> str:
        name, counter = base, 1
        while name in self.taken:
            counter += 1
            name = f"{base}_{counter}"
        self.taken.add(name)
        resolved.constants[name] = value
        resolved.graph.types[name] = ir.TensorType(value.dtype, tuple(value.shape))
        return name

    def fold_conv_affine(self, resolved: ResolvedGraph) -> None:
        steps = resolved.steps
        readers = _readers(resolved)
        removed: set[int] = set()
        for index, step in enumerate(steps):
            node = step.node
            if node.op_type != "Conv" or node.domain or index in removed:
                continue
            W = resolved.constants.get(node.inputs[1])
            bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
            B = resolved.constants.get(bias) if bias else None
            rank = _rank(resolved, node.outputs[0])
            if W is None or W.dtype not in FLOAT_TYPES or (bias and B is None) or rank is None:
                continue
            channels = W.shape[0]
            scale = np.ones(channels)  # the chain's map so far: y -> y * scale + shift
            shift = np.zeros(channels) if B is None else B.astype(np.float64)
            chain: list[int] = []
            value = node.outputs[0]
            while readers[value] == 1 and value not in resolved.graph.outputs:
                following = _reader(steps, value, index)
                affine = (
                    None
                    if following is None
                    else _affine(steps[following].node, value, resolved, rank, channels)
                )
                if affine is None:
                    break
                new_scale, new_shift = affine(scale, shift)
                if not (np.isfinite(new_scale).all() and np.isfinite(new_shift).all()):
                    break
                scale, shift = new_scale, new_shift
                chain.append(following)
                value = steps[following].node.outputs[0]
            if not chain:
                continue
            kernel_scale = scale.reshape((-1,) + (1,) * (W.ndim - 1))
            new_W = _rounded(W.astype(np.float64) * kernel_scale, W.dtype)
            new_B = _rounded(shift, W.dtype)
            w_name = self.constant(resolved, f"{node.inputs[1]}_folded", new_W)
            b_name = self.constant(resolved, f"{bias or node.inputs[1] + '_bias'}_folded", new_B)
            conv = dataclasses.replace(
                node, inputs=[node.inputs[0], w_name, b_name], outputs=[value]
            )
            fused = tuple(steps[i].node for i in chain)
            steps[index] = FusedStep(conv, step.emitter, step.bodies, fused)
            removed.update(chain)
        steps[:] = [s for i, s in enumerate(steps) if i not in removed]

    def precompute_batch_normalization(self, resolved: ResolvedGraph) -> None:
        for index, step in enumerate(resolved.steps):
            node = step.node
            if node.op_type != "BatchNormalization" or node.domain or len(node.inputs) != 5:
                continue
            statistics = _batch_norm_statistics(node, resolved)
            X_type = resolved.types.get(node.inputs[0], ir.UNKNOWN)
            if statistics is None or getattr(X_type, "dtype", None) is None:
                continue
            scale, bias, mean, var = statistics
            dtype = np.result_type(X_type.dtype, scale.dtype, mean.dtype)
            if scale.ndim == 1:  # per channel (axis 1); else per activation (opset 7, spatial=0)
                if X_type.rank is None:
                    continue
                shape = (-1,) + (1,) * (X_type.rank - 2)
            else:
                shape = scale.shape
            factor = scale / np.sqrt(var + node.attrs["epsilon"])
            values = (factor, bias - mean * factor)
            if dtype not in FLOAT_TYPES or not all(np.isfinite(v).all() for v in values):
                continue
            factor_name, shift_name = (
                self.constant(
                    resolved, f"{node.inputs[0]}_{kind}", _rounded(v.reshape(shape), dtype)
                )
                for kind, v in zip(("bn_factor", "bn_shift"), values)
            )
            new = dataclasses.replace(node, inputs=[node.inputs[0], factor_name, shift_name])
            resolved.steps[index] = dataclasses.replace(step, node=new)


def _batch_norm_statistics(node: ir.Node, resolved: ResolvedGraph):
    """scale, bias, mean, var in float64 for an inference BatchNormalization with constant
    statistics, else None."""
    if node.attrs.get("training_mode", 0) or any(node.outputs[1:]):
        return None
    values = [resolved.constants.get(name) for name in node.inputs[1:5]]
    if any(v is None or v.dtype not in FLOAT_TYPES for v in values):
        return None
    return [v.astype(np.float64) for v in values]


def _affine(node: ir.Node, value: str, resolved: ResolvedGraph, rank: int, channels: int):
    """The map (scale, shift) -> (scale, shift) that composes `node`, reading `value`, onto an
    affine map of a Conv output with `channels` channels; None if `node` is not per-channel affine
    in `value` with constant parameters."""
    if node.domain or len(node.outputs) != 1:
        return None
    if node.op_type == "BatchNormalization":
        statistics = _batch_norm_statistics(node, resolved)
        if node.inputs[0] != value or statistics is None:
            return None
        scale_, bias, mean, var = statistics
        if node.attrs.get("spatial", 1) != 1 or any(v.shape != (channels,) for v in statistics):
            return None
        factor = scale_ / np.sqrt(var + node.attrs["epsilon"])
        return lambda scale, shift: (scale * factor, (shift - mean) * factor + bias)
    rule = _ELEMENTWISE.get(node.op_type)
    if rule is None or len(node.inputs) != 2:
        return None
    commutative, compose = rule
    position = node.inputs.index(value)
    if position != 0 and not commutative:
        return None
    c = resolved.constants.get(node.inputs[1 - position])
    value_type = resolved.types.get(value, ir.UNKNOWN)
    if c is None or c.dtype != getattr(value_type, "dtype", None):
        return None
    per_channel = _per_channel(c, rank, channels)
    if per_channel is None:
        return None
    return lambda scale, shift: compose(scale, shift, per_channel)


# op type -> (commutative, (scale, shift, c) -> (scale, shift))
_ELEMENTWISE = {
    "Mul": (True, lambda scale, shift, c: (scale * c, shift * c)),
    "Add": (True, lambda scale, shift, c: (scale, shift + c)),
    "Sub": (False, lambda scale, shift, c: (scale, shift - c)),
    "Div": (False, lambda scale, shift, c: (scale / c, shift / c)),
}


def _per_channel(c: np.ndarray, rank: int, channels: int) -> np.ndarray | None:
    """`c` as a float64 vector over the channels, if broadcasting it against a value of `rank`
    varies it along axis 1 at most and leaves the value's shape as it is."""
    if c.ndim > rank:
        return None
    shape = (1,) * (rank - c.ndim) + c.shape
    if any(d != 1 for axis, d in enumerate(shape) if axis != 1) or shape[1] not in (1, channels):
        return None
    return np.broadcast_to(c.astype(np.float64).reshape(-1), (channels,)).copy()


def _rounded(value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`value` rounded once to `dtype`; a broadcast view when every element is the same (as for
    models whose weights are ConstantOfShape), which costs neither file space nor memory."""
    rounded = value.astype(dtype)
    if rounded.size > 1 and (rounded == rounded.flat[0]).all():
        return np.broadcast_to(rounded.flat[0], rounded.shape)
    return rounded


def _readers(resolved: ResolvedGraph) -> Counter:
    """How many times each value is read: as a node input, or by a subgraph body."""
    readers: Counter = Counter()
    for step in resolved.steps:
        readers.update(name for name in step.node.inputs if name)
        for sub in ir.subgraphs(step.node):
            readers.update(ir.free_names(sub))
    return readers


def _reader(steps: list[Step], value: str, after: int) -> int | None:
    """The index of the step after `after` whose node reads `value` as an input."""
    for index in range(after + 1, len(steps)):
        if value in steps[index].node.inputs:
            return index
    return None


def _rank(resolved: ResolvedGraph, name: str) -> int | None:
    return getattr(resolved.types.get(name, ir.UNKNOWN), "rank", None)


def _all_names(resolved: ResolvedGraph) -> set[str]:
    names = set(resolved.graph.types) | set(resolved.constants)
    names.update(resolved.graph.inputs, resolved.graph.outputs)
    for step in resolved.steps:
        names.update(step.node.inputs, step.node.outputs)
        for body in step.bodies.values():
            names |= _all_names(body)
    return names
