"""Stage 2: a small typed graph, independent of protobuf, with subgraphs as attribute values.

Attributes are plain Python values (int, float, str, list, numpy array, Graph) with the defaults of
the operator schema filled in, so emitters never type a default by hand.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Union

import numpy as np
import onnx
import onnx.inliner
from onnx import numpy_helper

from onemodel_compile import symbolic
from onemodel_compile.errors import ModelError, UnsupportedError, node_label
from onemodel_compile.load import DEFAULT_DOMAINS, LoadedModel
from runtime_support import dtype_from_name

# ONNX element types in scope, by TensorProto enum -> numpy dtype name.
ELEMENT_TYPES: dict[int, str] = {
    onnx.TensorProto.FLOAT: "float32",
    onnx.TensorProto.UINT8: "uint8",
    onnx.TensorProto.INT8: "int8",
    onnx.TensorProto.UINT16: "uint16",
    onnx.TensorProto.INT16: "int16",
    onnx.TensorProto.INT32: "int32",
    onnx.TensorProto.INT64: "int64",
    onnx.TensorProto.BOOL: "bool",
    onnx.TensorProto.FLOAT16: "float16",
    onnx.TensorProto.DOUBLE: "float64",
    onnx.TensorProto.UINT32: "uint32",
    onnx.TensorProto.UINT64: "uint64",
    onnx.TensorProto.BFLOAT16: "bfloat16",
    # The small types, as ml_dtypes arrays of one element per byte (runtime_support/_dtypes.py).
    onnx.TensorProto.FLOAT8E4M3FN: "float8_e4m3fn",
    onnx.TensorProto.FLOAT8E4M3FNUZ: "float8_e4m3fnuz",
    onnx.TensorProto.FLOAT8E5M2: "float8_e5m2",
    onnx.TensorProto.FLOAT8E5M2FNUZ: "float8_e5m2fnuz",
    onnx.TensorProto.FLOAT8E8M0: "float8_e8m0fnu",
    onnx.TensorProto.FLOAT4E2M1: "float4_e2m1fn",
    onnx.TensorProto.UINT4: "uint4",
    onnx.TensorProto.INT4: "int4",
    onnx.TensorProto.UINT2: "uint2",
    onnx.TensorProto.INT2: "int2",
    # String tensors are numpy object arrays of Python str (docs/ml-domain.md).
    onnx.TensorProto.STRING: "object",
}
ONNX_ELEMENT_TYPES = {name: code for code, name in ELEMENT_TYPES.items()}

Dim = Union[int, str, symbolic.Expr, None]  # static size, symbol, expression of them, unknown


def element_dtype(code: int, where: str) -> np.dtype:
    """numpy dtype of an ONNX element type; out-of-scope types are refused, naming `where`."""
    if code not in ELEMENT_TYPES:
        type_name = (
            onnx.TensorProto.DataType.Name(code)
            if code in onnx.TensorProto.DataType.values()
            else str(code)
        )
        raise UnsupportedError(f"{where}: element type {type_name} is not supported")
    return dtype_from_name(ELEMENT_TYPES[code])


@dataclass(frozen=True)
class TensorType:
    dtype: np.dtype | None
    shape: tuple[Dim, ...] | None  # None: rank unknown

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def static(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)


@dataclass(frozen=True)
class SequenceType:
    elem: "ValueType"


@dataclass(frozen=True)
class OptionalType:
    elem: "ValueType"


@dataclass(frozen=True)
class MapType:
    """ONNX map(key, value): a Python dict at run time (ZipMap's rows, DictVectorizer's input)."""

    key: np.dtype  # int64 or object (string keys)
    value: "ValueType"


ValueType = Union[TensorType, SequenceType, OptionalType, MapType]
UNKNOWN = TensorType(None, None)


def type_name(value_type: ValueType) -> str:
    """How INPUTS, OUTPUTS and the docstring name a type, and what runtime_support's input
    checker parses: "float32", "string" (an object array of str), "sequence(float32)",
    "optional(int64)", "map(string,float32)"; "?" where unknown."""
    if isinstance(value_type, TensorType):
        if value_type.dtype is None:
            return "?"
        return "string" if value_type.dtype == np.dtype(object) else value_type.dtype.name
    if isinstance(value_type, SequenceType):
        return f"sequence({type_name(value_type.elem)})"
    if isinstance(value_type, OptionalType):
        return f"optional({type_name(value_type.elem)})"
    if isinstance(value_type, MapType):
        return f"map({type_name(TensorType(value_type.key, ()))},{type_name(value_type.value)})"
    return "?"


@dataclass
class Node:
    op_type: str
    domain: str  # "" for the default domain
    name: str
    inputs: list[str]  # "" marks an absent optional input
    outputs: list[str]  # "" marks an absent optional output
    attrs: dict[str, object]
    opset: int  # version of the node's domain imported by the model
    proto: onnx.NodeProto | None = field(default=None, repr=False, compare=False)  # for inference

    @property
    def label(self) -> str:
        return node_label(self.op_type, self.name)


@dataclass
class Graph:
    name: str
    inputs: list[str]
    outputs: list[str]
    nodes: list[Node]
    types: dict[str, ValueType] = field(default_factory=dict)
    initializers: dict[str, np.ndarray] = field(default_factory=dict)
    doc: str = ""
    # The opsets the model imports, in force in this graph; a function body the standard gives
    # an operator resolves the domains its own imports leave out against them, as onnx does
    # (FlexAttention's body uses default-domain operators but imports only ai.onnx.preview).
    opsets: dict[str, int] = field(default_factory=dict)


def with_own_types(graph: Graph) -> Graph:
    """A copy of `graph` whose type maps (its own and its bodies') are new dicts, so that a stage
    refining types works on it and leaves the graph it was given as it was. Nodes without bodies,
    initializers and protos are shared (nothing edits them)."""

    def copied(value):
        if isinstance(value, Graph):
            return with_own_types(value)
        if isinstance(value, list) and value and all(isinstance(g, Graph) for g in value):
            return [with_own_types(g) for g in value]
        return value

    nodes = []
    for node in graph.nodes:
        attrs = {key: copied(value) for key, value in node.attrs.items()}
        if any(attrs[key] is not value for key, value in node.attrs.items()):
            node = dataclasses.replace(node, attrs=attrs)
        nodes.append(node)
    return dataclasses.replace(graph, nodes=nodes, types=dict(graph.types))


@dataclass
class Model:
    graph: Graph
    opset: int | None  # of the default domain; None when the model imports none (XGBoost's)
    opsets: dict[str, int]
    source_name: str
    sha256: str
    proto: onnx.ModelProto  # kept for onnx's shape inference in the resolve stage


def subgraphs(node: Node) -> list[Graph]:
    """The node's graph-valued attributes, in attribute order."""
    found = []
    for value in node.attrs.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, Graph):
                found.append(item)
    return found


def free_names(graph: Graph) -> set[str]:
    """Values a (sub)graph reads from enclosing scopes."""
    defined = set(graph.inputs) | set(graph.initializers)
    used: set[str] = set()
    for node in graph.nodes:
        used.update(n for n in node.inputs if n)
        for sub in subgraphs(node):
            used |= free_names(sub)
        defined.update(node.outputs)
    return (used | set(graph.outputs)) - defined


def from_onnx(loaded: LoadedModel) -> Model:
    proto = loaded.proto
    if proto.functions:
        # Model-local functions are expanded in place (values renamed apart, attribute references
        # bound), so the rest of the pipeline only sees standard operators.
        try:
            proto = onnx.inliner.inline_local_functions(proto)
        except Exception as exc:
            raise ModelError(
                f"{loaded.source_name}: cannot expand its local functions: {exc}"
            ) from None
    opsets = {
        ("" if e.domain in DEFAULT_DOMAINS else e.domain): e.version for e in proto.opset_import
    }
    graph = _graph(proto.graph, opsets)
    if not graph.outputs:  # (onnxruntime runs it and returns nothing; docs/decisions.md)
        raise ModelError(f"{loaded.source_name}: the graph has no outputs: nothing to compute")
    return Model(graph, loaded.opset, opsets, loaded.source_name, loaded.sha256, proto)


def value_type(type_proto: onnx.TypeProto, where: str) -> ValueType:
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        tensor = type_proto.tensor_type
        dtype = element_dtype(tensor.elem_type, where) if tensor.elem_type else None
        shape = None
        if tensor.HasField("shape"):
            shape = tuple(_dim(d) for d in tensor.shape.dim)
        return TensorType(dtype, shape)
    if kind == "sequence_type":
        return SequenceType(value_type(type_proto.sequence_type.elem_type, where))
    if kind == "optional_type":
        return OptionalType(value_type(type_proto.optional_type.elem_type, where))
    if kind == "map_type":
        key = element_dtype(type_proto.map_type.key_type, where)
        return MapType(key, value_type(type_proto.map_type.value_type, where))
    if kind is None:
        return UNKNOWN
    raise UnsupportedError(f"{where}: {kind.replace('_', ' ')} values are not supported")


def type_proto(value_type: ValueType) -> onnx.TypeProto | None:
    """The TypeProto of an IR type (None when too little is known to say)."""
    if isinstance(value_type, TensorType):
        if value_type.dtype is None:
            return None
        element = ONNX_ELEMENT_TYPES[value_type.dtype.name]
        dims: list[int | str | None] | None = None
        if value_type.shape is not None:
            # onnx knows ints and names; a symbolic expression is unknown to it (and a negative
            # size, which a hostile model can make, stops onnx's inference on a C++ assertion
            # that no except catches: unknown too)
            dims = [
                d if isinstance(d, str) or isinstance(d, int) and d >= 0 else None
                for d in value_type.shape
            ]
        return onnx.helper.make_tensor_type_proto(element, dims)
    if isinstance(value_type, SequenceType):
        inner = type_proto(value_type.elem)
        return None if inner is None else onnx.helper.make_sequence_type_proto(inner)
    if isinstance(value_type, OptionalType):
        inner = type_proto(value_type.elem)
        return None if inner is None else onnx.helper.make_optional_type_proto(inner)
    if isinstance(value_type, MapType):
        value = type_proto(value_type.value)
        key = ONNX_ELEMENT_TYPES[value_type.key.name]
        return None if value is None else onnx.helper.make_map_type_proto(key, value)
    return None


def complete(value_type: ValueType) -> bool:
    """Whether a type is fully known: a dtype and static dims, recursively."""
    if isinstance(value_type, TensorType):
        return value_type.dtype is not None and value_type.static
    if isinstance(value_type, (SequenceType, OptionalType)):
        return complete(value_type.elem)
    return False


def _dim(dim: onnx.TensorShapeProto.Dimension) -> Dim:
    """A declared dim: its value, its symbol, or None when unknown. A negative dim_value (Paddle
    declares the batch dim as -1) is unknown, as onnxruntime reads it."""
    if dim.HasField("dim_value"):
        return dim.dim_value if dim.dim_value >= 0 else None
    if dim.HasField("dim_param") and any(c.isalnum() for c in dim.dim_param):
        return dim.dim_param
    return None  # no name, or a mark such as Paddle's "?" that names nothing


def tensor_value(tensor: onnx.TensorProto, where: str) -> np.ndarray:
    element_dtype(tensor.data_type, where)
    try:
        return numpy_helper.to_array(tensor)
    except Exception as exc:  # malformed payloads: wrong byte count, missing external file
        raise ModelError(f"{where}: cannot read tensor {tensor.name!r}: {exc}") from None


def _graph(proto: onnx.GraphProto, opsets: dict[str, int]) -> Graph:
    # A value's messages name the first node that produces or reads it (an out-of-scope element
    # type is then refused naming the node, as every refusal should).
    users: dict[str, str] = {}
    for n in proto.node:
        for name in list(n.output) + list(n.input):
            users.setdefault(name, node_label(n.op_type, n.name))

    def where(kind: str, name: str) -> str:
        return f"{users[name]}: {kind} {name!r}" if name in users else f"{kind} {name!r}"

    types: dict[str, ValueType] = {}
    for info in list(proto.input) + list(proto.value_info) + list(proto.output):
        if info.type.WhichOneof("value"):
            types[info.name] = value_type(info.type, where("value", info.name))
    initializers = {
        t.name: tensor_value(t, where("initializer", t.name)) for t in proto.initializer
    }
    for sparse in proto.sparse_initializer:
        raise UnsupportedError(f"sparse initializer {sparse.values.name!r} is not supported")
    for name, value in initializers.items():
        types.setdefault(name, TensorType(value.dtype, value.shape))
    nodes = [node_from_proto(n, opsets) for n in proto.node]
    inputs = [i.name for i in proto.input if i.name not in initializers]
    return Graph(
        name=proto.name,
        inputs=inputs,
        outputs=[o.name for o in proto.output],
        nodes=nodes,
        types=types,
        initializers=initializers,
        doc=proto.doc_string,
        opsets=dict(opsets),
    )


def node_from_proto(proto: onnx.NodeProto, opsets: dict[str, int]) -> Node:
    domain = "" if proto.domain in DEFAULT_DOMAINS else proto.domain
    label = node_label(proto.op_type, proto.name)
    if domain not in opsets:
        raise UnsupportedError(f"{label}: domain {proto.domain!r} is not imported by the model")
    opset = opsets[domain]
    attrs = _schema_defaults(proto.op_type, domain, opset)
    for attribute in proto.attribute:
        if attribute.ref_attr_name:
            raise UnsupportedError(f"{label}: attribute references outside functions")
        attrs[attribute.name] = _attribute(attribute, opsets, label)
    return Node(
        proto.op_type,
        domain,
        proto.name,
        list(proto.input),
        list(proto.output),
        attrs,
        opset,
        proto,
    )


def _schema_defaults(op_type: str, domain: str, opset: int) -> dict[str, object]:
    """Default attribute values of the schema in force at `opset` (empty if no schema)."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return {}
    return {
        name: _text(onnx.helper.get_attribute_value(attr.default_value))
        for name, attr in schema.attributes.items()
        if attr.default_value.type
    }


def _text(value):
    """Attribute strings as str (protobuf gives bytes), lists element-wise."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [_text(v) for v in value]
    return value


def _attribute(attribute: onnx.AttributeProto, opsets, label: str):
    kind = attribute.type
    where = f"{label}, attribute {attribute.name!r}"
    if kind == onnx.AttributeProto.TENSOR:
        return tensor_value(attribute.t, where)
    if kind == onnx.AttributeProto.TENSORS:
        return [tensor_value(t, where) for t in attribute.tensors]
    if kind == onnx.AttributeProto.GRAPH:
        return _graph(attribute.g, opsets)
    if kind == onnx.AttributeProto.GRAPHS:
        return [_graph(g, opsets) for g in attribute.graphs]
    if kind in (onnx.AttributeProto.SPARSE_TENSOR, onnx.AttributeProto.SPARSE_TENSORS):
        raise UnsupportedError(f"{where}: sparse tensors are not supported")
    if kind == onnx.AttributeProto.TYPE_PROTO:
        return value_type(attribute.tp, where)
    if kind == onnx.AttributeProto.TYPE_PROTOS:
        return [value_type(t, where) for t in attribute.type_protos]
    return _text(onnx.helper.get_attribute_value(attribute))
