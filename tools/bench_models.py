"""The models `tools/bench.py` measures besides the nine light_* models of the onnx wheel: built here
with onnx.helper from seeded random weights, no network, in seconds.

    .venv/bin/python -m tools.bench_models [--out .cache/bench/models] [--tiny]

Each builder takes its sizes as arguments (the benchmark uses the defaults, tests/test_bench_models.py
tiny ones) and returns a `Built`: the ModelProto and a seeded feed for each graph input. Only standard
operators at opset 17 (ir_version 10, which onnxruntime 1.31.1 reads); shapes are static, as exported
models for one serving configuration have them, except in the models at dynamic axes (below).

- bert: an encoder in the style of BERT: token and position embeddings (Gather), LayerNormalization,
  self-attention with a padding mask from `attention_mask` (MatMul, Reshape, Transpose, Softmax),
  a feed-forward block with GELU written as 0.5 x (1 + erf(x / sqrt 2)), post-norm residuals.
- gpt_step: one decoding step of a GPT-style decoder: one new token attends to itself and to
  `past_length` cached keys and values per layer (inputs `past_key_i`, `past_value_i`), pre-norm,
  outputs the logits and the grown caches. One query row sees every key, so causality needs no mask.
- mobilenet: a MobileNetV3-style net: 3x3 stem, inverted residual blocks (1x1 expansion, depthwise
  3x3 Conv with group = channels, 1x1 projection), BatchNormalization after each Conv, HardSwish,
  GlobalAveragePool and a Gemm classifier.
- unet: a U-Net-style net: two 3x3 Conv + Relu per level, MaxPool down, ConvTranspose (stride 2) up
  on one level and Resize (nearest, scale 2) + Conv on the other, Concat of the skip connections.
- resnet18, mobilenetv2, efficientnet: torchvision's ResNet-18, MobileNetV2 and EfficientNet-B0
  (its MBConv blocks with squeeze-and-excitation) as torch.onnx exports them, BatchNormalization
  folded into the Convs (ReLU6 as Clip, SiLU as Sigmoid and Mul), at the sizes edge users run:
  ResNet-18 at batch 2 and 64x64 (also at a quarter of its widths: onnxruntime's run under 1 ms,
  where per-node costs dominate) and at batch 1 and 96x96, the others at batch 1 and 96x96.
- lstm: one ONNX LSTM (forward) over a [seq, batch, input] sequence and a Gemm on the last state.
- mlp: Gemm (transB=1, as PyTorch exports Linear) + Relu layers and a Softmax.
- gru_tagger, lstm_tagger: Embedding, a batch-first GRU (LSTM) and a Linear with log_softmax as
  torch.onnx exports them, the zero initial state computed from the run-time batch size.
- keyword_spotter: an audio front end (STFT, power, MelWeightMatrix, log) and a small classifier.
- tiny_mlp_b1, lenet_b1, sklearn_mlp_b64: models onnxruntime runs in microseconds (a 16-32-32-4
  MLP, a LeNet-style conv net, scikit-learn's MLPClassifier as skl2onnx converts it, with the
  ai.onnx.ml ArrayFeatureExtractor of its labels), where per-node costs are all there is.

The models below the `lstm` line keep their batch (and sequence, samples) axes dynamic, as exporters
mark them, with the run-time shape arithmetic exporters write.

Beside them, models exported by torch.onnx (TorchScript exporter, opsets 14 and 17, dynamic batch
and sequence axes) and committed under tools/bench_data/ with their large weights left out (filled
in here from a seed; `exported`): BERT and MiniLM encoders (hidden 384, 6 heads) at 4 x 14 and
1 x 128 tokens, a GPT-2 decoder (causal mask, tanh Gelu) and a ViT at 224 x 224. Re-exporting them
needs torch (tools/bench_data/export_models.py); reading them does not.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 10  # onnx 1.23.2 writes IR 14, which onnxruntime 1.31.1 rejects


@dataclass
class Built:
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]


class _Graph:
    """A graph under construction: nodes get unique names, initializers seeded random values."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._count: dict[str, int] = {}
        self.domains: dict[str, int] = {}  # opsets of other domains the graph uses (ai.onnx.ml)

    def _unique(self, stem: str) -> str:
        n = self._count.get(stem, 0)
        self._count[stem] = n + 1
        return stem if n == 0 else f"{stem}_{n}"

    def input(self, name: str, shape, elem_type: int = TensorProto.FLOAT) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, list(shape)))
        return name

    def output(self, name: str, shape, elem_type: int = TensorProto.FLOAT) -> None:
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, list(shape)))

    def const(self, name: str, value) -> str:
        name = self._unique(name)
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, name: str, shape, scale: float | None = None) -> str:
        """A float32 weight drawn from N(0, scale^2), scale 1/sqrt(fan-in) by default."""
        if scale is None:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
            scale = 1.0 / math.sqrt(max(fan_in, 1))
        return self.const(name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def ints(self, name: str, values) -> str:
        return self.const(name, np.asarray(values, dtype=np.int64))

    def scalar(self, name: str, value: float) -> str:
        return self.const(name, np.asarray(value, dtype=np.float32))

    def node(self, op_type: str, inputs, name: str, outputs: int = 1, domain: str = "", **attrs):
        name = self._unique(name)
        names = [name] if outputs == 1 else [f"{name}:{i}" for i in range(outputs)]
        self.nodes.append(
            helper.make_node(op_type, list(inputs), names, name=name, domain=domain, **attrs)
        )
        return names[0] if outputs == 1 else names

    def finish(self) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, self.name, self.inputs, self.outputs, self.initializers
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)]
            + [helper.make_opsetid(domain, v) for domain, v in sorted(self.domains.items())],
            producer_name="onemodel-bench",
        )
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        return model


# --- transformer pieces ------------------------------------------------------------------------


def _linear(g: _Graph, x: str, n_in: int, n_out: int, name: str) -> str:
    """x @ W + b with W [n_in, n_out], as transformer exports write it (MatMul then Add)."""
    y = g.node("MatMul", [x, g.weight(f"{name}.weight", (n_in, n_out))], f"{name}/MatMul")
    bias = g.const(f"{name}.bias", (g.rng.standard_normal(n_out) * 0.02).astype(np.float32))
    return g.node("Add", [y, bias], f"{name}/Add")


def _layer_norm(g: _Graph, x: str, hidden: int, name: str) -> str:
    scale = g.const(f"{name}.weight", (1 + 0.1 * g.rng.standard_normal(hidden)).astype(np.float32))
    bias = g.const(f"{name}.bias", (0.1 * g.rng.standard_normal(hidden)).astype(np.float32))
    return g.node("LayerNormalization", [x, scale, bias], name, axis=-1, epsilon=1e-5)


def _gelu(g: _Graph, x: str, name: str) -> str:
    """0.5 * x * (1 + erf(x / sqrt(2))), the exact GELU as torch.onnx exports it before opset 20."""
    scaled = g.node("Div", [x, g.scalar("sqrt2", math.sqrt(2.0))], f"{name}/Div")
    erf = g.node("Erf", [scaled], f"{name}/Erf")
    shifted = g.node("Add", [erf, g.scalar("one", 1.0)], f"{name}/Add")
    product = g.node("Mul", [x, shifted], f"{name}/Mul")
    return g.node("Mul", [product, g.scalar("half", 0.5)], f"{name}/Mul_1")


def _split_heads(g: _Graph, x: str, batch: int, seq: int, heads: int, head_dim: int, name: str):
    """[B, S, H*D] -> [B, H, S, D]"""
    shaped = g.node(
        "Reshape", [x, g.ints("heads_shape", [batch, seq, heads, head_dim])], f"{name}/Reshape"
    )
    return g.node("Transpose", [shaped], f"{name}/Transpose", perm=[0, 2, 1, 3])


def _merge_heads(g: _Graph, x: str, batch: int, seq: int, hidden: int, name: str) -> str:
    """[B, H, S, D] -> [B, S, H*D]"""
    moved = g.node("Transpose", [x], f"{name}/Transpose", perm=[0, 2, 1, 3])
    return g.node(
        "Reshape", [moved, g.ints("merged_shape", [batch, seq, hidden])], f"{name}/Reshape"
    )


def _attention_core(g: _Graph, q: str, k: str, v: str, head_dim: int, mask, name: str) -> str:
    """softmax(q k^T / sqrt(d) + mask) v on [B, H, S, D] tensors; `mask` may be None."""
    k_t = g.node("Transpose", [k], f"{name}/Transpose_k", perm=[0, 1, 3, 2])
    scores = g.node("MatMul", [q, k_t], f"{name}/MatMul_qk")
    scores = g.node("Div", [scores, g.scalar("attn_scale", math.sqrt(head_dim))], f"{name}/Div")
    if mask is not None:
        scores = g.node("Add", [scores, mask], f"{name}/Add_mask")
    probs = g.node("Softmax", [scores], f"{name}/Softmax", axis=-1)
    return g.node("MatMul", [probs, v], f"{name}/MatMul_v")


def bert(
    batch: int = 1,
    seq: int = 128,
    layers: int = 4,
    hidden: int = 256,
    heads: int = 4,
    ffn: int = 1024,
    vocab: int = 1000,
    seed: int = 0,
) -> Built:
    g = _Graph("bert", seed)
    head_dim = hidden // heads
    ids = g.input("input_ids", [batch, seq], TensorProto.INT64)
    mask_in = g.input("attention_mask", [batch, seq], TensorProto.INT64)
    g.output("last_hidden_state", [batch, seq, hidden])

    words = g.node(
        "Gather", [g.weight("embeddings.word", (vocab, hidden), 0.02), ids], "embeddings/Gather"
    )
    positions = g.weight("embeddings.position", (seq, hidden), 0.02)
    x = g.node("Add", [words, positions], "embeddings/Add")
    x = _layer_norm(g, x, hidden, "embeddings/LayerNorm")

    # (1 - mask) * -10000 as [B, 1, 1, S], added to every head's scores.
    mask = g.node("Cast", [mask_in], "mask/Cast", to=TensorProto.FLOAT)
    mask = g.node("Sub", [g.scalar("one", 1.0), mask], "mask/Sub")
    mask = g.node("Mul", [mask, g.scalar("mask_value", -10000.0)], "mask/Mul")
    mask = g.node("Unsqueeze", [mask, g.ints("mask_axes", [1, 2])], "mask/Unsqueeze")

    for i in range(layers):
        p = f"layer{i}"
        q = _split_heads(
            g, _linear(g, x, hidden, hidden, f"{p}/query"), batch, seq, heads, head_dim, f"{p}/q"
        )
        k = _split_heads(
            g, _linear(g, x, hidden, hidden, f"{p}/key"), batch, seq, heads, head_dim, f"{p}/k"
        )
        v = _split_heads(
            g, _linear(g, x, hidden, hidden, f"{p}/value"), batch, seq, heads, head_dim, f"{p}/v"
        )
        context = _attention_core(g, q, k, v, head_dim, mask, f"{p}/attention")
        context = _merge_heads(g, context, batch, seq, hidden, f"{p}/context")
        attended = _linear(g, context, hidden, hidden, f"{p}/attention_output")
        x = _layer_norm(
            g, g.node("Add", [attended, x], f"{p}/residual1"), hidden, f"{p}/LayerNorm1"
        )
        inner = _gelu(g, _linear(g, x, hidden, ffn, f"{p}/intermediate"), f"{p}/gelu")
        out = _linear(g, inner, ffn, hidden, f"{p}/output")
        x = _layer_norm(g, g.node("Add", [out, x], f"{p}/residual2"), hidden, f"{p}/LayerNorm2")
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))

    rng = np.random.default_rng(seed + 1)
    attention_mask = np.ones((batch, seq), dtype=np.int64)
    for b in range(1, batch):  # padded rows of different lengths past the first
        attention_mask[b, seq - (b * seq) // (2 * batch) :] = 0
    feeds = {
        "input_ids": rng.integers(0, vocab, (batch, seq), dtype=np.int64),
        "attention_mask": attention_mask,
    }
    return Built(g.finish(), feeds)


def gpt_step(
    past_length: int = 128,
    layers: int = 4,
    hidden: int = 256,
    heads: int = 4,
    vocab: int = 1000,
    seed: int = 0,
) -> Built:
    g = _Graph("gpt_step", seed)
    head_dim = hidden // heads
    total = past_length + 1
    ids = g.input("input_ids", [1, 1], TensorProto.INT64)
    pasts = []
    for i in range(layers):
        pasts.append(
            (
                g.input(f"past_key_{i}", [1, heads, past_length, head_dim]),
                g.input(f"past_value_{i}", [1, heads, past_length, head_dim]),
            )
        )
    g.output("logits", [1, 1, vocab])
    for i in range(layers):
        g.output(f"present_key_{i}", [1, heads, total, head_dim])
        g.output(f"present_value_{i}", [1, heads, total, head_dim])

    word_table = g.weight("wte", (vocab, hidden), 0.02)
    words = g.node("Gather", [word_table, ids], "wte/Gather")
    # The new token's position is past_length: one row of the position table.
    position = g.const("wpe.row", (g.rng.standard_normal((1, 1, hidden)) * 0.02).astype(np.float32))
    x = g.node("Add", [words, position], "embeddings/Add")

    for i, (past_key, past_value) in enumerate(pasts):
        p = f"h{i}"
        normed = _layer_norm(g, x, hidden, f"{p}/ln_1")
        qkv = _linear(g, normed, hidden, 3 * hidden, f"{p}/attn/c_attn")
        q, k, v = g.node(
            "Split", [qkv, g.ints("qkv_split", [hidden] * 3)], f"{p}/attn/Split", outputs=3, axis=-1
        )
        q = _split_heads(g, q, 1, 1, heads, head_dim, f"{p}/attn/q")
        k = _split_heads(g, k, 1, 1, heads, head_dim, f"{p}/attn/k")
        v = _split_heads(g, v, 1, 1, heads, head_dim, f"{p}/attn/v")
        key = g.node("Concat", [past_key, k], f"{p}/attn/Concat_k", axis=2)
        value = g.node("Concat", [past_value, v], f"{p}/attn/Concat_v", axis=2)
        g.nodes.append(
            helper.make_node("Identity", [key], [f"present_key_{i}"], name=f"{p}/present_key")
        )
        g.nodes.append(
            helper.make_node("Identity", [value], [f"present_value_{i}"], name=f"{p}/present_value")
        )
        context = _attention_core(g, q, key, value, head_dim, None, f"{p}/attn")
        context = _merge_heads(g, context, 1, 1, hidden, f"{p}/attn/context")
        x = g.node(
            "Add", [x, _linear(g, context, hidden, hidden, f"{p}/attn/c_proj")], f"{p}/residual1"
        )
        normed = _layer_norm(g, x, hidden, f"{p}/ln_2")
        inner = _gelu(g, _linear(g, normed, hidden, 4 * hidden, f"{p}/mlp/c_fc"), f"{p}/mlp/gelu")
        x = g.node(
            "Add", [x, _linear(g, inner, 4 * hidden, hidden, f"{p}/mlp/c_proj")], f"{p}/residual2"
        )
    x = _layer_norm(g, x, hidden, "ln_f")
    # The LM head shares the embedding table, transposed (Gemm-free: MatMul with a Transpose).
    head = g.node("Transpose", [word_table], "lm_head/Transpose", perm=[1, 0])
    g.nodes.append(helper.make_node("MatMul", [x, head], ["logits"], name="lm_head/MatMul"))

    rng = np.random.default_rng(seed + 1)
    feeds = {"input_ids": rng.integers(0, vocab, (1, 1), dtype=np.int64)}
    for i in range(layers):
        shape = (1, heads, past_length, head_dim)
        feeds[f"past_key_{i}"] = rng.standard_normal(shape).astype(np.float32)
        feeds[f"past_value_{i}"] = rng.standard_normal(shape).astype(np.float32)
    return Built(g.finish(), feeds)


# --- models exported by torch.onnx (tools/bench_data/) ------------------------------------------

BENCH_DATA = Path(__file__).resolve().parent / "bench_data"


def exported(stem: str, batch: int, seq: int, seed: int = 0) -> Built:
    """`tools/bench_data/<stem>.onnx` (written by torch.onnx, see export_models.py there) with its
    large weights filled in from `seed` (normal, each tensor's recorded standard deviation), and
    feeds for `batch` x `seq` tokens (a ViT: `batch` images at the model's size; `seq` unused)."""
    model = onnx.load(str(BENCH_DATA / f"{stem}.onnx"))
    rng = np.random.default_rng(seed)
    for tensor in model.graph.initializer:
        if tensor.doc_string.startswith("seeded std="):
            std = float(tensor.doc_string.split("=", 1)[1])
            value = (rng.standard_normal(tuple(tensor.dims)) * std).astype(np.float32)
            tensor.CopyFrom(numpy_helper.from_array(value, tensor.name))
    onnx.checker.check_model(model, full_check=True)
    feeds = {}
    for value in model.graph.input:
        name = value.name
        if name == "pixel_values":
            size = value.type.tensor_type.shape.dim[2].dim_value
            feeds[name] = rng.standard_normal((batch, 3, size, size)).astype(np.float32)
        elif name == "input_ids":
            feeds[name] = rng.integers(0, 1000, (batch, seq), dtype=np.int64)
        elif name == "attention_mask":  # rows past the first padded to different lengths
            mask = np.ones((batch, seq), dtype=np.int64)
            for b in range(1, batch):
                mask[b, seq - (b * seq) // (2 * batch) :] = 0
            feeds[name] = mask
        elif name == "token_type_ids":
            feeds[name] = np.zeros((batch, seq), dtype=np.int64)
        else:
            raise ValueError(f"{stem}: no feed for input {name!r}")
    return Built(model, feeds)


# --- convolutional nets --------------------------------------------------------------------------


def _conv(
    g: _Graph,
    x: str,
    c_in: int,
    c_out: int,
    k: int,
    name: str,
    stride: int = 1,
    group: int = 1,
    bias: bool = True,
) -> str:
    inputs = [x, g.weight(f"{name}.weight", (c_out, c_in // group, k, k))]
    if bias:
        inputs.append(
            g.const(f"{name}.bias", (0.05 * g.rng.standard_normal(c_out)).astype(np.float32))
        )
    pad = k // 2
    return g.node(
        "Conv",
        inputs,
        name,
        kernel_shape=[k, k],
        strides=[stride, stride],
        pads=[pad] * 4,
        group=group,
    )


def _batch_norm(g: _Graph, x: str, channels: int, name: str) -> str:
    r = g.rng
    scale = g.const(f"{name}.weight", (1 + 0.1 * r.standard_normal(channels)).astype(np.float32))
    bias = g.const(f"{name}.bias", (0.1 * r.standard_normal(channels)).astype(np.float32))
    mean = g.const(f"{name}.running_mean", (0.1 * r.standard_normal(channels)).astype(np.float32))
    var = g.const(f"{name}.running_var", r.uniform(0.5, 1.5, channels).astype(np.float32))
    return g.node("BatchNormalization", [x, scale, bias, mean, var], name, epsilon=1e-5)


def _conv_bn_act(g: _Graph, x, c_in, c_out, k, name, stride=1, group=1, act="HardSwish") -> str:
    y = _batch_norm(
        g,
        _conv(g, x, c_in, c_out, k, f"{name}/conv", stride, group, bias=False),
        c_out,
        f"{name}/bn",
    )
    return g.node(act, [y], f"{name}/{act}") if act else y


# (expansion channels, output channels, stride) of each inverted residual block after the stem.
MOBILENET_BLOCKS = (
    (16, 16, 2),
    (72, 24, 2),
    (88, 24, 1),
    (96, 40, 2),
    (240, 40, 1),
    (240, 40, 1),
    (120, 48, 1),
    (144, 48, 1),
    (288, 96, 2),
    (576, 96, 1),
    (576, 96, 1),
)


def mobilenet(
    batch: int = 1, size: int = 224, classes: int = 1000, blocks=MOBILENET_BLOCKS, seed: int = 0
) -> Built:
    g = _Graph("mobilenet", seed)
    x = g.input("image", [batch, 3, size, size])
    x = _conv_bn_act(g, x, 3, 16, 3, "stem", stride=2)
    channels = 16
    for i, (expand, out, stride) in enumerate(blocks):
        p = f"block{i}"
        y = _conv_bn_act(g, x, channels, expand, 1, f"{p}/expand")
        y = _conv_bn_act(g, y, expand, expand, 3, f"{p}/depthwise", stride=stride, group=expand)
        y = _conv_bn_act(g, y, expand, out, 1, f"{p}/project", act=None)
        x = g.node("Add", [x, y], f"{p}/residual") if stride == 1 and out == channels else y
        channels = out
    x = _conv_bn_act(g, x, channels, 6 * channels, 1, "head")
    x = g.node("GlobalAveragePool", [x], "pool")
    x = g.node("Flatten", [x], "flatten", axis=1)
    weight = g.weight("classifier.weight", (classes, 6 * channels))
    bias = g.const("classifier.bias", np.zeros(classes, dtype=np.float32))
    g.nodes.append(
        helper.make_node("Gemm", [x, weight, bias], ["logits"], name="classifier", transB=1)
    )
    g.output("logits", [batch, classes])
    rng = np.random.default_rng(seed + 1)
    return Built(
        g.finish(), {"image": rng.standard_normal((batch, 3, size, size)).astype(np.float32)}
    )


def unet(batch: int = 1, size: int = 128, base: int = 16, classes: int = 2, seed: int = 0) -> Built:
    g = _Graph("unet", seed)
    x = g.input("image", [batch, 3, size, size])

    def double_conv(x, c_in, c_out, name):
        x = g.node("Relu", [_conv(g, x, c_in, c_out, 3, f"{name}/conv1")], f"{name}/relu1")
        return g.node("Relu", [_conv(g, x, c_out, c_out, 3, f"{name}/conv2")], f"{name}/relu2")

    def pool(x, name):
        return g.node("MaxPool", [x], name, kernel_shape=[2, 2], strides=[2, 2])

    c1, c2, c3 = base, 2 * base, 4 * base
    skip1 = double_conv(x, 3, c1, "down1")
    skip2 = double_conv(pool(skip1, "pool1"), c1, c2, "down2")
    bottom = double_conv(pool(skip2, "pool2"), c2, c3, "bottom")
    # Up by ConvTranspose (kernel 2, stride 2), weight layout [C_in, C_out, kH, kW].
    up2 = g.node(
        "ConvTranspose",
        [
            bottom,
            g.weight("up2.weight", (c3, c2, 2, 2)),
            g.const("up2.bias", np.zeros(c2, np.float32)),
        ],
        "up2",
        kernel_shape=[2, 2],
        strides=[2, 2],
    )
    x = double_conv(g.node("Concat", [up2, skip2], "concat2", axis=1), 2 * c2, c2, "dec2")
    # Up by Resize (nearest, scale 2) and a 3x3 Conv.
    scales = g.const("up1.scales", np.array([1, 1, 2, 2], dtype=np.float32))
    resized = g.node("Resize", [x, "", scales], "up1/Resize", mode="nearest")
    up1 = _conv(g, resized, c2, c1, 3, "up1/conv")
    x = double_conv(g.node("Concat", [up1, skip1], "concat1", axis=1), 2 * c1, c1, "dec1")
    logits = _conv(g, x, c1, classes, 1, "head")
    g.nodes.append(helper.make_node("Identity", [logits], ["mask_logits"], name="output"))
    g.output("mask_logits", [batch, classes, size, size])
    rng = np.random.default_rng(seed + 1)
    return Built(
        g.finish(), {"image": rng.standard_normal((batch, 3, size, size)).astype(np.float32)}
    )


def _classifier(g: _Graph, x: str, channels: int, classes: int, batch: int) -> None:
    """GlobalAveragePool, Flatten and a Gemm (transB=1) to the `logits` output."""
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x], "pool")], "flatten", axis=1)
    weight = g.weight("classifier.weight", (classes, channels))
    bias = g.const("classifier.bias", (0.05 * g.rng.standard_normal(classes)).astype(np.float32))
    g.nodes.append(
        helper.make_node("Gemm", [x, weight, bias], ["logits"], name="classifier", transB=1)
    )
    g.output("logits", [batch, classes])


def _image_model(g: _Graph, batch: int, size: int) -> Built:
    rng = np.random.default_rng(g.rng.integers(1 << 31))
    image = rng.standard_normal((batch, 3, size, size)).astype(np.float32)
    return Built(g.finish(), {"image": image})


def resnet18(
    batch: int = 2, size: int = 64, width: int = 64, classes: int = 1000, seed: int = 0
) -> Built:
    """torchvision's ResNet-18 as torch.onnx exports it: each BatchNormalization folded into its
    Conv's weights and bias, Relu, a 3x3 MaxPool after the 7x7 stem, BasicBlocks with a strided
    1x1 downsample Conv on the shortcut, Add then Relu."""
    g = _Graph("resnet18", seed)
    x = g.input("image", [batch, 3, size, size])
    x = g.node("Relu", [_conv(g, x, 3, width, 7, "conv1", stride=2)], "relu")
    x = g.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    channels = width
    for stage, multiple in enumerate((1, 2, 4, 8)):
        for block in range(2):
            p = f"layer{stage + 1}.{block}"
            stride = 2 if stage and not block else 1
            out = width * multiple
            y = g.node("Relu", [_conv(g, x, channels, out, 3, f"{p}.conv1", stride)], f"{p}/relu")
            y = _conv(g, y, out, out, 3, f"{p}.conv2")
            if stride != 1 or out != channels:
                x = _conv(g, x, channels, out, 1, f"{p}.downsample", stride)
            x = g.node("Relu", [g.node("Add", [y, x], f"{p}/add")], f"{p}/relu_1")
            channels = out
    _classifier(g, x, channels, classes, batch)
    return _image_model(g, batch, size)


def _clip6(g: _Graph, x: str, name: str) -> str:
    """ReLU6 as torch.onnx writes it at opset 11 and later: Clip with min and max inputs."""
    return g.node("Clip", [x, g.scalar("zero", 0.0), g.scalar("six", 6.0)], name)


# (expansion factor, output channels, repeats, first stride) of MobileNetV2's stages.
MOBILENETV2_STAGES = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


def mobilenetv2(
    batch: int = 1,
    size: int = 96,
    classes: int = 1000,
    stages=MOBILENETV2_STAGES,
    head: int = 1280,
    seed: int = 0,
) -> Built:
    """torchvision's MobileNetV2 as torch.onnx exports it: BatchNormalization folded into the
    Convs, ReLU6 as Clip, inverted residuals (1x1 expansion, depthwise 3x3, 1x1 projection; Add
    where the shape allows)."""
    g = _Graph("mobilenetv2", seed)
    x = g.input("image", [batch, 3, size, size])
    channels = stages[0][1] * 2
    x = _clip6(g, _conv(g, x, 3, channels, 3, "stem", stride=2), "stem/clip")
    for s, (factor, out, repeats, first_stride) in enumerate(stages):
        for r in range(repeats):
            p, stride = f"stage{s}.{r}", first_stride if r == 0 else 1
            hidden = channels * factor
            y = x
            if factor != 1:
                y = _clip6(g, _conv(g, y, channels, hidden, 1, f"{p}.expand"), f"{p}/expand/clip")
            y = _conv(g, y, hidden, hidden, 3, f"{p}.depthwise", stride, group=hidden)
            y = _conv(g, _clip6(g, y, f"{p}/depthwise/clip"), hidden, out, 1, f"{p}.project")
            x = g.node("Add", [x, y], f"{p}/add") if stride == 1 and out == channels else y
            channels = out
    x = _clip6(g, _conv(g, x, channels, head, 1, "head"), "head/clip")
    _classifier(g, x, head, classes, batch)
    return _image_model(g, batch, size)


def _silu(g: _Graph, x: str, name: str) -> str:
    """SiLU as torch.onnx writes it: x * Sigmoid(x)."""
    return g.node("Mul", [x, g.node("Sigmoid", [x], f"{name}/sigmoid")], f"{name}/mul")


# (expansion factor, kernel, first stride, output channels, repeats) of EfficientNet-B0's stages.
EFFICIENTNET_STAGES = (
    (1, 3, 1, 16, 1),
    (6, 3, 2, 24, 2),
    (6, 5, 2, 40, 2),
    (6, 3, 2, 80, 3),
    (6, 5, 1, 112, 3),
    (6, 5, 2, 192, 4),
    (6, 3, 1, 320, 1),
)


def efficientnet(
    batch: int = 1,
    size: int = 96,
    classes: int = 1000,
    stages=EFFICIENTNET_STAGES,
    head: int = 1280,
    seed: int = 0,
) -> Built:
    """EfficientNet-B0's MBConv blocks as torch.onnx exports them: BatchNormalization folded into
    the Convs, SiLU as Sigmoid and Mul, depthwise 3x3 and 5x5 Convs, squeeze-and-excitation
    (GlobalAveragePool, 1x1 Conv, SiLU, 1x1 Conv, Sigmoid, Mul), residual Add."""
    g = _Graph("efficientnet", seed)
    x = g.input("image", [batch, 3, size, size])
    channels = 32
    x = _silu(g, _conv(g, x, 3, channels, 3, "stem", stride=2), "stem/silu")
    for s, (factor, k, first_stride, out, repeats) in enumerate(stages):
        for r in range(repeats):
            p, stride = f"stage{s}.{r}", first_stride if r == 0 else 1
            hidden = channels * factor
            y = x
            if factor != 1:
                y = _silu(g, _conv(g, y, channels, hidden, 1, f"{p}.expand"), f"{p}/expand/silu")
            y = _conv(g, y, hidden, hidden, k, f"{p}.depthwise", stride, group=hidden)
            y = _silu(g, y, f"{p}/depthwise/silu")
            squeezed = max(1, channels // 4)
            se = g.node("GlobalAveragePool", [y], f"{p}/se/pool")
            se = _silu(g, _conv(g, se, hidden, squeezed, 1, f"{p}.se.reduce"), f"{p}/se/silu")
            se = g.node("Sigmoid", [_conv(g, se, squeezed, hidden, 1, f"{p}.se.expand")], f"{p}/se")
            y = _conv(g, g.node("Mul", [y, se], f"{p}/se/mul"), hidden, out, 1, f"{p}.project")
            x = g.node("Add", [x, y], f"{p}/add") if stride == 1 and out == channels else y
            channels = out
    x = _silu(g, _conv(g, x, channels, head, 1, "head"), "head/silu")
    _classifier(g, x, head, classes, batch)
    return _image_model(g, batch, size)


# --- recurrent and dense -------------------------------------------------------------------------


def lstm(
    seq: int = 64,
    batch: int = 8,
    inputs: int = 256,
    hidden: int = 256,
    classes: int = 10,
    seed: int = 0,
) -> Built:
    g = _Graph("lstm", seed)
    x = g.input("sequence", [seq, batch, inputs])
    scale = 1.0 / math.sqrt(hidden)
    W = g.weight("lstm.W", (1, 4 * hidden, inputs), scale)
    R = g.weight("lstm.R", (1, 4 * hidden, hidden), scale)
    B = g.weight("lstm.B", (1, 8 * hidden), scale)
    Y, Y_h = g.node("LSTM", [x, W, R, B], "lstm", outputs=2, hidden_size=hidden)
    g.nodes.append(helper.make_node("Identity", [Y], ["states"], name="states"))
    last = g.node("Reshape", [Y_h, g.ints("last_shape", [batch, hidden])], "last/Reshape")
    weight = g.weight("classifier.weight", (classes, hidden))
    bias = g.const("classifier.bias", np.zeros(classes, dtype=np.float32))
    g.nodes.append(
        helper.make_node("Gemm", [last, weight, bias], ["logits"], name="classifier", transB=1)
    )
    g.output("states", [seq, 1, batch, hidden])
    g.output("logits", [batch, classes])
    rng = np.random.default_rng(seed + 1)
    return Built(
        g.finish(), {"sequence": rng.standard_normal((seq, batch, inputs)).astype(np.float32)}
    )


def mlp(batch: int = 1, sizes=(784, 512, 512, 256, 10), seed: int = 0) -> Built:
    g = _Graph("mlp", seed)
    x = g.input("features", [batch, sizes[0]])
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        weight = g.weight(f"fc{i}.weight", (n_out, n_in))
        bias = g.const(f"fc{i}.bias", (0.05 * g.rng.standard_normal(n_out)).astype(np.float32))
        x = g.node("Gemm", [x, weight, bias], f"fc{i}", transB=1)
        if i < len(sizes) - 2:
            x = g.node("Relu", [x], f"relu{i}")
    g.nodes.append(helper.make_node("Softmax", [x], ["probabilities"], name="softmax", axis=-1))
    g.output("probabilities", [batch, sizes[-1]])
    rng = np.random.default_rng(seed + 1)
    return Built(
        g.finish(), {"features": rng.standard_normal((batch, sizes[0])).astype(np.float32)}
    )


# --- what users run that onnxruntime finishes in well under a millisecond, at dynamic axes -------
# Exporters mark the batch (and sequence) axes dynamic and compute run-time shapes from them
# (Shape -> Gather -> Unsqueeze -> Concat), so these models do too: their per-node costs are
# what the held-out models pay.


def _batch_shape(g: _Graph, x: str, *rest: int, name: str) -> str:
    """[x.shape[0], *rest] as torch.onnx computes it: Shape, Gather, Unsqueeze, Concat."""
    batch = g.node("Gather", [g.node("Shape", [x], f"{name}/Shape"), g.ints("zero", 0)], name)
    batch = g.node("Unsqueeze", [batch, g.ints("axes0", [0])], f"{name}/Unsqueeze")
    return g.node("Concat", [batch, g.ints(f"{name}.rest", list(rest))], f"{name}/Concat", axis=0)


def tagger(
    cell: str = "GRU",
    batch: int = 4,
    seq: int = 32,
    vocab: int = 2000,
    embed: int = 64,
    hidden: int = 128,
    tags: int = 17,
    seed: int = 0,
) -> Built:
    """A sequence tagger as torch.onnx exports nn.Embedding, a batch-first nn.GRU (or LSTM) and a
    Linear with log_softmax: Gather, Transpose to time-major, the recurrent node with its zero
    initial state from the batch size (Shape ... ConstantOfShape), Squeeze, Transpose back,
    MatMul, Add, LogSoftmax; tokens [batch, sequence], both dynamic."""
    g = _Graph(f"{cell.lower()}_tagger", seed)
    tokens = g.input("tokens", ["batch", "sequence"], TensorProto.INT64)
    x = g.node("Gather", [g.weight("embed.weight", (vocab, embed), 1.0), tokens], "embed")
    x = g.node("Transpose", [x], "rnn/Transpose", perm=[1, 0, 2])
    gates = {"GRU": 3, "LSTM": 4}[cell]
    shape = _batch_shape(g, tokens, hidden, name="rnn/batch")
    shape = g.node("Concat", [g.ints("one_direction", [1]), shape], "rnn/state_shape", axis=0)
    zeros = g.node(
        "ConstantOfShape",
        [shape],
        "rnn/ConstantOfShape",
        value=numpy_helper.from_array(np.zeros(1, np.float32)),
    )
    scale = 1.0 / math.sqrt(hidden)
    inputs = [
        x,
        g.weight("rnn.W", (1, gates * hidden, embed), scale),
        g.weight("rnn.R", (1, gates * hidden, hidden), scale),
        g.weight("rnn.B", (1, 2 * gates * hidden), scale),
        "",
        zeros,
    ]
    attrs = {"linear_before_reset": 1} if cell == "GRU" else {}
    if cell == "LSTM":
        inputs.append(zeros)
    Y = g.node(cell, inputs, "rnn", outputs=2, hidden_size=hidden, **attrs)[0]
    y = g.node("Squeeze", [Y, g.ints("axes1", [1])], "rnn/Squeeze")
    y = g.node("Transpose", [y], "rnn/Transpose_1", perm=[1, 0, 2])
    y = _linear(g, y, hidden, tags, "out")
    g.nodes.append(helper.make_node("LogSoftmax", [y], ["tag_scores"], name="scores", axis=2))
    g.output("tag_scores", ["batch", "sequence", tags])
    rng = np.random.default_rng(seed + 1)
    return Built(g.finish(), {"tokens": rng.integers(0, vocab, (batch, seq), dtype=np.int64)})


def keyword_spotter(
    batch: int = 1,
    samples: int = 16000,
    frame: int = 512,
    step: int = 160,
    mels: int = 40,
    width: int = 64,
    words: int = 12,
    seed: int = 0,
) -> Built:
    """An audio front end and a small classifier, as a keyword spotter's export writes it: STFT
    of the waveform (Hann window, one-sided), power (Mul, ReduceSum of the real and imaginary
    parts), MatMul by a MelWeightMatrix, Log(x + 1e-6), then per frame a Linear + Relu, the mean
    over frames and a Linear + Softmax. waveform [batch, samples], both dynamic."""
    g = _Graph("keyword_spotter", seed)
    wave = g.input("waveform", ["batch", "samples"])
    signal = g.node("Unsqueeze", [wave, g.ints("channel_axis", [2])], "signal")
    window = g.node("HannWindow", [g.ints("frame_length", frame)], "window")
    spectrum = g.node("STFT", [signal, g.ints("frame_step", step), window], "stft", onesided=1)
    power = g.node("Mul", [spectrum, spectrum], "power/Mul")
    power = g.node("ReduceSum", [power, g.ints("last_axis", [-1])], "power", keepdims=0)
    mel = g.node(
        "MelWeightMatrix",
        [
            g.ints("num_mel_bins", mels),
            g.ints("dft_length", frame),
            g.ints("sample_rate", 16000),
            g.scalar("lower_edge_hertz", 20.0),
            g.scalar("upper_edge_hertz", 7600.0),
        ],
        "mel_matrix",
    )
    x = g.node("MatMul", [power, mel], "mel")
    x = g.node("Log", [g.node("Add", [x, g.scalar("floor", 1e-6)], "mel/Add")], "log_mel")
    x = g.node("Relu", [_linear(g, x, mels, width, "frame_fc")], "frame_fc/Relu")
    x = g.node("ReduceMean", [x], "pool", axes=[1], keepdims=0)
    x = _linear(g, x, width, words, "classifier")
    g.nodes.append(helper.make_node("Softmax", [x], ["scores"], name="softmax", axis=-1))
    g.output("scores", ["batch", words])
    rng = np.random.default_rng(seed + 1)
    return Built(
        g.finish(), {"waveform": (0.1 * rng.standard_normal((batch, samples))).astype(np.float32)}
    )


def tiny_mlp(batch: int = 1, sizes=(16, 32, 32, 4), seed: int = 0) -> Built:
    """nn.Sequential of Linear and ReLU as torch.onnx exports it (Gemm, transB=1), at a width
    where onnxruntime runs it in microseconds; features [batch, 16], batch dynamic."""
    g = _Graph("tiny_mlp", seed)
    x = g.input("features", ["batch", sizes[0]])
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        weight = g.weight(f"fc{i}.weight", (n_out, n_in))
        bias = g.const(f"fc{i}.bias", (0.05 * g.rng.standard_normal(n_out)).astype(np.float32))
        x = g.node("Gemm", [x, weight, bias], f"fc{i}", transB=1)
        if i < len(sizes) - 2:
            x = g.node("Relu", [x], f"relu{i}")
    g.nodes.append(helper.make_node("Identity", [x], ["logits"], name="logits"))
    g.output("logits", ["batch", sizes[-1]])
    rng = np.random.default_rng(seed + 1)
    return Built(
        g.finish(), {"features": rng.standard_normal((batch, sizes[0])).astype(np.float32)}
    )


def lenet(batch: int = 1, size: int = 28, channels=(6, 16), classes: int = 10, seed: int = 0):
    """A LeNet-style tiny conv net as torch.onnx exports it: Conv 5x5 + Relu + MaxPool twice,
    the flatten as Reshape to [batch, -1] from the run-time batch (Shape ... Concat), three
    Gemms; image [batch, 1, 28, 28], batch dynamic."""
    g = _Graph("lenet", seed)
    image = g.input("image", ["batch", 1, size, size])
    x, c_in = image, 1
    for i, c_out in enumerate(channels):
        x = g.node("Relu", [_conv(g, x, c_in, c_out, 5, f"conv{i}")], f"conv{i}/Relu")
        x = g.node("MaxPool", [x], f"pool{i}", kernel_shape=[2, 2], strides=[2, 2])
        size, c_in = size // 2, c_out
    x = g.node("Reshape", [x, _batch_shape(g, x, -1, name="flatten")], "flatten/Reshape")
    n_in = c_in * size * size
    for i, n_out in enumerate((120, 84, classes)):
        weight = g.weight(f"fc{i}.weight", (n_out, n_in))
        bias = g.const(f"fc{i}.bias", (0.05 * g.rng.standard_normal(n_out)).astype(np.float32))
        x = g.node("Gemm", [x, weight, bias], f"fc{i}", transB=1)
        if n_out != classes:
            x = g.node("Relu", [x], f"fc{i}/Relu")
        n_in = n_out
    g.nodes.append(helper.make_node("Identity", [x], ["logits"], name="logits"))
    g.output("logits", ["batch", classes])
    rng = np.random.default_rng(seed + 1)
    return Built(g.finish(), {"image": rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)})


def sklearn_mlp(
    batch: int = 64, features: int = 20, hidden=(100,), classes: int = 3, seed: int = 0
) -> Built:
    """scikit-learn's MLPClassifier as skl2onnx converts it (zipmap off): MatMul, Add and Relu per
    hidden layer, MatMul, Add, Softmax to the probabilities, ArgMax and the ai.onnx.ml
    ArrayFeatureExtractor of the class labels to the label; float_input [batch, 20], batch
    dynamic."""
    g = _Graph("sklearn_mlp", seed)
    g.domains["ai.onnx.ml"] = 1
    x = g.input("float_input", ["batch", features])
    sizes = (features, *hidden, classes)
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        x = _linear(g, x, n_in, n_out, f"layer{i}")
        if i < len(sizes) - 2:
            x = g.node("Relu", [x], f"layer{i}/Relu")
    g.nodes.append(
        helper.make_node("Softmax", [x], ["probabilities"], name="out_activation", axis=1)
    )
    best = g.node("ArgMax", ["probabilities"], "argmax", axis=1)
    labels = g.ints("classes", [10 * (i + 1) for i in range(classes)])
    label = g.node("ArrayFeatureExtractor", [labels, best], "label_lookup", domain="ai.onnx.ml")
    g.nodes.append(
        helper.make_node("Reshape", [label, g.ints("flat", [-1])], ["label"], name="label")
    )
    g.output("label", ["batch"], TensorProto.INT64)
    g.output("probabilities", ["batch", classes])
    rng = np.random.default_rng(seed + 1)
    return Built(
        g.finish(), {"float_input": rng.standard_normal((batch, features)).astype(np.float32)}
    )


@dataclass(frozen=True)
class Spec:
    """A benchmark model: its name, the issue's category for the targets, and how to build it."""

    name: str
    category: str  # "transformer", "conv", "recurrent", "audio", "other" (tools/bench.py TARGETS)
    build: Callable[[], Built]
    tiny: Callable[[], Built] = field(compare=False)


MODELS = (
    Spec("bert_b1", "transformer", lambda: bert(batch=1), lambda: bert(1, 8, 1, 16, 2, 32, 50)),
    Spec("bert_b8", "transformer", lambda: bert(batch=8), lambda: bert(3, 8, 2, 16, 2, 32, 50)),
    Spec("gpt_step", "transformer", gpt_step, lambda: gpt_step(6, 2, 16, 2, 50)),
    Spec(
        "bert_op14_b4x14",
        "transformer",
        lambda: exported("bert_op14", 4, 14),
        lambda: exported("bert_op14", 2, 5),
    ),
    Spec(
        "bert_op17_b1x128",
        "transformer",
        lambda: exported("bert_op17", 1, 128),
        lambda: exported("bert_op17", 2, 5),
    ),
    Spec(
        "minilm_op14_b4x14",
        "transformer",
        lambda: exported("minilm_op14", 4, 14),
        lambda: exported("minilm_op14", 2, 5),
    ),
    Spec(
        "minilm_op17_b1x128",
        "transformer",
        lambda: exported("minilm_op17", 1, 128),
        lambda: exported("minilm_op17", 2, 5),
    ),
    Spec(
        "gpt2_op14_b4x14",
        "transformer",
        lambda: exported("gpt2_op14", 4, 14),
        lambda: exported("gpt2_op14", 2, 5),
    ),
    Spec(
        "gpt2_op17_b1x128",
        "transformer",
        lambda: exported("gpt2_op17", 1, 128),
        lambda: exported("gpt2_op17", 2, 5),
    ),
    Spec(
        "vit_op14_b1",
        "transformer",
        lambda: exported("vit_op14", 1, 0),
        lambda: exported("vit_op14", 1, 0),
    ),
    Spec(
        "vit_op17_b1",
        "transformer",
        lambda: exported("vit_op17", 1, 0),
        lambda: exported("vit_op17", 1, 0),
    ),
    Spec("mobilenet", "conv", mobilenet, lambda: mobilenet(2, 32, 10, ((16, 16, 2), (24, 16, 1)))),
    Spec("unet", "conv", unet, lambda: unet(2, 16, 4, 2)),
    Spec("resnet18_b2_64", "conv", resnet18, lambda: resnet18(2, 32, 4, 10)),
    Spec(
        "resnet18_b1_96",
        "conv",
        lambda: resnet18(batch=1, size=96),
        lambda: resnet18(1, 40, 4, 10),
    ),
    Spec(
        "resnet18_w16_b2_64",
        "conv",
        lambda: resnet18(batch=2, size=64, width=16),
        lambda: resnet18(2, 32, 2, 10),
    ),
    Spec(
        "mobilenetv2_b1_96",
        "conv",
        mobilenetv2,
        lambda: mobilenetv2(2, 32, 10, ((1, 8, 1, 1), (6, 8, 2, 2), (6, 12, 1, 2)), 32),
    ),
    Spec(
        "efficientnet_b1_96",
        "conv",
        efficientnet,
        lambda: efficientnet(2, 32, 10, ((1, 3, 1, 8, 1), (6, 5, 2, 8, 2)), 32),
    ),
    Spec("lstm", "recurrent", lstm, lambda: lstm(5, 2, 6, 8, 3)),
    Spec("gru_tagger", "recurrent", tagger, lambda: tagger("GRU", 2, 5, 50, 6, 8, 3)),
    Spec(
        "lstm_tagger",
        "recurrent",
        lambda: tagger("LSTM"),
        lambda: tagger("LSTM", 3, 4, 50, 6, 8, 3),
    ),
    Spec(
        "keyword_spotter",
        "audio",
        keyword_spotter,
        lambda: keyword_spotter(2, 1200, 64, 32, 8, 8, 3),
    ),
    Spec("tiny_mlp_b1", "other", tiny_mlp, lambda: tiny_mlp(3)),
    Spec("lenet_b1", "other", lenet, lambda: lenet(2)),
    Spec("sklearn_mlp_b64", "other", sklearn_mlp, lambda: sklearn_mlp(5, 6, (8,), 3)),
    Spec("mlp_b1", "other", lambda: mlp(batch=1), lambda: mlp(1, (12, 8, 4))),
    Spec("mlp_b256", "other", lambda: mlp(batch=256), lambda: mlp(7, (12, 8, 4))),
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(".cache/bench/models"))
    parser.add_argument("--tiny", action="store_true", help="the small sizes of the smoke test")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for spec in MODELS:
        built = (spec.tiny if args.tiny else spec.build)()
        path = args.out / f"{spec.name}.onnx"
        path.write_bytes(built.model.SerializeToString())
        np.savez(args.out / f"{spec.name}.inputs.npz", **built.feeds)
        print(f"{path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
