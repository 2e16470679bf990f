"""The compiler's own shape inference, run by `resolve` after onnx's: shape values and symbolic dims.

Exporters compute shapes at run time: `Reshape(x, Concat(Slice(Shape(x), 0, 2), [-1]))`,
`Expand(mask, Shape(scores))`, `Range(0, Gather(Shape(ids), 1), 1)`. onnx's inference often gives up
on these, and then every later node sees an unknown rank. Here a small int tensor (rank 0 or 1)
whose elements are known as symbolic dims (`symbolic.Dim`: ints, named input dims, and sums,
products and floor divisions of them) is a *shape value*; `evaluate` follows shape values through
the operators that compute shapes, and `output_types` gives the operators that consume them
(Reshape, Expand, ConstantOfShape, Tile, Range) their rank and dims.

A shape value whose elements are all ints is an ordinary constant. One whose symbols the module
can read off `.shape` at run time is computed in Python ints there (see emit), so the nodes that
only compute it leave `run`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from onemodel_compile import ir, onnxruntime_types
from onemodel_compile import symbolic as sym

MAX_ELEMENTS = 64  # a longer int vector is data, not a shape
# A dim is reasoned about only while it stays small: an int64, an expression of at most this many
# symbols, terms and operands together (a chain of Muls squaring a symbol would otherwise double
# its expression at every node; docs/robustness.md).
MAX_EXPRESSION_SIZE = 64
INT64 = np.dtype(np.int64)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _expression_size(d) -> int:
    """How big a dim is to reason about (over MAX_EXPRESSION_SIZE: too big; an int outside
    int64 counts as too big, as ONNX computes sizes in int64)."""
    if isinstance(d, bool):
        return 1
    if isinstance(d, int):
        return 1 if INT64_MIN <= d <= INT64_MAX else MAX_EXPRESSION_SIZE + 1
    if isinstance(d, sym.Expr):
        total = 0
        for monomial, coefficient in d.terms:
            total += 1 + _expression_size(coefficient)
            for atom in monomial:
                total += _expression_size(atom)
            if total > MAX_EXPRESSION_SIZE:
                break
        return total
    if isinstance(d, sym.Atom):
        return 1 + sum(_expression_size(o) for o in d.operands)
    return 1  # a symbol's name (or None)


def bounded(d) -> bool:
    """Whether the element `d` of a shape value is small enough to reason about."""
    return _expression_size(d) <= MAX_EXPRESSION_SIZE


def plausible_dim(d) -> bool:
    """Whether `d` can be a tensor's size: bounded, and not a negative int."""
    return bounded(d) and not (isinstance(d, int) and d < 0)


@dataclass(frozen=True)
class ShapeValue:
    """An int tensor of rank 0 (`scalar`) or 1 known element by element as dims."""

    dtype: np.dtype
    dims: tuple  # of symbolic.Dim, never None
    scalar: bool = False

    @property
    def static(self) -> bool:
        return all(isinstance(d, int) for d in self.dims)

    def array(self) -> np.ndarray:
        """The value as an array (only when static)."""
        values = np.array([int(d) for d in self.dims], dtype=self.dtype)
        return values.reshape(()) if self.scalar else values

    @property
    def type(self) -> ir.TensorType:
        return ir.TensorType(self.dtype, () if self.scalar else (len(self.dims),))

    def atoms(self) -> set[str]:
        found: set[str] = set()
        for d in self.dims:
            found |= sym.atoms(d)
        return found


def from_constant(value: np.ndarray | None) -> ShapeValue | None:
    """A small integer constant as a shape value (bools included: Where's conditions)."""
    if value is None or value.ndim > 1 or value.size > MAX_ELEMENTS:
        return None
    if value.dtype.kind not in "iub":
        return None
    return ShapeValue(value.dtype, tuple(int(v) for v in value.reshape(-1)), value.ndim == 0)


@dataclass
class Known:
    """What resolve knows of one input: its type, its value if constant, its shape value."""

    type: ir.ValueType
    value: ShapeValue | None

    @property
    def shape(self):
        return getattr(self.type, "shape", None)


Rule = Callable[[ir.Node, list], "list[ShapeValue | None] | None"]
_RULES: dict[str, Rule] = {}


def rule(*op_types: str):
    def register(function: Rule) -> Rule:
        for op_type in op_types:
            _RULES[op_type] = function
        return function

    return register


def evaluate(node: ir.Node, inputs: list[Known | None]) -> list[ShapeValue | None] | None:
    """The shape values of `node`'s outputs, where its rule can say (None: nothing known)."""
    if node.domain or node.op_type not in _RULES:
        return None
    try:
        found = _RULES[node.op_type](node, inputs)
    except (TypeError, ValueError, IndexError, ZeroDivisionError, OverflowError):
        return None  # the rule does not apply (an odd dtype, an index out of range)
    if found is None or any(
        v is not None and (len(v.dims) > MAX_ELEMENTS or not all(bounded(d) for d in v.dims))
        for v in found
    ):
        return None
    return found


def _value(inputs, index: int) -> ShapeValue | None:
    known = inputs[index] if index < len(inputs) else None
    return None if known is None else known.value


def _ints(inputs, index: int) -> list[int] | None:
    value = _value(inputs, index)
    if value is None or not value.static:
        return None
    return [int(d) for d in value.dims]


@rule("Shape")
def _shape(node, inputs):
    shape = inputs[0].shape
    if shape is None or not sym.known(*shape):
        return None
    start, end = (
        (0, None) if node.opset < 15 else (node.attrs.get("start", 0), node.attrs.get("end"))
    )
    return [ShapeValue(INT64, tuple(shape)[start:end])]


@rule("Size")
def _size(node, inputs):
    shape = inputs[0].shape
    if shape is None or not sym.known(*shape):
        return None
    return [ShapeValue(INT64, (sym.product(shape),), scalar=True)]


@rule("Identity")
def _identity(node, inputs):
    return [_value(inputs, 0)]


@rule("Cast")
def _cast(node, inputs):
    value = _value(inputs, 0)
    target = ir.ELEMENT_TYPES.get(node.attrs.get("to"))
    if value is None or target is None:
        return None
    dtype = np.dtype(target)
    if dtype.kind not in "iu":
        return None  # floats and bools of sizes are left to the ordinary code
    return [ShapeValue(dtype, value.dims, value.scalar)]


@rule("Gather")
def _gather(node, inputs):
    data, indices = _value(inputs, 0), _value(inputs, 1)
    if data is None or data.scalar or indices is None or not indices.static:
        return None
    picked = tuple(data.dims[int(i)] for i in indices.dims)  # negative indices count from the end
    return [ShapeValue(data.dtype, picked, indices.scalar)]


@rule("Slice")
def _slice(node, inputs):
    data = _value(inputs, 0)
    if data is None or data.scalar:
        return None
    if node.opset < 10:
        starts, ends = node.attrs.get("starts"), node.attrs.get("ends")
        axes, steps = node.attrs.get("axes"), None
    else:
        starts, ends = _ints(inputs, 1), _ints(inputs, 2)
        axes = _ints(inputs, 3) if len(inputs) > 3 and inputs[3] is not None else None
        steps = _ints(inputs, 4) if len(inputs) > 4 and inputs[4] is not None else None
        if starts is None or ends is None:
            return None
        if (len(inputs) > 3 and inputs[3] is not None and axes is None) or (
            len(inputs) > 4 and inputs[4] is not None and steps is None
        ):
            return None
    if len(starts) != 1 or (axes and axes[0] not in (0, -1)):
        return None
    step = steps[0] if steps else 1
    if step == 0:
        return None
    # ONNX clamps the bounds as a Python slice does
    return [ShapeValue(data.dtype, data.dims[slice(starts[0], ends[0], step)])]


@rule("Concat")
def _concat(node, inputs):
    values = [_value(inputs, i) for i in range(len(inputs)) if inputs[i] is not None]
    if not values or any(v is None or v.scalar for v in values):
        return None
    if node.attrs.get("axis") not in (0, -1):
        return None
    dims = tuple(d for v in values for d in v.dims)
    return [ShapeValue(values[0].dtype, dims)]


def _axes(node, inputs) -> list[int] | None:
    if node.opset < 13:
        return node.attrs.get("axes")
    return _ints(inputs, 1) if len(inputs) > 1 and inputs[1] is not None else None


@rule("Unsqueeze")
def _unsqueeze(node, inputs):
    value = _value(inputs, 0)
    if value is None or not value.scalar or _axes(node, inputs) not in ([0], [-1]):
        return None
    return [ShapeValue(value.dtype, value.dims)]


@rule("Squeeze")
def _squeeze(node, inputs):
    value = _value(inputs, 0)
    if value is None or value.scalar or len(value.dims) != 1:
        return None
    if _axes(node, inputs) not in (None, [0], [-1]):
        return None
    return [ShapeValue(value.dtype, value.dims, scalar=True)]


@rule("Reshape")
def _reshape_value(node, inputs):
    value, target = _value(inputs, 0), _ints(inputs, 1)
    if value is None or target is None:
        return None
    if target == [] and len(value.dims) == 1:
        return [ShapeValue(value.dtype, value.dims, scalar=True)]
    if target in ([-1], [len(value.dims)]):
        return [ShapeValue(value.dtype, value.dims)]
    return None


def _trunc_div(a, b):
    """ONNX's integer Div truncates; for sizes (never negative) that is floor division."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError
        quotient = abs(a) // abs(b)
        return quotient if (a >= 0) == (b >= 0) else -quotient
    if isinstance(b, int) and b > 0 and sym.nonnegative(a):
        return sym.floordiv(a, b)
    return sym.exact_quotient(a, b) if sym.nonnegative(a) and sym.nonnegative(b) else None


def _mod(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return int(np.fmod(a, b)) if (a < 0) != (b < 0) else a % b  # sign of the dividend
    return sym.mod(a, b) if sym.nonnegative(a) and isinstance(b, int) and b > 0 else None


_ARITHMETIC = {
    "Add": sym.add,
    "Sub": sym.sub,
    "Mul": sym.mul,
    "Div": _trunc_div,
    "Mod": _mod,
    "Max": sym.maximum,
    "Min": sym.minimum,
}


def _broadcast(values: list[ShapeValue]):
    """The operands' elements paired for an elementwise rule (a one-element operand repeats)."""
    lengths = {len(v.dims) for v in values if len(v.dims) != 1}
    if len(lengths) > 1:
        return None
    length = lengths.pop() if lengths else 1
    columns = [v.dims * length if len(v.dims) == 1 else v.dims for v in values]
    scalar = all(v.scalar for v in values)
    return list(zip(*columns)), scalar


@rule(*_ARITHMETIC)
def _arithmetic(node, inputs):
    values = [_value(inputs, i) for i in range(len(inputs))]
    if len(values) != 2 or any(v is None or v.dtype.kind not in "iu" for v in values):
        return None  # (Max and Min of more operands are left to the ordinary code)
    paired = _broadcast(values)
    if paired is None:
        return None
    rows, scalar = paired
    combine = _ARITHMETIC[node.op_type]
    dims = tuple(combine(a, b) for a, b in rows)
    if any(d is None for d in dims):
        return None
    return [ShapeValue(values[0].dtype, dims, scalar)]


def _equal(a, b) -> int | None:
    if a == b:
        return 1
    if isinstance(a, int) and isinstance(b, int):
        return 0
    difference = sym.sub(a, b)
    if isinstance(difference, int):
        return int(difference == 0)
    constant = a if isinstance(a, int) else b if isinstance(b, int) else None
    if constant is not None and constant < 0:
        return 0  # a size is never negative
    return None


@rule("Equal")
def _equal_rule(node, inputs):
    values = [_value(inputs, 0), _value(inputs, 1)]
    if any(v is None for v in values):
        return None
    paired = _broadcast(values)
    if paired is None:
        return None
    rows, scalar = paired
    dims = tuple(_equal(a, b) for a, b in rows)
    if any(d is None for d in dims):
        return None
    return [ShapeValue(np.dtype(bool), dims, scalar)]


@rule("Where")
def _where(node, inputs):
    condition, a, b = (_value(inputs, i) for i in range(3))
    if condition is None or a is None or b is None or not condition.static:
        return None
    paired = _broadcast([condition, a, b])
    if paired is None:
        return None
    rows, scalar = paired
    return [ShapeValue(a.dtype, tuple(x if c else y for c, x, y in rows), scalar)]


# --- types of the nodes that consume shape values ---------------------------------------------


def output_types(node: ir.Node, inputs: list[Known | None]) -> list[ir.ValueType] | None:
    """Types of `node`'s outputs that follow from shape values (None where nothing follows);
    onnxruntime's own operators (onnx infers nothing of them) by onnxruntime_types's rules."""
    own = onnxruntime_types.output_types(node, inputs)
    if own is not None:
        return [_plausible(t) if isinstance(t, ir.TensorType) else t for t in own]
    if node.domain or node.op_type not in _TYPE_RULES:
        return None
    try:
        found = _TYPE_RULES[node.op_type](node, inputs)
    except (TypeError, ValueError, IndexError, ZeroDivisionError):
        return None
    return None if found is None else [_plausible(t) for t in found]


def _plausible(value_type: ir.TensorType) -> ir.TensorType:
    """`value_type` with the dims no tensor can have unknown: a negative size (a hostile model's
    ConstantOfShape of [-5]: numpy refuses it at run time), or an expression too large to
    reason about."""
    if value_type.shape is None:
        return value_type
    dims = tuple(d if plausible_dim(d) else None for d in value_type.shape)
    return ir.TensorType(value_type.dtype, dims)


def _dtype(inputs, index: int):
    known = inputs[index] if index < len(inputs) else None
    return getattr(known.type, "dtype", None) if known is not None else None


def _reshape_type(node, inputs):
    target = _value(inputs, 1)
    if target is None or target.scalar:
        return None
    shape = inputs[0].shape
    allowzero = node.attrs.get("allowzero", 0)
    dims = []
    for i, d in enumerate(target.dims):
        if d == 0 and not allowzero:
            d = shape[i] if shape is not None and i < len(shape) else None
        dims.append(d)
    if -1 in dims:
        at = dims.index(-1)
        rest = [d for i, d in enumerate(dims) if i != at]
        total = sym.product(shape) if shape is not None and sym.known(*shape) else None
        others = sym.product(rest) if sym.known(*rest) else None
        dims[at] = sym.exact_quotient(total, others) if total is not None else None
    if any(isinstance(d, int) and d < 0 for d in dims):
        return None
    if any(d is not None and not isinstance(d, int) and not sym.nonnegative(d) for d in dims):
        dims = [d if d is None or isinstance(d, int) or sym.nonnegative(d) else None for d in dims]
    return [ir.TensorType(_dtype(inputs, 0), tuple(dims))]


def broadcast_dim(a, b):
    if a == 1:
        return b
    if b == 1 or a == b:
        return a
    if isinstance(a, int) and isinstance(b, int):
        raise ValueError("shapes do not broadcast")
    if isinstance(b, int) and b != 0:
        return b  # a symbolic a must then be 1 or b
    if isinstance(a, int) and a != 0:
        return a
    return None


def _expand_type(node, inputs):
    target, shape = _value(inputs, 1), inputs[0].shape
    if target is None or target.scalar or shape is None:
        return None
    rank = max(len(shape), len(target.dims))
    a = (1,) * (rank - len(shape)) + tuple(shape)
    b = (1,) * (rank - len(target.dims)) + tuple(target.dims)
    return [ir.TensorType(_dtype(inputs, 0), tuple(broadcast_dim(x, y) for x, y in zip(a, b)))]


def _constant_of_shape_type(node, inputs):
    target = _value(inputs, 0)
    if target is None or target.scalar:
        return None
    value = node.attrs.get("value")
    dtype = np.asarray(value).dtype if value is not None else np.dtype(np.float32)
    return [ir.TensorType(dtype, tuple(target.dims))]


def _tile_type(node, inputs):
    repeats, shape = _value(inputs, 1), inputs[0].shape
    if repeats is None or shape is None or len(repeats.dims) != len(shape):
        return None
    return [
        ir.TensorType(_dtype(inputs, 0), tuple(sym.mul(a, r) for a, r in zip(shape, repeats.dims)))
    ]


def _range_type(node, inputs):
    start, limit, delta = (_value(inputs, i) for i in range(3))
    if start is None or limit is None or delta is None:
        return None
    (s,), (l,), (d,) = start.dims, limit.dims, delta.dims
    if d == 1:
        length = sym.maximum(sym.sub(l, s), 0) if isinstance(s, int) else None
        if s == 0:
            length = l  # a size
    elif isinstance(d, int) and d > 0 and s == 0 and sym.nonnegative(l):
        length = sym.floordiv(sym.add(l, d - 1), d)
    else:
        length = None
    return [ir.TensorType(_dtype(inputs, 0), (length,))]


def _resize_type(node, inputs):
    """Resize to `sizes` known as a shape value (exporters compute it from Shape): those dims."""
    sizes = _value(inputs, 3) if node.opset >= 11 else None
    shape = inputs[0].shape
    if sizes is None or sizes.scalar or shape is None:
        return None
    if node.attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        return None
    axes = node.attrs.get("axes")
    axes = list(range(len(shape))) if axes is None else [a % len(shape) for a in axes]
    if len(axes) != len(sizes.dims):
        return None
    dims = list(shape)
    for axis, size in zip(axes, sizes.dims):
        dims[axis] = size
    return [ir.TensorType(_dtype(inputs, 0), tuple(dims))]


def _concat_type(node, inputs):
    """Concat: the sizes along the axis add up; every other dim is the one the inputs share."""
    shapes_ = [k.shape for k in inputs if k is not None]
    if not shapes_ or any(s is None or len(s) != len(shapes_[0]) for s in shapes_):
        return None
    rank = len(shapes_[0])
    axis = node.attrs.get("axis", 0)
    if not -rank <= axis < rank:
        return None
    axis %= rank
    dims = []
    for i in range(rank):
        column = [s[i] for s in shapes_]
        if i == axis:
            total = 0
            for d in column:
                total = sym.add(total, d)
            dims.append(total)
        else:
            known = [d for d in column if isinstance(d, int)] or [
                d for d in column if d is not None
            ]
            dims.append(known[0] if known else None)
    return [ir.TensorType(_dtype(inputs, 0), tuple(dims))]


BROADCASTING = frozenset(
    "Add Sub Mul Div Pow Mod Max Min Mean Sum Equal Less LessOrEqual Greater GreaterOrEqual And "
    "Or Xor BitShift BitwiseAnd BitwiseOr BitwiseXor Where PRelu".split()
)


def _broadcast_type(node, inputs):
    """Multidirectional broadcasting of the inputs' shapes (the dtype is left to onnx's rule)."""
    shapes_ = [k.shape for k in inputs if k is not None]
    if not shapes_ or any(s is None for s in shapes_):
        return None
    rank = max(len(s) for s in shapes_)
    dims = []
    for axis in range(rank):
        dim = 1
        for s in shapes_:
            offset = axis - (rank - len(s))
            if offset >= 0:
                dim = broadcast_dim(dim, s[offset]) if dim is not None else None
        dims.append(dim)
    return [ir.TensorType(None, tuple(dims))]


_TYPE_RULES = {
    **{op: _broadcast_type for op in BROADCASTING},
    "Reshape": _reshape_type,
    "Expand": _expand_type,
    "ConstantOfShape": _constant_of_shape_type,
    "Tile": _tile_type,
    "Range": _range_type,
    "Resize": _resize_type,
    "Concat": _concat_type,
}


def merge_types(a: ir.ValueType, b: ir.ValueType) -> ir.ValueType:
    """One type for a value that is either `a` or `b` (If's branches): equal ranks give a known
    rank, equal dims stay, different dims become unknown (then a symbol of the If's output)."""
    if isinstance(a, ir.TensorType) and isinstance(b, ir.TensorType):
        dtype = a.dtype if a.dtype == b.dtype else None
        if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
            return ir.TensorType(dtype, None)
        return ir.TensorType(dtype, tuple(x if x == y else None for x, y in zip(a.shape, b.shape)))
    if isinstance(a, ir.SequenceType) and isinstance(b, ir.SequenceType):
        return ir.SequenceType(merge_types(a.elem, b.elem))
    if isinstance(a, ir.OptionalType) and isinstance(b, ir.OptionalType):
        return ir.OptionalType(merge_types(a.elem, b.elem))
    return a if a == b else ir.UNKNOWN
