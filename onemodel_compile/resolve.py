"""Stage 3: settle every type, shape and compile-time constant.

Types start from onnx's shape inference. Then each node, in order, is looked up in the operator
registry and folded when it can be: by its emitter's `fold` rule (outputs from input types, as for
Shape), or, when every input is constant, by running the very statements it would emit. Folding thus
uses the variant's own kernels, and a folded value is bit for bit what the module would compute.
Nodes that remain become the module's steps.
"""

from __future__ import annotations

import math
import re
import typing
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import onnx
import onnx.inliner

import runtime_support
from onemodel_compile import ir, shapes
from onemodel_compile.errors import CompileError, ExactnessError, UnsupportedError
from onemodel_compile.ops import lookup, pyir
from onemodel_compile.ops.node import NodeView, Result, operand, statements
from onemodel_compile.ops.registry import Emitter

if TYPE_CHECKING:
    from onemodel_compile.variants import Variant

INVENTED_DIM = re.compile(r"unk__\d+")
# Sizes before allocation (docs/robustness.md): a node is folded only when the sizes of its
# results, computed from its inputs' shapes and values beforehand, fit these limits; otherwise it
# stays at run time, where the allocation limit of runtime_support applies.
FOLD_LIMIT = 1 << 20  # elements of a folded result stored as a weight; larger ones stay at run time
CONSTANT_BYTES_LIMIT = 256 << 20  # a uniform result (ConstantOfShape's): emit builds it at import
MODULE_FOLD_BYTES = 512 << 20  # all the results folding makes for one module, together
HEAVY_WORK_LIMIT = 1 << 26  # elements of inputs times results of a convolution-like fold
# Operators whose result has the size of their first input (no size to predict).
SIZE_PRESERVING = frozenset(
    "Abs Acos Acosh Asin Asinh Atan Atanh BitwiseNot Cast CastLike Ceil Celu Cos Cosh Elu Erf Exp "
    "Flatten Floor Gelu HardSigmoid HardSwish Hardmax Identity IsInf IsNaN LeakyRelu Log "
    "LogSoftmax Mish Neg Not Reciprocal Relu Round Selu Shrink Sigmoid Sign Sin Sinh Softmax "
    "Softplus Softsign Sqrt Squeeze Tan Tanh ThresholdedRelu Transpose Unsqueeze".split()
)
# Operators whose work or temporaries grow with the product of their operands' sizes (im2col,
# windows, einsum's loops): they fold only when that product is small.
HEAVY = frozenset(
    "AveragePool Col2Im Conv ConvInteger ConvTranspose DeformConv Einsum GridSample LpPool "
    "MaxPool MaxRoiPool MaxUnpool QLinearConv RoiAlign".split()
)


@dataclass
class Step:
    node: ir.Node
    emitter: Emitter
    bodies: dict[str, "ResolvedGraph"] = field(default_factory=dict)  # subgraph attributes


@dataclass
class ResolvedGraph:
    graph: ir.Graph
    steps: list[Step]
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    # Shape values the module computes in Python ints from symbols (shapes.py), in place of the
    # nodes that computed them (listed in `shape_nodes`, for the provenance comments).
    symbolic: dict[str, shapes.ShapeValue] = field(default_factory=dict)
    shape_nodes: dict[str, ir.Node] = field(default_factory=dict)  # by output name
    # Where each symbol is read at run time: (value, axis), the first value with that dim.
    symbol_sources: dict[str, tuple[str, int]] = field(default_factory=dict)
    # Symbols the compiler named (unknown dims): INPUTS and OUTPUTS show them as unknown (None),
    # as onnxruntime does.
    invented: set[str] = field(default_factory=set)

    @property
    def types(self) -> dict[str, ir.ValueType]:
        return self.graph.types

    def reads(self, step: Step) -> list[str]:
        """The values `step` reads: its node's inputs, then what its bodies read from outside."""
        return [n for n in step.node.inputs if n] + sorted(body_reads(step.node))

    def readers(self) -> Counter:
        """How many times each value is read by the steps (the def-use count optimize's
        rewrites and emit's buffer reuse both rely on)."""
        counts: Counter = Counter()
        for step in self.steps:
            counts.update(self.reads(step))
        return counts

    def last_uses(self) -> dict[str, int]:
        """The index of the last step reading each value."""
        return {name: index for index, step in enumerate(self.steps) for name in self.reads(step)}


def body_reads(node: ir.Node) -> set[str]:
    """The values of enclosing graphs that `node`'s subgraphs read."""
    reads: set[str] = set()
    for sub in ir.subgraphs(node):
        reads |= ir.free_names(sub)
    return reads


def resolve(model: ir.Model, variant: Variant) -> ResolvedGraph:
    """The resolved main graph. Types are refined in a copy of the graph's type maps (the
    ResolvedGraph's graph): `model` is left as it was."""
    graph = ir.with_own_types(model.graph)
    _merge_inferred_types(model, graph)
    invented: set[str] = set()
    _name_unknown_input_dims(graph, invented)
    return resolve_graph(graph, variant, {}, main=True, invented=invented)


def _name_unknown_input_dims(graph: ir.Graph, invented: set) -> None:
    """An input dim the model leaves unknown (or declares negative, as Paddle does) becomes a
    symbol of its own, named after the input and axis, that shape arithmetic can read off the
    input at run time (INPUTS shows it as None, as onnxruntime does: see ResolvedGraph.invented)."""
    taken = _symbols(graph.types)
    for name in graph.inputs:
        value_type = graph.types.get(name)
        if not isinstance(value_type, ir.TensorType) or value_type.shape is None:
            continue
        dims = list(value_type.shape)
        for axis, d in enumerate(dims):
            if d is None:
                dims[axis] = _fresh_symbol(f"{name}_dim{axis}", taken)
                invented.add(dims[axis])
        graph.types[name] = ir.TensorType(value_type.dtype, tuple(dims))


def _symbols(types: dict) -> set[str]:
    """The symbol names the dims of `types` use."""
    return {
        d for t in types.values() for d in getattr(t, "shape", None) or () if isinstance(d, str)
    }


def _fresh_symbol(base: str, taken: set) -> str:
    candidate, counter = base, 1
    while candidate in taken:
        counter += 1
        candidate = f"{base}_{counter}"
    taken.add(candidate)
    return candidate


def resolve_graph(
    graph: ir.Graph,
    variant: Variant,
    outer_constants: dict,
    outer_symbolic: dict | None = None,
    main: bool = False,
    invented: set | None = None,
    budget: "FoldBudget | None" = None,
) -> ResolvedGraph:
    """Resolve one graph. Only the main graph computes shape values in Python ints: a body
    (If, Loop, Scan) sees the outer ones but keeps its own nodes, whose dims may change from one
    iteration to the next."""
    constants = {**outer_constants, **graph.initializers}
    invented = set() if invented is None else invented
    budget = FoldBudget() if budget is None else budget
    symbolic: dict[str, shapes.ShapeValue] = dict(outer_symbolic or {})
    tracked = dict(symbolic)  # every shape value known, computed in Python ints or not
    shape_nodes: dict[str, ir.Node] = {}
    sources: dict[str, tuple[str, int]] = {}
    empty_sequences: set[str] = set()  # SequenceEmpty's results: their elements come later
    taken_symbols = _symbols(graph.types)
    if main:
        for name in graph.inputs:
            _add_sources(sources, name, graph.types.get(name))
    steps: list[Step] = []
    pending = list(graph.nodes)
    while pending:
        node = pending.pop(0)
        taken = _taken_branch(node, constants, tracked)
        if taken is not None:  # the condition is known: only that branch is compiled
            pending[:0] = _inline(node, taken, graph, constants)
            continue
        try:
            emitter = lookup(node.op_type, node.domain, node.opset, variant, node.label)
        except UnsupportedError:
            body = expand_function(node, graph.types, graph.opsets)
            if body is None:
                raise
            pending[:0] = body  # an operator the standard defines as a function: its body
            continue
        view = _folding_view(node, graph.types, constants, variant)
        if variant.exact:
            reason = emitter.refusal(view)
            if reason:
                raise ExactnessError(
                    f"{node.label}: {node.op_type} {reason} in the exact variant; "
                    f"compile with --variant fast"
                )
        values = _fold(node, emitter, view, budget)
        known = [
            (
                shapes.Known(graph.types.get(n, ir.UNKNOWN), _shape_value(n, constants, tracked))
                if n
                else None
            )
            for n in node.inputs
        ]
        found = shapes.evaluate(node, known) if values is None else None
        complete = [v for v in found if v is not None] if found is not None else []
        if found is not None and len(complete) == len(found):
            if all(v.static for v in complete):
                values = [v.array() for v in complete]
            elif main and all(v.atoms() <= set(sources) for v in complete):
                for name, shape_value in zip(node.outputs, complete):
                    if name:
                        symbolic[name] = tracked[name] = shape_value
                        shape_nodes[name] = node
                        graph.types[name] = shape_value.type
                continue
        if values is None:
            bodies = {
                attr: _resolve_body(
                    value, graph.types, constants, variant, symbolic, invented, budget
                )
                for attr, value in node.attrs.items()
                if isinstance(value, ir.Graph)
            }
            steps.append(Step(node, emitter, bodies))
            _infer_node(node, graph.types, constants)
            if node.op_type == "SequenceEmpty" and not node.domain:
                empty_sequences.update(node.outputs)
            _own_inference(
                node, known, bodies, graph.types, taken_symbols, invented, empty_sequences
            )
            for name, known_value in zip(node.outputs, found or ()):
                if name and known_value is not None:
                    tracked[name] = known_value  # computed at run time, still known element-wise
            if main:
                for name in node.outputs:
                    _add_sources(sources, name, graph.types.get(name))
            continue
        for name, array in zip(node.outputs, values):
            if name:
                constants[name] = array
                graph.types[name] = ir.TensorType(array.dtype, tuple(array.shape))
    return ResolvedGraph(graph, steps, constants, symbolic, shape_nodes, sources, invented)


def _loop_types(node: ir.Node, body, types: dict, empty_sequences: set) -> list[ir.ValueType]:
    """A Loop's output types from its body: a carried value is its initial value or what the body
    returns for it (merged, as If's branches are); a scan output is the body's value stacked
    along a new first axis of unknown length (the trip count)."""
    carried = node.inputs[2:]
    returned = body.graph.outputs[1:]
    found = [
        (
            body.types.get(value, ir.UNKNOWN)
            if initial in empty_sequences  # holds only what the body appends
            else shapes.merge_types(
                types.get(initial, ir.UNKNOWN), body.types.get(value, ir.UNKNOWN)
            )
        )
        for initial, value in zip(carried, returned)
    ]
    for value in returned[len(carried) :]:
        element = body.types.get(value, ir.UNKNOWN)
        shape = getattr(element, "shape", None)
        dtype = getattr(element, "dtype", None)
        found.append(ir.TensorType(dtype, None if shape is None else (None, *shape)))
    return found


def _taken_branch(node: ir.Node, constants: dict, tracked: dict) -> ir.Graph | None:
    """The branch an If takes when its condition is known at compile time (a constant, or a
    function of static dims or decided by the shape rules), else None."""
    if node.op_type != "If" or node.domain or not node.inputs:
        return None
    condition = _shape_value(node.inputs[0], constants, tracked)
    if condition is None or not condition.static or len(condition.dims) != 1:
        return None
    branch = node.attrs["then_branch" if condition.dims[0] else "else_branch"]
    return branch if isinstance(branch, ir.Graph) else None


def _inline(node: ir.Node, branch: ir.Graph, graph: ir.Graph, constants: dict) -> list[ir.Node]:
    """The branch's nodes in place of the If, its outputs bound to the If's by Identity nodes
    (values are named apart across the whole model, so no renaming is needed)."""
    constants.update(branch.initializers)
    for name, value_type in branch.types.items():
        graph.types.setdefault(name, value_type)
    label = f"{node.name or 'If'}: taken branch {branch.name or ''}".rstrip()
    bindings = [
        ir.Node(
            "Identity",
            "",
            label,
            [inner],
            [outer],
            {},
            node.opset,
            onnx.helper.make_node("Identity", [inner], [outer], name=label),
        )
        for inner, outer in zip(branch.outputs, node.outputs)
        if outer
    ]
    return list(branch.nodes) + bindings


def _shape_value(name: str, constants: dict, tracked: dict) -> shapes.ShapeValue | None:
    if name in tracked:
        return tracked[name]
    return shapes.from_constant(constants.get(name))


def _add_sources(sources: dict, name: str, value_type) -> None:
    """Record the symbols of `name`'s dims that no earlier value gives."""
    for axis, d in enumerate(getattr(value_type, "shape", None) or ()):
        if isinstance(d, str) and d not in sources:
            sources[d] = (name, axis)


def _own_inference(
    node, known, bodies, types: dict, taken: set, invented: set, empty_sequences: set
) -> None:
    """Where onnx's inference left an output's rank or dims unknown: the shape rules of shapes.py
    (Reshape to a computed shape, ...) and If's merged branches; then every dim still unknown of
    a known rank becomes a symbol named after its value and axis (read off that value at run
    time when shape arithmetic needs it)."""
    refined = shapes.output_types(node, known)
    if refined is None and node.op_type == "If" and not node.domain:
        then_body, else_body = bodies.get("then_branch"), bodies.get("else_branch")
        if then_body is not None and else_body is not None:
            refined = [
                shapes.merge_types(
                    then_body.types.get(a, ir.UNKNOWN), else_body.types.get(b, ir.UNKNOWN)
                )
                for a, b in zip(then_body.graph.outputs, else_body.graph.outputs)
            ]
    if refined is None and node.op_type == "Loop" and not node.domain and "body" in bodies:
        refined = _loop_types(node, bodies["body"], types, empty_sequences)
    for name, value_type in zip(node.outputs, refined or ()):
        if name:
            types[name] = _more_precise(types.get(name, ir.UNKNOWN), value_type)
    for name in node.outputs:
        output_type = types.get(name) if name else None
        if isinstance(output_type, ir.TensorType) and output_type.shape is not None:
            if any(d is None for d in output_type.shape):
                dims = tuple(
                    _fresh_symbol(f"{name}_dim{axis}", taken) if d is None else d
                    for axis, d in enumerate(output_type.shape)
                )
                invented.update(d for d in dims if d not in output_type.shape)
                types[name] = ir.TensorType(output_type.dtype, dims)


EXPANSION_DOMAIN = "onemodel.expanded"


def expand_function(
    node: ir.Node, types: dict, model_opsets: dict[str, int]
) -> list[ir.Node] | None:
    """The nodes of the function body the ONNX standard gives `node`'s operator (None if it has
    none), with values renamed apart and attributes bound, by onnx's own inliner. A domain the
    body uses without importing it is read at the model's version (`model_opsets`), as onnx's own
    expanded test models do."""
    try:
        # typed as Any: onnx's stubs lack the function accessors its binding has
        schema: typing.Any = onnx.defs.get_schema(node.op_type, node.opset, node.domain)
    except onnx.defs.SchemaError:
        return None
    if node.proto is None or not (schema.has_function or schema.has_context_dependent_function):
        return None
    try:
        if schema.has_context_dependent_function:
            input_types = [
                (ir.type_proto(types.get(name, ir.UNKNOWN)) or onnx.TypeProto()).SerializeToString()
                for name in node.inputs
            ]
            data = schema.get_context_dependent_function_with_opset_version(
                node.opset, node.proto.SerializeToString(), input_types
            )
        else:
            data = schema.get_function_with_opset_version(node.opset)
        function = onnx.FunctionProto.FromString(data)
        function.domain, function.name = EXPANSION_DOMAIN, node.op_type
        call = onnx.NodeProto()
        call.CopyFrom(node.proto)
        call.domain = EXPANSION_DOMAIN
        opsets = list(function.opset_import) + [onnx.helper.make_opsetid(EXPANSION_DOMAIN, 1)]
        wrapper = onnx.helper.make_model(
            onnx.helper.make_graph(
                [call],
                "expansion",
                [onnx.helper.make_value_info(n, onnx.TypeProto()) for n in node.inputs if n],
                [onnx.helper.make_value_info(n, onnx.TypeProto()) for n in node.outputs if n],
            ),
            opset_imports=opsets,
            functions=[function],
        )
        inlined = onnx.inliner.inline_local_functions(wrapper)
    except Exception:  # no usable body: the operator stays unsupported
        return None
    versions = dict(model_opsets)
    versions.update(
        {
            ("" if o.domain in ("", "ai.onnx") else o.domain): o.version
            for o in function.opset_import
        }
    )
    return [ir.node_from_proto(n, versions) for n in inlined.graph.node]


def _resolve_body(
    body: ir.Graph,
    outer_types: dict,
    constants: dict,
    variant: Variant,
    symbolic: dict,
    invented: set,
    budget: "FoldBudget",
) -> ResolvedGraph:
    """Resolve a subgraph, which sees the outer graph's values (types, constants, shape values)."""
    for name in ir.free_names(body):
        if name not in body.types and name in outer_types:
            body.types[name] = outer_types[name]
    return resolve_graph(body, variant, constants, symbolic, invented=invented, budget=budget)


def _infer_node(node: ir.Node, types: dict, constants: dict) -> None:
    """Refine the node's output types with onnx's per-node inference, now that folding has made
    more inputs constant than the whole-model pass saw."""
    outputs = [name for name in node.outputs if name]
    if node.proto is None or all(ir.complete(types.get(n, ir.UNKNOWN)) for n in outputs):
        return
    try:
        schema = onnx.defs.get_schema(node.op_type, node.opset, node.domain)
    except onnx.defs.SchemaError:
        return
    input_types = {}
    for name in node.inputs:
        proto = ir.type_proto(types.get(name, ir.UNKNOWN)) if name else None
        if name and proto is not None:
            input_types[name] = proto
    data = {
        name: onnx.numpy_helper.from_array(constants[name], name)
        for name in node.inputs
        if name in constants and constants[name].dtype.name in ir.ONNX_ELEMENT_TYPES
    }
    try:
        inferred = onnx.shape_inference.infer_node_outputs(schema, node.proto, input_types, data)
    except Exception:  # onnx cannot say more: keep what is known
        return
    for name, proto in inferred.items():
        try:
            found = ir.value_type(proto, f"value {name!r}")
        except CompileError:
            continue
        types[name] = _more_precise(types.get(name, ir.UNKNOWN), found)


def _folding_view(node: ir.Node, types, constants, variant: Variant) -> NodeView:
    inputs = [
        operand(pyir.Ref(f"in{i}"), types.get(name), constants.get(name)) if name else None
        for i, name in enumerate(node.inputs)
    ]
    outputs = [
        Result(f"out{i}", types.get(name, ir.UNKNOWN)) if name else None
        for i, name in enumerate(node.outputs)
    ]
    counter = iter(range(1 << 30))
    return NodeView(node, inputs, outputs, variant, lambda hint: f"tmp{next(counter)}_{hint}")


@dataclass
class FoldBudget:
    """The bytes folding has made for one module so far (MODULE_FOLD_BYTES bounds them)."""

    used: int = 0

    def admit(self, node: ir.Node, values: list, inputs: list) -> bool:
        """Whether `values`, the results of folding `node`, may become constants; if so they are
        counted. A uniform result counts its full size (emit builds it at import); a view of an
        input costs nothing; a Constant's value is the model's own."""
        cost = 0
        for value in values:
            if value is None or node.op_type == "Constant" and not node.domain:
                continue
            nbytes = value.size * value.itemsize
            if is_uniform(value):
                if nbytes > CONSTANT_BYTES_LIMIT:
                    return False
            elif value.size > FOLD_LIMIT:
                return False
            elif value.base is not None and any(np.may_share_memory(value, c) for c in inputs):
                continue
            cost += nbytes
        if self.used + cost > MODULE_FOLD_BYTES:
            return False
        self.used += cost
        return True


def _fold(
    node: ir.Node, emitter: Emitter, view: NodeView, budget: FoldBudget
) -> list[np.ndarray] | None:
    inputs = [o.const for o in view.inputs if o is not None and o.const is not None]
    all_constant = all(o is None or o.const is not None for o in view.inputs)
    if all_constant and inputs and not _fits_before_folding(node, view):
        return None  # (ConstantOfShape of 10^24 elements: numpy cannot even make the view)
    if emitter.fold is not None:
        try:
            values = emitter.fold(view)
        except CompileError:
            raise
        except Exception as exc:  # a fold rule's numpy call refusing the model's values
            raise CompileError(
                f"{node.label}: evaluating it at compile time failed: {_one_line(exc)}"
            ) from None
        if values is not None:
            values = [np.asarray(v) for v in values]  # fold rules may return uniform views
            return values if budget.admit(node, values, inputs) else None
    if not emitter.foldable or not all_constant:
        return None
    if any(isinstance(v, ir.Graph) for v in node.attrs.values()):
        return None
    if not inputs and not _fits_before_folding(node, view):
        return None
    namespace: dict[str, object] = {"np": np, "rt": runtime_support}
    namespace.update({f"in{i}": o.const for i, o in enumerate(view.inputs) if o is not None})

    def constant(node: pyir.Const) -> str:  # a constant the rule made: passed by name
        key = f"const{len(namespace)}"
        namespace[key] = node.value
        return key

    printer = pyir.Printer(constant=constant, function=view.variant.function)
    try:
        code = "\n".join(printer.statement(s) for s in statements(view, emitter.emit(view)))
    except CompileError:
        raise
    except Exception as exc:  # as emit reports it: an emitter meeting a malformed node
        raise CompileError(f"{node.label}: cannot emit: {_one_line(exc)}") from None
    try:
        with np.errstate(all="ignore"):
            exec(compile(code, f"<fold {node.label}>", "exec"), namespace)  # emitter code only
    except Exception as exc:
        raise CompileError(
            f"{node.label}: evaluating it at compile time failed: {_one_line(exc)}"
        ) from None
    values = [
        namespace[f"out{i}"] if out is not None else None for i, out in enumerate(view.outputs)
    ]
    if not all(v is None or isinstance(v, (np.ndarray, np.generic)) for v in values):
        return None  # sequences and optionals stay run-time values
    values = [None if v is None else np.asarray(v) for v in values]
    return values if budget.admit(node, values, inputs) else None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _fits_before_folding(node: ir.Node, view: NodeView) -> bool:
    """Whether folding `node` stays within the limits, judged from the sizes of its results
    computed before anything is evaluated: from its inputs' true shapes and values, never from
    the types the model declares (which may lie). A result of unknown size is not evaluated."""
    inputs = [o.const if o is not None else None for o in view.inputs]
    sizes = _result_sizes(node, inputs)
    if sizes is None:
        return False
    # a uniform result: of uniform inputs, or ConstantOfShape's (whatever its shape input)
    uniform = node.op_type == "ConstantOfShape" and not node.domain
    uniform = uniform or all(v is None or v.size <= 1 or is_uniform(v) for v in inputs)
    for size, itemsize in sizes:
        if size is None:
            continue
        if size > FOLD_LIMIT and not (uniform and size * itemsize <= CONSTANT_BYTES_LIMIT):
            return False  # too large to store; a view of a uniform input stays cheap: try it
    if node.op_type in HEAVY:
        operands = sum(v.size for v in inputs if v is not None)
        results = sum(size for size, _ in sizes if size is not None)
        if node.op_type == "Einsum":
            operands = math.prod(v.size for v in inputs if v is not None)
        if operands * max(results, 1) > HEAVY_WORK_LIMIT:
            return False
    return True


def _result_sizes(node: ir.Node, inputs: list) -> list[tuple[int | None, int]] | None:
    """(elements, bytes per element) of each of `node`'s results (None for an absent output),
    from the constant `inputs`; None when a size cannot be known without evaluating."""
    outputs = node.outputs
    if node.op_type in SIZE_PRESERVING and not node.domain and inputs and inputs[0] is not None:
        return [(inputs[0].size, 16) if name else (None, 0) for name in outputs]
    types = _true_result_types(node, inputs)
    if types is None:
        return None
    sizes: list[tuple[int | None, int]] = []
    for name, value_type in zip(outputs, types):
        if not name:
            sizes.append((None, 0))
            continue
        if not isinstance(value_type, ir.TensorType) or not value_type.static:
            return None
        itemsize = value_type.dtype.itemsize if value_type.dtype is not None else 16
        sizes.append((math.prod(typing.cast("tuple[int, ...]", value_type.shape)), itemsize))
    return sizes


def _true_result_types(node: ir.Node, inputs: list) -> list[ir.ValueType | None] | None:
    """The result types that follow from the inputs' own arrays: the compiler's shape rules
    (shapes.py) first, then onnx's per-node inference given the arrays' types and the values of
    the small ones (shape-like inputs: a shape, repeats, bounds, sizes, pads, axes)."""
    known = [
        (
            shapes.Known(ir.TensorType(v.dtype, v.shape), shapes.from_constant(v))
            if v is not None
            else None
        )
        for v in inputs
    ]
    found = shapes.output_types(node, known)
    if found is not None and len(found) == len(node.outputs):
        if all(isinstance(t, ir.TensorType) and t.static for t in found):
            return list(found)
    if node.proto is None:
        return None
    try:
        schema = onnx.defs.get_schema(node.op_type, node.opset, node.domain)
    except onnx.defs.SchemaError:
        return None
    input_types, data = {}, {}
    for name, value in zip(node.inputs, inputs):
        if not name or value is None:
            continue
        if value.dtype.name not in ir.ONNX_ELEMENT_TYPES:
            return None
        elem = ir.ONNX_ELEMENT_TYPES[value.dtype.name]
        input_types[name] = onnx.helper.make_tensor_type_proto(elem, value.shape)
        if value.size <= shapes.MAX_ELEMENTS:
            data[name] = onnx.numpy_helper.from_array(value, name)
    try:
        inferred = onnx.shape_inference.infer_node_outputs(schema, node.proto, input_types, data)
    except Exception:  # onnx cannot say: the size stays unknown
        return None
    results: list[ir.ValueType | None] = []
    for name in node.outputs:
        proto = inferred.get(name) if name else None
        if proto is None:
            results.append(ir.UNKNOWN if name else None)
            continue
        try:
            results.append(_forget_invented_dims(ir.value_type(proto, f"value {name!r}")))
        except CompileError:
            return None
    return results


def is_uniform(value: np.ndarray) -> bool:
    """A broadcast view of one value (every stride 0): free to keep whatever its size."""
    return value.size > 1 and not any(value.strides)


def _merge_inferred_types(model: ir.Model, graph: ir.Graph) -> None:
    """Fill into `graph` (the model's, copied) the types onnx's shape inference knows and the
    model does not declare. Without onnx's data
    propagation: it materializes the values it propagates, so a Shape output declared [10**12]
    (or a Range of a huge constant) made it build a vector of that many dims; shapes.py follows
    shape values instead (docs/robustness.md)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(
            _without_negative_dims(model.proto),
            check_type=False,
            strict_mode=False,
            data_prop=False,
        )
    except Exception:  # inference is a help, not a requirement: keep the declared types
        return
    _merge_graph(graph, inferred.graph)


def _without_negative_dims(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`proto`, or a copy where every declared negative dim (Paddle's -1) is unknown, as the
    compiler reads it: onnx's inference takes -1 as a size, and a Slice over such an axis stops
    the whole process on an assertion in onnx 1.23 (SIGABRT), which no `except` can catch."""

    def value_infos(graph: onnx.GraphProto):
        yield from list(graph.input) + list(graph.output) + list(graph.value_info)
        for node in graph.node:
            for attribute in node.attribute:
                if attribute.HasField("g"):
                    yield from value_infos(attribute.g)
                for sub in attribute.graphs:
                    yield from value_infos(sub)

    def negative_dims(graph: onnx.GraphProto):
        for info in value_infos(graph):
            tensor = _tensor_type(info.type)
            if tensor is not None:
                yield from (
                    d for d in tensor.shape.dim if d.HasField("dim_value") and d.dim_value < 0
                )

    if next(negative_dims(proto.graph), None) is None:
        return proto
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for dim in list(negative_dims(copy.graph)):
        dim.Clear()
    return copy


def _tensor_type(type_proto: onnx.TypeProto):
    """The tensor type inside a tensor, sequence or optional type (None for others)."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        return type_proto.tensor_type
    if kind == "sequence_type":
        return _tensor_type(type_proto.sequence_type.elem_type)
    if kind == "optional_type":
        return _tensor_type(type_proto.optional_type.elem_type)
    return None


def _merge_graph(graph: ir.Graph, proto: onnx.GraphProto) -> None:
    for info in list(proto.input) + list(proto.value_info) + list(proto.output):
        if not info.type.WhichOneof("value"):
            continue
        try:
            found = ir.value_type(info.type, f"value {info.name!r}")
        except CompileError:
            continue
        known = graph.types.get(info.name, ir.UNKNOWN)
        graph.types[info.name] = _more_precise(known, found)
    for node, node_proto in zip(graph.nodes, proto.node):
        for attribute in node_proto.attribute:
            value = node.attrs.get(attribute.name)
            if isinstance(value, ir.Graph):
                _merge_graph(value, attribute.g)
            elif isinstance(value, list) and value and isinstance(value[0], ir.Graph):
                for sub, sub_proto in zip(value, attribute.graphs):
                    _merge_graph(sub, sub_proto)


def _forget_invented_dims(value_type: ir.ValueType) -> ir.ValueType:
    """onnx's inference names dims it cannot determine `unk__N`: they are unknown, not symbols."""
    if isinstance(value_type, ir.TensorType) and value_type.shape is not None:
        shape = tuple(
            None if isinstance(d, str) and INVENTED_DIM.fullmatch(d) else d
            for d in value_type.shape
        )
        return ir.TensorType(value_type.dtype, shape)
    if isinstance(value_type, (ir.SequenceType, ir.OptionalType)):
        return type(value_type)(_forget_invented_dims(value_type.elem))
    return value_type


def _more_precise(known: ir.ValueType, found: ir.ValueType) -> ir.ValueType:
    found = _forget_invented_dims(found)
    if isinstance(known, ir.SequenceType) and isinstance(found, ir.SequenceType):
        return ir.SequenceType(_more_precise(known.elem, found.elem))
    if isinstance(known, ir.OptionalType) and isinstance(found, ir.OptionalType):
        return ir.OptionalType(_more_precise(known.elem, found.elem))
    if not isinstance(known, ir.TensorType) or not isinstance(found, ir.TensorType):
        return known if known != ir.UNKNOWN else found
    dtype = known.dtype if known.dtype is not None else found.dtype
    if known.shape is None or found.shape is None or len(known.shape) != len(found.shape):
        shape = known.shape if known.shape is not None else found.shape
    else:
        # per dim: a static size beats a symbol, a symbol beats unknown
        shape = tuple(
            k if isinstance(k, int) or (k is not None and not isinstance(f, int)) else f
            for k, f in zip(known.shape, found.shape)
        )
    return ir.TensorType(dtype, shape)
