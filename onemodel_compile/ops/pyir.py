"""The code emit rules build: a small typed IR of Python expressions and assignments, and its printer.

An emit rule returns an expression (assigned to the node's outputs) or a list of `Assign`. The
nodes say what a piece of code is, so later stages ask instead of parsing text:

    Ref("x")                        an identifier of `run` (a value, a temporary, a symbol)
    Const(array, "w")               a compile-time array; the printer writes a literal or the name
                                    of a module constant (deduplicated; only the ones read exist)
    Lit(0.5), Lit((1, 2)), Lit("x")  a Python literal (numbers round-trip exactly, strings escaped)
    DType(np.float32)               a dtype: `np.float32`
    Scalar(0.1, np.float32)         a numpy scalar, as short as round-tripping allows
    Call("np.add", (a, b), kw)      a function of numpy (`np.`), runtime_support (`rt.`) or a
                                    builtin; its properties (takes `out=`, returns a fresh array,
                                    exact, its exact twin) come from runtime_support._kernels
    Method(x, "reshape", args, kw), Attr(x, "shape"), Index(x, key), Slice(start, stop, step)
    BinOp("+", a, b), Unary("-", a), IfExp(test, then, other), Tuple(items), List(items)

`call`, `method` and friends build nodes from operands, nodes and plain Python values (wrapped as
literals), so a rule reads like the code it makes: `call("np.add", A, B)`,
`method(X, "reshape", (batch, -1))`. Model text enters only through `Lit` (escaped with repr)
and `Ref`s handed out by the namespace (sanitized identifiers).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Union

import numpy as np

from onemodel_compile.ops.code import dtype_expr, literal, py
from onemodel_compile.ops.code import scalar as scalar_code


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True, eq=False)
class Const:
    value: np.ndarray
    hint: str  # the ONNX value name it came from, for the module constant's identifier


@dataclass(frozen=True)
class Lit:
    value: object  # int, float, bool, str, None, or a (nested) tuple of them


@dataclass(frozen=True)
class DType:
    dtype: np.dtype


@dataclass(frozen=True)
class Scalar:
    """A numpy scalar of `dtype`, written as short as round-tripping allows: `np.float32(0.1)`."""

    value: object
    dtype: np.dtype


@dataclass(frozen=True)
class Call:
    function: str  # as generated code writes it: "np.add", "rt.softmax", "tuple"
    args: tuple = ()
    kwargs: tuple = ()  # ((name, expr), ...) in order


@dataclass(frozen=True)
class Method:
    obj: "Expr"
    name: str
    args: tuple = ()
    kwargs: tuple = ()


@dataclass(frozen=True)
class Attr:
    obj: "Expr"
    name: str


@dataclass(frozen=True)
class Slice:
    start: "Expr | None" = None
    stop: "Expr | None" = None
    step: "Expr | None" = None


@dataclass(frozen=True)
class Index:
    obj: "Expr"
    key: "Expr"  # an expression, a Slice, or a Tuple of them (Lit(...) is the Ellipsis)


@dataclass(frozen=True)
class BinOp:
    op: str  # + - * / // % @ ** == != < <= > >= is, is not, in, not in, and, or, & | ^
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class Unary:
    op: str  # "-", "not ", "~"
    operand: "Expr"


@dataclass(frozen=True)
class IfExp:
    test: "Expr"
    then: "Expr"
    other: "Expr"


@dataclass(frozen=True)
class Tuple:
    items: tuple


@dataclass(frozen=True)
class List:
    items: tuple


Expr = Union[
    Ref,
    Const,
    Lit,
    DType,
    Scalar,
    Call,
    Method,
    Attr,
    Slice,
    Index,
    BinOp,
    Unary,
    IfExp,
    Tuple,
    List,
]
NODES = (
    Ref, Const, Lit, DType, Scalar, Call, Method, Attr, Slice, Index, BinOp, Unary, IfExp, Tuple, List
)  # fmt: skip
ELLIPSIS = Lit(Ellipsis)


@dataclass(frozen=True)
class Assign:
    """`targets = value`; a None target is `_`. `unpack` writes one target as `(y,) = ...`."""

    targets: tuple
    value: Expr
    unpack: bool = False


# --- building ------------------------------------------------------------------------------


def expr(value) -> Expr:
    """`value` as a node: a node as is, an operand's node, a dtype, or a Python literal."""
    if isinstance(value, NODES):
        return value
    node = getattr(value, "node", None)
    if isinstance(node, NODES):
        return node
    if isinstance(value, (np.dtype, type)) and value is not None:
        return DType(np.dtype(value))
    if isinstance(value, (list, tuple)) and any(_is_code(v) for v in value):
        return Tuple(tuple(expr(v) for v in value))
    if isinstance(value, np.ndarray):
        return Lit(_plain(value.tolist()))
    return Lit(_plain(value))


def _is_code(value) -> bool:
    """Whether `value` needs a node of its own (a literal cannot hold it): a node, an operand,
    or a dtype."""
    if isinstance(value, (np.dtype, type)):
        return True
    return isinstance(value, NODES) or isinstance(getattr(value, "node", None), NODES)


def _plain(value):
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _arguments(args, kwargs: dict) -> tuple[tuple, tuple]:
    return tuple(expr(a) for a in args), tuple((k, expr(v)) for k, v in kwargs.items())


def call(function: str, *args, **kwargs) -> Call:
    return Call(function, *_arguments(args, kwargs))


def method(obj, name: str, *args, **kwargs) -> Method:
    return Method(expr(obj), name, *_arguments(args, kwargs))


def attr(obj, name: str) -> Attr:
    return Attr(expr(obj), name)


def index(obj, key) -> Index:
    return Index(expr(obj), expr(key))


def binop(op: str, left, right) -> BinOp:
    return BinOp(op, expr(left), expr(right))


def scalar(value, dtype) -> Scalar:
    return Scalar(_plain(value), np.dtype(dtype))


def ifexp(test, then, other) -> IfExp:
    return IfExp(expr(test), expr(then), expr(other))


def tuple_of(items) -> Tuple:
    return Tuple(tuple(expr(i) for i in items))


def assign(targets, value, unpack: bool = False) -> Assign:
    return Assign(tuple(targets), expr(value), unpack)


def optional_arguments(names, operands) -> tuple[list, dict]:
    """Operands of a node with optional inputs as a kernel's arguments: positionally up to the
    first absent one (None), the present ones after it as keywords named by `names` (the kernel's
    parameter names, in order), so that no absent input is passed as a positional None."""
    args: list = []
    kwargs: dict = {}
    for position, (name, operand) in enumerate(zip(names, operands)):
        if operand is None:
            continue
        if position == len(args):  # every operand before it is present
            args.append(operand)
        else:
            kwargs[name] = operand
    return args, kwargs


# --- reading -------------------------------------------------------------------------------


def children(node) -> list:
    """The direct sub-expressions of `node`, in source order."""
    if isinstance(node, (Call, Method)):
        head = [node.obj] if isinstance(node, Method) else []
        return head + list(node.args) + [v for _, v in node.kwargs]
    if isinstance(node, Attr):
        return [node.obj]
    if isinstance(node, Index):
        return [node.obj, node.key]
    if isinstance(node, Slice):
        return [p for p in (node.start, node.stop, node.step) if p is not None]
    if isinstance(node, BinOp):
        return [node.left, node.right]
    if isinstance(node, Unary):
        return [node.operand]
    if isinstance(node, IfExp):
        return [node.test, node.then, node.other]
    if isinstance(node, (Tuple, List)):
        return list(node.items)
    if isinstance(node, Assign):
        return [node.value]
    return []


def walk(node):
    """`node` and every node below it, depth first."""
    yield node
    for child in children(node):
        yield from walk(child)


# --- printing ------------------------------------------------------------------------------

# Binding strength, loosest first; an operand binding less tightly than its operator is
# parenthesized, and so is every arithmetic operand that is itself arithmetic, so that the order
# of operations (it decides the rounding) is on the page.
_PRECEDENCE = {
    "if": 1, "or": 2, "and": 3, "not ": 4,
    "==": 5, "!=": 5, "<": 5, "<=": 5, ">": 5, ">=": 5, "is": 5, "is not": 5, "in": 5,
    "not in": 5,
    "|": 6, "^": 7, "&": 8, "+": 10, "-": 10, "*": 11, "/": 11, "//": 11, "%": 11, "@": 11,
    "unary": 12, "**": 13,
}  # fmt: skip
_ATOM = 20


@dataclass
class Printer:
    """Turns nodes into source. `constant` writes a Const (a literal or a module constant's
    name); `function` maps a function's name (the variant's twins)."""

    constant: Callable[[Const], str] = field(default=lambda node: literal(node.value))
    function: Callable[[str], str] = field(default=lambda name: name)

    def statement(self, node) -> str:
        if isinstance(node, Assign):
            names = [t if t is not None else "_" for t in node.targets]
            if node.unpack and len(names) == 1:
                left = f"({names[0]},)"
            else:
                left = ", ".join(names)
            return f"{left} = {self.source(node.value)}"
        return self.source(node)

    def source(self, node) -> str:
        return self._print(node)[0]

    def _print(self, node) -> tuple[str, int]:
        """Source and binding strength."""
        if isinstance(node, Ref):
            return node.name, _ATOM
        if isinstance(node, Const):
            return self.constant(node), _ATOM
        if isinstance(node, Lit):
            return ("..." if node.value is Ellipsis else py(node.value)), _literal_strength(node)
        if isinstance(node, DType):
            return dtype_expr(node.dtype), _ATOM
        if isinstance(node, Scalar):
            return scalar_code(node.value, node.dtype), _ATOM
        if isinstance(node, Call):
            return f"{self.function(node.function)}({self._arguments(node)})", _ATOM
        if isinstance(node, Method):
            return f"{self._atom(node.obj)}.{node.name}({self._arguments(node)})", _ATOM
        if isinstance(node, Attr):
            return f"{self._atom(node.obj)}.{node.name}", _ATOM
        if isinstance(node, Index):
            key = node.key
            inner = (
                ", ".join(self._subscript(k) for k in key.items)
                + ("," if len(key.items) == 1 else "")
                if isinstance(key, Tuple) and key.items
                else self._subscript(key)
            )
            return f"{self._atom(node.obj)}[{inner}]", _ATOM
        if isinstance(node, BinOp):
            return self._binop(node)
        if isinstance(node, Unary):
            strength = _PRECEDENCE["not "] if node.op == "not " else _PRECEDENCE["unary"]
            text, bound = self._print(node.operand)
            if bound <= strength or isinstance(node.operand, BinOp):
                text = f"({text})"
            return f"{node.op}{text}", strength
        if isinstance(node, IfExp):
            parts = [self._print(p) for p in (node.then, node.test, node.other)]
            then, test, other = (t if s > 1 else f"({t})" for t, s in parts)
            return f"{then} if {test} else {other}", 1
        if isinstance(node, Tuple):
            items = [self.source(i) for i in node.items]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")", _ATOM
        if isinstance(node, List):
            return "[" + ", ".join(self.source(i) for i in node.items) + "]", _ATOM
        raise TypeError(f"not a code node: {node!r}")

    def _binop(self, node: BinOp) -> tuple[str, int]:
        strength = _PRECEDENCE[node.op]
        arithmetic = strength >= _PRECEDENCE["+"]
        comparison = strength == _PRECEDENCE["=="]
        left, left_strength = self._print(node.left)
        right, right_strength = self._print(node.right)
        if (
            left_strength < strength
            or ((arithmetic or comparison) and isinstance(node.left, BinOp))
            or (node.op == "**" and left_strength <= strength)
        ):
            left = f"({left})"
        if right_strength <= strength or (arithmetic and isinstance(node.right, BinOp)):
            right = f"({right})"
        return f"{left} {node.op} {right}", strength

    def _atom(self, node) -> str:
        text, strength = self._print(node)
        return text if strength == _ATOM else f"({text})"

    def _subscript(self, node) -> str:
        if isinstance(node, Slice):
            parts = [
                "" if p is None else self.source(p) for p in (node.start, node.stop, node.step)
            ]
            return ":".join(parts[:2]) + (f":{parts[2]}" if node.step is not None else "")
        return self.source(node)

    def _arguments(self, node) -> str:
        parts = [self.source(a) for a in node.args]
        parts += [f"{name}={self.source(value)}" for name, value in node.kwargs]
        return ", ".join(parts)


def _literal_strength(node: Lit) -> int:
    value = node.value
    negative = isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0
    return _PRECEDENCE["unary"] if negative else _ATOM


def source(node) -> str:
    """`node` printed with the default printer (constants as literals)."""
    return Printer().statement(node)


# --- reading text: the symbolic dims' arithmetic (symbolic.code) -----------------------------

_OPERATORS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.MatMult: "@", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
    ast.USub: "-", ast.Not: "not ", ast.Invert: "~", ast.And: "and", ast.Or: "or",
}  # fmt: skip


def parse(text: str):
    """Source text (an expression or one assignment) as nodes: the arithmetic of symbolic dims
    that symbolic.code prints (`batch * 12`). Only ever the compiler's own code, never the
    model's."""
    (statement,) = ast.parse(text).body
    if isinstance(statement, ast.Assign):
        (target,) = statement.targets
        if isinstance(target, ast.Tuple):
            identifiers = [_identifier(t) for t in target.elts]
            names = tuple(None if n == "_" else n for n in identifiers)
            unpack = len(names) == 1
        else:
            names, unpack = (_identifier(target),), False
        return Assign(names, _node(statement.value), unpack)
    if isinstance(statement, ast.Expr):
        return _node(statement.value)
    raise ValueError(f"not an expression or an assignment: {text!r}")


def _identifier(node: ast.expr) -> str:
    if not isinstance(node, ast.Name):
        raise ValueError(f"not a plain assignment target: {ast.unparse(node)}")
    return node.id


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _function_name(node: ast.expr) -> str | None:
    name = _dotted(node)
    if name is not None and (name.startswith(("np.", "rt.")) or "." not in name):
        return name
    return None


def _node(node: ast.expr) -> Expr:
    if isinstance(node, ast.Name):
        return Ref(node.id)
    if isinstance(node, ast.Constant):
        return Lit(node.value)
    if isinstance(node, ast.Attribute):
        name = _dotted(node)
        if name is not None and name.startswith("np.") and name.count(".") == 1:
            dtype = getattr(np, node.attr, None)
            if isinstance(dtype, type) and issubclass(dtype, np.generic):
                return DType(np.dtype(dtype))
            if node.attr in ("nan", "inf", "newaxis"):
                return Ref(name)
        return Attr(_node(node.value), node.attr)
    if isinstance(node, ast.Call):
        args = tuple(_node(a) for a in node.args)
        kwargs = tuple((k.arg, _node(k.value)) for k in node.keywords)
        function = _function_name(node.func)
        if function is not None:
            return Call(function, args, kwargs)
        if isinstance(node.func, ast.Attribute):
            return Method(_node(node.func.value), node.func.attr, args, kwargs)
        raise ValueError(f"unsupported call: {ast.unparse(node)}")
    if isinstance(node, ast.Subscript):
        return Index(_node(node.value), _node(node.slice))
    if isinstance(node, ast.Slice):
        parts = (node.lower, node.upper, node.step)
        return Slice(*(None if p is None else _node(p) for p in parts))
    if isinstance(node, ast.BinOp):
        return BinOp(_OPERATORS[type(node.op)], _node(node.left), _node(node.right))
    if isinstance(node, ast.BoolOp):
        result = _node(node.values[0])
        for value in node.values[1:]:
            result = BinOp(_OPERATORS[type(node.op)], result, _node(value))
        return result
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return BinOp(_OPERATORS[type(node.ops[0])], _node(node.left), _node(node.comparators[0]))
    if isinstance(node, ast.UnaryOp):
        operand = _node(node.operand)
        if (
            isinstance(node.op, ast.USub)
            and isinstance(operand, Lit)
            and isinstance(operand.value, (int, float))
            and not isinstance(operand.value, bool)
        ):
            return Lit(-operand.value)
        return Unary(_OPERATORS[type(node.op)], operand)
    if isinstance(node, ast.IfExp):
        return IfExp(_node(node.test), _node(node.body), _node(node.orelse))
    if isinstance(node, ast.Tuple):
        items = tuple(_node(e) for e in node.elts)
        values = [i.value for i in items if isinstance(i, Lit)]
        return Lit(tuple(values)) if len(values) == len(items) else Tuple(items)
    if isinstance(node, ast.List):
        return List(tuple(_node(e) for e in node.elts))
    raise ValueError(f"unsupported expression: {ast.unparse(node)}")
