"""Stage 5: turn a resolved graph into the module's source (and its weights), formatted by black.

Names come from one namespace in graph order; each step is one statement (or a short block) under a
provenance comment; values are released with `del` after their last use. The template in
`templates/` only places the finished pieces. Model text reaches the source only as escaped literals
(`repr`) or sanitized identifiers.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from collections import Counter
from dataclasses import dataclass
from importlib import resources

import black
import jinja2
import numpy as np

import runtime_support
from onemodel_compile import ir
from onemodel_compile import symbolic as sym
from onemodel_compile.errors import CompileError
from onemodel_compile.names import Namespace
from onemodel_compile.ops import pyir
from onemodel_compile.ops.code import literal, py
from onemodel_compile.ops.node import (
    NodeView,
    Operand,
    Result,
    element_node,
    operand,
    statements,
)
from onemodel_compile.resolve import ResolvedGraph, body_reads, is_uniform
from onemodel_compile.variants import Variant, kernel_properties
from onemodel_compile.version import __version__
from runtime_support._weights import encode_weights

# Constants are written inline when small: at most this many elements and this many characters
# (scalars, shape vectors, short lists); anything longer goes to the weights file.
INLINE_LIMIT = 16
INLINE_WIDTH = 72
BLACK_MODE = black.Mode(line_length=100)
# Methods whose result is a view, copy or element of a fresh array: fresh again when their object
# is (`.reshape(...)`, `.astype(...)`); which calls return fresh arrays is a declared property of
# each kernel (runtime_support._kernels).
FRESH_METHODS = frozenset({"reshape", "astype", "transpose", "copy"})
IN_PLACE_DTYPES = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))


def _imports(has_weights: bool) -> list[str]:
    standard = ["import typing"] + (["from pathlib import Path"] if has_weights else [])
    # one third-party block, as isort and ruff sort it in the application that imports the module
    return standard + ["", "import numpy as np", "import runtime_support as rt"]


@dataclass
class EmittedModule:
    source: str
    weights: bytes | None  # the sidecar file's content, None when every constant is inline
    weights_name: str | None


def emit_module(
    model: ir.Model, resolved: ResolvedGraph, variant: Variant, weights_name: str
) -> EmittedModule:
    graph = resolved.graph
    names = Namespace()
    parameters = [names.name(name) for name in graph.inputs]
    constants = ModuleConstants(names, variant.hoist_scalars)
    main = GraphBody(resolved, variant, names, constants)
    for name in graph.outputs:
        if name in resolved.symbolic:
            main.value_expr(name)  # notes the symbols it reads, which main.lines() binds
    body = _guarded(main.lines())
    results = [_result_expr(name, main) for name in graph.outputs]

    weight_lines = []
    weights_bytes = None
    stored = {
        k: v
        for k, v in constants.values.items()
        if not is_uniform(v) and k not in constants.hoisted
    }
    if stored:
        weights_bytes = encode_weights(stored)
        digest = hashlib.sha256(weights_bytes).hexdigest()
        weight_lines.append(
            f"_WEIGHTS = rt.load_weights(Path(__file__).with_name({weights_name!r}), "
            f"sha256={digest!r})"
        )
    weight_lines += [
        _module_constant(key, value, key in constants.hoisted)
        for key, value in constants.values.items()
    ]

    fields = Namespace(taken={"count", "index"})
    source = _template().render(
        header=_header(model, variant),
        docstring=_docstring(_describe(model, graph, resolved.invented)),
        imports=_imports(bool(stored)),
        api_version=runtime_support.API_VERSION,
        inputs=_signature(graph, graph.inputs, resolved.invented),
        outputs=_signature(graph, graph.outputs, resolved.invented),
        weights=weight_lines,
        fields=[fields.name(f"{i}", name) for i, name in enumerate(graph.outputs)],
        parameters=", ".join(parameters),
        run_docstring='"""Run the model; see the module docstring for inputs and outputs."""',
        body=body,
        results=", ".join(results),
    )
    try:
        ast.parse(source)
        source = black.format_str(source, mode=BLACK_MODE)
        source += "\n\n" + black.format_str(
            f"_NODES = {py(_node_lines(source, main.order))}", mode=BLACK_MODE
        )
    except (SyntaxError, black.InvalidInput) as exc:  # an emitter bug, never the model's
        raise CompileError(f"internal error: generated code does not parse: {exc}") from None
    return EmittedModule(source, weights_bytes, weights_name if stored else None)


def _guarded(body: list[str]) -> list[str]:
    """`run`'s node statements in one `try`, whose handler re-raises an exception naming the node
    it came from (rt.raise_in_node, through the module's `_NODES` table); a try costs nothing
    while nothing is raised."""
    if not body:
        return body
    inner = ["    " + line for statement in body for line in statement.split("\n")]
    handler = ["except Exception as error:", "    rt.raise_in_node(error, _NODES, run)"]
    return ["try:", *inner, *handler, "    raise"]


def _node_lines(source: str, order: list) -> list[tuple]:
    """Which lines of the formatted `source` belong to which node: `(first, last, description,
    inputs)` per node, from its provenance comment to the line before the next one at its depth
    (a body's nodes lie within their If's or Loop's lines); `inputs` pairs each ONNX input name
    with the identifier `run` holds it in (None for a constant)."""
    lines = source.split("\n")
    heads = []  # (line number, indent, entry)
    expected = iter(order)
    pending = next(expected, None)
    for number, line in enumerate(lines, start=1):
        stripped = line.lstrip()
        if pending is not None and stripped == f"# {pending[0]}":
            heads.append((number, len(line) - len(stripped), pending))
            pending = next(expected, None)
    head_indent = {number: indent for number, indent, _ in heads}
    entries = []
    for first, indent, (description, inputs) in heads:
        last = len(lines)
        for number in range(first + 1, len(lines) + 1):
            line = lines[number - 1]
            stripped = line.lstrip()
            depth = len(line) - len(stripped)
            if not stripped:
                continue
            is_head = head_indent.get(number, indent + 1) <= indent
            if is_head or depth < indent or (depth == indent and stripped.startswith("return ")):
                last = number - 1
                break
        entries.append((first, last, description, inputs))
    return entries


class GraphBody:
    """The statements of one graph's steps, with constants bound as literals or weights.

    Subgraph bodies (If, Loop, Scan, ...) become nested functions defined just before their node's
    statement; they read enclosing values through Python closures, so a value is only released
    (`del`) in the graph that computes it, after its last use there or in any body."""

    def __init__(
        self,
        resolved: ResolvedGraph,
        variant: Variant,
        names: Namespace,
        constants: ModuleConstants,
        symbols_read: set[str] | None = None,
    ):
        self.resolved = resolved
        self.variant = variant
        self.names = names
        self.constants = constants
        # Symbols the code reads (shape arithmetic), this graph's and its bodies'.
        self.symbols_read: set[str] = set() if symbols_read is None else symbols_read
        self.shape_nodes_shown: set[int] = set()
        # (provenance, inputs) of each step in source order, bodies' steps included (_NODES)
        self.order: list = []
        self.available: set[str] = set()  # symbols bound before the step being emitted
        self.printer = pyir.Printer(constant=self._constant, function=variant.function)

    def _constant(self, node: pyir.Const) -> str:
        return self.constants.expr(node.hint, node.value)

    def lines(self) -> list[str]:
        graph = self.resolved.graph
        last_use = self.resolved.last_uses()
        produced = {name for step in self.resolved.steps for name in step.node.outputs if name}
        releasable = produced - set(graph.outputs)
        readers = self.resolved.readers()
        fresh: set[str] = set()  # values known to be new arrays that nothing else refers to
        # reads done by fresh kernel calls, whose results hold no view of what they read
        done: Counter = Counter()
        out: list[str] = []
        after: dict[str, int] = {}  # value -> the line after the statements that compute it
        self.available = {
            s for s, (v, _) in self.resolved.symbol_sources.items() if v in graph.inputs
        }
        for index, step in enumerate(self.resolved.steps):
            node = step.node
            functions: list[str] = []
            slot = len(self.order)
            self.order.append(None)  # its comment comes before its bodies' statements
            view = self._view(step, functions)
            self.order[slot] = (
                _provenance(getattr(step, "head", None) or node),
                tuple(
                    (name, operand.node.name if isinstance(operand.node, pyir.Ref) else None)
                    for name, operand in zip(node.inputs, view.inputs)
                    if operand is not None
                ),
            )
            try:
                emitted = statements(view, step.emitter.emit(view))
                if self.variant.reuse_buffers:
                    emitted = self._in_place(step, emitted, readers, fresh, done)
                code = [self.printer.statement(statement) for statement in emitted]
            except CompileError:
                raise
            except Exception as exc:
                raise CompileError(f"{node.label}: cannot emit: {exc}") from None
            out += _provenance_lines(step)
            out += self._shape_provenance(node.inputs + sorted(body_reads(node)))
            out += functions
            out += code
            after.update((name, len(out)) for name in node.outputs if name)
            self.available |= {
                s for s, (v, _) in self.resolved.symbol_sources.items() if v in node.outputs
            }
            used = node.inputs + node.outputs + sorted(body_reads(node))
            dead = [
                name
                for name in dict.fromkeys(used)
                if name in releasable and last_use.get(name, index) <= index
            ]
            if dead:
                out.append("del " + ", ".join(self.names.name(n) for n in dead))
        return self._bind_symbols(out, after)

    def symbol(self, name: str) -> str:
        """The identifier of symbol `name` (a dim read at run time), noting that code reads it."""
        self.symbols_read.add(name)
        return self.names.name("\0dim:" + name, name)

    def _bind_symbols(self, out: list[str], after: dict[str, int]) -> list[str]:
        """`out` with a statement binding each symbol the code reads to the dim it is read off,
        placed where that value first exists (the graph's inputs: before everything)."""
        sources = self.resolved.symbol_sources
        placed: dict[int, list[str]] = {}
        for symbol in sorted(self.symbols_read & set(sources)):
            value, axis = sources[symbol]
            if value in self.resolved.graph.inputs:
                position = 0
            elif value in after:
                position = after[value]
            else:  # a rewrite removed the value the symbol is read off
                raise CompileError(f"internal error: dim {symbol!r} has no value to be read from")
            placed.setdefault(position, []).append(
                f"{self.symbol(symbol)} = {self.names.name(value)}.shape[{axis}]"
            )
        for position in sorted(placed, reverse=True):
            out[position:position] = placed[position]
        return out

    def _shape_provenance(self, names: list[str]) -> list[str]:
        """Comments naming the nodes of the shape arithmetic that `names` read, each once: those
        nodes left `run` and their values are computed in Python ints where they are read."""
        shape_nodes = self.resolved.shape_nodes
        pending = [n for n in names if n in shape_nodes]
        found: list = []
        while pending:
            node = shape_nodes[pending.pop()]
            if id(node) in self.shape_nodes_shown:
                continue
            self.shape_nodes_shown.add(id(node))
            found.append(node)
            pending += [n for n in node.inputs if n in shape_nodes]
        order = {id(node): i for i, node in enumerate(shape_nodes.values())}
        found.sort(key=lambda node: order[id(node)])
        return [f"# + {_provenance(node)}, as shape arithmetic" for node in found]

    def _in_place(self, step, emitted: list, readers, fresh: set[str], done: Counter) -> list:
        """`emitted`, its call writing into an operand that dies here (`out=`) when that is safe:
        the call's kernel takes `out=`, the operand is a new array no one else holds (made by an
        earlier fresh call), read by this node only or else only by earlier fresh kernel calls
        (`done`: their results share no memory with it, so no view of it exists and no one else
        sees it; EfficientNet's SE block multiplies the map its GlobalAveragePool read), not a
        graph output, with the result's dtype and static shape."""
        node = step.node
        if len(node.outputs) != 1 or not node.outputs[0] or len(emitted) != 1:
            return emitted
        (statement,) = emitted
        if statement.targets != (self.names.name(node.outputs[0]),) or statement.unpack:
            return emitted
        value = statement.value
        arguments = _out_call_arguments(value) or []
        result = self.resolved.types.get(node.outputs[0])
        for name in dict.fromkeys(node.inputs) if arguments else ():
            if (
                name in fresh
                and readers[name] - done[name] == 1
                and name not in self.resolved.graph.outputs
                and self.names.name(name) in arguments
                and self.resolved.types.get(name) == result
                and _in_place_type(result)
            ):
                target = pyir.Ref(self.names.name(name))
                value = pyir.Call(value.function, value.args, value.kwargs + (("out", target),))
                emitted = [pyir.Assign(statement.targets, value)]
                break
        if _is_fresh(value):
            fresh.add(node.outputs[0])
        if isinstance(value, pyir.Call) and kernel_properties(value.function).fresh:
            done.update(name for name in node.inputs if name)
        return emitted

    def function(self, body: ResolvedGraph, name: str) -> list[str]:
        """The nested function `name` computing `body`: parameters are the body's inputs, the
        result is the tuple of its outputs."""
        parameters = ", ".join(self.names.name(n) for n in body.graph.inputs)
        inner = GraphBody(body, self.variant, self.names, self.constants, self.symbols_read)
        inner.shape_nodes_shown = self.shape_nodes_shown
        inner.order = self.order
        results = [inner.value_expr(n) for n in body.graph.outputs]
        lines = [f"def {name}({parameters}):"]
        for statement in inner.lines():
            lines += ["    " + line for line in statement.split("\n")]
        lines.append(f"    return ({', '.join(results)}{',' if len(results) == 1 else ''})")
        return lines

    def value_expr(self, name: str) -> str:
        return self._operand(name).expr

    def _shape_value(self, name: str):
        """A shape value computed in Python ints: an operand whose `values` are the elements'
        code and whose node makes the int array for code that wants one."""
        value = self.resolved.symbolic[name]
        values = tuple(d if isinstance(d, int) else sym.code(d, self.symbol) for d in value.dims)
        nodes = tuple(element_node(v) for v in values)
        elements = nodes[0] if value.scalar else pyir.Tuple(nodes)
        array = pyir.call("np.array", elements, dtype=value.dtype)
        return Operand(array, value.type, values=values, render=self.printer.source)

    def _view(self, step, functions: list[str]) -> NodeView:
        node = step.node
        types = self.resolved.types
        inputs = [self._operand(name) if name else None for name in node.inputs]
        outputs = [
            Result(self.names.name(name), types.get(name, ir.UNKNOWN)) if name else None
            for name in node.outputs
        ]

        # one suffix for all of a node's bodies: if_then_branch_2 goes with if_else_branch_2
        attrs = list(step.bodies)
        function_names = dict(
            zip(attrs, self.names.fresh_group([f"{node.op_type.lower()}_{a}" for a in attrs]))
        )

        def body(attr: str) -> str:
            functions.extend(self.function(step.bodies[attr], function_names[attr]))
            return function_names[attr]

        return NodeView(node, inputs, outputs, self.variant, self.names.fresh, body, self.dim_code)

    def dim_code(self, dim) -> str | None:
        """Python source computing `dim` at run time from the dims the module reads (None when it
        cannot: unknown, or a symbol no value of this graph gives)."""
        if dim is None or not sym.atoms(dim) <= self.available:
            return None
        return sym.code(dim, self.symbol)

    def _operand(self, name: str) -> Operand:
        """Value `name` as an operand: a Ref to its identifier, a Const (named or written out
        only when printed, so constants no code reads never reach the module), or a shape value."""
        if name in self.resolved.symbolic:
            return self._shape_value(name)
        value = self.resolved.constants.get(name)
        if value is None:
            ref = pyir.Ref(self.names.name(name))
            return operand(ref, self.resolved.types.get(name), None, self.printer.source)
        return operand(pyir.Const(value, name), None, value, self.printer.source)


class ModuleConstants:
    """The module-level constants of one module: each distinct array once (a MobileNet's Clip
    bounds, a tied embedding), named after the first value that needs it, in first-use order."""

    def __init__(self, names: Namespace, hoist_scalars: bool):
        self.names = names
        self.hoist_scalars = hoist_scalars
        self.values: dict[str, np.ndarray] = {}
        self.hoisted: set[str] = set()  # small constants built at import, not stored
        self._by_content: dict[tuple, str] = {}

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def expr(self, name: str, value: np.ndarray, hoist: bool = True) -> str:
        """A literal for a small constant; for a large one, the module-level name bound to it: a
        weight, or for a uniform one (every element the same, as ConstantOfShape makes) a
        read-only broadcast view built at import, which costs neither file space nor memory.
        With `hoist_scalars` (fast variant) a single element, and any constant short enough to be
        written inline, is a module-level name instead, a read-only array built once at import
        (longer small ones go to the weights file as before): `run` then passes it
        to a ufunc for the cost of a name lookup, where an inline `np.array(8.0,
        dtype=np.float32)` costs about 0.7 us per call and a numpy scalar `np.float32(8.0)` more
        still (numpy 2.4; ufuncs convert scalars on every call)."""
        if value.dtype == object:  # strings: always inline (the weights file holds numbers)
            return literal(value)
        hoist_small = hoist and self.hoist_scalars
        hoisted = hoist_small and value.size == 1
        if value.size <= INLINE_LIMIT and not hoisted:
            text = literal(value)
            if len(text) <= INLINE_WIDTH or is_uniform(value):
                if not hoist_small:
                    return text
                hoisted = True  # what would be inline in `run`, built at import instead
        content = _content(value)
        if content in self._by_content:
            key = self._by_content[content]
            if not hoisted or key in self.hoisted:
                return key
        key = self.names.name(name)
        if key in self.values:  # the same ONNX name in a body, another array
            key = self.names.fresh(key)
        self.values[key] = value
        self._by_content.setdefault(content, key)
        if hoisted:
            self.hoisted.add(key)
        return key


def _content(value: np.ndarray) -> tuple:
    """What makes two constants the same module constant: dtype, shape and bytes (a uniform
    view by its one element: its bytes would be the whole, possibly huge, array)."""
    if is_uniform(value):
        return ("uniform", value.dtype.str, value.shape, value.flat[0].tobytes())
    digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).digest()
    return (value.dtype.str, value.shape, digest)


def _module_constant(key: str, value: np.ndarray, small: bool) -> str:
    if small and value.size == 1:
        return f"{key} = rt.filled({py(value.shape)}, {literal(value.reshape(()))})"
    if is_uniform(value):
        return f"{key} = rt.filled({py(value.shape)}, {literal(value.flat[0])})"
    if small:
        return f"{key} = rt.read_only({literal(value)})"
    return f"{key} = _WEIGHTS[{key!r}]"


def _result_expr(name: str, body: "GraphBody") -> str:
    """How `run` returns output `name`: never the caller's input, a view of it or of a weight
    (onnxruntime hands out new arrays), and always an ndarray for a tensor (numpy ufuncs turn 0-d
    arrays into scalars)."""
    resolved = body.resolved
    graph = resolved.graph
    value_type = graph.types.get(name, ir.UNKNOWN)
    if name in resolved.symbolic:
        return body.value_expr(name)
    if name in resolved.constants:
        expr = body.constants.expr(name, resolved.constants[name], hoist=False)
        return f"{expr}.copy()" if expr in body.constants else expr
    names = body.names
    expr = names.name(name)
    if isinstance(value_type, ir.TensorType):
        sources = "".join(f", {names.name(n)}" for n in graph.inputs)
        return f"rt.owned({expr}{sources})"
    if isinstance(value_type, ir.SequenceType) and name in graph.inputs:
        return f"list({expr})"
    return expr


def _out_call_arguments(value) -> list[str] | None:
    """The identifiers passed positionally to a call whose kernel takes `out=`, when the call
    sets neither `out=` nor `where=` (None for anything else)."""
    if not isinstance(value, pyir.Call) or not kernel_properties(value.function).out:
        return None
    if any(name in ("out", "where") for name, _ in value.kwargs):
        return None
    return [a.name for a in value.args if isinstance(a, pyir.Ref)]


def _is_fresh(value) -> bool:
    """Whether `value` evaluates to a new array that nothing else holds: a fresh kernel's result,
    a view, copy or constant element of one, or an arithmetic operator's result."""
    if isinstance(value, pyir.Call):
        return kernel_properties(value.function).fresh
    if isinstance(value, pyir.Method):
        return value.name in FRESH_METHODS and _is_fresh(value.obj)
    if isinstance(value, pyir.Index):
        return isinstance(value.key, pyir.Lit) and _is_fresh(value.obj)
    if isinstance(value, pyir.BinOp):
        return value.op in ("+", "-", "*", "/", "@")
    return False


def _in_place_type(value_type) -> bool:
    """A float tensor of known dims (static or symbolic) with at least one axis (a 0-d ufunc
    result is a numpy scalar, no buffer to reuse). Symbolic dims are enough: the operand written
    into is an input of the call, so numpy refuses (never broadcasts into) an `out` whose shape
    differs from the result's at run time."""
    return (
        isinstance(value_type, ir.TensorType)
        and value_type.dtype in IN_PLACE_DTYPES
        and value_type.shape is not None
        and all(d is not None for d in value_type.shape)
        and len(value_type.shape) >= 1
    )


def _provenance_lines(step) -> list[str]:
    """The comment over a step's statements: its node, and the nodes a fast-variant rewrite
    (optimize.py) merged into it; a rewrite into a node the model lacks names the model's nodes
    only, then what they became."""
    head, note = getattr(step, "head", None), getattr(step, "note", "")
    lines = [f"# {_provenance(head or step.node)}"]
    suffix = "" if note else ", folded in"
    lines += [f"# + {_provenance(n)}{suffix}" for n in getattr(step, "fused", ())]
    return lines + ([f"# = {note}"] if note else [])


def _provenance(node: ir.Node) -> str:
    domain = f"{node.domain}:" if node.domain else ""
    name = f" {node.name!r}" if node.name else ""
    return f"{domain}{node.op_type}{name} (opset {node.opset})"


def _header(model: ir.Model, variant: Variant) -> list[str]:
    opsets = ", ".join(
        f"{domain or 'ai.onnx'!r} {version}" for domain, version in sorted(model.opsets.items())
    )
    return [
        f"Generated by onemodel-compile {__version__} (black {black.__version__}). DO NOT EDIT.",
        f"Source: {model.source_name!r}, sha256 {model.sha256}",
        f"Opsets: {opsets}. Variant: {variant}.",
    ]


def _dims(value_type, invented: set) -> str:
    shape = _public_dims(value_type, invented)
    if shape is None:
        return "[?]"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _type_name(value_type) -> str:
    return ir.type_name(value_type)


def _describe(model: ir.Model, graph: ir.Graph, invented: set) -> str:
    lines = [f"Compiled ONNX model {graph.name!r} from {model.source_name!r}.", "", "Inputs:"]
    for name in graph.inputs:
        t = graph.types.get(name, ir.UNKNOWN)
        lines.append(f"    {name!r}: {_type_name(t)} {_dims(t, invented)}")
    lines += ["", "Outputs:"]
    for name in graph.outputs:
        t = graph.types.get(name, ir.UNKNOWN)
        lines.append(f"    {name!r}: {_type_name(t)} {_dims(t, invented)}")
    return "\n".join(lines)


def _docstring(text: str) -> str:
    """A docstring literal for `text`, whatever it contains (model names are already repr'd)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if c.isprintable() or c == "\n" else repr(c)[1:-1] for c in escaped)
    return f'"""{escaped}\n"""'


def _public_dims(value_type, invented: set) -> tuple | None:
    """The dims INPUTS, OUTPUTS and the docstring show: an int, a str naming a symbol (an
    expression of symbols written out), or None for a dim the model leaves unknown."""
    shape = getattr(value_type, "shape", None)
    if shape is None:
        return None
    return tuple(
        (
            None
            if d is None or sym.atoms(d) & invented
            else d if isinstance(d, (int, str)) else sym.text(d)
        )
        for d in shape
    )


def _signature(graph: ir.Graph, names: list[str], invented: set) -> str:
    entries = []
    for name in names:
        t = graph.types.get(name, ir.UNKNOWN)
        entries.append((name, _type_name(t), _public_dims(t, invented)))
    return py(entries)


@functools.cache
def _template() -> jinja2.Template:
    text = resources.files("onemodel_compile.templates").joinpath("module.py.j2").read_text()
    env = jinja2.Environment(
        autoescape=False, keep_trailing_newline=True, undefined=jinja2.StrictUndefined
    )
    return env.from_string(text)
