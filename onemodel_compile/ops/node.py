"""What an emitter sees of a node: its attributes, its operands and its results.

An Operand is an input as code (`node`: a pyir node, a Ref to an identifier or a Const) with its
type and, when known at compile time, its value; `expr` is its source, for rules that still build
text. A Result is an output's identifier and inferred type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from onemodel_compile.errors import CompileError
from onemodel_compile.ir import UNKNOWN, Node, TensorType, ValueType
from onemodel_compile.ops import pyir
from onemodel_compile.ops.code import tuple_code


class _Typed:
    """dtype, shape and rank read off a value's type (None when unknown or not a tensor)."""

    type: ValueType

    @property
    def dtype(self) -> np.dtype | None:
        return getattr(self.type, "dtype", None)

    @property
    def shape(self):
        return getattr(self.type, "shape", None)

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)


@dataclass(frozen=True, eq=False)
class Operand(_Typed):
    node: pyir.Expr
    type: ValueType
    const: np.ndarray | None = None
    # A shape value computed in Python ints (resolve's shape arithmetic): its elements, each an
    # int or the source of a Python int expression (`batch * 12`); `node` builds the array.
    values: tuple | None = None
    # Prints `node` for `expr` (a Const's name is settled, and the constant kept, only then).
    render: Callable[[pyir.Expr], str] = pyir.source

    @property
    def expr(self) -> str:
        return self.render(self.node)

    @property
    def value_nodes(self) -> tuple | None:
        """`values` as code nodes (ints as literals), or None when this is no shape value."""
        if self.values is None:
            return None
        return tuple(element_node(v) for v in self.values)

    def __str__(self) -> str:
        return self.expr


@dataclass(frozen=True)
class Result(_Typed):
    name: str
    type: ValueType

    def __str__(self) -> str:
        return self.name


class NodeView:
    """A node ready to emit. Inputs and outputs are indexed like the ONNX node's; absent ones
    (empty name or beyond the end) are None."""

    def __init__(
        self,
        node: Node,
        inputs,
        outputs,
        variant,
        temporary: Callable[[str], str],
        body: Callable[[str], str] | None = None,
        dim_code: Callable[[object], str | None] | None = None,
    ):
        self.node = node
        self._dim_code = dim_code
        self.inputs: list[Operand | None] = inputs
        self.outputs: list[Result | None] = outputs
        self.variant = variant
        self._temporary = temporary
        self._body = body

    @property
    def op_type(self) -> str:
        return self.node.op_type

    @property
    def opset(self) -> int:
        return self.node.opset

    @property
    def attrs(self) -> dict:
        return self.node.attrs

    def attr(self, name: str, default=None):
        return self.node.attrs.get(name, default)

    def input(self, index: int) -> Operand | None:
        return self.inputs[index] if index < len(self.inputs) else None

    def output(self, index: int) -> Result | None:
        return self.outputs[index] if index < len(self.outputs) else None

    def const(self, index: int) -> np.ndarray | None:
        operand = self.input(index)
        return None if operand is None else operand.const

    def dim_code(self, dim) -> str | None:
        """Python source for a dim at run time: an int's digits, a symbol's identifier or an
        expression of them; None when the module cannot compute it without looking."""
        if isinstance(dim, int):
            return str(dim)
        return None if self._dim_code is None else self._dim_code(dim)

    def dim(self, dim) -> pyir.Expr | None:
        """A dim at run time as code (see dim_code), or None."""
        code = self.dim_code(dim)
        return None if code is None else pyir.parse(code)  # symbolic's own arithmetic

    def shape_code(self, shape) -> str | None:
        """A tuple literal computing `shape` at run time, or None (see dim_code)."""
        if shape is None:
            return None
        dims = [self.dim_code(d) for d in shape]
        if any(d is None for d in dims):
            return None
        return tuple_code(dims)

    def temporary(self, hint: str) -> str:
        """A fresh identifier for an intermediate inside this node's statements."""
        return self._temporary(hint)

    def body(self, attr: str) -> str:
        """The name of a nested function computing the subgraph in attribute `attr`; it takes the
        subgraph's inputs and returns the tuple of its outputs. Its definition is emitted just
        before this node's statements."""
        if self._body is None:
            raise CompileError(f"{self.node.label}: subgraphs cannot be evaluated at compile time")
        return self._body(attr)

    @property
    def out(self) -> Result:
        """The first output (most operators have one)."""
        return self.outputs[0]


def element_node(value: int | str) -> pyir.Expr:
    """One element of a shape value as a node: an int literal, or the Python int expression
    symbolic.code printed for it (`batch * 12`)."""
    return pyir.parse(value) if isinstance(value, str) else pyir.Lit(value)


def operand(
    node: pyir.Expr,
    value_type: ValueType | None,
    const: np.ndarray | None = None,
    render: Callable[[pyir.Expr], str] = pyir.source,
) -> Operand:
    if const is not None:
        value_type = TensorType(const.dtype, tuple(const.shape))
    return Operand(node, value_type or UNKNOWN, const, None, render)


def statements(view: NodeView, emitted) -> list[pyir.Assign]:
    """An emit rule's result as assignments. An expression is assigned to the node's outputs: it
    yields the single value when the node lists one output, else a tuple of as many values as the
    node lists outputs (absent ones are bound to `_`). A list of assignments is taken as is.
    Rules build nodes, never source text (ops/pyir.py)."""
    if isinstance(emitted, pyir.NODES):
        targets = tuple(out.name if out is not None else None for out in view.outputs)
        return [pyir.Assign(targets, emitted)]
    if isinstance(emitted, pyir.Assign):
        return [emitted]
    if isinstance(emitted, list) and all(isinstance(e, pyir.Assign) for e in emitted):
        return emitted
    raise CompileError(
        f"{view.node.label}: internal error: its emit rule returned {type(emitted).__name__}, "
        f"not code nodes"
    )
