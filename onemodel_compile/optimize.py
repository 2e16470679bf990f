"""Stage 3b, fast variant only: rewrites of the resolved graph that save run time.

Runs after `resolve` (every type and constant is settled) and before emission, and returns a new
ResolvedGraph: its own list of steps, its own constants and its own type map (the input is left as
it is). It only replaces steps and adds constants; the constants reach the module through the
normal weights path. The exact variant never runs it: a rewrite rounds differently from the
operators it replaces.

The rewrites are data: RULES, applied in order, each over the whole graph (subgraph bodies
first). Most are PatternRules: a pattern of nodes (`Op`: an op type and its operands; `Value`: any
value, bound by name; `Scalar`: a single-element float constant; `Alt`: alternatives) matched
backwards from a root step over one def-use analysis (`_Flow`, from ResolvedGraph.readers), and a
`build` that checks what a pattern cannot say and returns the replacing node, an operator of the
project's own domain (ops/fused.py) with its own emitter. Every value inside a match (produced by
a matched step other than the root) must be read by matched steps only and not be a graph output;
a value bound by `Value` may have any readers. Commutative operands (Add, Mul) match in either
order. Roots are tried from the graph's end, so the largest pattern claims its steps first.

Rules:
- conv-affine: a Conv with constant weights (and bias) followed by a chain of per-channel affine
  nodes on its output -- inference BatchNormalization, or Mul, Add, Sub, Div by a per-channel
  constant -- becomes one Conv with weights W' = W * s and bias B' = B * s + t, where
  y -> y * s + t is the chain's map. Every value along the chain but the last must have no other
  reader and not be a graph output. The map is composed in float64 and rounded once to the
  weights' type. (A chain of any length: matched by hand, not by a pattern.)
- hard-swish: HardSwish as exporters write it before opset 14 -- paddle2onnx's Add of 3, Clip to
  [0, 6], Mul by x and Div by 6 (or Mul by 1/6, in any association), torch's x * HardSigmoid(x)
  with alpha 1/6 and beta 1/2, on x of known rank -- becomes HardSwish (`rt.hard_swish`: one kernel instead of four
  passes and their arrays); after conv-affine, before conv-activation, which then takes it into
  the Conv's call like the ONNX HardSwish.
- conv-activation: a Conv whose result only its activation reads -- Relu, Clip with constant
  single-element bounds, HardSwish, or Sigmoid and the Mul of the result by it (SiLU) -- becomes
  ConvActivation: `rt.conv_activation` applies the activation in place to the Conv's new result,
  one call and no array for the activation (after conv-affine, so a Conv, BatchNormalization, Relu
  chain becomes one call). (Matched by hand, as written with the Conv fusions.)
- batch-norm: a BatchNormalization left over with constant statistics gets its per-channel factor
  and shift computed here and becomes ScaleShift, so the module does one multiply and one add:
  `rt.scale_shift(x, factor, shift)`. The per-channel affine nodes after it (as for conv-affine)
  join the factor and shift, and a Relu or Clip with constant bounds after them is applied in
  place (`low=`, `high=`): DenseNet's pre-activation BatchNormalization, Mul, Add, Relu is one
  call and one array instead of four calls. (A chain of any length: by hand.)
- conv-bias-column: a 1x1 Conv or ConvActivation (no pads, unit strides, one group) of one
  float32 sample with constant weights and bias that expands its channels (at least
  BIAS_COLUMN_EXPANSION times as many filters as input channels, on at least
  BIAS_COLUMN_POSITIONS positions) takes W' = [W | B] (M, C + 1, 1, ...) and `bias_column`: the
  kernel's product adds the bias through a row of ones under the input (`rt.conv`'s
  `bias_column`), so no pass over the large result adds it. (After conv-activation, by hand.)
- gemm-weight-layout: a Gemm with transB of a float32 activation by a constant float32 weight
  (torch's Linear on a 2-D input) takes the weight transposed once here, contiguous, and transB
  0: OpenBLAS multiplies 2 to 32 rows by a transposed view 2-9x slower than by the contiguous
  matrix (1 x 2 rows by 1000 x 512: 216 against 78 us), never much faster; the Gemm emitter then
  chooses between an inline `@` and `rt.matmul_weight` as for a MatMul. Only when every reader
  of the weight is such a Gemm, so the weights file holds one copy.
A value whose only other readers are dims read off it (`batch = value.shape[0]`) is still
absorbed by the hand-matched rules: the dims are read off the fused step's result instead, of the
same shape (a dim read never blocks a fold).
- layer-norm: LayerNorm as exporters write it before opset 17 -- ReduceMean, Sub, Pow(d, 2) (or
  Mul(d, d)), ReduceMean, Add epsilon, Sqrt, Div, then optionally Mul by a scale and Add of a bias
  -- becomes LayerNorm (`rt.layer_normalization`: two BLAS matrix-vector products for the
  statistics and passes in place, instead of nine passes and their arrays). Both means are over the
  same trailing axes with kept dims (axes an attribute, or a constant input from opset 18), the
  normalized dims are static, epsilon is a single-element constant of x's type, the scale and bias
  constants of x's type vary along the normalized axes at most (a missing scale becomes ones).
- rms-norm: RMSNorm as llama and T5 exports write it, x * (1 / sqrt(mean(x**2) + epsilon)) * w
  (or x / sqrt(...), the reciprocal as Div(1, .) or Reciprocal, the weight multiplied first or
  last, or absent) becomes RMSNorm (`rt.rms_normalization`), under the LayerNorm conditions.
- gelu-erf: 0.5 * x * (1 + erf(x / sqrt 2)) as exporters write it before opset 20 -- Div by sqrt 2
  or Mul by 1/sqrt 2, Erf, Add of 1, and the two products with x and 0.5 (or a Div by 2) in any
  association -- becomes Gelu (`rt.gelu`: one pass in cache-sized blocks instead of five passes
  and their new arrays). The constants must equal theirs within a few units in the last place of
  their type and be single elements that do not grow the result's shape.
- gelu-tanh: GPT-2's `gelu_new`, 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3))), the
  cube as Pow(x, 3) or two products, the same way: `rt.gelu(x, approximate="tanh")`.
- product-scale: a Div or Mul by a single-element constant of a MatMul's product (attention scores
  divided by sqrt(head size)) is folded into the constant weights (and bias) of the MatMul (+ Add)
  that one operand of the product comes from through Reshape/Transpose steps, every value on the
  way read once and not a graph output; the product's step takes over the Div's output and names
  it. (A walk through any number of layout steps: by hand.)
- attention: softmax(Q @ K * scale + mask) @ V over the last two axes as exporters write it --
  MatMul, an optional Div or Mul by a single-element constant (or Muls of Q and K by one each),
  an optional Where(keep, scores, fill) (GPT-2's causal mask) and/or Add of a mask, an optional
  Cast to the scores' own type (T5's), Softmax over the last axis, MatMul by V -- becomes Attention (`rt.attention_heads`: the heads' products as two
  batched matmuls, the scale, fill, mask and softmax in place in the one scores array). It runs
  after product-scale, so a scale that could move into the query's weights is already there.

A new rule: a pattern and a build (or a function over `_Rewrite` for what patterns cannot say)
appended to RULES, and the operator it makes in ops/fused.py.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from typing import Callable, Iterator, Union

import numpy as np

from onemodel_compile import ir
from onemodel_compile import symbolic as sym
from onemodel_compile.ops import fused, lookup
from onemodel_compile.resolve import ResolvedGraph, Step

FLOAT_TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


@dataclasses.dataclass
class FusedStep(Step):
    """A step whose node absorbed the nodes in `fused` (in graph order); the module's provenance
    comment names them all. A rewrite into a node the model does not have (a Gelu made of five
    nodes) sets `head`, the model's first node of the pattern, named first in the comment in place
    of the new node, and `note`, a line saying what the nodes became."""

    fused: tuple[ir.Node, ...] = ()
    head: ir.Node | None = None
    note: str = ""


def model_nodes(step: Step) -> list[ir.Node]:
    """The model's nodes a step computes, in graph order (a fused step's head and absorbed nodes)."""
    head = getattr(step, "head", None) or step.node
    return [head, *getattr(step, "fused", ())]


def optimize(resolved: ResolvedGraph) -> ResolvedGraph:
    """`resolved` with RULES applied, subgraph bodies included: a new ResolvedGraph with its own
    steps, constants and type map; `resolved` is not changed."""
    return _optimized(resolved, _all_names(resolved))


def _optimized(resolved: ResolvedGraph, taken: set[str]) -> ResolvedGraph:
    steps = [
        (
            dataclasses.replace(
                step, bodies={k: _optimized(b, taken) for k, b in step.bodies.items()}
            )
            if step.bodies
            else step
        )
        for step in resolved.steps
    ]
    graph = dataclasses.replace(resolved.graph, types=dict(resolved.graph.types))
    new = dataclasses.replace(
        resolved,
        graph=graph,
        steps=steps,
        constants=dict(resolved.constants),
        symbol_sources=dict(resolved.symbol_sources),
    )
    rewrite = _Rewrite(new, taken)
    for rule in RULES:
        rule.apply(rewrite)
    return new


class _Rewrite:
    """The graph the rules rewrite (a copy optimize owns) and the value names taken."""

    def __init__(self, resolved: ResolvedGraph, taken: set[str]):
        self.resolved = resolved
        self.taken = taken  # every value name of the model: new constants get fresh ones

    def constant(self, base: str, value: np.ndarray) -> str:
        name, counter = base, 1
        while name in self.taken:
            counter += 1
            name = f"{base}_{counter}"
        self.taken.add(name)
        self.resolved.constants[name] = value
        self.resolved.graph.types[name] = ir.TensorType(value.dtype, tuple(value.shape))
        return name


# --- the def-use analysis -----------------------------------------------------------------------


class _Flow:
    """Who produces and who reads each value of `resolved`'s steps, as they are when made (a
    rule makes one before it changes anything)."""

    def __init__(self, resolved: ResolvedGraph):
        self.resolved = resolved
        self.steps = resolved.steps
        self.readers = resolved.readers()
        # a value a symbol is read off (emit binds `n = value.shape[axis]`) is read once more
        self.symbol_reads = Counter(value for value, _ in resolved.symbol_sources.values())
        self.readers.update(self.symbol_reads)
        self.producer = {
            name: i for i, s in enumerate(self.steps) for name in s.node.outputs if name
        }
        self._mentions: dict[str, set[str]] | None = None

    def inner(self, value: str) -> bool:
        """A value a rewrite may absorb: one reader, not a graph output."""
        return self.readers[value] == 1 and value not in self.resolved.graph.outputs

    def only_reader(self, value: str) -> int | None:
        """The index of the one step reading an inner `value`, else None."""
        if not self.inner(value):
            return None
        return _reader(self.steps, value, self.producer[value])

    def absorbable(self, value: str) -> bool:
        """A value a shape-preserving fused step may absorb: one reader besides the symbols
        read off it (a dim read is no use of the data: `move_symbols` reads them off the fused
        step's result, of the same shape), not a graph output."""
        readers = self.readers[value] - self.symbol_reads[value]
        return readers == 1 and value not in self.resolved.graph.outputs

    def next_reader(self, value: str) -> int | None:
        """The index of the one step reading an absorbable `value`, else None."""
        if not self.absorbable(value):
            return None
        return _reader(self.steps, value, self.producer[value])

    def move_symbols(self, values, result: str) -> None:
        """The symbols read off `values` (which a rewrite removes), read off `result` instead:
        the value of the same shape that the fused step computes where the first of them was
        made, so each symbol is still bound before anything reads it."""
        sources = self.resolved.symbol_sources
        for symbol, (value, axis) in list(sources.items()):
            if value in values:
                sources[symbol] = (result, axis)

    def type_of(self, value: str):
        return self.resolved.types.get(value, ir.UNKNOWN)

    def rank(self, value: str) -> int | None:
        return getattr(self.type_of(value), "rank", None)

    def closed(self, steps: frozenset[int], root: int) -> bool:
        """Every value the matched `steps` other than `root` produce is read by matched steps
        only (or has symbols read off it: see moved_symbols) and is not a graph output."""
        for value in self.interior(steps, root):
            reads = sum(self.resolved.reads(self.steps[i]).count(value) for i in steps)
            if value in self.resolved.graph.outputs:
                return False
            if self.readers[value] - self.symbol_reads[value] != reads:
                return False
        return True

    def interior(self, steps: frozenset[int], root: int) -> list[str]:
        return [v for i in sorted(steps - {root}) for v in self.steps[i].node.outputs if v]

    def moved_symbols(self, m: "Match", root: int) -> dict | None:
        """New sources for the symbols read off values inside match `m` (which the rewrite
        removes): the same dim of a value the match reads, computed before every matched step;
        None when a symbol has no such value."""
        interior = set(self.interior(m.steps, root))
        inputs = [v for v in m.values.values() if v not in self.resolved.constants]
        moves = {}
        for symbol, (value, _) in self.resolved.symbol_sources.items():
            if value not in interior:
                continue
            found = next(
                (
                    (name, axis)
                    for name in inputs
                    for axis, dim in enumerate(getattr(self.type_of(name), "shape", None) or ())
                    if isinstance(dim, str) and dim == symbol
                ),
                None,
            )
            if found is None and self.mentions(symbol) <= interior:
                continue  # no value but those the rewrite removes has that dim: nothing reads it
            if found is None:
                found = self.from_result(symbol, m.steps, root)
            if found is None:
                return None
            moves[symbol] = found
        return moves

    def from_result(self, symbol: str, steps: frozenset[int], root: int) -> tuple | None:
        """(the root's output, the axis) when that output has `symbol` as a dim and no step
        between the first matched one and the root reads or makes a value with it (the fused
        step computes the result where the root was: the dim is known from there on)."""
        result = self.steps[root].node.outputs[0]
        shape = getattr(self.type_of(result), "shape", None) or ()
        axis = next((a for a, dim in enumerate(shape) if dim == symbol), None)
        mentions = self.mentions(symbol)
        for index in range(min(steps), root):
            step = self.steps[index]
            if index not in steps and mentions & {*self.resolved.reads(step), *step.node.outputs}:
                return None
        return None if axis is None else (result, axis)

    def mentions(self, symbol: str) -> set[str]:
        """The values whose type or shape value has `symbol` in a dim (subgraph bodies too)."""
        if self._mentions is None:
            self._mentions = {}
            for value, dims in _all_dims(self.resolved):
                for atom in {a for d in dims if not isinstance(d, int) for a in sym.atoms(d)}:
                    self._mentions.setdefault(atom, set()).add(value)
        return self._mentions.get(symbol, set())


# --- patterns -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Value:
    """Any value, bound to `name` (the same name twice in a pattern: the same value). `constant`:
    False, not a compile-time constant; True, one; None, either."""

    name: str
    constant: bool | None = False


@dataclasses.dataclass(frozen=True)
class Scalar:
    """A single-element float constant that does not grow the rank of the node's other operand
    (which is no constant), equal to `number` within a few units in the last place of its type
    (None: any value); the constant's name is bound to `name` when given."""

    number: float | None
    name: str | None = None


@dataclasses.dataclass(frozen=True)
class Op:
    """A default-domain step of `op_type` whose only output is the value matched and whose inputs
    match `operands` (Add and Mul in either order); `extra`: inputs past the operands are allowed
    (ReduceMean's axes: the build checks them). The step's index is bound to `name` when given; a
    name bound already must be the same step."""

    op_type: str
    operands: tuple
    name: str | None = None
    extra: bool = False


@dataclasses.dataclass(frozen=True)
class Alt:
    """The first of `options` that matches (the next ones when a later check fails)."""

    options: tuple


Pattern = Union[Value, Scalar, Op, Alt]
COMMUTATIVE = frozenset({"Add", "Mul"})


def op(op_type: str, *operands, name=None, extra=False) -> Op:
    return Op(op_type, operands, name, extra)


def alt(*options) -> Alt:
    return Alt(options)


@dataclasses.dataclass(frozen=True)
class Match:
    values: dict  # Value and Scalar name -> the value's name
    nodes: dict  # Op name -> step index
    steps: frozenset  # every matched step's index

    def bind(self, kind: str, key: str, item) -> "Match | None":
        table = getattr(self, kind)
        if key in table:
            return self if table[key] == item else None
        grown = {**table, key: item}
        return (
            Match(grown, self.nodes, self.steps)
            if kind == "values"
            else Match(self.values, grown, self.steps)
        )


class _Matcher:
    def __init__(self, flow: _Flow):
        self.flow = flow
        self.constants = flow.resolved.constants

    def match(self, pattern: Pattern, value: str, sibling: str | None, m: Match) -> Iterator[Match]:
        """The matches of `pattern` against `value` extending `m`; `sibling` is the other operand
        of the step reading `value` (for Scalar's checks)."""
        if isinstance(pattern, Alt):
            for option in pattern.options:
                yield from self.match(option, value, sibling, m)
        elif isinstance(pattern, Value):
            if pattern.constant is not None and (value in self.constants) != pattern.constant:
                return
            bound = m.bind("values", pattern.name, value)
            if bound is not None:
                yield bound
        elif isinstance(pattern, Scalar):
            if self.scalar(value, sibling, pattern.number) is not None:
                bound = m if pattern.name is None else m.bind("values", pattern.name, value)
                if bound is not None:
                    yield bound
        else:
            yield from self.op(pattern, value, m)

    def scalar(self, value: str, sibling: str | None, number: float | None) -> float | None:
        c = self.constants.get(value)
        rank = None if sibling is None else self.flow.rank(sibling)
        if (
            c is None
            or c.size != 1
            or c.dtype not in FLOAT_TYPES
            or rank is None
            or c.ndim > rank
            or sibling in self.constants
        ):
            return None
        found = float(c.reshape(()))
        if number is not None and abs(found - number) > 4 * np.finfo(c.dtype).eps * abs(number):
            return None
        return found

    def op(self, pattern: Op, value: str, m: Match) -> Iterator[Match]:
        index = self.flow.producer.get(value)
        if index is None or index in m.steps and pattern.name not in m.nodes:
            return
        node = self.flow.steps[index].node
        count = len(pattern.operands)
        if (
            node.op_type != pattern.op_type
            or node.domain
            or node.outputs[0] != value
            or any(node.outputs[1:])
            or len(node.inputs) < count
            or (len(node.inputs) > count and not pattern.extra)
            or not all(node.inputs[:count])
        ):
            return
        if pattern.name is not None:
            if pattern.name in m.nodes:
                if m.nodes[pattern.name] == index:
                    yield m
                return
            m = Match(m.values, {**m.nodes, pattern.name: index}, m.steps)
        m = dataclasses.replace(m, steps=m.steps | {index})
        inputs = list(node.inputs[:count])
        orders = [inputs]
        if pattern.op_type in COMMUTATIVE and count == 2 and inputs[0] != inputs[1]:
            orders.append(inputs[::-1])
        for order in orders:
            # a Scalar's checks look at the other operand of a two-input step
            siblings = order[::-1] if len(node.inputs) == 2 else [None] * count
            yield from self.operands(pattern.operands, order, siblings, m)

    def operands(self, patterns: tuple, values: list, siblings: list, m: Match) -> Iterator[Match]:
        if not patterns:
            yield m
            return
        for found in self.match(patterns[0], values[0], siblings[0], m):
            yield from self.operands(patterns[1:], values[1:], siblings[1:], found)


# --- rules --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Built:
    """What a pattern rule's build returns: the replacing node (of ops/fused.py's domain) and
    the line the provenance comment ends with."""

    node: ir.Node
    note: str


@dataclasses.dataclass(frozen=True)
class PatternRule:
    name: str
    pattern: Pattern  # an Op, or Alt of Ops
    build: Callable[[_Rewrite, _Flow, Match, int], Built | None]

    def apply(self, rewrite: _Rewrite) -> None:
        resolved = rewrite.resolved
        steps = resolved.steps
        flow = _Flow(resolved)
        matcher = _Matcher(flow)
        claimed: set[int] = set()
        replaced: dict[int, Step] = {}
        roots = _root_types(self.pattern)
        for root in range(len(steps) - 1, -1, -1):
            node = steps[root].node
            if node.op_type not in roots or node.domain or root in claimed:
                continue
            empty = Match({}, {}, frozenset())
            for m in matcher.match(self.pattern, node.outputs[0], None, empty):
                if claimed & m.steps or not flow.closed(m.steps, root):
                    continue
                moves = flow.moved_symbols(m, root)
                if moves is None:
                    continue
                built = self.build(rewrite, flow, m, root)
                if built is None:
                    continue
                resolved.symbol_sources.update(moves)
                nodes = [n for i in sorted(m.steps) for n in model_nodes(steps[i])]
                emitter = lookup(built.node.op_type, fused.DOMAIN, 1, "fast", node.label)
                replaced[root] = FusedStep(
                    built.node, emitter, {}, tuple(nodes[1:]), nodes[0], built.note
                )
                claimed |= m.steps
                break
        steps[:] = [
            replaced.get(i, s) for i, s in enumerate(steps) if i in replaced or i not in claimed
        ]


@dataclasses.dataclass(frozen=True)
class Rule:
    """A rewrite patterns cannot say (a chain of any length), as a function over the graph."""

    name: str
    function: Callable[[_Rewrite], None]

    def apply(self, rewrite: _Rewrite) -> None:
        self.function(rewrite)


def _fused_node(op_type: str, root: ir.Node, inputs: list[str], attrs: dict) -> ir.Node:
    """A node of the project's own domain replacing a match whose last node is `root` (it takes
    over the root's name and outputs)."""
    return ir.Node(op_type, fused.DOMAIN, root.name, inputs, list(root.outputs), attrs, 1)


def _root_types(pattern: Pattern) -> set[str]:
    """The op types a match of `pattern` can end with."""
    if isinstance(pattern, Alt):
        return set().union(*(_root_types(p) for p in pattern.options))
    return {pattern.op_type} if isinstance(pattern, Op) else set()


# --- batch-norm ---------------------------------------------------------------------------------


def _fold_batch_norm(rewrite: _Rewrite) -> None:
    resolved = rewrite.resolved
    steps = resolved.steps
    flow = _Flow(resolved)
    removed: set[int] = set()
    for index, step in enumerate(steps):
        node = step.node
        if node.op_type != "BatchNormalization" or node.domain or index in removed:
            continue
        terms = _batch_norm_terms(node, resolved)
        X_type = flow.type_of(node.inputs[0])
        if terms is None or getattr(X_type, "dtype", None) is None:
            continue
        factor, bias, mean = terms
        # The factor and shift in X's type (float32 for the half types): the statistics come
        # here in float64, and a float64 factor would make every run compute in float64.
        dtype = np.result_type(X_type.dtype, np.float32)
        scale, shift = factor, bias - mean * factor
        value = node.outputs[0]
        chain: list[int] = []
        absorbed: list[str] = []
        bounds: dict[str, object] = {}
        if factor.ndim == 1:  # per channel (axis 1); else per activation (opset 7, spatial=0)
            if X_type.rank is None:
                continue
            shape = (-1,) + (1,) * (X_type.rank - 2)
            while flow.absorbable(value):
                following = flow.next_reader(value)
                if following is None:
                    break
                later = steps[following].node
                affine = _affine(later, value, resolved, X_type.rank, factor.shape[0])
                rule = _SCALE_SHIFT_ACTIVATIONS.get(later.op_type)
                if affine is not None:
                    scale, shift = affine(scale, shift)
                elif rule is not None and later.inputs[:1] == [value] and not later.domain:
                    found = rule(later, resolved)
                    if found is None:
                        break
                    bounds = {name: v for name, v in found.items() if name != "activation"}
                else:
                    break
                chain.append(following)
                absorbed.append(value)
                value = later.outputs[0]
                if affine is None:
                    break  # the activation ends the chain
        else:
            shape = factor.shape
        values = (scale, shift)
        if dtype not in FLOAT_TYPES or not all(np.isfinite(v).all() for v in values):
            continue
        factor_name, shift_name = (
            rewrite.constant(f"{node.inputs[0]}_{kind}", _rounded(v.reshape(shape), dtype))
            for kind, v in zip(("bn_factor", "bn_shift"), values)
        )
        fused_nodes = tuple(steps[i].node for i in chain)
        note = "X * factor + shift, the factor and shift computed from its statistics"
        affine_nodes = [n.op_type for n in fused_nodes if n.op_type not in _SCALE_SHIFT_ACTIVATIONS]
        if affine_nodes:
            note += f" and the {', '.join(affine_nodes)} after it"
        if fused_nodes and fused_nodes[-1].op_type in _SCALE_SHIFT_ACTIVATIONS:
            note += f", then {fused_nodes[-1].op_type} in place"
        new = ir.Node(
            "ScaleShift", fused.DOMAIN, node.name, [node.inputs[0], factor_name, shift_name],
            [value], bounds, 1,
        )  # fmt: skip
        emitter = lookup("ScaleShift", fused.DOMAIN, 1, "fast", node.label)
        steps[index] = FusedStep(new, emitter, {}, fused_nodes, node, note)
        flow.move_symbols(absorbed, value)
        removed.update(chain)
    steps[:] = [s for i, s in enumerate(steps) if i not in removed]


# --- layer-norm and rms-norm --------------------------------------------------------------------

X = Value("x")


def _mean(of: Pattern, name: str) -> Op:
    """ReduceMean of `of`, its axes an attribute or (opset 18) a constant input."""
    return op("ReduceMean", of, name=name, extra=True)


def _square(of: Pattern) -> Alt:
    return alt(op("Pow", of, Scalar(2.0)), op("Mul", of, of))


_D = op("Sub", X, _mean(X, "mean"), name="d")
_STD = op("Sqrt", op("Add", _mean(_square(_D), "variance"), Scalar(None, "epsilon")))
_NORMALIZED = op("Div", _D, _STD)
_SCALE, _BIAS = Value("scale", constant=True), Value("bias", constant=True)
LAYER_NORM = alt(
    op("Add", op("Mul", _NORMALIZED, _SCALE, name="scaled"), _BIAS, name="shifted"),
    op("Mul", _NORMALIZED, _SCALE, name="scaled"),
    op("Add", _NORMALIZED, _BIAS, name="shifted"),
    _NORMALIZED,
)

_RMS = op("Sqrt", op("Add", _mean(_square(X), "variance"), Scalar(None, "epsilon")))
_INVERSE = alt(op("Div", Scalar(1.0), _RMS), op("Reciprocal", _RMS))
_RMS_NORMALIZED = alt(op("Mul", X, _INVERSE), op("Div", X, _RMS))
RMS_NORM = alt(
    op("Mul", _RMS_NORMALIZED, _SCALE, name="scaled"),  # (x * r) * w
    op("Mul", op("Mul", X, _SCALE, name="scaled"), _INVERSE),  # (w * x) * r, as T5 writes it
    _RMS_NORMALIZED,
)


@dataclasses.dataclass(frozen=True)
class _Normalized:
    """The facts a normalization's build checks: x's type, the first normalized axis, the
    normalized dims (static) and epsilon."""

    x: str
    x_type: ir.TensorType
    axis: int
    normalized: tuple[int, ...]
    epsilon: float

    def over_normalized(self, c: np.ndarray | None) -> np.ndarray:
        """A scale or bias constant (None: a scale of ones) as an array of the normalized dims."""
        if c is None:
            return np.ones(self.normalized, self.x_type.dtype)
        c = c.reshape(c.shape[max(0, c.ndim - len(self.normalized)) :])
        return np.broadcast_to(c, self.normalized).copy()


def _normalized(flow: _Flow, m: Match, means: tuple[str, ...], root: int) -> _Normalized | None:
    """The facts of a normalization match whose ReduceMean steps are bound to `means`, else None:
    x float of static normalized dims, the means over the same trailing axes with kept dims,
    epsilon a finite non-negative single element of x's type, the result of x's type."""
    x = m.values["x"]
    x_type = flow.type_of(x)
    dtype, rank = getattr(x_type, "dtype", None), getattr(x_type, "rank", None)
    axes = {_trailing_axis(flow, m.nodes[name], rank) for name in means}
    (axis,) = axes if len(axes) == 1 else (None,)
    if dtype not in FLOAT_TYPES or axis is None:
        return None
    normalized = x_type.shape[axis:]
    c = flow.resolved.constants[m.values["epsilon"]]
    epsilon = float(c.reshape(()))
    if not all(isinstance(d, int) for d in normalized) or c.dtype != dtype:
        return None
    if not (0 <= epsilon < math.inf) or flow.type_of(flow.steps[root].node.outputs[0]) != x_type:
        return None
    return _Normalized(x, x_type, axis, tuple(normalized), epsilon)


def _trailing_axis(flow: _Flow, index: int, rank: int | None) -> int | None:
    """The first axis of a ReduceMean step over the trailing axes axis..rank-1, with kept dims,
    else None. Axes are an attribute before opset 18, a constant input from it."""
    node = flow.steps[index].node
    if rank is None or not node.attrs.get("keepdims", 1) or len(node.inputs) > 2:
        return None
    axes: list[int] | None
    if len(node.inputs) > 1 and node.inputs[1]:
        given = flow.resolved.constants.get(node.inputs[1])
        axes = None if given is None else [int(a) for a in np.asarray(given).reshape(-1)]
    else:
        attribute = node.attrs.get("axes")
        axes = None if attribute is None else [int(a) for a in attribute]  # type: ignore[attr-defined]
    if not axes or any(not -rank <= a < rank for a in axes):
        return None
    first, *_ = ordered = sorted({a % rank for a in axes})
    return first if ordered == list(range(first, rank)) else None


def _affine_constant(flow: _Flow, m: Match, kind: str, facts: _Normalized) -> str | None | bool:
    """The scale or bias constant bound to `kind` (None: the match has none) when it is of x's
    dtype, varies along the normalized axes at most and its step keeps x's type; False if not."""
    name = m.values.get(kind)
    if name is None:
        return None
    c = flow.resolved.constants[name]
    x_type = facts.x_type
    rank = x_type.rank
    step = m.nodes["scaled" if kind == "scale" else "shifted"]
    if rank is None or c.dtype != x_type.dtype or c.ndim > rank:
        return False
    shape = (1,) * (rank - c.ndim) + c.shape
    if any(d != 1 for d in shape[: facts.axis]) or any(
        d not in (1, n) for d, n in zip(shape[facts.axis :], facts.normalized)
    ):
        return False
    return name if flow.type_of(flow.steps[step].node.outputs[0]) == x_type else False


def _normalization_inputs(rewrite, flow, m, facts, kinds) -> list[str] | None:
    """x and the constants of `kinds` shaped as the normalized dims (a missing scale: ones; a
    missing bias: left out), or None when a constant does not fit."""
    inputs = [facts.x]
    for kind in kinds:
        name = _affine_constant(flow, m, kind, facts)
        if name is False:
            return None
        if name is None and kind == "bias":
            continue
        c = None if name is None else rewrite.resolved.constants[name]
        if c is None or c.shape != facts.normalized:
            name = rewrite.constant(f"{name or facts.x}_ln_{kind}", facts.over_normalized(c))
        inputs.append(name)
    return inputs


def _build_layer_norm(rewrite: _Rewrite, flow: _Flow, m: Match, root: int) -> Built | None:
    facts = _normalized(flow, m, ("mean", "variance"), root)
    if facts is None:
        return None
    inputs = _normalization_inputs(rewrite, flow, m, facts, ("scale", "bias"))
    if inputs is None:
        return None
    attrs = {"axis": facts.axis, "epsilon": facts.epsilon, "stash_type": 1}
    note = (
        f"LayerNormalization, axis={facts.axis}, epsilon={facts.epsilon!r}: mean, "
        "variance, normalization, scale and bias in one kernel call"
    )
    return Built(_fused_node("LayerNorm", flow.steps[root].node, inputs, attrs), note)


def _build_rms_norm(rewrite: _Rewrite, flow: _Flow, m: Match, root: int) -> Built | None:
    facts = _normalized(flow, m, ("variance",), root)
    if facts is None:
        return None
    inputs = _normalization_inputs(rewrite, flow, m, facts, ("scale",))
    if inputs is None:
        return None
    attrs = {"axis": facts.axis, "epsilon": facts.epsilon, "stash_type": 1}
    note = (
        f"RMSNormalization, axis={facts.axis}, epsilon={facts.epsilon!r}: mean square, "
        "normalization and scale in one kernel call"
    )
    return Built(_fused_node("RMSNorm", flow.steps[root].node, inputs, attrs), note)


# --- gelu ---------------------------------------------------------------------------------------

_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715


def _half(of: Pattern) -> Alt:
    return alt(op("Mul", of, Scalar(0.5)), op("Div", of, Scalar(2.0)))


def _gelu(core: Pattern) -> Alt:
    """0.5 * x * core in the three associations exporters write."""
    return alt(
        _half(op("Mul", X, core)),  # (x * core) * 0.5
        op("Mul", X, _half(core)),  # x * (core * 0.5)
        op("Mul", _half(X), core),  # (x * 0.5) * core
    )


GELU_ERF = _gelu(
    op(
        "Add",
        op("Erf", alt(op("Div", X, Scalar(_SQRT_2)), op("Mul", X, Scalar(1 / _SQRT_2)))),
        Scalar(1.0),
    )
)
_CUBE = alt(op("Pow", X, Scalar(3.0)), op("Mul", X, op("Mul", X, X)))
GELU_TANH = _gelu(
    op(
        "Add",
        op(
            "Tanh",
            op("Mul", op("Add", X, op("Mul", _CUBE, Scalar(_GELU_CUBIC))), Scalar(_SQRT_2_OVER_PI)),
        ),
        Scalar(1.0),
    )
)


# x * clip(x + 3, 0, 6) / 6 in the associations exporters write; the clip's bounds checked by the
# build (Clip's bounds are inputs without a sibling, which Scalar's checks need)
_RELU6_OF_X_PLUS_3 = op(
    "Clip", op("Add", X, Scalar(3.0)), Value("low", True), Value("high", True), name="clip"
)
HARD_SWISH = alt(
    op("Div", op("Mul", X, _RELU6_OF_X_PLUS_3), Scalar(6.0)),
    op("Mul", op("Mul", X, _RELU6_OF_X_PLUS_3), Scalar(1 / 6)),
    op("Mul", X, op("Div", _RELU6_OF_X_PLUS_3, Scalar(6.0))),
    op("Mul", X, op("Mul", _RELU6_OF_X_PLUS_3, Scalar(1 / 6))),
    op("Mul", X, op("HardSigmoid", X, name="hard_sigmoid")),
)


def _build_hard_swish(rewrite: _Rewrite, flow: _Flow, m: Match, root: int) -> Built | None:
    x = m.values["x"]
    x_type = flow.type_of(x)
    node = flow.steps[root].node
    if getattr(x_type, "dtype", None) not in FLOAT_TYPES or x_type.rank is None:
        return None
    if flow.type_of(node.outputs[0]) != x_type:
        return None
    if "clip" in m.nodes:
        constants = flow.resolved.constants
        bounds = [constants[m.values[name]] for name in ("low", "high")]
        if any(b.size != 1 for b in bounds) or [float(b.reshape(())) for b in bounds] != [0, 6]:
            return None
        note = "HardSwish: x * clip(x + 3, 0, 6) / 6 in one kernel call"
    else:
        attrs = flow.steps[m.nodes["hard_sigmoid"]].node.attrs
        alpha, beta = float(attrs.get("alpha", 0.2)), float(attrs.get("beta", 0.5))  # type: ignore[arg-type]
        if abs(alpha - 1 / 6) > 1e-6 or beta != 0.5:
            return None
        note = "HardSwish: x * HardSigmoid(x) (alpha 1/6, beta 1/2) in one kernel call"
    return Built(_fused_node("HardSwish", node, [x], {}), note)


def _gelu_build(approximate: str, formula: str):
    def build(rewrite: _Rewrite, flow: _Flow, m: Match, root: int) -> Built | None:
        x = m.values["x"]
        x_type = flow.type_of(x)
        if getattr(x_type, "dtype", None) not in FLOAT_TYPES or x_type.rank is None:
            return None
        node = flow.steps[root].node
        if flow.type_of(node.outputs[0]) != x_type:
            return None
        note = f"Gelu, approximate={approximate!r}: {formula} in one kernel call"
        return Built(_fused_node("Gelu", node, [x], {"approximate": approximate}), note)

    return build


# --- attention ----------------------------------------------------------------------------------

_QK = op(
    "MatMul",
    alt(op("Mul", Value("q"), Scalar(None, "q_scale")), Value("q")),
    alt(op("Mul", Value("k"), Scalar(None, "k_scale")), Value("k")),
    name="scores",
)
_SCALED = alt(op("Div", _QK, Scalar(None, "divisor")), op("Mul", _QK, Scalar(None, "factor")), _QK)
_KEPT = alt(op("Where", Value("keep", None), _SCALED, Value("fill", None)), _SCALED)
_MASKED = alt(op("Add", _KEPT, Value("mask", None)), _KEPT)
ATTENTION = op(
    "MatMul",
    # T5 casts the scores to float before the softmax (a no-op in a float model)
    op("Softmax", alt(op("Cast", _MASKED, name="cast"), _MASKED), name="softmax"),
    Value("v"),
)
ATTENTION_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _build_attention(rewrite: _Rewrite, flow: _Flow, m: Match, root: int) -> Built | None:
    """Q, K and V of one float type and rank (at least 3: a stack of heads), the softmax over the
    last axis, a mask and a fill of that type and no higher rank (a boolean `keep`), a Cast only
    to the type it has, every scale finite and non-zero, and not a single query row known at
    compile time."""
    q, k, v = (m.values[name] for name in ("q", "k", "v"))
    types = [flow.type_of(name) for name in (q, k, v)]
    dtype = getattr(types[0], "dtype", None)
    rank = getattr(types[0], "rank", None)
    if dtype not in ATTENTION_TYPES or rank is None or rank < 3:
        return None
    if any(getattr(t, "dtype", None) != dtype or getattr(t, "rank", None) != rank for t in types):
        return None
    if types[0].shape[-2] == 1:  # one query row (a decoder step): measured slower fused (gpt_step)
        return None
    softmax = flow.steps[m.nodes["softmax"]].node
    if softmax.attrs.get("axis", -1 if softmax.opset >= 13 else 1) % rank != rank - 1:
        return None
    if "cast" in m.nodes:
        cast = flow.steps[m.nodes["cast"]].node
        if {getattr(flow.type_of(v), "dtype", None) for v in (*cast.inputs, *cast.outputs)} != {
            dtype
        }:
            return None
    for name, expected in (("mask", dtype), ("fill", dtype), ("keep", np.dtype(np.bool_))):
        value_type = flow.type_of(m.values.get(name, q))
        if name not in m.values:
            continue
        if getattr(value_type, "dtype", None) != expected or getattr(value_type, "rank", 0) > rank:
            return None
    scale = 1.0
    for name, power in (("q_scale", 1), ("k_scale", 1), ("factor", 1), ("divisor", -1)):
        if name in m.values:
            c = flow.resolved.constants[m.values[name]]
            if c.dtype != dtype:
                return None
            scale *= float(c.reshape(())) ** power
    if not (math.isfinite(scale) and scale):
        return None
    node = flow.steps[root].node
    if getattr(flow.type_of(node.outputs[0]), "dtype", None) != dtype:
        return None
    # absent optional inputs are empty names (ONNX's convention)
    inputs = [q, k, v] + [m.values.get(name, "") for name in ("mask", "keep", "fill")]
    while not inputs[-1]:
        inputs.pop()
    attrs = {} if scale == 1.0 else {"scale": scale}
    scores = "Q @ K" + ("" if scale == 1.0 else f" * {scale!r}")
    if getattr(flow.steps[m.nodes["scores"]], "fused", ()):  # product-scale's work
        scores += " (its scale in the query's weights)"
    if "keep" in m.values:
        scores = f"where(keep, {scores}, fill)"
    note = (
        f"attention: softmax({scores}{' + mask' if 'mask' in m.values else ''}) @ V over all "
        "heads in one kernel call"
    )
    return Built(_fused_node("Attention", node, inputs, attrs), note)


# --- conv-affine, conv-activation and product-scale: matched by hand ----------------------------


def _fold_conv_affine(rewrite: _Rewrite) -> None:
    resolved = rewrite.resolved
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
        absorbed = []  # the values the folded Conv no longer makes
        while flow.absorbable(value):
            following = flow.next_reader(value)
            if following is None:
                break
            affine = _affine(steps[following].node, value, resolved, rank, channels)
            if affine is None:
                break
            new_scale, new_shift = affine(scale, shift)
            if not (np.isfinite(new_scale).all() and np.isfinite(new_shift).all()):
                break
            scale, shift = new_scale, new_shift
            chain.append(following)
            absorbed.append(value)
            value = steps[following].node.outputs[0]
        if not chain:
            continue
        kernel_scale = scale.reshape((-1,) + (1,) * (W.ndim - 1))
        new_W = _rounded(W.astype(np.float64) * kernel_scale, W.dtype)
        new_B = _rounded(shift, W.dtype)
        w_name = rewrite.constant(f"{node.inputs[1]}_folded", new_W)
        b_name = rewrite.constant(f"{bias or node.inputs[1] + '_bias'}_folded", new_B)
        conv = dataclasses.replace(node, inputs=[node.inputs[0], w_name, b_name], outputs=[value])
        fused = tuple(steps[i].node for i in chain)
        flow.move_symbols(absorbed, value)
        steps[index] = FusedStep(conv, step.emitter, step.bodies, fused)
        removed.update(chain)
    steps[:] = [s for i, s in enumerate(steps) if i not in removed]


def _fold_product_scale(rewrite: _Rewrite) -> None:
    """A Div or Mul by a single-element constant of a MatMul's product (attention scores
    divided by sqrt(head size)) moves into the constant weights (and bias) of the linear
    layer one operand of that MatMul comes from, through Reshape and Transpose: a scalar
    commutes with both and with the product, so the scaling costs nothing at run time."""
    resolved = rewrite.resolved
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
                if _scale_linear(rewrite, operand, factor, flow, c.dtype):
                    qk = steps[product]
                    new = dataclasses.replace(qk.node, outputs=[node.outputs[0]])
                    fused = getattr(qk, "fused", ()) + (node,)
                    steps[product] = FusedStep(new, qk.emitter, qk.bodies, fused)
                    removed.add(index)
                    break
            break
    steps[:] = [s for i, s in enumerate(steps) if i not in removed]


def _producer_through_layout(flow: _Flow, value: str) -> tuple[int, ir.Node] | None:
    """(index, node) of the step that makes `value` through Reshape/Transpose steps, every value
    on the way read once and not a graph output; None if there is none (or another domain's)."""
    while True:
        index = flow.producer.get(value)
        if index is None or not flow.inner(value):
            return None
        node = flow.steps[index].node
        if node.domain:
            return None
        if node.op_type not in ("Reshape", "Transpose"):
            return index, node
        value = node.inputs[0]


def _scale_linear(rewrite: _Rewrite, value, factor, flow: _Flow, dtype) -> bool:
    """Multiply by `factor` the constant weights of the MatMul (and the constant bias of the
    Add after it) that `value` comes from through Reshape/Transpose steps, every value on the
    way read once and not a graph output; False (nothing changed) if there is no such layer."""
    resolved = rewrite.resolved
    steps = resolved.steps
    producer = _producer_through_layout(flow, value)
    if producer is None:
        return False
    index, node = producer
    bias = None
    if node.op_type == "Add" and len(node.inputs) == 2:
        constant = [n for n in node.inputs if n in resolved.constants]
        if len(constant) != 1:
            return False
        bias, value = index, next(n for n in node.inputs if n not in resolved.constants)
        matmul = flow.producer.get(value)
        if matmul is None or not flow.inner(value):
            return False
        index, node = matmul, steps[matmul].node
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
        b_name = rewrite.constant(
            f"{add.inputs[position]}_scaled",
            _rounded(b.astype(np.float64) * factor, dtype),
        )
        inputs = list(add.inputs)
        inputs[position] = b_name
        steps[bias] = dataclasses.replace(steps[bias], node=dataclasses.replace(add, inputs=inputs))
    w_name = rewrite.constant(
        f"{node.inputs[1]}_scaled", _rounded(W.astype(np.float64) * factor, dtype)
    )
    steps[index] = dataclasses.replace(
        steps[index], node=dataclasses.replace(node, inputs=[node.inputs[0], w_name])
    )
    return True


def _fuse_conv_activation(rewrite: _Rewrite) -> None:
    resolved = rewrite.resolved
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
        applied = tuple(n for i in pattern for n in model_nodes(steps[i]))
        note = "Conv"
        if folded:
            note += f" with {', '.join(n.op_type for n in folded)} folded in"
        activations = [steps[i].node.op_type for i in pattern]
        note += f", then {' and '.join(activations)} in place, in one call"
        steps[index] = FusedStep(new, emitter, step.bodies, folded + applied, node, note)
        flow.move_symbols(
            [value, *(steps[i].node.outputs[0] for i in pattern[:-1])], last.outputs[0]
        )
        removed.update(pattern)
    steps[:] = [s for i, s in enumerate(steps) if i not in removed]


def _conv_activation(flow: _Flow, value: str):
    """(activation, bounds, the steps it takes) when the activation of a Conv's result `value`
    is one ConvActivation computes, read by nothing else; else None."""
    readers = flow.readers[value] - flow.symbol_reads[value]  # dim reads move (move_symbols)
    if value in flow.resolved.graph.outputs or readers not in (1, 2):
        return None
    first = _reader(flow.steps, value, flow.producer[value])
    node = flow.steps[first].node if first is not None else None
    # the model's nodes, or the HardSwish the hard-swish rule made of them
    ours = node is not None and (node.domain, node.op_type) == (fused.DOMAIN, "HardSwish")
    if node is None or (node.domain and not ours) or node.inputs[:1] != [value]:
        return None
    if readers == 2:  # SiLU: Mul(value, Sigmoid(value)), in either operand order
        mul = flow.next_reader(node.outputs[0]) if node.op_type == "Sigmoid" else None
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
    bounds: dict[str, float] = {}
    if node.opset < 11:
        for name, attribute in (("low", "min"), ("high", "max")):
            if node.attrs.get(attribute) is not None:
                bounds[name] = float(node.attrs[attribute])  # type: ignore[arg-type]
    else:
        for name, position in (("low", 1), ("high", 2)):
            if len(node.inputs) > position and node.inputs[position]:
                c = resolved.constants.get(node.inputs[position])
                if c is None or c.size != 1:
                    return None
                bounds[name] = float(c.reshape(()))
    return {"activation": "clip", **bounds}


# The single activations ConvActivation takes, by op type: their keywords, None if not fusable.
_CONV_ACTIVATIONS = {
    "Relu": lambda node, resolved: {"activation": "relu"},
    "HardSwish": lambda node, resolved: {"activation": "hard_swish"},
    "Clip": _clip_bounds,
}
# ScaleShift takes the clamps among them (np.clip in place)
_SCALE_SHIFT_ACTIVATIONS = {
    "Relu": lambda node, resolved: {"activation": "clip", "low": 0.0},
    "Clip": _clip_bounds,
}


# conv-bias-column's conditions. Per call (thread CPU time, one process, load 1-4), product with
# the bias column / product then bias pass: 16 -> 72 channels at 56x56 0.81-0.89, 16 -> 96 at
# 48x48 0.65-0.71, 24 -> 144 at 24x24 0.81-0.86, 32 -> 192 at 12x12 0.80-0.85, 64 -> 384 at 6x6
# 0.84; lost or even: 160 -> 960 at 3x3 0.96-1.12, 16 -> 16 at 112x112 1.10 (the input copy is
# as large as the result), projections 1.06-1.96 (session 7).
BIAS_COLUMN_EXPANSION = 4
BIAS_COLUMN_POSITIONS = 36


def _bias_column(rewrite: _Rewrite) -> None:
    resolved = rewrite.resolved
    for index, step in enumerate(resolved.steps):
        node = step.node
        if (node.op_type, node.domain) not in (("Conv", ""), ("ConvActivation", fused.DOMAIN)):
            continue
        if len(node.inputs) != 3 or not node.inputs[2] or node.attrs.get("bias_column"):
            continue
        W = resolved.constants.get(node.inputs[1])
        B = resolved.constants.get(node.inputs[2])
        x_type = resolved.types.get(node.inputs[0])
        if W is None or B is None or not isinstance(x_type, ir.TensorType) or not x_type.static:
            continue
        shape = x_type.shape
        assert shape is not None  # static
        pads, strides = (node.attrs.get(name) or () for name in ("pads", "strides"))
        if (
            W.dtype != np.float32
            or B.dtype != np.float32
            or x_type.dtype != np.float32
            or W.ndim < 3
            or W.ndim != len(shape)
            or any(k != 1 for k in W.shape[2:])
            or B.shape != W.shape[:1]
            or shape[0] != 1
            or shape[1] != W.shape[1]
            or node.attrs.get("group", 1) != 1
            or not isinstance(pads, (list, tuple))
            or not isinstance(strides, (list, tuple))
            or any(pads)
            or any(v != 1 for v in strides)
            or node.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID")
            or W.shape[0] < BIAS_COLUMN_EXPANSION * W.shape[1]
            or math.prod(shape[2:]) < BIAS_COLUMN_POSITIONS  # type: ignore[arg-type]
        ):
            continue
        maps, channels = W.shape[:2]
        joined = np.concatenate([W.reshape(maps, channels), B.reshape(maps, 1)], axis=1)
        joined = joined.reshape((maps, channels + 1) + W.shape[2:])
        name = rewrite.constant(f"{node.inputs[1]}_bias_column", joined)
        new = dataclasses.replace(
            node, inputs=[node.inputs[0], name], attrs={**node.attrs, "bias_column": 1}
        )
        resolved.steps[index] = dataclasses.replace(step, node=new)


def _gemm_weight_layout(rewrite: _Rewrite) -> None:
    resolved = rewrite.resolved
    flow = _Flow(resolved)

    def transposed_weight(step: Step) -> str | None:
        """The constant B of a float32 Gemm with transB (and not transA), else None."""
        node = step.node
        if (node.op_type, node.domain) != ("Gemm", "") or len(node.inputs) < 2:
            return None
        if not node.attrs.get("transB") or node.attrs.get("transA"):
            return None
        B = resolved.constants.get(node.inputs[1])
        a_type = resolved.types.get(node.inputs[0])
        if B is None or B.dtype != np.float32 or B.ndim != 2:
            return None
        if getattr(a_type, "dtype", None) != np.float32:
            return None
        return node.inputs[1]

    gemms: dict[str, list[int]] = {}
    for index, step in enumerate(resolved.steps):
        name = transposed_weight(step)
        if name is not None:
            gemms.setdefault(name, []).append(index)
    for name, indices in gemms.items():
        readers = flow.readers[name]
        if readers != len(indices) or name in resolved.graph.outputs:
            continue  # read elsewhere too: a second, transposed copy would double its bytes
        weight = np.ascontiguousarray(resolved.constants[name].T)
        transposed = rewrite.constant(f"{name}_transposed", weight)
        for index in indices:
            step = resolved.steps[index]
            inputs = [step.node.inputs[0], transposed, *step.node.inputs[2:]]
            new = dataclasses.replace(
                step.node, inputs=inputs, attrs={**step.node.attrs, "transB": 0}
            )
            resolved.steps[index] = dataclasses.replace(step, node=new)


# The rules in the order they run (see the module docstring).
RULES = (
    Rule("conv-affine", _fold_conv_affine),
    PatternRule("hard-swish", HARD_SWISH, _build_hard_swish),
    Rule("conv-activation", _fuse_conv_activation),
    Rule("conv-bias-column", _bias_column),
    Rule("batch-norm", _fold_batch_norm),
    PatternRule("layer-norm", LAYER_NORM, _build_layer_norm),
    PatternRule("rms-norm", RMS_NORM, _build_rms_norm),
    PatternRule("gelu-erf", GELU_ERF, _gelu_build("none", "0.5 * x * (1 + erf(x / sqrt 2))")),
    PatternRule(
        "gelu-tanh",
        GELU_TANH,
        _gelu_build("tanh", "0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))"),
    ),
    Rule("product-scale", _fold_product_scale),
    PatternRule("attention", ATTENTION, _build_attention),
    Rule("gemm-weight-layout", _gemm_weight_layout),
)


def _batch_norm_terms(node: ir.Node, resolved: ResolvedGraph):
    """(factor, bias, mean) in float64, factor = scale / sqrt(var + epsilon), for an inference
    BatchNormalization with constant statistics (y = (x - mean) * factor + bias), else None."""
    if node.attrs.get("training_mode", 0) or any(node.outputs[1:]):
        return None
    found = [resolved.constants.get(name) for name in node.inputs[1:5]]
    values = [v for v in found if v is not None]
    if len(values) < 4 or any(
        v.dtype not in FLOAT_TYPES or v.shape != values[0].shape for v in values
    ):
        return None
    scale, bias, mean, var = (v.astype(np.float64) for v in values)
    epsilon = float(node.attrs["epsilon"])  # type: ignore[arg-type]
    return scale / np.sqrt(var + epsilon), bias, mean


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


def _all_dims(resolved: ResolvedGraph):
    """(value, dims) of every typed value and shape value of `resolved`, its bodies' included."""
    for name, value_type in resolved.types.items():
        yield name, getattr(value_type, "shape", None) or ()
    for name, shape_value in resolved.symbolic.items():
        yield name, shape_value.dims
    for step in resolved.steps:
        for body in step.bodies.values():
            yield from _all_dims(body)
