"""Small ONNX models and helpers shared by the command line, determinism, hostile-model, weights and
generated-module tests.

Every model is built with onnx.helper from operators the compiler already covers, at an opset in
13..21, with `ir_version` 10 so that onnxruntime 1.31.1 accepts it too. Initializers bigger than 16
elements end up in the weights file; smaller ones are written inline.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.harness.modules import import_generated  # noqa: F401 (the tests' helper, re-exported)

IR_VERSION = 10  # onnx 1.23.2 writes IR 14, which onnxruntime 1.31.1 rejects
FLOAT = TensorProto.FLOAT


def finish(graph: onnx.GraphProto, opset: int = 17, extra_opsets=()) -> onnx.ModelProto:
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="onemodel-tests")
    model.ir_version = IR_VERSION
    return model


def tensor(name: str, dims, elem_type: int = FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, dims)


def init(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def mlp_model(seed: int = 0, opset: int = 17) -> onnx.ModelProto:
    """x[N, 4] -> MatMul W1[4, 8] -> Add b1[8] -> Relu -> MatMul W2[8, 3] -> Softmax -> probs[N, 3],
    plus the hidden activation as a second output. W1 and W2 go to the weights file, b1 is inline.
    """
    r = rng(seed)
    w1 = r.standard_normal((4, 8)).astype(np.float32)
    b1 = r.standard_normal(8).astype(np.float32)
    w2 = r.standard_normal((8, 3)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="bias1"),
        helper.make_node("Relu", ["h1"], ["hidden"], name="act1"),
        helper.make_node("MatMul", ["hidden", "W2"], ["logits"], name="fc2"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [tensor("x", ["N", 4])],
        [tensor("probs", ["N", 3]), tensor("hidden", ["N", 8])],
        [init("W1", w1), init("b1", b1), init("W2", w2)],
    )
    return finish(graph, opset)


def mlp_reference(model: onnx.ModelProto, x: np.ndarray) -> dict[str, np.ndarray]:
    """numpy reference of mlp_model, from the model's own initializers."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    hidden = np.maximum(x @ inits["W1"] + inits["b1"], 0)
    logits = hidden @ inits["W2"]
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return {"probs": e / e.sum(axis=-1, keepdims=True), "hidden": hidden}


def conv_model(seed: int = 0) -> onnx.ModelProto:
    """A small network with several weights, several outputs and a variety of operators: Conv, Relu,
    Transpose, Reshape, Gemm, Concat, Identity, Mul, Softmax."""
    r = rng(seed)
    conv_w = r.standard_normal((3, 2, 3, 3)).astype(np.float32)  # 54 elements: weights file
    conv_b = r.standard_normal(3).astype(np.float32)  # inline
    gemm_w = r.standard_normal((27, 5)).astype(np.float32)  # weights file
    gemm_b = r.standard_normal(5).astype(np.float32)
    scale = r.standard_normal((1, 5)).astype(np.float32)
    nodes = [
        helper.make_node(
            "Conv",
            ["image", "conv.weight", "conv.bias"],
            ["conv_out"],
            name="conv1",
            kernel_shape=[3, 3],
            pads=[0, 0, 0, 0],
        ),
        helper.make_node("Relu", ["conv_out"], ["act"], name="relu1"),
        helper.make_node("Transpose", ["act"], ["act_t"], name="to_nhwc", perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["act_t", "flat_shape"], ["flat"], name="flatten"),
        helper.make_node(
            "Gemm", ["flat", "fc.weight", "fc.bias"], ["fc_out"], name="fc", alpha=0.5, beta=2.0
        ),
        helper.make_node("Mul", ["fc_out", "scale"], ["scaled"], name="scale_mul"),
        helper.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=1),
        helper.make_node("Concat", ["fc_out", "probs"], ["both"], name="concat", axis=1),
        helper.make_node("Identity", ["both"], ["features"], name="features"),
    ]
    graph = helper.make_graph(
        nodes,
        "convnet",
        [tensor("image", [1, 2, 5, 5])],
        [tensor("probs", [1, 5]), tensor("features", [1, 10])],
        [
            init("conv.weight", conv_w),
            init("conv.bias", conv_b),
            init("flat_shape", np.array([1, 27], dtype=np.int64)),
            init("fc.weight", gemm_w),
            init("fc.bias", gemm_b),
            init("scale", scale),
        ],
    )
    return finish(graph, 17)


def two_input_model() -> onnx.ModelProto:
    """a[N, 3] and b[N, 3] -> sum = a + b, prod = relu(sum) * c with c[3] inline. No weights file."""
    nodes = [
        helper.make_node("Add", ["a", "b"], ["sum"], name="add"),
        helper.make_node("Relu", ["sum"], ["pos"], name="relu"),
        helper.make_node("Mul", ["pos", "c"], ["prod"], name="mul"),
    ]
    graph = helper.make_graph(
        nodes,
        "two_inputs",
        [tensor("a", ["N", 3]), tensor("b", ["N", 3])],
        [tensor("sum", ["N", 3]), tensor("prod", ["N", 3])],
        [init("c", np.array([1.0, -2.0, 0.5], dtype=np.float32))],
    )
    return finish(graph, 17)


def relu_model(opset: int = 17, node_name: str = "relu") -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name=node_name)],
        "relu",
        [tensor("x", [2, 3])],
        [tensor("y", [2, 3])],
    )
    return finish(graph, opset)


def single_op_model(
    op_type: str, domain: str = "", node_name: str = "node", extra_opsets=(), opset: int = 17
) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node(op_type, ["x"], ["y"], name=node_name, domain=domain)],
        "single",
        [tensor("x", [2, 3])],
        [tensor("y", [2, 3])],
    )
    return finish(graph, opset, extra_opsets)


def save(model: onnx.ModelProto, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.SerializeToString())
    return path


# --- loading and running generated modules --------------------------------------------------


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime

    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def ort_session(model: onnx.ModelProto):
    import onnxruntime

    return onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )


# --- reading generated source ---------------------------------------------------------------


def literal_spans(source: str) -> list[tuple[int, int]]:
    """Character ranges of string literals and comments in `source` (absolute offsets)."""
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    kinds = {tokenize.STRING, tokenize.COMMENT}
    for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END"):
        if hasattr(tokenize, name):
            kinds.add(getattr(tokenize, name))
    spans = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in kinds:
            (srow, scol), (erow, ecol) = token.start, token.end
            spans.append((starts[srow - 1] + scol, starts[erow - 1] + ecol))
    return spans


def code_tokens(source: str) -> list[tokenize.TokenInfo]:
    """Tokens of `source` that are code: neither string literals nor comments."""
    skip = {
        tokenize.STRING,
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
    return [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type not in skip]


def function_def(tree: ast.Module, name: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise AssertionError(f"no top-level function {name!r} in the generated module")


def header_comments(source: str) -> list[str]:
    """The comment lines at the top of the module, before any code or docstring."""
    lines = []
    for line in source.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return lines


def module_docstring(source: str) -> str | None:
    """The module docstring of `source`, without running it."""
    return ast.get_docstring(ast.parse(source), clean=False)
