"""Fuzzing the compiler with broken and hostile models (issue #17, docs/robustness.md).

Valid seed models (small exported ones from tests/real_models/ and tests/ml_models/, and models
built here) are mutated
at the protobuf level (dims, element types, tensors and their external data entries, attribute
types and values, operator types and domains, graph wiring, node order, graph inputs and
outputs, subgraphs, opset imports, model-local functions, planted payloads) and at the byte level
(bit flips, overwritten, inserted or duplicated bytes, truncation, splices of two models). Every
mutant is written to its own folder, compiled, and, when it compiles, imported and run on inputs
made from its INPUTS, in a child process forked for it (so that a crash of the interpreter is
seen, and a hang killed at the time bound). Each ends as one outcome:

  refused         a CompileError with a one-line message (the clean refusal)
  compiled        the module imports and runs
  run error       the module imports and raises a clean error at run time (NodeError naming
                  the node, InvalidInput, WeightsError)
  not run         the module imports but its declared inputs are too large to make
  long run        the module imports and still runs after RUN_SECONDS: a Loop whose trip
                  count the model sets to 2**62 runs for ever, in onnxruntime too
and, as findings (each one a bug):
  internal error  another exception type escaped compile_model, or a CompileError of several
                  lines or one that says "internal error"
  cli error       the command line did not print exactly one line or exited with 2
  import error    a compiled module did not import
  run bug         a run-time exception that is not a clean error
  memory          an allocation beyond the bound: a MemoryError that is not AllocationError,
                  or the child's peak memory grew by more than MEMORY_GROWTH
  hang            compiling or importing past the time bound
  crash           the child died (a signal: segfault, abort)
  canary          model content ran (a payload's marker file appeared)
  escape          a file appeared outside the mutant's output folder

`python -m tools.fuzz --count 20000 --jobs 2` runs a large campaign (`make fuzz`), writing the
mutants of findings to .cache/fuzz/findings/ and, with --report, its figures into
docs/robustness.md between the markers. `--seed S --only N` reproduces mutant N of a campaign.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import importlib
import io
import json
import os
import random
import re
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tests.harness.modules import import_generated  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REAL_MODELS = ROOT / "tests" / "real_models"
# Small exported models: loops, branches, scans, recurrent and convolutional layers, shape arithmetic.
REAL_SEEDS = (
    "mlp_legacy_op14",
    "paddle_if_shape_op13",
    "paddle_reshape_reduce_op13",
    "paddle_dataflow_op13",
    "paddle_shape_arith_op13",
    "paddle_loop_op13",
    "script_if_rank_op17",
    "script_loop_if_append_op17",
    "scan_rnn_op11",
    "cond_dynamo_op18",
    "dataflow_legacy_op17",
    "tf_style_cnn_op13",
    "gru_tagger_legacy_op17",
)
ML_MODELS = ROOT / "tests" / "ml_models"
# ai.onnx.ml converted models: string tensors, ZipMap's maps, tree ensembles, a dict input.
ML_SEEDS = (
    "pipeline_minmax_logreg",
    "logreg_string_labels",
    "label_encoder_strings",
    "decision_tree_classifier",
    "dict_vectorizer_tree",
)
CLEAN = ("refused", "compiled", "run error", "not run", "long run")
FINDINGS = (
    "internal error",
    "cli error",
    "import error",
    "run bug",
    "memory",
    "hang",
    "crash",
    "canary",
    "escape",
)
CONVERTED_NOTE = re.compile(r": opset \d+ converted to opset \d+ with onnx.version_converter$")
CANARY = "pwned"  # the file a payload creates in the mutant's folder
MAX_INPUT_ELEMENTS = 1 << 16
RUN_SECONDS = 5  # a run still going then is a "long run" (the time bound covers compiling)
RUN_ALLOCATION_LIMIT = 256 << 20  # runtime_support's allocation limit inside a child
MEMORY_HEADROOM = 2 << 30  # address space a child may add to what it inherits
MEMORY_GROWTH = 768 << 20  # a child whose peak memory grew more than this is a finding
REPORT_BEGIN = "<!-- fuzz-run: begin (written by python -m tools.fuzz --report) -->"
REPORT_END = "<!-- fuzz-run: end -->"


# --- seeds -----------------------------------------------------------------------------------


@dataclasses.dataclass
class Seed:
    name: str
    model: onnx.ModelProto
    files: dict[str, bytes] = dataclasses.field(default_factory=dict)  # beside the model


def _finish(graph, opset=17, **kwargs) -> onnx.ModelProto:
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="fuzz", **kwargs
    )
    model.ir_version = 10
    return model


def _tensor(name, dims, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, dims)


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def _built_seeds() -> list[Seed]:
    r = np.random.default_rng(0)
    f32 = lambda *shape: r.standard_normal(shape).astype(np.float32)  # noqa: E731
    seeds = []

    mlp = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W1"], ["h0"], name="fc1"),
            helper.make_node("Add", ["h0", "b1"], ["h1"], name="bias1"),
            helper.make_node("Relu", ["h1"], ["hidden"], name="act1"),
            helper.make_node("MatMul", ["hidden", "W2"], ["logits"], name="fc2"),
            helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
        ],
        "mlp",
        [_tensor("x", ["N", 4])],
        [_tensor("probs", ["N", 3]), _tensor("hidden", ["N", 8])],
        [_init("W1", f32(4, 8)), _init("b1", f32(8)), _init("W2", f32(8, 3))],
    )
    seeds.append(Seed("built_mlp", _finish(mlp)))

    conv = helper.make_graph(
        [
            helper.make_node("Conv", ["image", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
            helper.make_node("Relu", ["n"], ["r"], name="relu"),
            helper.make_node(
                "MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]
            ),
            helper.make_node("Resize", ["p", "", "scales"], ["u"], name="up", mode="nearest"),
            helper.make_node("Flatten", ["u"], ["f"], name="flat"),
            helper.make_node("Gemm", ["f", "G", "g"], ["y"], name="fc", transB=1),
        ],
        "convnet",
        [_tensor("image", ["N", 2, 6, 6])],
        [_tensor("y", ["N", 4])],
        [
            _init("W", f32(3, 2, 3, 3)),
            _init("B", f32(3)),
            _init("s", np.abs(f32(3)) + 0.5),
            _init("b", f32(3)),
            _init("m", f32(3)),
            _init("v", np.abs(f32(3)) + 0.5),
            _init("scales", np.array([1, 1, 2, 2], np.float32)),
            _init("G", f32(4, 108)),
            _init("g", f32(4)),
        ],
    )
    seeds.append(Seed("built_conv", _finish(conv, 13)))

    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    shapes = helper.make_graph(
        [
            helper.make_node("Shape", ["ids"], ["s"], name="shape"),
            helper.make_node("Gather", ["s", "one"], ["seq"], name="seq", axis=0),
            helper.make_node("Range", ["zero", "seq", "one"], ["pos"], name="range"),
            helper.make_node("Unsqueeze", ["pos", "axis0"], ["rows"], name="rows"),
            helper.make_node("Unsqueeze", ["pos", "axis1"], ["cols"], name="cols"),
            helper.make_node("LessOrEqual", ["rows", "cols"], ["causal"], name="causal"),
            helper.make_node("Unsqueeze", ["seq", "axis0"], ["seq1"], name="seq1"),
            helper.make_node("Concat", ["one1", "seq1", "seq1"], ["mshape"], name="mshape", axis=0),
            helper.make_node("Expand", ["causal", "mshape"], ["mask"], name="expand"),
            helper.make_node("Cast", ["mask"], ["maskf"], name="cast", to=TensorProto.FLOAT),
            helper.make_node("ConstantOfShape", ["mshape"], ["zeros"], name="zeros"),
            helper.make_node("Add", ["maskf", "zeros"], ["y"], name="add"),
            helper.make_node("Concat", ["one1", "two"], ["reps"], name="reps", axis=0),
            helper.make_node("Tile", ["ids", "reps"], ["tiled"], name="tile"),
            helper.make_node("Reshape", ["tiled", "flat"], ["t"], name="reshape"),
        ],
        "shapes",
        [_tensor("ids", ["batch", "seq"], TensorProto.INT64)],
        [_tensor("y", None), _tensor("t", None, TensorProto.INT64)],
        [
            _init("zero", np.array(0, np.int64)),
            _init("one", np.array(1, np.int64)),
            _init("one1", i64(1)),
            _init("two", i64(2)),
            _init("axis0", i64(0)),
            _init("axis1", i64(1)),
            _init("flat", i64(-1)),
        ],
    )
    seeds.append(Seed("built_shapes", _finish(shapes, 14)))

    # A model-local function, called twice, and a Loop whose body appends to a sequence.
    function = helper.make_function(
        "local",
        "Scaled",
        ["a"],
        ["b"],
        [
            helper.make_node("Constant", [], ["k"], value_float=2.0),
            helper.make_node("Mul", ["a", "k"], ["b"]),
        ],
        [helper.make_opsetid("", 17)],
    )
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
            helper.make_node("Relu", ["acc_out"], ["scan_out"]),
        ],
        "body",
        [
            _tensor("i", [], TensorProto.INT64),
            _tensor("cond_in", [], TensorProto.BOOL),
            _tensor("acc_in", [2]),
        ],
        [
            _tensor("cond_out", [], TensorProto.BOOL),
            _tensor("acc_out", [2]),
            _tensor("scan_out", [2]),
        ],
    )
    control = helper.make_graph(
        [
            helper.make_node("Scaled", ["x"], ["x2"], domain="local", name="call1"),
            helper.make_node("Scaled", ["x2"], ["x4"], domain="local", name="call2"),
            helper.make_node(
                "Loop", ["trips", "cond", "x4"], ["acc", "scans"], name="loop", body=body
            ),
            helper.make_node("ReduceSum", ["scans"], ["total"], name="sum", keepdims=0),
            helper.make_node("Greater", ["total", "zero"], ["positive"], name="gt"),
            helper.make_node(
                "If",
                ["positive"],
                ["chosen"],
                name="if",
                then_branch=helper.make_graph(
                    [helper.make_node("Neg", ["acc"], ["t_out"])],
                    "then",
                    [],
                    [_tensor("t_out", [2])],
                ),
                else_branch=helper.make_graph(
                    [helper.make_node("Abs", ["acc"], ["e_out"])],
                    "else",
                    [],
                    [_tensor("e_out", [2])],
                ),
            ),
        ],
        "control",
        [_tensor("x", [2])],
        [_tensor("chosen", [2]), _tensor("total", [2])],
        [
            _init("trips", np.array(3, np.int64)),
            _init("cond", np.array(True)),
            _init("zero", np.zeros(2, np.float32)),
        ],
    )
    model = helper.make_model(
        control,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        functions=[function],
        producer_name="fuzz",
    )
    model.ir_version = 10
    seeds.append(Seed("built_control", model))

    # Weights in an external data file beside the model.
    weights = f32(16, 16)
    external = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")],
        "external",
        [_tensor("x", [2, 16])],
        [_tensor("y", [2, 16])],
        [_init("W", weights)],
    )
    model = _finish(external)
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", "1024")):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    seeds.append(Seed("built_external", model, {"weights.bin": weights.tobytes()}))

    # An old opset, converted at load.
    old = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("Sum", ["r", "x"], ["y"], name="sum"),
        ],
        "old",
        [_tensor("x", [2, 3])],
        [_tensor("y", [2, 3])],
    )
    seeds.append(Seed("built_opset6", _finish(old, 6)))
    return seeds


def seeds() -> list[Seed]:
    found = []
    for folder, names in ((REAL_MODELS, REAL_SEEDS), (ML_MODELS, ML_SEEDS)):
        for name in names:
            path = folder / f"{name}.onnx"
            if path.is_file():
                found.append(Seed(name, onnx.load_model_from_string(path.read_bytes())))
    return found + _built_seeds()


# --- the mutation engine -------------------------------------------------------------------


@dataclasses.dataclass
class Mutant:
    index: int
    seed: str
    description: str
    data: bytes  # the .onnx file
    files: dict[str, bytes]  # written beside it (external data)
    variant: str
    cli: bool  # also run the command line on it
    kinds: tuple = ()  # the mutations applied, by kind


def payloads(canary: str) -> list[str]:
    """Texts that would create the canary file if model content ever ran as code."""
    call = f"__import__('os').system('touch {canary}')"
    return [
        call,
        f"\n{call}\n#",
        f"';{call};'",
        f'";{call};"',
        f'"""\n{call}\n"""',
        f"{{{{ {call} }}}}",
        f"\\\n{call}",
        f"\r{call}",
        f"x = 1; {call}",
        f"{{% if {call} %}}{{% endif %}}",
    ]


EXTREME_INTS = [0, 1, -1, 2, 3, -2, 7, 64, 2**31 - 1, 2**31, 10**6, 10**9, 10**12, 2**62, 2**63 - 1]
EXTREME_INTS += [-(2**63), -(10**12), -(2**31)]
EXTREME_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-45, 1e38, -1e38, 1e300, float("nan"), float("inf")]
EXTREME_FLOATS += [float("-inf"), 1e6, 1e12]


class Context:
    def __init__(self, rng: random.Random, canary: str, seeds: list[Seed]):
        self.rng = rng
        self.canary = canary
        self.seeds = seeds
        self.files: dict[str, bytes] = {}

    def payload(self) -> str:
        return self.rng.choice(payloads(self.canary))

    def text(self) -> str:
        return self.rng.choice(
            [self.payload(), "", "x", "a" * self.rng.choice([64, 5000]), "\x00", "é", "../../x"]
        )

    def int_value(self) -> int:
        r = self.rng
        return r.choice(EXTREME_INTS) if r.random() < 0.8 else r.randint(-10, 10)

    def float_value(self) -> float:
        return self.rng.choice(EXTREME_FLOATS)


def _graphs(graph: onnx.GraphProto):
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                yield from _graphs(attribute.g)
            for sub in attribute.graphs:
                yield from _graphs(sub)


def all_graphs(model: onnx.ModelProto) -> list[onnx.GraphProto]:
    return list(_graphs(model.graph))


def all_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    nodes = [n for g in all_graphs(model) for n in g.node]
    return nodes + [n for f in model.functions for n in f.node]


def value_infos(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    return [
        v for g in all_graphs(model) for v in list(g.input) + list(g.output) + list(g.value_info)
    ]


def tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    found = [t for g in all_graphs(model) for t in g.initializer]
    for node in all_nodes(model):
        for attribute in node.attribute:
            if attribute.HasField("t"):
                found.append(attribute.t)
            found.extend(attribute.tensors)
    return found


def value_names(graph: onnx.GraphProto) -> list[str]:
    names = [v.name for v in graph.input] + [t.name for t in graph.initializer]
    return names + [o for n in graph.node for o in n.output if o]


def _tensor_types(type_proto: onnx.TypeProto):
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        yield type_proto.tensor_type
    elif kind == "sequence_type":
        yield from _tensor_types(type_proto.sequence_type.elem_type)
    elif kind == "optional_type":
        yield from _tensor_types(type_proto.optional_type.elem_type)


MUTATIONS: list[tuple[str, object, float]] = []


def mutation(kind: str, weight: float = 1.0):
    def register(function):
        MUTATIONS.append((kind, function, weight))
        return function

    return register


@mutation("dim", 2)
def _dim(model, ctx):
    infos = [v for v in value_infos(model) if v.type.WhichOneof("value")]
    if not infos:
        return None
    info = ctx.rng.choice(infos)
    for tensor in _tensor_types(info.type):
        r = ctx.rng.random()
        if r < 0.15:
            tensor.ClearField("shape")
            return f"shape of {info.name!r} removed"
        if r < 0.25 or not tensor.shape.dim:
            tensor.shape.dim.add().dim_value = ctx.rng.choice([1, 2, 10**12])
            return f"a dim added to {info.name!r}"
        dim = ctx.rng.choice(tensor.shape.dim)
        if ctx.rng.random() < 0.3:
            dim.dim_param = ctx.rng.choice([ctx.text(), "N", "batch", "unk__3", "?"])
            return f"a dim of {info.name!r} named {dim.dim_param!r}"
        dim.dim_value = ctx.int_value()
        return f"a dim of {info.name!r} set to {dim.dim_value}"
    return None


@mutation("element type")
def _element_type(model, ctx):
    infos = [v for v in value_infos(model) if v.type.WhichOneof("value")]
    if not infos:
        return None
    info = ctx.rng.choice(infos)
    r = ctx.rng.random()
    if r < 0.6:
        for tensor in _tensor_types(info.type):
            tensor.elem_type = ctx.rng.choice(list(range(0, 26)) + [100, -1 & 0x7FFFFFFF])
            return f"element type of {info.name!r} set to {tensor.elem_type}"
    if r < 0.8:
        inner = onnx.TypeProto()
        inner.CopyFrom(info.type)
        target = ctx.rng.choice(["sequence_type", "optional_type"])
        getattr(info.type, target).elem_type.CopyFrom(inner)
        return f"{info.name!r} made a {target}"
    if r < 0.9:
        info.type.map_type.key_type = TensorProto.INT64
        info.type.map_type.value_type.tensor_type.elem_type = TensorProto.FLOAT
        return f"{info.name!r} made a map"
    info.type.sparse_tensor_type.elem_type = TensorProto.FLOAT
    return f"{info.name!r} made a sparse tensor"


@mutation("tensor", 2)
def _tensor_mutation(model, ctx):
    found = tensors(model)
    if not found:
        return None
    tensor = ctx.rng.choice(found)
    r = ctx.rng.random()
    if r < 0.2:
        if tensor.dims:
            tensor.dims[ctx.rng.randrange(len(tensor.dims))] = ctx.int_value()
        else:
            tensor.dims.append(ctx.int_value())
        return f"dims of tensor {tensor.name!r} set to {list(tensor.dims)}"
    if r < 0.35:
        tensor.data_type = ctx.rng.choice(list(range(0, 26)) + [99])
        return f"data type of tensor {tensor.name!r} set to {tensor.data_type}"
    if r < 0.5 and tensor.raw_data:
        cut = ctx.rng.randrange(len(tensor.raw_data) + 1)
        tensor.raw_data = tensor.raw_data[:cut] + (b"\x01" * ctx.rng.choice([0, 1, 7]))
        return f"raw data of tensor {tensor.name!r} resized to {len(tensor.raw_data)} bytes"
    if r < 0.6:
        tensor.float_data.extend([ctx.float_value() for _ in range(ctx.rng.randint(1, 5))])
        return f"float_data added to tensor {tensor.name!r}"
    if r < 0.7:
        tensor.int64_data.extend([ctx.int_value() for _ in range(ctx.rng.randint(1, 5))])
        return f"int64_data added to tensor {tensor.name!r}"
    if r < 0.8:
        tensor.string_data.append(ctx.payload().encode())
        tensor.data_type = TensorProto.STRING
        return f"tensor {tensor.name!r} made a string tensor"
    if r < 0.9:
        tensor.segment.begin, tensor.segment.end = 0, ctx.int_value() & 0x7FFFFFFFFFFFFFFF
        return f"a segment in tensor {tensor.name!r}"
    tensor.ClearField("dims")
    tensor.dims.extend(ctx.rng.choice([[], [0], [10**12], [2**31, 2**31], [-1, 4]]))
    return f"dims of tensor {tensor.name!r} replaced by {list(tensor.dims)}"


@mutation("shape value", 3)
def _shape_value(model, ctx):
    """A small int tensor (a shape, repeats, bounds, pads, axes) given extreme elements: the
    resource bombs of issue #17."""
    small = [
        t
        for t in tensors(model)
        if t.data_type in (TensorProto.INT64, TensorProto.INT32)
        and np.prod(t.dims, dtype=np.int64) <= 8
        and t.data_location != TensorProto.EXTERNAL
    ]
    if not small:
        return None
    tensor = ctx.rng.choice(small)
    try:
        value = numpy_helper.to_array(tensor).copy()
    except Exception:
        return None
    if value.size == 0:
        return None
    flat = value.reshape(-1)
    for _ in range(ctx.rng.randint(1, flat.size)):
        extreme = ctx.int_value()
        info = np.iinfo(flat.dtype)
        flat[ctx.rng.randrange(flat.size)] = min(max(extreme, info.min), info.max)
    tensor.CopyFrom(numpy_helper.from_array(value, tensor.name))
    return f"tensor {tensor.name!r} set to {value.tolist()}"


def _attribute_value(attribute, ctx):
    kind = attribute.type
    A = onnx.AttributeProto
    if kind == A.INT:
        attribute.i = ctx.int_value()
    elif kind == A.INTS:
        values = list(attribute.ints) or [1]
        values[ctx.rng.randrange(len(values))] = ctx.int_value()
        if ctx.rng.random() < 0.2:
            values = values + values
        del attribute.ints[:]
        attribute.ints.extend(values)
    elif kind == A.FLOAT:
        attribute.f = ctx.float_value()
    elif kind == A.FLOATS:
        del attribute.floats[:]
        attribute.floats.extend([ctx.float_value() for _ in range(ctx.rng.randint(0, 4))])
    elif kind == A.STRING:
        attribute.s = ctx.text().encode("utf-8", errors="replace")
    elif kind == A.STRINGS:
        attribute.strings.append(ctx.payload().encode())
    elif kind == A.TENSOR:
        attribute.t.dims.append(ctx.int_value())
    elif kind == A.GRAPH:
        if ctx.rng.random() < 0.5:
            attribute.g.ClearField("output")
        else:
            attribute.g.ClearField("node")
    else:
        return False
    return True


@mutation("attribute", 3)
def _attribute(model, ctx):
    nodes = [n for n in all_nodes(model) if n.attribute]
    if not nodes:
        return None
    node = ctx.rng.choice(nodes)
    attribute = ctx.rng.choice(node.attribute)
    r = ctx.rng.random()
    if r < 0.55 and _attribute_value(attribute, ctx):
        return f"attribute {attribute.name!r} of {node.op_type} {node.name!r} changed"
    if r < 0.75:
        attribute.type = ctx.rng.randrange(0, 15)
        return f"type of attribute {attribute.name!r} of {node.op_type} set to {attribute.type}"
    if r < 0.85:
        node.attribute.remove(attribute)
        return f"attribute {attribute.name!r} of {node.op_type} removed"
    if r < 0.92:
        attribute.ref_attr_name = ctx.rng.choice(["alpha", ctx.payload()])
        return f"attribute {attribute.name!r} of {node.op_type} made a reference"
    node.attribute.append(copy.deepcopy(attribute))
    return f"attribute {attribute.name!r} of {node.op_type} duplicated"


@mutation("new attribute")
def _new_attribute(model, ctx):
    nodes = all_nodes(model)
    if not nodes:
        return None
    node = ctx.rng.choice(nodes)
    try:
        schema = onnx.defs.get_schema(node.op_type, 28, node.domain)
        names = sorted(schema.attributes)
    except Exception:
        names = []
    name = ctx.rng.choice(names + ["unknown", ctx.payload()])
    value = ctx.rng.choice(
        [ctx.int_value(), ctx.float_value(), ctx.text(), [ctx.int_value()] * 3, [1.5, 2.5]]
    )
    attribute = helper.make_attribute(name, value)
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept + [attribute])
    return f"attribute {name!r} = {value!r} set on {node.op_type} {node.name!r}"


_OPS: list[str] = []


def _op_types() -> list[str]:
    if not _OPS:
        _OPS.extend(sorted({s.name for s in onnx.defs.get_all_schemas() if s.domain == ""}))
    return _OPS


@mutation("operator", 2)
def _operator(model, ctx):
    nodes = all_nodes(model)
    if not nodes:
        return None
    node = ctx.rng.choice(nodes)
    old = node.op_type
    node.op_type = ctx.rng.choice(_op_types() + ["NoSuchOp", ctx.payload()])
    return f"{old} {node.name!r} made a {node.op_type}"


@mutation("domain")
def _domain(model, ctx):
    nodes = all_nodes(model)
    if not nodes:
        return None
    node = ctx.rng.choice(nodes)
    node.domain = ctx.rng.choice(
        ["com.microsoft", "ai.onnx.ml", "ai.onnx", "ai.onnx.preview.training", "local", ctx.text()]
    )
    return f"domain of {node.op_type} {node.name!r} set to {node.domain!r}"


@mutation("wiring", 3)
def _wiring(model, ctx):
    graph = ctx.rng.choice(all_graphs(model))
    if not graph.node:
        return None
    node = ctx.rng.choice(graph.node)
    names = value_names(graph) or ["x"]
    r = ctx.rng.random()
    if r < 0.3 and node.input:
        i = ctx.rng.randrange(len(node.input))
        node.input[i] = ctx.rng.choice(names)
        return f"input {i} of {node.op_type} {node.name!r} rewired to {node.input[i]!r}"
    if r < 0.4 and node.input:
        i = ctx.rng.randrange(len(node.input))
        node.input[i] = ctx.rng.choice(["", "missing", ctx.payload()])
        return f"input {i} of {node.op_type} {node.name!r} set to {node.input[i]!r}"
    if r < 0.5 and node.output:
        node.input.append(node.output[0])  # a cycle through the node itself
        return f"{node.op_type} {node.name!r} reads its own output"
    if r < 0.6 and node.output:
        i = ctx.rng.randrange(len(node.output))
        node.output[i] = ctx.rng.choice(names)
        return (
            f"output {i} of {node.op_type} {node.name!r} renamed {node.output[i]!r} (twice defined)"
        )
    if r < 0.7:
        node.input.append(ctx.rng.choice(names + [""]))
        return f"an input added to {node.op_type} {node.name!r}"
    if r < 0.8 and node.input:
        node.input.pop()
        return f"last input of {node.op_type} {node.name!r} removed"
    if r < 0.9:
        node.output.append(ctx.rng.choice(["extra", ""]))
        return f"an output added to {node.op_type} {node.name!r}"
    later = [n for n in graph.node if n.output]
    if later and node.input:
        node.input[0] = ctx.rng.choice(later).output[0]
        return f"input 0 of {node.op_type} {node.name!r} reads a later value (order broken)"
    return None


@mutation("nodes", 2)
def _nodes(model, ctx):
    graph = ctx.rng.choice(all_graphs(model))
    if not graph.node:
        return None
    nodes = list(graph.node)
    r = ctx.rng.random()
    if r < 0.35:
        del nodes[ctx.rng.randrange(len(nodes))]
        what = "a node deleted"
    elif r < 0.55:
        nodes.insert(ctx.rng.randrange(len(nodes)), copy.deepcopy(ctx.rng.choice(nodes)))
        what = "a node duplicated"
    elif r < 0.7:
        nodes.reverse()
        what = "node order reversed"
    elif r < 0.85:
        ctx.rng.shuffle(nodes)
        what = "node order shuffled"
    else:
        for n in nodes:
            n.name = ctx.rng.choice(["same", ""])
        what = "node names made equal or empty"
    del graph.node[:]
    graph.node.extend(nodes)
    return f"{what} in graph {graph.name!r}"


@mutation("graph io", 2)
def _graph_io(model, ctx):
    graph = ctx.rng.choice(all_graphs(model))
    r = ctx.rng.random()
    if r < 0.2 and graph.input:
        del graph.input[ctx.rng.randrange(len(graph.input))]
        return f"an input of graph {graph.name!r} removed"
    if r < 0.4 and graph.output:
        del graph.output[ctx.rng.randrange(len(graph.output))]
        return f"an output of graph {graph.name!r} removed"
    if r < 0.55:
        name = ctx.rng.choice(value_names(graph) + ["missing"])
        graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
        return f"{name!r} made an output of graph {graph.name!r}"
    if r < 0.65 and graph.input:
        graph.input.append(copy.deepcopy(graph.input[0]))
        return f"an input of graph {graph.name!r} duplicated"
    if r < 0.8 and graph.initializer:
        tensor = ctx.rng.choice(graph.initializer)
        graph.input.append(helper.make_tensor_value_info(tensor.name, TensorProto.INT8, [7]))
        return f"initializer {tensor.name!r} also an input of another type"
    if r < 0.9 and graph.input:
        graph.initializer.append(_init(graph.input[0].name, np.zeros(3, np.float32)))
        return f"input {graph.input[0].name!r} also an initializer"
    graph.value_info.append(
        helper.make_tensor_value_info(
            ctx.rng.choice(value_names(graph) or ["v"]), ctx.rng.randrange(1, 17), [10**12]
        )
    )
    return f"a value_info declaring a huge shape in graph {graph.name!r}"


@mutation("subgraph", 2)
def _subgraph(model, ctx):
    holders = [(n, a) for n in all_nodes(model) for a in n.attribute if a.HasField("g") or a.graphs]
    r = ctx.rng.random()
    if not holders or r < 0.3:
        # wrap the main graph's first node in an If with a constant condition, nested
        graph = model.graph
        if not graph.node:
            return None
        depth = ctx.rng.choice([1, 2, 40, 120])
        first = inner = graph.node[0]
        outputs = [helper.make_value_info(o, onnx.TypeProto()) for o in first.output if o]
        for level in range(depth):  # the nesting goes through then_branch only
            inner = helper.make_node(
                "If",
                [f"cond{level}"],
                list(first.output),
                name=f"if{level}",
                then_branch=helper.make_graph([inner], f"then{level}", [], outputs),
                else_branch=helper.make_graph([first], f"else{level}", [], outputs),
            )
            graph.initializer.append(_init(f"cond{level}", np.array(level % 2 == 0)))
        graph.node[0].CopyFrom(inner)
        return f"first node nested in {depth} Ifs"
    node, attribute = ctx.rng.choice(holders)
    if attribute.HasField("g"):
        body = attribute.g
        if r < 0.5 and body.input:
            del body.input[-1]
            return f"an input of {node.op_type}'s {attribute.name} removed"
        if r < 0.7:
            other = ctx.rng.choice(all_graphs(model))
            body.CopyFrom(copy.deepcopy(other))
            return f"{node.op_type}'s {attribute.name} replaced by graph {other.name!r}"
        if r < 0.85 and body.output:
            body.output.append(copy.deepcopy(body.output[0]))
            return f"an output of {node.op_type}'s {attribute.name} duplicated"
        attribute.ClearField("g")
        return f"{node.op_type}'s {attribute.name} cleared"
    del attribute.graphs[:]
    return f"{node.op_type}'s {attribute.name} list cleared"


@mutation("external data", 2)
def _external_data(model, ctx):
    found = [t for t in tensors(model) if t.dims]
    if not found:
        return None
    tensor = ctx.rng.choice(found)
    try:
        nbytes = numpy_helper.to_array(tensor).nbytes
    except Exception:
        nbytes = 16
    tensor.ClearField("raw_data")
    for field in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        tensor.ClearField(field)
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    location = ctx.rng.choice(
        [
            "data.bin",
            "data.bin",
            "../outside.bin",
            "/etc/passwd",
            "/dev/zero",
            "/dev/urandom",
            "sub/../data.bin",
            "link.bin",
            "",
            ".",
            "missing.bin",
            ctx.payload(),
            "a\x00b",
            "x" * 300,
        ]
    )
    entries = {"location": location}
    r = ctx.rng.random()
    if r < 0.4:
        entries["offset"] = str(ctx.rng.choice([0, 0, 4, -1, 2**62, 10**12]))
    if r < 0.7:
        entries["length"] = str(ctx.rng.choice([nbytes, nbytes, 0, 3, -5, 10**12, 2**63 - 1]))
    if ctx.rng.random() < 0.2:
        entries[ctx.rng.choice(["checksum", "basepath", "unknown"])] = ctx.text()
    for key, value in entries.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    size = ctx.rng.choice([nbytes, nbytes, nbytes // 2, 0, nbytes + 100])
    ctx.files["data.bin"] = bytes(ctx.rng.randrange(256) for _ in range(min(size, 1 << 16)))
    if location == "link.bin":
        ctx.files["link.bin"] = b"->/etc/hostname"  # a symlink, made by the child
    return f"tensor {tensor.name!r} in external data {entries!r}"


@mutation("opset", 2)
def _opset(model, ctx):
    r = ctx.rng.random()
    if r < 0.6 and model.opset_import:
        entry = ctx.rng.choice(model.opset_import)
        entry.version = ctx.rng.choice([0, 1, 5, 6, 7, 9, 11, 12, 18, 23, 28, 29, 1000, -1, 2**40])
        return f"opset of domain {entry.domain!r} set to {entry.version}"
    if r < 0.75 and model.opset_import:
        del model.opset_import[ctx.rng.randrange(len(model.opset_import))]
        return "an opset import removed"
    if r < 0.9:
        model.opset_import.append(helper.make_opsetid(ctx.rng.choice(["", "ai.onnx", "x"]), 9))
        return "a duplicate opset import added"
    model.opset_import.append(helper.make_opsetid(ctx.payload(), 1))
    return "an opset import with a payload domain"


@mutation("payload names", 2)
def _payload_names(model, ctx):
    graph = ctx.rng.choice(all_graphs(model))
    names = value_names(graph) + [o.name for o in graph.output]
    if not names:
        return None
    old, new = ctx.rng.choice(names), ctx.payload()
    for g in all_graphs(model):
        for info in list(g.input) + list(g.output) + list(g.value_info):
            if info.name == old:
                info.name = new
        for tensor in g.initializer:
            if tensor.name == old:
                tensor.name = new
        for node in g.node:
            for i, name in enumerate(node.input):
                if name == old:
                    node.input[i] = new
            for i, name in enumerate(node.output):
                if name == old:
                    node.output[i] = new
    return f"value {old!r} renamed to a payload"


@mutation("payload strings", 2)
def _payload_strings(model, ctx):
    r = ctx.rng.random()
    text = ctx.payload()
    if r < 0.2:
        model.doc_string = model.producer_name = model.domain = text
        return "model doc string, producer and domain set to a payload"
    if r < 0.35:
        entry = model.metadata_props.add()
        entry.key, entry.value = text, text
        return "metadata with a payload"
    if r < 0.5:
        graph = ctx.rng.choice(all_graphs(model))
        graph.name = graph.doc_string = text
        return "a graph name set to a payload"
    nodes = all_nodes(model)
    if not nodes:
        return None
    node = ctx.rng.choice(nodes)
    if r < 0.7:
        node.name = node.doc_string = text
        return f"{node.op_type}'s name set to a payload"
    strings = [a for a in node.attribute if a.type == onnx.AttributeProto.STRING]
    if strings:
        ctx.rng.choice(strings).s = text.encode()
        return f"a string attribute of {node.op_type} set to a payload"
    infos = [v for v in value_infos(model) for t in _tensor_types(v.type) if t.shape.dim]
    if infos:
        info = ctx.rng.choice(infos)
        list(_tensor_types(info.type))[0].shape.dim[0].dim_param = text
        return f"a dim of {info.name!r} named with a payload"
    return None


@mutation("model fields")
def _model_fields(model, ctx):
    r = ctx.rng.random()
    if r < 0.5:
        model.ir_version = ctx.rng.choice([0, 1, 3, 7, 10, 11, 12, 100, 2**40])
        return f"ir_version set to {model.ir_version}"
    if r < 0.75:
        model.graph.sparse_initializer.add().values.CopyFrom(
            _init("sparse", np.ones(2, np.float32))
        )
        return "a sparse initializer added"
    model.ClearField("graph")
    return "graph removed"


@mutation("functions")
def _functions(model, ctx):
    r = ctx.rng.random()
    if model.functions and r < 0.5:
        function = ctx.rng.choice(model.functions)
        if function.node:
            node = ctx.rng.choice(function.node)
            node.op_type, node.domain = function.name, function.domain  # calls itself
            return f"function {function.name!r} made recursive"
        return None
    if not model.graph.node:
        return None
    node = ctx.rng.choice(model.graph.node)
    function = helper.make_function(
        "loops",
        "Self",
        list(node.input) or ["a"],
        list(node.output) or ["b"],
        [
            helper.make_node(
                "Self", list(node.input) or ["a"], list(node.output) or ["b"], domain="loops"
            )
        ],
        [helper.make_opsetid("", 17), helper.make_opsetid("loops", 1)],
    )
    model.functions.append(function)
    model.opset_import.append(helper.make_opsetid("loops", 1))
    node.op_type, node.domain = "Self", "loops"
    return f"{node.name!r} calls a function that calls itself"


# Value-driven allocations planted as new outputs: every such operator with huge parameters.
def _bomb_nodes(source: str, ctx) -> tuple[list, list, str]:
    big = ctx.rng.choice([10**6, 10**9, 10**12, 2**40])
    i64 = lambda name, *v: _init(name, np.array(v, np.int64))  # noqa: E731
    f32 = lambda name, *v: _init(name, np.array(v, np.float32))  # noqa: E731
    choices = {
        "ConstantOfShape": (
            [helper.make_node("ConstantOfShape", ["b_shape"], ["b_out"])],
            [i64("b_shape", big, big)],
        ),
        "Expand": (
            [helper.make_node("Expand", [source, "b_shape"], ["b_out"])],
            [i64("b_shape", big, 1, 1)],
        ),
        "Tile": (
            [helper.make_node("Tile", ["b_x", "b_rep"], ["b_out"])],
            [f32("b_x", 1, 2), i64("b_rep", big)],
        ),
        "Range": (
            [helper.make_node("Range", ["b_a", "b_b", "b_c"], ["b_out"])],
            [
                _init("b_a", np.array(0, np.int64)),
                _init("b_b", np.array(big, np.int64)),
                _init("b_c", np.array(1, np.int64)),
            ],
        ),
        "RangeFloat": (
            [helper.make_node("Range", ["b_a", "b_b", "b_c"], ["b_out"])],
            [
                _init("b_a", np.array(0, np.float32)),
                _init("b_b", np.array(big, np.float32)),
                _init("b_c", np.array(0.5, np.float32)),
            ],
        ),
        "OneHot": (
            [helper.make_node("OneHot", ["b_i", "b_d", "b_v"], ["b_out"])],
            [i64("b_i", 1, 2), i64("b_d", big), f32("b_v", 0, 1)],
        ),
        "Pad": (
            [helper.make_node("Pad", ["b_x", "b_p"], ["b_out"])],
            [f32("b_x", 1, 2), i64("b_p", big, big)],
        ),
        "Resize": (
            [helper.make_node("Resize", ["b_x", "", "b_s"], ["b_out"])],
            [_init("b_x", np.ones((1, 1, 2, 2), np.float32)), f32("b_s", 1, 1, big, big)],
        ),
        "Reshape": (
            [
                helper.make_node("ConstantOfShape", ["b_shape"], ["b_c"]),
                helper.make_node("Reshape", ["b_c", "b_flat"], ["b_out"]),
            ],
            [i64("b_shape", big, big), i64("b_flat", -1)],
        ),
        "AddBroadcast": (
            [helper.make_node("Add", ["b_col", "b_row"], ["b_out"])],
            [
                _init("b_col", np.ones((1 << 11, 1), np.float32)),
                _init("b_row", np.ones((1, 1 << 11), np.float32)),
            ],
        ),
        "Gather": (
            [helper.make_node("Gather", ["b_x", "b_idx"], ["b_out"])],
            [
                _init("b_x", np.ones((1, 1 << 11), np.float32)),
                _init("b_idx", np.zeros(1 << 11, np.int64)),
            ],
        ),
        "Window": (
            [helper.make_node("HannWindow", ["b_n"], ["b_out"])],
            [_init("b_n", np.array(big, np.int64))],
        ),
        "CenterCropPad": (
            [helper.make_node("CenterCropPad", ["b_x", "b_shape"], ["b_out"])],
            [f32("b_x", 1, 2), i64("b_shape", big)],
        ),
    }
    kind = ctx.rng.choice(sorted(choices))
    nodes, inits = choices[kind]
    for n in nodes:
        n.name = f"bomb_{kind}"
    return nodes, inits, f"{kind} of {big}"


@mutation("resource bomb", 2)
def _resource_bomb(model, ctx):
    graph = model.graph
    source = graph.input[0].name if graph.input else None
    if source is None:
        return None
    nodes, inits, what = _bomb_nodes(source, ctx)
    graph.node.extend(nodes)
    graph.initializer.extend(inits)
    elem = TensorProto.INT64 if what.startswith("Range ") else TensorProto.FLOAT
    graph.output.append(helper.make_tensor_value_info("b_out", elem, None))
    if ctx.rng.random() < 0.3:  # and a declared type that lies about its size
        graph.value_info.append(helper.make_tensor_value_info("b_out", TensorProto.FLOAT, [1]))
    return f"a resource bomb: {what}"


def _byte_mutation(data: bytes, ctx: Context) -> tuple[bytes, str]:
    r, rng = ctx.rng.random(), ctx.rng
    buffer = bytearray(data)
    if not buffer:
        return data, "empty"
    if r < 0.3:
        count = rng.randint(1, 8)
        for _ in range(count):
            buffer[rng.randrange(len(buffer))] ^= 1 << rng.randrange(8)
        return bytes(buffer), f"{count} bits flipped"
    if r < 0.5:
        at = rng.randrange(len(buffer))
        chunk = bytes(rng.choice([0x00, 0xFF, 0x7F, 0x80, rng.randrange(256)]) for _ in range(8))
        buffer[at : at + 8] = chunk
        return bytes(buffer), f"8 bytes overwritten at {at}"
    if r < 0.65:
        at = rng.randrange(len(buffer) + 1)
        return bytes(buffer[:at]), f"truncated to {at} bytes"
    if r < 0.8:
        at = rng.randrange(len(buffer))
        chunk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
        return (
            bytes(buffer[:at]) + chunk + bytes(buffer[at:]),
            f"{len(chunk)} bytes inserted at {at}",
        )
    if r < 0.9:
        start = rng.randrange(len(buffer))
        end = min(len(buffer), start + rng.randint(1, 256))
        return bytes(buffer[:end]) + bytes(buffer[start:]), f"bytes {start}:{end} duplicated"
    other = ctx.rng.choice(ctx.seeds).model.SerializeToString()
    cut_a, cut_b = rng.randrange(len(buffer)), rng.randrange(len(other))
    return bytes(buffer[:cut_a]) + other[cut_b:], "spliced with another model"


def make_mutant(index: int, campaign_seed: int, seed_list: list[Seed], folder: Path) -> Mutant:
    """Mutant `index` of the campaign: reproducible from (campaign_seed, index) alone."""
    warnings.simplefilter("ignore")  # (onnx warns about the unknown keys a mutation wrote)
    rng = random.Random(f"{campaign_seed}:{index}")
    seed = rng.choice(seed_list)
    ctx = Context(rng, str(folder / CANARY), seed_list)
    ctx.files.update(seed.files)
    model = onnx.ModelProto()
    model.CopyFrom(seed.model)
    steps, applied = [], []
    byte_level = rng.random() < 0.2
    kinds = [k for k, _, _ in MUTATIONS]
    weights = [w for _, _, w in MUTATIONS]
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        for _attempt in range(6):
            kind = rng.choices(kinds, weights)[0]
            function = dict((k, f) for k, f, _ in MUTATIONS)[kind]
            try:
                described = function(model, ctx)
            except Exception as exc:  # a mutation the protobuf refused: try another
                described = None
                steps.append(f"({kind} failed: {type(exc).__name__})")
            if described:
                steps.append(f"{kind}: {described}")
                applied.append(kind)
                break
    try:
        data = model.SerializeToString()
    except Exception as exc:
        data = seed.model.SerializeToString()
        steps.append(f"(not serializable: {type(exc).__name__}; the seed as it is)")
    if byte_level:
        data, described = _byte_mutation(data, ctx)
        steps.append(f"bytes: {described}")
        applied.append("bytes")
    variant = "exact" if rng.random() < 0.15 else "fast"
    cli = rng.random() < 0.1
    return Mutant(index, seed.name, "; ".join(steps), data, ctx.files, variant, cli, tuple(applied))


# --- examining one mutant (in a forked child) ---------------------------------------------------


def _inputs(module, rng: np.random.Generator):
    """Arrays for the module's INPUTS (symbolic dims 2 or 3, unknown ones 2), None when the
    declared sizes are too large to make."""
    from runtime_support import dtype_from_name

    sizes: dict[str, int] = {}
    values = []
    for _, kind, shape in module.INPUTS:
        if kind.startswith("optional("):
            values.append(None)
            continue
        if kind.startswith("map("):  # (DictVectorizer's input) a few int or string keys
            keys = [1, 2] if kind.startswith("map(int64") else ["a", "b"]
            values.append({k: float(rng.standard_normal()) for k in keys})
            continue
        sequence = kind.startswith("sequence(")
        name = kind[len("sequence(") : -1] if sequence else kind
        dtype = (
            np.dtype(object) if name == "string" else dtype_from_name(name.replace("?", "float32"))
        )
        dims = (
            [2] * 2
            if shape is None
            else [
                d if isinstance(d, int) else sizes.setdefault(str(d), 2 + len(sizes) % 2)
                for d in shape
            ]
        )
        if any(d < 0 for d in dims) or np.prod(dims, dtype=np.float64) > MAX_INPUT_ELEMENTS:
            return None
        if dtype.kind == "f":
            array = rng.standard_normal(dims).astype(dtype)
        elif dtype.kind in "iu":
            array = rng.integers(0, 3, dims).astype(dtype)
        elif dtype.kind == "b":
            array = rng.integers(0, 2, dims).astype(bool)
        elif dtype.kind in "OUS":
            array = np.array(rng.choice(["a", "b"], dims), dtype=object)
        else:
            array = np.zeros(dims, dtype)
        values.append([array, array] if sequence else array)
    return values


class RunTimeout(BaseException):
    """A run past RUN_SECONDS (a BaseException: the module's handler lets it through)."""


def _out_of_run_time(signum, frame):
    raise RunTimeout


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _is_memory(exc: BaseException) -> bool:
    """A MemoryError in the chain that is not the allocation limit's clean refusal."""
    from runtime_support import AllocationError

    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, MemoryError) and not isinstance(exc, AllocationError):
            return True
        if "Unable to allocate" in str(exc) and "allocation limit" not in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def examine(mutant: Mutant, root: Path, stage=lambda name: None) -> dict:
    """Compile, import and run one mutant in `root`; the outcome as a dict. `stage(name)` is
    told when the run starts. The canary and the files outside out/ are checked last, whatever
    happened before."""
    model_dir = root / "model"
    model_dir.mkdir(parents=True)
    model_path = model_dir / "model.onnx"
    model_path.write_bytes(mutant.data)
    for name, content in mutant.files.items():
        if name == "link.bin":
            (model_dir / name).symlink_to("/etc/hostname")
        else:
            (model_dir / name).write_bytes(content)
    (root / "outside.bin").write_bytes(b"\x00" * 64)  # what a ../ location would read
    before = _files(root)
    os.chdir(root)
    result = compile_and_run(mutant, model_path, root / "out", stage)
    if (root / CANARY).exists():
        result.update(kind="canary", detail=f"the payload ran: {result['detail']}")
    after = _files(root)
    outside = sorted(p for p in after - before if not p.startswith("out") and p != CANARY)
    if outside:
        result.update(kind="escape", detail=f"files written outside out/: {outside[:5]}")
    result["detail"] = result["detail"][-2000:]
    return result


def compile_and_run(mutant: Mutant, model_path: Path, out_dir: Path, stage) -> dict:
    import onemodel_compile
    import runtime_support
    from onemodel_compile import cli
    from onemodel_compile.errors import CompileError

    started = time.perf_counter()
    result: dict = {"kind": None, "detail": ""}
    try:
        onemodel_compile.compile_model(model_path, out_dir / "m.py", mutant.variant)
    except CompileError as exc:
        message = str(exc)
        if _is_memory(exc):
            result.update(kind="memory", detail=message)
        elif "\n" in message or "internal error" in message or not message:
            result.update(kind="internal error", detail=message)
        else:
            result.update(kind="refused", detail=message)
    except MemoryError as exc:
        result.update(kind="memory", detail=f"MemoryError: {exc}")
    except RecursionError as exc:
        result.update(kind="internal error", detail=f"RecursionError: {exc}")
    except Exception:
        result.update(kind="internal error", detail=traceback.format_exc(limit=-6))
    result["compile_seconds"] = round(time.perf_counter() - started, 3)

    if result["kind"] is None:
        try:
            module = import_generated(out_dir / "m.py", f"fuzzed_{mutant.index}", register=False)
        except Exception as exc:
            kind = "memory" if _is_memory(exc) else "import error"
            result.update(kind=kind, detail=traceback.format_exc(limit=-4))
        else:
            values = _inputs(module, np.random.default_rng(mutant.index))
            if values is None:
                result.update(kind="not run", detail="declared inputs too large")
            else:
                stage("run")
                previous = signal.signal(signal.SIGALRM, _out_of_run_time)
                signal.alarm(RUN_SECONDS)
                try:
                    module.run(*values)
                    result["kind"] = "compiled"
                except RunTimeout:
                    result.update(kind="long run", detail=f"still running after {RUN_SECONDS} s")
                except (runtime_support.NodeError, runtime_support.InvalidInput) as exc:
                    kind = "memory" if _is_memory(exc) else "run error"
                    result.update(kind=kind, detail=str(exc)[:500])
                except runtime_support.WeightsError as exc:
                    result.update(kind="run error", detail=str(exc)[:500])
                except MemoryError as exc:
                    result.update(kind="memory", detail=str(exc)[:500])
                except Exception:
                    result.update(kind="run bug", detail=traceback.format_exc(limit=-4))
                finally:
                    signal.alarm(0)
                    signal.signal(signal.SIGALRM, previous)

    if mutant.cli and result["kind"] not in FINDINGS:
        stderr = io.StringIO()
        with redirect_stderr(stderr), redirect_stdout(io.StringIO()):
            code = cli.main(
                [str(model_path), "-o", str(out_dir / "cli.py"), "--variant", mutant.variant]
            )
        lines = stderr.getvalue().splitlines()
        lines = [line for line in lines if not CONVERTED_NOTE.search(line)]  # the note on stderr
        if code == 2 or (code != 0 and len(lines) != 1) or code not in (0, 1):
            result.update(kind="cli error", detail=f"exit {code}: {stderr.getvalue()[:1000]}")

    return result


def _child(mutant: Mutant, root: Path, write_fd: int) -> None:
    """The forked child: bounded memory, its own folder; writes its outcome and exits."""
    try:
        import faulthandler
        import resource

        import runtime_support

        faulthandler.disable()  # a crash is the parent's to report (pytest enables it)

        runtime_support.set_allocation_limit(RUN_ALLOCATION_LIMIT)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, 1 << 30))
        with open("/proc/self/statm") as stream:
            virtual = int(stream.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (virtual + MEMORY_HEADROOM, resource.RLIM_INFINITY))
        sys.setrecursionlimit(4000)
        resident = _memory("VmRSS")
        with redirect_stderr(io.StringIO()), redirect_stdout(io.StringIO()):
            result = examine(mutant, root, lambda name: os.write(write_fd, f"{name}\n".encode()))
        grown = _memory("VmHWM") - resident  # a MemoryError our code caught leaves this trace
        if grown > MEMORY_GROWTH and result["kind"] not in FINDINGS:
            result.update(kind="memory", detail=f"peak memory grew by {grown >> 20} MiB")
    except BaseException as exc:  # noqa: BLE001 - whatever happens, report it
        result = {"kind": "internal error", "detail": f"harness: {type(exc).__name__}: {exc}"}
    try:
        os.write(write_fd, json.dumps(result).encode())
    finally:
        os._exit(0)


def _memory(field: str) -> int:
    """This process's resident memory (VmRSS) or its peak (VmHWM), in bytes; 0 if unknown."""
    try:
        with open("/proc/self/status") as stream:
            for line in stream:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) << 10
    except OSError:
        pass
    return 0


@dataclasses.dataclass
class Running:
    mutant: Mutant
    pid: int
    read_fd: int
    deadline: float
    root: Path
    chunks: list


def _warm_up(folder: Path) -> None:
    """Compile and run one model in the parent, so that children inherit warm caches (black's
    grammar, the template, onnx's schemas) instead of each building them."""
    import onemodel_compile

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "warm",
        [_tensor("x", [2])],
        [_tensor("y", [2])],
    )
    path = onemodel_compile.compile_model(_finish(graph), folder / "warm" / "warm.py")
    module = import_generated(path, "fuzz_warm", register=False)
    module.run(np.ones(2, np.float32))


def run_campaign(
    count: int,
    campaign_seed: int = 0,
    jobs: int = 2,
    timeout: float = 30.0,
    budget: float | None = None,
    only: list[int] | None = None,
    findings_dir: Path | None = None,
    progress=None,
) -> dict:
    """Run mutants 0..count-1 (or `only`) of the campaign; stop early after `budget` seconds.
    Returns the figures: outcomes by kind, the findings, mutants tried, seconds."""
    import resource

    for name in ("onemodel_compile", "runtime_support"):  # imported once, before forking
        importlib.import_module(name)

    seed_list = seeds()
    base = Path(tempfile.mkdtemp(prefix="onemodel-fuzz-"))
    _warm_up(base)
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    parent_before = resource.getrusage(resource.RUSAGE_SELF)
    indices = list(only) if only is not None else list(range(count))
    started = time.monotonic()
    outcomes: Counter = Counter()
    by_mutation: dict[str, Counter] = {}
    findings: list[dict] = []
    running: list[Running] = []
    slowest = (0.0, -1)  # compile seconds, mutant
    refusals: Counter = Counter()
    tried = 0

    def finish(job: Running, result: dict) -> None:
        nonlocal slowest
        kind = result["kind"]
        outcomes[kind] += 1
        slowest = max(slowest, (result.get("compile_seconds", 0.0), job.mutant.index))
        if kind == "refused":
            refusals[refusal_class(result["detail"])] += 1
        for applied in job.mutant.kinds:
            by_mutation.setdefault(applied, Counter())[kind] += 1
        if kind in FINDINGS:
            finding = {
                "index": job.mutant.index,
                "kind": kind,
                "seed": job.mutant.seed,
                "variant": job.mutant.variant,
                "mutation": job.mutant.description,
                "detail": result["detail"],
            }
            findings.append(finding)
            if findings_dir is not None:
                findings_dir.mkdir(parents=True, exist_ok=True)
                stem = findings_dir / f"{campaign_seed}-{job.mutant.index}"
                stem.with_suffix(".onnx").write_bytes(job.mutant.data)
                stem.with_suffix(".json").write_text(json.dumps(finding, indent=1))
        if progress is not None:
            progress(job.mutant, result)
        shutil.rmtree(job.root, ignore_errors=True)

    queue = iter(indices)
    exhausted = False
    try:
        while running or not exhausted:
            out_of_time = budget is not None and time.monotonic() - started > budget
            while not exhausted and not out_of_time and len(running) < jobs:
                index = next(queue, None)
                if index is None:
                    exhausted = True
                    break
                root = base / f"m{index}"
                mutant = make_mutant(index, campaign_seed, seed_list, root)
                read_fd, write_fd = os.pipe()
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    os.close(read_fd)
                    _child(mutant, root, write_fd)
                os.close(write_fd)
                tried += 1
                running.append(Running(mutant, pid, read_fd, time.monotonic() + timeout, root, []))
            if out_of_time:
                exhausted = True
            if not running:
                break
            readable, _, _ = select.select([job.read_fd for job in running], [], [], 0.05)
            now = time.monotonic()
            for job in list(running):
                if job.read_fd in readable:
                    chunk = os.read(job.read_fd, 1 << 16)
                    if chunk:
                        job.chunks.append(chunk)
                        continue
                    # end of file: the child has written everything (or died)
                    _, status = os.waitpid(job.pid, 0)
                    os.close(job.read_fd)
                    running.remove(job)
                    text = b"".join(job.chunks).decode()
                    if text.startswith("run\n"):
                        text = text[len("run\n") :]
                    if text:
                        result = json.loads(text)
                    elif os.WIFSIGNALED(status):
                        name = signal.Signals(os.WTERMSIG(status)).name
                        result = {"kind": "crash", "detail": f"the child died of {name}"}
                    else:
                        result = {"kind": "crash", "detail": f"the child exited with {status}"}
                    finish(job, result)
                elif now > job.deadline:
                    os.kill(job.pid, signal.SIGKILL)
                    os.waitpid(job.pid, 0)
                    os.close(job.read_fd)
                    running.remove(job)
                    running_model = b"".join(job.chunks).startswith(b"run\n")
                    kind = "long run" if running_model else "hang"
                    finish(job, {"kind": kind, "detail": f"no outcome after {timeout:g} s"})
    finally:
        for job in running:
            os.kill(job.pid, signal.SIGKILL)
            os.waitpid(job.pid, 0)
        shutil.rmtree(base, ignore_errors=True)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    parent = resource.getrusage(resource.RUSAGE_SELF)
    times = ("ru_utime", "ru_stime")
    cpu = sum(getattr(children, f) - getattr(children_before, f) for f in times)
    parent_cpu = sum(getattr(parent, f) - getattr(parent_before, f) for f in times)
    return {
        "seed": campaign_seed,
        "tried": tried,
        "seconds": round(time.monotonic() - started, 1),
        "cpu_seconds": round(cpu, 1),
        "parent_cpu_seconds": round(parent_cpu, 1),
        "jobs": jobs,
        "outcomes": dict(outcomes),
        "by_mutation": {k: dict(v) for k, v in sorted(by_mutation.items())},
        "findings": findings,
        "seeds": [s.name for s in seed_list],
        "slowest_compile": slowest[0],
        "slowest_mutant": slowest[1],
        "refusals": dict(refusals.most_common()),
        "timeout": timeout,
    }


# --- report ---------------------------------------------------------------------------------

# What refusals say, by the words that name their kind (first match wins).
REFUSAL_CLASSES = (
    ("not an ONNX model", "not an ONNX model (protobuf, UTF-8, no graph)"),
    ("cannot read the model", "unreadable: external data, tensor payloads"),
    ("invalid model", "invalid: onnx's checker"),
    ("cannot expand its local functions", "local functions"),
    ("opset", "opset range or conversion"),
    ("cannot read tensor", "malformed tensor"),
    ("cannot emit", "an emitter met a malformed node"),
    ("evaluating it at compile time failed", "folding failed on the node's values"),
    ("must be known at compile time", "an input that must be constant"),
    ("not supported", "out of scope (operator, type, attribute)"),
    ("no outputs", "no outputs"),
)


def refusal_class(message: str) -> str:
    for words, name in REFUSAL_CLASSES:
        if words in message:
            return name
    return "other refusals naming the node"


def report(figures: dict) -> str:
    outcomes = figures["outcomes"]
    lines = [
        f"Campaign seed {figures['seed']}: {figures['tried']} mutants in {figures['seconds']:.0f} s "
        f"with {figures['jobs']} children at a time ({figures['cpu_seconds']:.0f} s of CPU in "
        f"the children, {figures['cpu_seconds'] / max(figures['tried'], 1):.2f} s a mutant; "
        f"{figures['parent_cpu_seconds']:.0f} s in the parent making them) "
        f"(time bound {figures['timeout']:g} s per mutant; slowest compile "
        f"{figures['slowest_compile']:.1f} s, mutant {figures['slowest_mutant']}), from "
        f"{len(figures['seeds'])} seed models "
        f"({', '.join(figures['seeds'])}).",
        "",
        "| outcome | mutants |",
        "|---|---|",
    ]
    for kind in CLEAN + FINDINGS:
        lines.append(f"| {kind} | {outcomes.get(kind, 0)} |")
    lines += ["", "Refusals by what they say:", "", "| refusal | mutants |", "|---|---|"]
    lines += [f"| {name} | {count} |" for name, count in figures["refusals"].items()]
    lines += ["", "By mutation (a mutant with several mutations counts under each):", ""]
    lines += [
        "| mutation | " + " | ".join(CLEAN) + " | findings |",
        "|---" * (len(CLEAN) + 2) + "|",
    ]
    for kind, counts in figures["by_mutation"].items():
        if kind.startswith("("):
            continue
        found = sum(counts.get(k, 0) for k in FINDINGS)
        lines.append(
            f"| {kind} | " + " | ".join(str(counts.get(k, 0)) for k in CLEAN) + f" | {found} |"
        )
    if figures["findings"]:
        lines += ["", "Findings:", ""]
        for f in figures["findings"][:50]:
            detail = " ".join(f["detail"].split())[-300:]
            lines.append(f"- #{f['index']} {f['kind']} ({f['seed']}, {f['mutation']}): {detail}")
    return "\n".join(lines)


def write_report(path: Path, text: str) -> None:
    content = path.read_text() if path.exists() else ""
    block = f"{REPORT_BEGIN}\n{text}\n{REPORT_END}"
    if REPORT_BEGIN in content and REPORT_END in content:
        head, rest = content.split(REPORT_BEGIN, 1)
        content = head + block + rest.split(REPORT_END, 1)[1]
    else:
        content = content.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(content)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.fuzz", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--count", type=int, default=1000, help="mutants to try")
    parser.add_argument("--seed", type=int, default=0, help="campaign seed")
    parser.add_argument("--jobs", type=int, default=2, help="children at a time")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per mutant")
    parser.add_argument("--budget", type=float, help="stop starting mutants after this many s")
    parser.add_argument("--only", type=int, nargs="*", help="run only these mutant numbers")
    parser.add_argument("--findings", type=Path, default=ROOT / ".cache" / "fuzz" / "findings")
    parser.add_argument("--report", type=Path, help="write the figures into this markdown file")
    parser.add_argument("--show", action="store_true", help="print each mutant's mutations")
    args = parser.parse_args(argv)

    def progress(mutant: Mutant, result: dict) -> None:
        if args.show or result["kind"] in FINDINGS:
            print(f"#{mutant.index} {result['kind']}: {mutant.seed}: {mutant.description}")
            if result["kind"] in FINDINGS:
                print("    " + result["detail"][-600:].replace("\n", "\n    "))
            sys.stdout.flush()

    figures = run_campaign(
        args.count,
        args.seed,
        args.jobs,
        args.timeout,
        args.budget,
        args.only,
        args.findings,
        progress,
    )
    text = report(figures)
    print(text)
    if args.report:
        write_report(args.report, text)
    return 1 if figures["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
