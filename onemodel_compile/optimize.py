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
- A Conv whose result only its activation reads -- Relu, Clip with constant single-element
  bounds, HardSwish, or Sigmoid and the Mul of the result by it (SiLU) -- becomes the project's
  own ConvActivation (ops/fused.py): `rt.conv_activation` applies the activation in place to the
  Conv's new result, one call and no array for the activation (after the affine folding above,
  so a Conv, BatchNormalization, Relu chain becomes one call).
- A BatchNormalization left over with constant statistics gets its per-channel factor and shift
  computed here and becomes the project's own ScaleShift (ops/fused.py), so the module does one
  multiply and one add: `rt.scale_shift(x, factor, shift)`.
- The Erf form of Gelu as exporters write it before opset 20, 0.5 * x * (1 + erf(x / sqrt 2)) in
  five nodes -- Div by sqrt 2 or Mul by 1/sqrt 2, Erf, Add of 1, and the two products with x and
  0.5 (or a Div by 2) in any association and operand order -- becomes one call of the Gelu kernel
  (`rt.gelu`: one pass in cache-sized blocks instead of five passes and their new arrays). The
  constants must equal sqrt 2, 1/sqrt 2, 1, 0.5 or 2 within a few units in the last place of their
  type, be single elements that do not grow the result's shape, and every value inside the pattern
  must have no other reader and not be a graph output; x itself may have other readers.
- The tanh form of Gelu (GPT-2's `gelu_new`, F.gelu(approximate="tanh") before opset 20),
  0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3))), the cube as Pow(x, 3) or two
  products, the same way: one `rt.gelu(x, approximate="tanh")` call.
- LayerNorm as exporters write it before opset 17 -- ReduceMean, Sub, Pow(d, 2) (or Mul(d, d)),
  ReduceMean, Add epsilon, Sqrt, Div, then optionally Mul by a scale and Add of a bias, in either
  operand order -- becomes one LayerNormalization step (`rt.layer_normalization`: two BLAS
  matrix-vector products for the statistics and passes in place, instead of nine passes and their
  arrays). Both means are over the same trailing axes with kept dims, the normalized dims are
  static, epsilon is a single-element constant of x's type, the scale and bias constants of x's
  type vary along the normalized axes at most (a missing scale becomes ones), and every value
  inside has no reader outside the pattern (the difference d exactly its square and the Div) and is
  not a graph output.
- A Div or Mul by a single-element constant of a MatMul's product (attention scores divided by
  sqrt(head size)) is folded into the constant weights (and bias) of the MatMul (+ Add) that one
  operand of the product comes from through Reshape/Transpose steps, every value on the way read
  once and not a graph output; the product's step takes over the Div's output and names it.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from onemodel_compile import ir
from onemodel_compile.ops import fused, lookup
from onemodel_compile.resolve import ResolvedGraph, Step

FLOAT_TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))

Affine = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclasses.dataclass
class FusedStep(Step):
    """A step whose node absorbed the nodes in `fused` (in graph order); the module's provenance
    comment names them all. A rewrite into a node the model does not have (a Gelu made of five
    nodes) sets `head`, the model's first node of the pattern, named first in the comment in place
    of the new node, and `note`, a line saying what the nodes became."""

    fused: tuple[ir.Node, ...] = ()
    head: ir.Node | None = None
    note: str = ""


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
        self.fuse_conv_activation(resolved)
        self.precompute_batch_normalization(resolved)
        self.fuse_layer_normalization(resolved)
        self.fuse_gelu(resolved)
        self.fold_product_scale(resolved)

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
        flow = _Flow(resolved)
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
            while flow.inner(value):
                following = flow.only_reader(value)
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

    def fuse_conv_activation(self, resolved: ResolvedGraph) -> None:
        steps = resolved.steps
        flow = _Flow(resolved)
        removed: set[int] = set()
        for index, step in enumerate(steps):
            node = step.node
            if node.op_type != "Conv" or node.domain or index in removed:
                continue
            value = node.outputs[0]
            value_type = resolved.types.get(value, ir.UNKNOWN)
            if getattr(value_type, "dtype", None) not in FLOAT_TYPES:
                continue
            match = _conv_activation(flow, value)
            if match is None or removed & set(match[2]):
                continue
            activation, bounds, pattern = match
            last = steps[pattern[-1]].node
            attrs = {**node.attrs, "activation": activation, **bounds}
            new = ir.Node(
                "ConvActivation", fused.DOMAIN, node.name, list(node.inputs), list(last.outputs),
                attrs, 1,
            )  # fmt: skip
            emitter = lookup("ConvActivation", fused.DOMAIN, 1, "fast", node.label)
            folded = getattr(step, "fused", ())  # fold_conv_affine's nodes
            applied = tuple(steps[i].node for i in pattern)
            note = "Conv"
            if folded:
                note += f" with {', '.join(n.op_type for n in folded)} folded in"
            note += f", then {' and '.join(n.op_type for n in applied)} in place, in one call"
            steps[index] = FusedStep(new, emitter, step.bodies, folded + applied, node, note)
            removed.update(pattern)
        steps[:] = [s for i, s in enumerate(steps) if i not in removed]

    def precompute_batch_normalization(self, resolved: ResolvedGraph) -> None:
        for index, step in enumerate(resolved.steps):
            node = step.node
            if node.op_type != "BatchNormalization" or node.domain or len(node.inputs) != 5:
                continue
            terms = _batch_norm_terms(node, resolved)
            X_type = resolved.types.get(node.inputs[0], ir.UNKNOWN)
            if terms is None or getattr(X_type, "dtype", None) is None:
                continue
            factor, bias, mean = terms
            # The factor and shift in X's type (float32 for the half types): the statistics
            # come here in float64, and a float64 factor would make every run compute in float64.
            dtype = np.result_type(X_type.dtype, np.float32)
            if factor.ndim == 1:  # per channel (axis 1); else per activation (opset 7, spatial=0)
                if X_type.rank is None:
                    continue
                shape = (-1,) + (1,) * (X_type.rank - 2)
            else:
                shape = factor.shape
            values = (factor, bias - mean * factor)
            if dtype not in FLOAT_TYPES or not all(np.isfinite(v).all() for v in values):
                continue
            factor_name, shift_name = (
                self.constant(
                    resolved, f"{node.inputs[0]}_{kind}", _rounded(v.reshape(shape), dtype)
                )
                for kind, v in zip(("bn_factor", "bn_shift"), values)
            )
            new = ir.Node(
                "ScaleShift",
                fused.DOMAIN,
                node.name,
                [node.inputs[0], factor_name, shift_name],
                list(node.outputs),
                {},
                1,
            )
            emitter = lookup("ScaleShift", fused.DOMAIN, 1, "fast", node.label)
            note = "X * factor + shift, the factor and shift computed from its statistics"
            resolved.steps[index] = FusedStep(new, emitter, {}, (), node, note)

    def fuse_gelu(self, resolved: ResolvedGraph) -> None:
        steps = resolved.steps
        removed: set[int] = set()
        matcher = _GeluMatcher(resolved)
        for index, step in enumerate(steps):
            kind = _GELU_CORES.get(step.node.op_type)
            if kind is None or step.node.domain or index in removed:
                continue
            match = matcher.match(index)
            if match is None or removed & match[1]:
                continue
            x, pattern = match
            pattern = sorted(pattern)
            nodes = [steps[i].node for i in pattern]
            last = nodes[-1]
            approximate, formula = kind
            gelu = ir.Node(
                "Gelu", "", last.name, [x], list(last.outputs), {"approximate": approximate}, 20
            )
            emitter = lookup("Gelu", "", 20, "fast", last.label)
            note = f"Gelu, approximate={approximate!r}: {formula} in one kernel call"
            steps[pattern[-1]] = FusedStep(gelu, emitter, {}, tuple(nodes[1:]), nodes[0], note)
            removed.update(pattern[:-1])
        steps[:] = [s for i, s in enumerate(steps) if i not in removed]

    def fuse_layer_normalization(self, resolved: ResolvedGraph) -> None:
        """LayerNormalization as exporters write it before opset 17 (see the module docstring)
        becomes one LayerNormalization step, computed by the fast kernel."""
        steps = resolved.steps
        removed: set[int] = set()
        matcher = _LayerNormMatcher(resolved)
        for index, step in enumerate(steps):
            if step.node.op_type != "ReduceMean" or step.node.domain or index in removed:
                continue
            match = matcher.match(index)
            if match is None or removed & set(match.pattern):
                continue
            pattern = sorted(match.pattern)
            nodes = [steps[i].node for i in pattern]
            last = nodes[-1]
            inputs = [match.x]
            for kind, name in (("scale", match.scale), ("bias", match.bias)):
                if name is None and kind == "bias":
                    continue
                c = None if name is None else resolved.constants[name]
                if c is None or c.shape != match.normalized:
                    base = f"{name or match.x}_ln_{kind}"
                    name = self.constant(resolved, base, match.over_normalized(c))
                inputs.append(name)
            attrs = {"axis": match.axis, "epsilon": match.epsilon, "stash_type": 1}
            layer_norm = ir.Node(
                "LayerNormalization", "", last.name, inputs, list(last.outputs), attrs, 17
            )
            emitter = lookup("LayerNormalization", "", 17, "fast", last.label)
            note = (
                f"LayerNormalization, axis={match.axis}, epsilon={match.epsilon!r}: mean, "
                "variance, normalization, scale and bias in one kernel call"
            )
            steps[pattern[-1]] = FusedStep(
                layer_norm, emitter, {}, tuple(nodes[1:]), nodes[0], note
            )
            removed.update(pattern[:-1])
        steps[:] = [s for i, s in enumerate(steps) if i not in removed]

    def fold_product_scale(self, resolved: ResolvedGraph) -> None:
        """A Div or Mul by a single-element constant of a MatMul's product (attention scores
        divided by sqrt(head size)) moves into the constant weights (and bias) of the linear
        layer one operand of that MatMul comes from, through Reshape and Transpose: a scalar
        commutes with both and with the product, so the scaling costs nothing at run time."""
        steps = resolved.steps
        flow = _Flow(resolved)
        removed: set[int] = set()
        for index, step in enumerate(steps):
            node = step.node
            if node.op_type not in ("Div", "Mul") or node.domain or len(node.inputs) != 2:
                continue
            for position in (1,) if node.op_type == "Div" else (1, 0):
                c = resolved.constants.get(node.inputs[position])
                scores = node.inputs[1 - position]
                product = flow.producer.get(scores)
                if (
                    c is None
                    or c.size != 1
                    or c.dtype not in FLOAT_TYPES
                    or product is None
                    or product in removed
                    or steps[product].node.op_type != "MatMul"
                    or steps[product].node.domain
                    or not flow.inner(scores)
                    or resolved.types.get(node.outputs[0]) != resolved.types.get(scores)
                ):
                    continue
                factor = float(c.reshape(())) if node.op_type == "Mul" else 1 / float(c.reshape(()))
                if not (math.isfinite(factor) and factor):
                    continue
                for operand in steps[product].node.inputs:
                    if self._scale_linear(resolved, operand, factor, flow, c.dtype):
                        qk = steps[product]
                        new = dataclasses.replace(qk.node, outputs=[node.outputs[0]])
                        fused = getattr(qk, "fused", ()) + (node,)
                        steps[product] = FusedStep(new, qk.emitter, qk.bodies, fused)
                        removed.add(index)
                        break
                break
        steps[:] = [s for i, s in enumerate(steps) if i not in removed]

    def _scale_linear(self, resolved, value, factor, flow: "_Flow", dtype) -> bool:
        """Multiply by `factor` the constant weights of the MatMul (and the constant bias of the
        Add after it) that `value` comes from through Reshape/Transpose steps, every value on the
        way read once and not a graph output; False (nothing changed) if there is no such layer."""
        steps = resolved.steps
        while True:
            index = flow.producer.get(value)
            if index is None or not flow.inner(value):
                return False
            node = steps[index].node
            if node.domain:
                return False
            if node.op_type in ("Reshape", "Transpose"):
                value = node.inputs[0]
                continue
            break
        bias = None
        if node.op_type == "Add" and len(node.inputs) == 2:
            constant = [n for n in node.inputs if n in resolved.constants]
            if len(constant) != 1:
                return False
            bias, value = index, next(n for n in node.inputs if n not in resolved.constants)
            index = flow.producer.get(value)
            if index is None or not flow.inner(value):
                return False
            node = steps[index].node
        if node.op_type != "MatMul" or node.domain:
            return False
        W = resolved.constants.get(node.inputs[1])
        if W is None or W.dtype != dtype or node.inputs[0] in resolved.constants:
            return False
        if bias is not None:
            add = steps[bias].node
            position = 0 if add.inputs[0] in resolved.constants else 1
            b = resolved.constants[add.inputs[position]]
            if b.dtype != dtype:
                return False
            b_name = self.constant(
                resolved,
                f"{add.inputs[position]}_scaled",
                _rounded(b.astype(np.float64) * factor, dtype),
            )
            inputs = list(add.inputs)
            inputs[position] = b_name
            steps[bias] = dataclasses.replace(
                steps[bias], node=dataclasses.replace(add, inputs=inputs)
            )
        w_name = self.constant(
            resolved, f"{node.inputs[1]}_scaled", _rounded(W.astype(np.float64) * factor, dtype)
        )
        steps[index] = dataclasses.replace(
            steps[index], node=dataclasses.replace(node, inputs=[node.inputs[0], w_name])
        )
        return True


class _Flow:
    """Who produces and who reads each value of `resolved`'s steps, as they are when made (a
    rewrite pass makes one before it changes anything)."""

    def __init__(self, resolved: ResolvedGraph):
        self.resolved = resolved
        self.steps = resolved.steps
        self.readers = resolved.readers()
        # a value a symbol is read off (emit binds `n = value.shape[axis]`) is read once more
        self.readers.update(value for value, _ in resolved.symbol_sources.values())
        self.producer = {
            name: i for i, s in enumerate(self.steps) for name in s.node.outputs if name
        }

    def inner(self, value: str) -> bool:
        """A value a rewrite may absorb: one reader, not a graph output."""
        return self.readers[value] == 1 and value not in self.resolved.graph.outputs

    def only_reader(self, value: str) -> int | None:
        """The index of the one step reading an inner `value`, else None."""
        if not self.inner(value):
            return None
        return _reader(self.steps, value, self.producer[value])

    def operand_of(self, index: int, op_type: str, constant: float) -> str | None:
        """The other operand of step `index` when it is `op_type` of two inputs, one of them a
        single-element constant equal to `constant` in its type (the second one, for Div and
        Pow) that does not grow the result's rank; else None."""
        node = self.steps[index].node
        if node.op_type != op_type or node.domain or len(node.inputs) != 2:
            return None
        positions = (1,) if op_type in ("Div", "Pow") else (1, 0)
        for position in positions:
            c = self.resolved.constants.get(node.inputs[position])
            other = node.inputs[1 - position]
            rank = _rank(self.resolved, other)
            if (
                c is not None
                and c.size == 1
                and c.dtype in FLOAT_TYPES
                and rank is not None
                and c.ndim <= rank
                and other not in self.resolved.constants
                and abs(float(c.reshape(())) - constant) <= 4 * np.finfo(c.dtype).eps * constant
            ):
                return other
        return None


class _GeluMatcher(_Flow):
    """Finds 0.5 * x * (1 + erf(x / sqrt 2)) around an Erf step, or
    0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3))) around a Tanh step (see the module
    docstring)."""

    def match(self, core: int) -> tuple[str, set[int]] | None:
        """(x, indices of the pattern's steps, the last one producing the result) or None."""
        u = self.steps[core].node.inputs[0]
        scaling = self.producer.get(u)
        if scaling is None or not self.inner(u):
            return None
        if self.steps[core].node.op_type == "Erf":
            x = self.operand_of(scaling, "Div", _SQRT_2) or self.operand_of(
                scaling, "Mul", 1 / _SQRT_2
            )
            pattern = {scaling, core}
        else:
            found = self.tanh_argument(scaling)
            if found is None:
                return None
            x, pattern = found
            pattern.add(core)
        x_type = self.resolved.types.get(x or "", ir.UNKNOWN)
        if x is None or getattr(x_type, "dtype", None) not in FLOAT_TYPES or x_type.rank is None:
            return None
        e = self.steps[core].node.outputs[0]
        shift = self.only_reader(e)
        if shift is None or self.operand_of(shift, "Add", 1.0) != e:
            return None
        pattern.add(shift)
        a = self.steps[shift].node.outputs[0]
        product = self.only_reader(a)
        if product is None or self.steps[product].node.op_type != "Mul":
            return None
        pattern.add(product)
        m = self.steps[product].node.outputs[0]
        (other,) = [n for n in self.steps[product].node.inputs if n != a] or [None]
        if other == x:  # (x * a) * 0.5
            last = self.only_reader(m)
            if last is None or self.halved(last) != m:
                return None
            pattern.add(last)
        elif self.halved(product) == a:  # x * (a * 0.5)
            last = self.only_reader(m)
            if last is None or self.steps[last].node.op_type != "Mul":
                return None
            if sorted(self.steps[last].node.inputs) != sorted([x, m]):
                return None
            pattern.add(last)
        else:  # (x * 0.5) * a
            half = self.producer.get(other or "")
            if half is None or self.halved(half) != x or not self.inner(other):
                return None
            pattern.add(half)
            last = product
        y = self.steps[last].node.outputs[0]
        if self.resolved.types.get(y) != x_type or not all(
            self.inner(self.steps[i].node.outputs[0]) for i in pattern - {last}
        ):
            return None
        return x, pattern

    def tanh_argument(self, scaling: int) -> tuple[str, set[int]] | None:
        """(x, the steps) when step `scaling` computes sqrt(2 / pi) * (x + 0.044715 * x**3), in
        any operand order, the cube as Pow(x, 3), x * (x * x) or (x * x) * x; else None."""
        total = self.operand_of(scaling, "Mul", _SQRT_2_OVER_PI)
        index = self.producer.get(total or "")
        if index is None or not self.inner(total):
            return None
        node = self.steps[index].node
        if node.op_type != "Add" or node.domain or len(node.inputs) != 2:
            return None
        for x, term in (node.inputs, node.inputs[::-1]):
            cubic = self.producer.get(term)
            cube = None if cubic is None else self.operand_of(cubic, "Mul", _GELU_CUBIC)
            found = None if cube is None or not self.inner(term) else self.cube_of(cube)
            if found is not None and found[0] == x:
                return x, {scaling, index, cubic} | found[1]
        return None

    def cube_of(self, value: str) -> tuple[str, set[int]] | None:
        """(x, the steps) when `value` is x**3 as Pow(x, 3), x * (x * x) or (x * x) * x."""
        index = self.producer.get(value)
        if index is None or not self.inner(value):
            return None
        x = self.operand_of(index, "Pow", 3.0)
        if x is not None:
            return x, {index}
        node = self.steps[index].node
        if node.op_type != "Mul" or node.domain or len(node.inputs) != 2:
            return None
        for x, square in (node.inputs, node.inputs[::-1]):
            inner = self.producer.get(square)
            if (
                inner is not None
                and self.inner(square)
                and self.steps[inner].node.op_type == "Mul"
                and not self.steps[inner].node.domain
                and list(self.steps[inner].node.inputs) == [x, x]
            ):
                return x, {index, inner}
        return None

    def halved(self, index: int) -> str | None:
        """The operand that step `index` multiplies by 0.5 or divides by 2, else None."""
        return self.operand_of(index, "Mul", 0.5) or self.operand_of(index, "Div", 2.0)


@dataclasses.dataclass
class _LayerNorm:
    """A decomposed LayerNormalization found by _LayerNormMatcher."""

    x: str
    axis: int  # the first normalized axis (non-negative)
    normalized: tuple[int, ...]  # the dims from `axis` on
    dtype: np.dtype
    epsilon: float
    scale: str | None  # constants (of any shape that broadcasts to `normalized`), None: absent
    bias: str | None
    pattern: set[int]

    def over_normalized(self, c: np.ndarray | None) -> np.ndarray:
        """A scale or bias constant (None: a scale of ones) as an array of the normalized dims."""
        if c is None:
            return np.ones(self.normalized, self.dtype)
        c = c.reshape(c.shape[max(0, c.ndim - len(self.normalized)) :])
        return np.broadcast_to(c, self.normalized).copy()


class _LayerNormMatcher(_Flow):
    """Finds, from its first ReduceMean, (x - mean(x)) / sqrt(mean((x - mean(x))**2) + epsilon)
    [* scale] [+ bias] as exporters write LayerNorm before opset 17: ReduceMean, Sub, Pow(d, 2) or
    Mul(d, d), ReduceMean, Add epsilon, Sqrt, Div, Mul, Add, the Adds and Muls in either operand
    order, both means over the same trailing axes with keepdims, every value inside read only by
    the pattern (the difference d by its square and the Div) and not a graph output."""

    def match(self, first: int) -> _LayerNorm | None:
        node = self.steps[first].node
        x, mean = node.inputs[0], node.outputs[0]
        x_type = self.resolved.types.get(x, ir.UNKNOWN)
        dtype, rank = getattr(x_type, "dtype", None), getattr(x_type, "rank", None)
        axis = self.trailing_axis(first, rank)
        if dtype not in FLOAT_TYPES or axis is None or x in self.resolved.constants:
            return None
        normalized = x_type.shape[axis:]
        if not all(isinstance(d, int) for d in normalized):
            return None
        sub = self.only_reader(mean)
        if sub is None or self.plain(sub, "Sub") != [x, mean]:
            return None
        d = self.steps[sub].node.outputs[0]
        square = self.square_of(d)
        if square is None:
            return None
        p = self.steps[square].node.outputs[0]
        variance = self.only_reader(p)
        if (
            variance is None
            or self.steps[variance].node.op_type != "ReduceMean"
            or self.trailing_axis(variance, rank) != axis
        ):
            return None
        v = self.steps[variance].node.outputs[0]
        shift = self.only_reader(v)
        epsilon = None if shift is None else self.constant_operand(shift, "Add", v, dtype)
        if epsilon is None or not (0 <= epsilon < math.inf):
            return None
        e = self.steps[shift].node.outputs[0]
        root = self.only_reader(e)
        if root is None or self.plain(root, "Sqrt") != [e]:
            return None
        std = self.steps[root].node.outputs[0]
        div = self.only_reader(std)
        if div is None or self.plain(div, "Div") != [d, std]:
            return None
        # d is read by its square (once, or twice as Mul(d, d)) and the Div, nothing else
        square_reads = self.steps[square].node.inputs.count(d)
        if d in self.resolved.graph.outputs or self.readers[d] != square_reads + 1:
            return None
        pattern = {first, sub, square, variance, shift, root, div}
        y = self.steps[div].node.outputs[0]
        scale = bias = None
        for op_type in ("Mul", "Add"):
            following = self.only_reader(y)
            found = None if following is None else self.affine(following, op_type, y, x_type, axis)
            if found is None:
                continue
            if op_type == "Mul":
                scale = found
            else:
                bias = found
            pattern.add(following)
            y = self.steps[following].node.outputs[0]
        if self.resolved.types.get(y) != x_type:
            return None
        return _LayerNorm(x, axis, tuple(normalized), dtype, epsilon, scale, bias, pattern)

    def plain(self, index: int, op_type: str) -> list[str] | None:
        """The inputs of step `index` when it is a default-domain `op_type` with one output."""
        node = self.steps[index].node
        if node.op_type != op_type or node.domain or len(node.outputs) != 1:
            return None
        return list(node.inputs)

    def trailing_axis(self, index: int, rank: int | None) -> int | None:
        """The first axis of a ReduceMean step over the trailing axes axis..rank-1, with kept
        dims, else None. Axes are an attribute before opset 18, a constant input from it."""
        node = self.steps[index].node
        if rank is None or node.domain or not node.attrs.get("keepdims", 1):
            return None
        if len(node.inputs) > 1 and node.inputs[1]:
            axes = self.resolved.constants.get(node.inputs[1])
            axes = None if axes is None else [int(a) for a in np.asarray(axes).reshape(-1)]
        else:
            axes = node.attrs.get("axes")
        if not axes or any(not -rank <= a < rank for a in axes):
            return None
        axes = sorted({a % rank for a in axes})
        return axes[0] if axes == list(range(axes[0], rank)) else None

    def square_of(self, d: str) -> int | None:
        """The step squaring `d`: Pow(d, 2) or Mul(d, d), one of d's readers, else None."""
        for index in range(self.producer[d] + 1, len(self.steps)):
            node = self.steps[index].node
            if d not in node.inputs:
                continue
            if self.operand_of(index, "Pow", 2.0) == d or (
                node.op_type == "Mul" and not node.domain and list(node.inputs) == [d, d]
            ):
                return index if self.inner(node.outputs[0]) else None
        return None

    def constant_operand(self, index: int, op_type: str, value: str, dtype) -> float | None:
        """The other operand of a two-input `op_type` step reading `value`, as a float, when it
        is a single-element constant of `dtype` that does not grow the result's rank."""
        node = self.steps[index].node
        if node.op_type != op_type or node.domain or sorted(node.inputs).count(value) != 1:
            return None
        if len(node.inputs) != 2:
            return None
        (other,) = [n for n in node.inputs if n != value]
        c = self.resolved.constants.get(other)
        rank = _rank(self.resolved, value)
        if c is None or c.size != 1 or c.dtype != dtype or rank is None or c.ndim > rank:
            return None
        return float(c.reshape(()))

    def affine(self, index: int, op_type: str, value: str, x_type, axis: int) -> str | None:
        """The constant of a Mul or Add step of `value` by a constant of x's dtype that varies
        along the normalized axes (from `axis` on) at most and does not grow the shape, else
        None."""
        node = self.steps[index].node
        if node.op_type != op_type or node.domain or len(node.inputs) != 2:
            return None
        if node.inputs.count(value) != 1 or not self.inner(value):
            return None
        (other,) = [n for n in node.inputs if n != value]
        c = self.resolved.constants.get(other)
        if c is None or c.dtype != x_type.dtype or c.ndim > x_type.rank:
            return None
        shape = (1,) * (x_type.rank - c.ndim) + c.shape
        if any(d != 1 for d in shape[:axis]) or any(
            d not in (1, n) for d, n in zip(shape[axis:], x_type.shape[axis:])
        ):
            return None
        return other if self.resolved.types.get(node.outputs[0]) == x_type else None


_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715
# The op type of a Gelu's core step -> (approximate, the formula the provenance comment names).
_GELU_CORES = {
    "Erf": ("none", "0.5 * x * (1 + erf(x / sqrt 2))"),
    "Tanh": ("tanh", "0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))"),
}


def _conv_activation(flow: _Flow, value: str):
    """(activation, bounds, the steps it takes) when the activation of a Conv's result `value`
    is one ConvActivation computes, read by nothing else; else None."""
    readers = flow.readers[value]
    if value in flow.resolved.graph.outputs or readers not in (1, 2):
        return None
    first = _reader(flow.steps, value, flow.producer[value])
    node = flow.steps[first].node if first is not None else None
    if node is None or node.domain or node.inputs[:1] != [value]:
        return None
    if readers == 2:  # SiLU: Mul(value, Sigmoid(value)), in either operand order
        mul = flow.only_reader(node.outputs[0]) if node.op_type == "Sigmoid" else None
        product = flow.steps[mul].node if mul is not None else None
        if product is None or product.op_type != "Mul" or product.domain:
            return None
        if sorted(product.inputs) != sorted([value, node.outputs[0]]):
            return None
        return "silu", {}, [first, mul]
    rule = _CONV_ACTIVATIONS.get(node.op_type)
    bounds = rule(node, flow.resolved) if rule is not None else None
    return None if bounds is None else (bounds.pop("activation"), bounds, [first])


def _clip_bounds(node: ir.Node, resolved: ResolvedGraph) -> dict | None:
    """Clip's bounds as floats (absent ones left out): attributes before opset 11, single-element
    constant inputs after; None when a bound is known only at run time."""
    if node.opset < 11:
        low, high = node.attrs.get("min"), node.attrs.get("max")
        bounds = {"low": low, "high": high}
    else:
        bounds = {}
        for name, position in (("low", 1), ("high", 2)):
            if len(node.inputs) > position and node.inputs[position]:
                c = resolved.constants.get(node.inputs[position])
                if c is None or c.size != 1:
                    return None
                bounds[name] = float(c.reshape(()))
    bounds = {name: float(v) for name, v in bounds.items() if v is not None}
    return {"activation": "clip", **bounds}


# The single activations ConvActivation takes, by op type: their keywords, None if not fusable.
_CONV_ACTIVATIONS = {
    "Relu": lambda node, resolved: {"activation": "relu"},
    "HardSwish": lambda node, resolved: {"activation": "hard_swish"},
    "Clip": _clip_bounds,
}


def _batch_norm_terms(node: ir.Node, resolved: ResolvedGraph):
    """(factor, bias, mean) in float64, factor = scale / sqrt(var + epsilon), for an inference
    BatchNormalization with constant statistics (y = (x - mean) * factor + bias), else None."""
    if node.attrs.get("training_mode", 0) or any(node.outputs[1:]):
        return None
    values = [resolved.constants.get(name) for name in node.inputs[1:5]]
    if any(v is None or v.dtype not in FLOAT_TYPES or v.shape != values[0].shape for v in values):
        return None
    scale, bias, mean, var = (v.astype(np.float64) for v in values)
    return scale / np.sqrt(var + node.attrs["epsilon"]), bias, mean


def _affine(node: ir.Node, value: str, resolved: ResolvedGraph, rank: int, channels: int):
    """The map (scale, shift) -> (scale, shift) that composes `node`, reading `value`, onto an
    affine map of a Conv output with `channels` channels; None if `node` is not per-channel affine
    in `value` with constant parameters."""
    if node.domain or len(node.outputs) != 1:
        return None
    if node.op_type == "BatchNormalization":
        terms = _batch_norm_terms(node, resolved)
        if node.inputs[0] != value or terms is None:
            return None
        factor, bias, mean = terms
        if node.attrs.get("spatial", 1) != 1 or any(v.shape != (channels,) for v in terms):
            return None
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
