"""(Re)builds tests/real_models/: small models made the way real exporters make them, each with the
inputs and onnxruntime 1.31.1's outputs at two sizes of its dynamic axes.

NEEDS TORCH, which is not a project dependency. Install it in your own venv only:

    .venv/bin/pip install torch==2.13.0 onnxscript==0.7.2     # onnxscript: for the dynamo exporter
    .venv/bin/python -m tools.make_real_models [--out tests/real_models] [--only NAME ...]

What it writes, per model NAME:

- `NAME.onnx`: the model as the exporter wrote it (torch.onnx legacy TorchScript exporter with
  `dynamo=False`, torch.onnx's dynamo exporter with `dynamo=True`, a `torch.jit.script` module
  through the legacy exporter, or, for the Paddle-style graphs no exporter here makes, onnx.helper).
  Weights are seeded (torch.manual_seed / numpy default_rng), widths small (each file a few kB to
  a few hundred kB).
- `NAME.npz`: two feed sets, k = 0 and 1, at two different sizes of the dynamic axes (the sizes
  the model was exported at are a third one). Keys are `<k>:input:<onnx input name>` and
  `<k>:output:<onnx output name>`; the outputs are onnxruntime 1.31.1's (CPUExecutionProvider,
  one thread, every graph optimization level left at its default). The npz is written with fixed
  zip timestamps so rebuilding gives the same bytes.
- `README.md`: the table of the models (exporter and options, opset, dynamic axes, feed sizes,
  file size, operator types), written from the builders below, so it cannot drift from them.

Every torch model's onnxruntime outputs are also checked against torch's own outputs (rtol 1e-3,
atol 1e-4) for both feed sets: the export is faithful, and the expected values are onnxruntime's,
never our compiler's.

The models (widths in the builders):

- bert: HF-BertModel-like encoder: word/position(buffer sliced to the sequence)/token-type
  embeddings, nn.LayerNorm (decomposed by the exporter at opsets 11 and 14, LayerNormalization at 17
  and 18),
  self-attention written as HF does (`x.size()[:-1] + (heads, head_dim)` views, permute, additive
  mask `(1 - mask) * finfo.min`), nn.GELU (the Erf form), tanh pooler.
- gpt2: HF-GPT2-like decoder: position ids from `arange(seq)`, Conv1D as `addmm` on
  `x.view(-1, x.size(-1))`, causal mask `ones(seq, seq).tril()` computed from the sequence length
  and applied with `where(mask, w, finfo.min)`, gelu_new (tanh form), tied LM head.
- gpt2_past: the GPT-2 decoder with a key/value cache as HF exports it (`past_key_i`,
  `past_value_i` in, `present_*` out): position ids `arange(past, past + seq)`, the causal mask a
  slice of a buffer at `[key_length - query_length : key_length, :key_length]`, a left-padded
  attention mask over past + sequence.
- llama: Llama-like decoder: RMSNorm, rotary embeddings whose cos/sin are computed at run time
  from the positions (Sin/Cos at run time: the exact variant's own trigonometry), causal mask from
  `full(finfo.min).triu(1)`, SiLU-gated MLP.
- decoder_sdpa: nn.RMSNorm and `F.scaled_dot_product_attention(is_causal=True)` blocks, SiLU MLP:
  the dynamo exporter at opset 23 writes RMSNormalization and Attention (both exact in the
  exact variant).
- vit: patch Conv (stride = patch), flatten/transpose, class token expanded to the batch,
  position embeddings, nn.MultiheadAttention(batch_first=True) blocks, head on the class token.
- resnet: stem Conv/BatchNorm/ReLU/MaxPool, two BasicBlocks (one with a strided 1x1 downsample),
  a final BatchNorm/ReLU (pre-activation style: the exporter folds each Conv -> BatchNorm pair, so
  this one stays a BatchNormalization node), AdaptiveAvgPool2d(1), flatten, Linear.
- mobilenetv2: stem, inverted residual blocks (1x1 expand, depthwise 3x3, 1x1 project, BatchNorm,
  ReLU6 = Clip), one block with Hardswish and a squeeze-excite (Hardsigmoid), Hardswish head.
- crnn: Conv/BatchNorm/ReLU/MaxPool stages to height 1, `squeeze(2)` of the height declared
  dynamic (the exporter's If(Shape(x)[2] == 1, Squeeze, Identity), branches of rank 3 and 4),
  permute, bidirectional LSTM, log_softmax.
- lstm_tagger / gru_tagger: Embedding, bidirectional LSTM / 2-layer GRU (batch_first), Linear,
  log_softmax.
- mlp: Linear/ReLU layers and a Softmax.
- dataflow: TopK with k = width // 2, gather along the indices, NonZero count, Expand of a bias to
  the run-time batch, `new_zeros(x.shape)` (ConstantOfShape from Shape), cumsum.
- script_loop_if_append: a scripted `for i in range(h.size(0))` whose body appends to a list in
  either branch of an `if` on the row's sum (Loop carrying a sequence), `stack(out).max(0)`.
- script_if_rank: a scripted `if x.size(1) == 1: squeeze(1) else: identity` (branches of rank 2 and
  3), followed by mean over the last axis and a sum.
- unet: a diffusion-VAE-style block: GroupNorm (Reshape/InstanceNormalization/Reshape from
  Shape at opset 17), SiLU, a strided Conv down, self-attention over the pixels with
  `b, c, h, w = x.shape` views to [b, c, h * w], nearest `interpolate(size=skip.shape[-2:])`
  (Resize to sizes from Shape; at opset 9, Upsample with scales divided out of the Shapes) up,
  Concat with the skip.
- yolo: a YOLOv5-style detector: the Focus layer's four strided slices, Conv/BatchNorm/SiLU,
  nearest upsampling, and a head whose grid comes from `meshgrid(arange(ny), arange(nx))` of the
  run-time feature size and whose boxes are decoded by in-place slice assignment (ScatterND).
- t5_encoder: T5-style relative-position buckets computed at run time from `arange(seq)` (Abs,
  Log, Min, Where, Cast), an Embedding of them as the attention bias, RMS LayerNorm, no scaling.
- cond_dynamo: `torch.cond(x.shape[0] > 2, large, small, (x,))` exported by the dynamo exporter
  (an If on a Shape-derived condition, each branch a Linear), then a sum over the batch.
- paddle_reshape_reduce: `dim_value: -1` batch, `Reshape(x, Concat(Slice(Shape(x), 0, 2), [-1]))`,
  ReduceMean, Softmax, MatMul.
- paddle_shape_arith: Shape -> Gather -> Mul/Div/Cast shape arithmetic -> Reshape/Expand/Tile.
- paddle_if_shape: an If whose condition is `Shape(x)[0] > 2`, branches of shapes [1, N*W] and
  [N, W].
- paddle_loop: a Loop whose trip count is `Shape(x)[0]` with a scan output, and a while-style Loop
  (no trip count, condition from the body) that grows its carried tensor by one column a turn.
- paddle_dataflow: NonZero/GatherND, TopK with k from Shape, Expand to a run-time shape,
  ConstantOfShape from Shape.
- tf_style_cnn: what tf2onnx writes for a Keras CNN: NHWC input `input_1:0` with an `unk__` batch,
  Transposes around the Conv, Flatten as `Reshape(x, Concat(Slice(Shape(x), 0, 1), [-1]))`,
  MatMul + Add, names with `/` and `:`.
- scan_rnn: a keras2onnx-style SimpleRNN as a Scan over axis 1, initial state ConstantOfShape
  from Shape, ReduceMean over the scanned states.
- convnext: ConvNeXt blocks: depthwise 7x7 Conv, permute to channels last, nn.LayerNorm, Linear
  4x, GELU, layer scale, permute back; the channels-first LayerNorm written with mean/pow/sqrt.
- swin: Swin-style shifted-window attention: `torch.roll`, window partition by view/permute of the
  run-time height and width, a relative-position bias gathered from a table by an index buffer.
- whisper_encoder: Conv1d + GELU front end (stride 2), sinusoidal positions sliced to the frame
  count, nn.TransformerEncoderLayer(norm_first=True) blocks, by the dynamo exporter.
- seq2seq_decoder: a BART-style decoder: causal self-attention (`triu` of finfo.min), cross-attention
  over a run-time memory with an additive padding mask, LM head and log_softmax.
- tcn: dilated causal Conv1d blocks (`F.pad` on the left), 1x1 residual.
- gnn: message passing: `x[source]` gathers, `scatter_add` sums by target (ScatterElements with
  reduction add), degree normalization, max over the nodes.
- moe: top-2 mixture of experts: router softmax, TopK, `torch.where(top == e)` token selection
  (NonZero), per-expert MLP of the selected tokens, `index_add` back.
- super_resolution: ESPCN-style PixelShuffle (DepthToSpace) plus a bilinear
  `interpolate(scale_factor=2)` of the input, at opsets 11 and 18.
- autoencoder: strided Conv encoder (BatchNorm, LeakyReLU, ELU), ConvTranspose decoder with
  output_padding, Sigmoid.
- spatial_transformer: `affine_grid` + `grid_sample` (AffineGrid and GridSample at opset 20) on
  a theta from a small localization net.
- audio_stft: `torch.stft` of a (batch, samples) signal (STFT at opset 17 with a 2-D signal), power,
  a mel-like projection, log, Conv1d.
- script_greedy: a scripted greedy decoding loop with a run-time step count and an early `break`
  when every sequence emitted token 1 (Loop with a condition), tokens concatenated.
- ranker: `masked_fill` by run-time lengths, `argsort(descending=True)` (TopK over the whole axis),
  gather, a DCG `cumsum`.
- half_mlp: `module.half()`: float16 weights and input, Erf GELU, LayerNormalization, Softmax.
- NAME_ortopt: onnxruntime.transformers' optimizer (opt_level 1, heads and hidden size found by
  it) applied to bert_legacy_op14, gpt2_legacy_op14, vit_legacy_op17 and llama_legacy_op17: the
  com.microsoft fusions users deploy. NAME_qdynamic, NAME_qdq, NAME_qoperator: onnxruntime's
  quantize_dynamic (gpt2, vit) and quantize_static in QDQ and QOperator format (resnet,
  mobilenetv2; seeded calibration batches). The sources' stored inputs are reused. Left out: the
  dynamically quantized BERT, whose per-node values all match onnxruntime but whose outputs move
  by 1e-2 when a 1e-7 difference upstream changes one DynamicQuantizeLinear step (ill-conditioned
  end to end; `onemodel-compile verify --per-node` shows it).
"""

from __future__ import annotations

import argparse
import io
import math
import sys
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tools.real_models_common import (
    OUT,
    Built,
    all_nodes,
    remove_models,
    save_built,
    write_readme_section,
)

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError:  # pragma: no cover - a message, not a traceback
    sys.exit(
        "tools/make_real_models.py needs torch (not a project dependency): "
        ".venv/bin/pip install torch==2.13.0 onnxscript==0.7.2"
    )

TOOL = "tools/make_real_models.py"


# --------------------------------------------------------------------------------------------
# torch helpers


def seeded(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed)


def perturb(module: nn.Module, seed: int) -> nn.Module:
    """Non-trivial norms and running statistics (fresh ones are 1, 0, 0, 1), then eval mode."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, (nn.LayerNorm, nn.BatchNorm2d, nn.RMSNorm, RMSNorm)):
                if getattr(sub, "weight", None) is not None:
                    sub.weight.add_(0.2 * torch.randn(sub.weight.shape, generator=generator))
                if getattr(sub, "bias", None) is not None:
                    sub.bias.add_(0.1 * torch.randn(sub.bias.shape, generator=generator))
            if isinstance(sub, nn.BatchNorm2d):
                sub.running_mean.copy_(
                    0.2 * torch.randn(sub.running_mean.shape, generator=generator)
                )
                sub.running_var.copy_(0.5 + torch.rand(sub.running_var.shape, generator=generator))
    return module.eval()


def torch_run(module: nn.Module, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    with torch.no_grad():
        result = module(*[torch.from_numpy(v) for v in feeds.values()])
    if isinstance(result, torch.Tensor):
        result = (result,)
    return [r.numpy() for r in result]


def export_legacy(module, example, opset, inputs, outputs, dynamic_axes) -> onnx.ModelProto:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            tuple(torch.from_numpy(v) for v in example.values()),
            buffer,
            dynamo=False,
            opset_version=opset,
            input_names=inputs,
            output_names=outputs,
            dynamic_axes=dynamic_axes,
            do_constant_folding=True,
        )
    return onnx.load_from_string(buffer.getvalue())


def export_dynamo(module, example, opset, inputs, outputs, dynamic_shapes) -> onnx.ModelProto:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            module,
            tuple(torch.from_numpy(v) for v in example.values()),
            dynamo=True,
            opset_version=opset,
            input_names=inputs,
            output_names=outputs,
            dynamic_shapes=tuple(dynamic_shapes[name] for name in example),  # by position
            optimize=True,
            verbose=False,
        )
    model = program.model_proto
    # Each node's stack trace names this file's absolute path and line numbers: dropped, so the
    # bytes do not depend on where the repository is or on edits elsewhere in this script. The
    # exporter's other metadata (namespace, class hierarchy, fx node) stays.
    for node in all_nodes(model.graph):
        kept = [p for p in node.metadata_props if p.key != "pkg.torch.onnx.stack_trace"]
        del node.metadata_props[:]
        node.metadata_props.extend(kept)
    return model


def torch_built(name, made_by, opset, dynamic, module, model, feeds) -> Built:
    return Built(name, made_by, opset, dynamic, model, feeds, [torch_run(module, f) for f in feeds])


def legacy_built(
    name, opset, dynamic, module, example, feeds, axes, outputs=None, made_by="torch.onnx legacy"
) -> Built:
    """Export `module` by torch.onnx's legacy exporter and keep torch's outputs on `feeds`. The
    inputs are named by `example`'s keys; the outputs, unless named, by the other keys of `axes`
    in order (when every output has a dynamic axis)."""
    if outputs is None:
        outputs = [key for key in axes if key not in example]
    model = export_legacy(module, example, opset, list(example), outputs, axes)
    return torch_built(name, made_by, opset, dynamic, module, model, feeds)


def ids(rng, vocab, batch, seq) -> np.ndarray:
    return rng.integers(0, vocab, (batch, seq)).astype(np.int64)


def padding_mask(batch, seq) -> np.ndarray:
    """Row b keeps its first seq - b tokens (at least one)."""
    mask = np.ones((batch, seq), np.int64)
    for b in range(batch):
        mask[b, max(1, seq - b) :] = 0
    return mask


# --------------------------------------------------------------------------------------------
# BERT


class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def split(self, x):
        x = x.view(x.size()[:-1] + (self.heads, self.head_dim))
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden, extended_mask):
        q, k, v = (
            self.split(self.query(hidden)),
            self.split(self.key(hidden)),
            self.split(self.value(hidden)),
        )
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores + extended_mask, dim=-1)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return context.view(context.size()[:-2] + (self.heads * self.head_dim,))


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, intermediate):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads)
        self.attention_out = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.gelu = nn.GELU()
        self.output = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, hidden, extended_mask):
        attended = self.attention_out(self.attention(hidden, extended_mask))
        hidden = self.attention_norm(attended + hidden)
        return self.output_norm(self.output(self.gelu(self.intermediate(hidden))) + hidden)


class Bert(nn.Module):
    def __init__(self, vocab=96, hidden=32, heads=4, intermediate=64, layers=2, positions=64):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(positions, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(positions).unsqueeze(0))
        self.layers = nn.ModuleList(BertLayer(hidden, heads, intermediate) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask, token_type_ids):
        seq_length = input_ids.size(1)
        positions = self.position_ids[:, :seq_length]
        hidden = self.word(input_ids) + self.token_type(token_type_ids) + self.position(positions)
        hidden = self.norm(hidden)
        extended = attention_mask[:, None, None, :].to(hidden.dtype)
        extended = (1.0 - extended) * torch.finfo(hidden.dtype).min
        for layer in self.layers:
            hidden = layer(hidden, extended)
        pooled = torch.tanh(self.pooler(hidden[:, 0]))
        return hidden, pooled


def bert_feeds(rng, batch, seq):
    token_types = np.zeros((batch, seq), np.int64)
    token_types[:, seq // 2 :] = 1
    return {
        "input_ids": ids(rng, 96, batch, seq),
        "attention_mask": padding_mask(batch, seq),
        "token_type_ids": token_types,
    }


def bert(opset: int, dynamo: bool) -> Built:
    seeded(1)
    module = perturb(Bert(), 1)
    rng = np.random.default_rng(1)
    example = bert_feeds(rng, 2, 5)
    feeds = [bert_feeds(rng, 2, 7), bert_feeds(rng, 3, 12)]
    inputs, outputs = list(example), ["last_hidden_state", "pooler_output"]
    if dynamo:
        batch, seq = torch.export.Dim("batch", max=64), torch.export.Dim("sequence", max=64)
        shapes = {"input_ids": {0: batch, 1: seq}} | {
            n: {0: batch, 1: seq} for n in ("attention_mask", "token_type_ids")
        }
        model = export_dynamo(module, example, opset, inputs, outputs, shapes)
        made_by = "torch.onnx dynamo, optimize=True"
    else:
        axes = {n: {0: "batch", 1: "sequence"} for n in inputs}
        axes |= {"last_hidden_state": {0: "batch", 1: "sequence"}, "pooler_output": {0: "batch"}}
        model = export_legacy(module, example, opset, inputs, outputs, axes)
        made_by = "torch.onnx legacy"
    kind = "dynamo" if dynamo else "legacy"
    return torch_built(
        f"bert_{kind}_op{opset}", made_by, opset, "batch, sequence", module, model, feeds
    )


# --------------------------------------------------------------------------------------------
# GPT-2


class Conv1D(nn.Module):
    """GPT-2's linear layer: weight [in, out], computed with addmm on the flattened input."""

    def __init__(self, nx, nf):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.1)
        self.bias = nn.Parameter(torch.randn(nf) * 0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    return (
        0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    )


class GPT2Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.ln_1 = nn.LayerNorm(hidden)
        self.c_attn = Conv1D(hidden, 3 * hidden)
        self.c_proj = Conv1D(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = Conv1D(hidden, 4 * hidden)
        self.mlp_proj = Conv1D(4 * hidden, hidden)

    def split_heads(self, x):
        x = x.view(x.size()[:-1] + (self.heads, self.head_dim))
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden):
        residual = hidden
        q, k, v = self.c_attn(self.ln_1(hidden)).split(self.heads * self.head_dim, dim=2)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        weights = torch.matmul(q, k.transpose(-1, -2)) / (v.size(-1) ** 0.5)
        length = q.size(-2)
        causal = torch.ones(length, length, dtype=torch.bool).tril()
        weights = torch.where(causal, weights, torch.finfo(weights.dtype).min)
        weights = torch.softmax(weights, dim=-1)
        attended = torch.matmul(weights, v).permute(0, 2, 1, 3).contiguous()
        attended = attended.view(attended.size()[:-2] + (self.heads * self.head_dim,))
        hidden = residual + self.c_proj(attended)
        return hidden + self.mlp_proj(gelu_new(self.c_fc(self.ln_2(hidden))))


class GPT2(nn.Module):
    def __init__(self, vocab=80, hidden=32, heads=4, layers=2, positions=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(positions, hidden)
        self.blocks = nn.ModuleList(GPT2Block(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, input_ids):
        positions = torch.arange(0, input_ids.size(-1), dtype=torch.long).unsqueeze(0)
        hidden = self.wte(input_ids) + self.wpe(positions)
        for block in self.blocks:
            hidden = block(hidden)
        return torch.matmul(self.ln_f(hidden), self.wte.weight.t())


def gpt2(opset: int) -> Built:
    seeded(2)
    module = perturb(GPT2(), 2)
    rng = np.random.default_rng(2)
    example = {"input_ids": ids(rng, 80, 2, 6)}
    feeds = [{"input_ids": ids(rng, 80, 1, 9)}, {"input_ids": ids(rng, 80, 3, 4)}]
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
    return legacy_built(
        f"gpt2_legacy_op{opset}", opset, "batch, sequence", module, example, feeds, axes
    )


class GPT2PastBlock(GPT2Block):
    """HF GPT-2's attention with a key/value cache: the causal mask is a slice of a
    [positions, positions] buffer, `bias[:, :, key_length - query_length : key_length, :key_length]`,
    and the padding mask is added as `(1 - mask) * finfo.min`."""

    def __init__(self, hidden, heads, positions):
        super().__init__(hidden, heads)
        causal = torch.tril(torch.ones(positions, positions, dtype=torch.bool))
        self.register_buffer("bias", causal.view(1, 1, positions, positions), persistent=False)

    def forward(self, hidden, past_key, past_value, extended_mask):
        residual = hidden
        q, k, v = self.c_attn(self.ln_1(hidden)).split(self.heads * self.head_dim, dim=2)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        k = torch.cat((past_key, k), dim=-2)
        v = torch.cat((past_value, v), dim=-2)
        weights = torch.matmul(q, k.transpose(-1, -2)) / (v.size(-1) ** 0.5)
        query_length, key_length = q.size(-2), k.size(-2)
        causal = self.bias[:, :, key_length - query_length : key_length, :key_length]
        weights = torch.where(causal, weights, torch.finfo(weights.dtype).min) + extended_mask
        weights = torch.softmax(weights, dim=-1)
        attended = torch.matmul(weights, v).permute(0, 2, 1, 3).contiguous()
        attended = attended.view(attended.size()[:-2] + (self.heads * self.head_dim,))
        hidden = residual + self.c_proj(attended)
        hidden = hidden + self.mlp_proj(gelu_new(self.c_fc(self.ln_2(hidden))))
        return hidden, k, v


class GPT2WithPast(nn.Module):
    def __init__(self, vocab=80, hidden=32, heads=4, layers=2, positions=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(positions, hidden)
        self.blocks = nn.ModuleList(GPT2PastBlock(hidden, heads, positions) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(
        self, input_ids, attention_mask, past_key_0, past_value_0, past_key_1, past_value_1
    ):
        past_length = past_key_0.size(-2)
        positions = torch.arange(
            past_length, input_ids.size(-1) + past_length, dtype=torch.long
        ).unsqueeze(0)
        hidden = self.wte(input_ids) + self.wpe(positions)
        extended = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(
            hidden.dtype
        ).min
        presents = []
        for block, key, value in zip(
            self.blocks, (past_key_0, past_key_1), (past_value_0, past_value_1)
        ):
            hidden, key, value = block(hidden, key, value, extended)
            presents += [key, value]
        return (torch.matmul(self.ln_f(hidden), self.wte.weight.t()), *presents)


def gpt2_past() -> Built:
    seeded(19)
    module = perturb(GPT2WithPast(), 19)
    rng = np.random.default_rng(19)

    def feed(batch, past, seq):
        values = {
            "input_ids": ids(rng, 80, batch, seq),
            "attention_mask": padding_mask(batch, past + seq)[:, ::-1].copy(),  # left padding
        }
        for layer in range(2):
            for kind in ("key", "value"):
                values[f"past_{kind}_{layer}"] = rng.normal(0, 1, (batch, 4, past, 8)).astype(
                    np.float32
                )
        return values

    example, feeds = feed(2, 4, 2), [feed(2, 3, 1), feed(1, 5, 4)]
    inputs = list(example)
    outputs = ["logits"] + [f"present_{k}_{i}" for i in range(2) for k in ("key", "value")]
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
    axes["attention_mask"] = {0: "batch", 1: "past_sequence + sequence"}
    for name in inputs[2:]:
        axes[name] = {0: "batch", 2: "past_sequence"}
    for name in outputs[1:]:
        axes[name] = {0: "batch", 2: "past_sequence + sequence"}
    return legacy_built(
        "gpt2_past_legacy_op14", 14, "batch, sequence, past_sequence", module, example, feeds, axes
    )


# --------------------------------------------------------------------------------------------
# Llama


class RMSNorm(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, hidden, heads, intermediate):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.input_norm = RMSNorm(hidden)
        self.q_proj = nn.Linear(hidden, hidden, bias=False)
        self.k_proj = nn.Linear(hidden, hidden, bias=False)
        self.v_proj = nn.Linear(hidden, hidden, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)
        self.post_norm = RMSNorm(hidden)
        self.gate = nn.Linear(hidden, intermediate, bias=False)
        self.up = nn.Linear(hidden, intermediate, bias=False)
        self.down = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, hidden, cos, sin, mask):
        batch, length, _ = hidden.shape
        x = self.input_norm(hidden)
        q = self.q_proj(x).view(batch, length, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, length, self.heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, length, self.heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim) + mask
        weights = torch.softmax(weights, dim=-1)
        attended = torch.matmul(weights, v).transpose(1, 2).reshape(batch, length, -1)
        hidden = hidden + self.o_proj(attended)
        x = self.post_norm(hidden)
        return hidden + self.down(nn.functional.silu(self.gate(x)) * self.up(x))


class Llama(nn.Module):
    def __init__(self, vocab=72, hidden=32, heads=4, intermediate=48, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList(LlamaBlock(hidden, heads, intermediate) for _ in range(layers))
        self.norm = RMSNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        head_dim = hidden // heads
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, input_ids):
        length = input_ids.shape[1]
        positions = torch.arange(length, dtype=torch.float32)
        freqs = positions[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        mask = torch.full((length, length), torch.finfo(torch.float32).min).triu(1)
        hidden = self.embed(input_ids)
        for block in self.blocks:
            hidden = block(hidden, cos, sin, mask)
        return self.lm_head(self.norm(hidden))


def llama() -> Built:
    seeded(3)
    module = perturb(Llama(), 3)
    rng = np.random.default_rng(3)
    example = {"input_ids": ids(rng, 72, 2, 5)}
    feeds = [{"input_ids": ids(rng, 72, 2, 8)}, {"input_ids": ids(rng, 72, 1, 3)}]
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
    return legacy_built("llama_legacy_op17", 17, "batch, sequence", module, example, feeds, axes)


class SdpaBlock(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.norm1 = nn.RMSNorm(hidden, eps=1e-6)
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
        self.out = nn.Linear(hidden, hidden, bias=False)
        self.norm2 = nn.RMSNorm(hidden, eps=1e-6)
        self.up = nn.Linear(hidden, 2 * hidden, bias=False)
        self.down = nn.Linear(2 * hidden, hidden, bias=False)

    def forward(self, x):
        batch, length, hidden = x.shape
        qkv = self.qkv(self.norm1(x)).view(batch, length, 3, self.heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        attended = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(attended.transpose(1, 2).reshape(batch, length, hidden))
        return x + self.down(nn.functional.silu(self.up(self.norm2(x))))


class SdpaDecoder(nn.Module):
    """A current-style decoder: nn.RMSNorm and F.scaled_dot_product_attention(is_causal=True),
    which the dynamo exporter writes as RMSNormalization and Attention at opset 23."""

    def __init__(self, vocab=64, hidden=32, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList(SdpaBlock(hidden, heads) for _ in range(layers))
        self.norm = nn.RMSNorm(hidden, eps=1e-6)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids):
        x = self.embed(input_ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def sdpa_decoder() -> Built:
    seeded(21)
    module = perturb(SdpaDecoder(), 21)
    rng = np.random.default_rng(21)
    example = {"input_ids": ids(rng, 64, 2, 5)}
    feeds = [{"input_ids": ids(rng, 64, 2, 9)}, {"input_ids": ids(rng, 64, 3, 4)}]
    batch, seq = torch.export.Dim("batch", min=2, max=64), torch.export.Dim("sequence", max=64)
    shapes = {"input_ids": {0: batch, 1: seq}}
    model = export_dynamo(module, example, 23, ["input_ids"], ["logits"], shapes)
    return torch_built(
        "decoder_sdpa_dynamo_op23",
        "torch.onnx dynamo, optimize=True",
        23,
        "batch, sequence",
        module,
        model,
        feeds,
    )


# --------------------------------------------------------------------------------------------
# ViT


class ViTBlock(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden, eps=1e-6)
        self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(hidden, eps=1e-6)
        self.mlp = nn.Sequential(
            nn.Linear(hidden, 2 * hidden), nn.GELU(), nn.Linear(2 * hidden, hidden)
        )

    def forward(self, x):
        y = self.norm1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    def __init__(self, image=16, patch=4, hidden=32, heads=4, layers=2, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, hidden, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, hidden) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, hidden) * 0.02)
        self.blocks = nn.ModuleList(ViTBlock(hidden, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden, eps=1e-6)
        self.head = nn.Linear(hidden, classes)

    def forward(self, pixel_values):
        x = self.patch(pixel_values).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


def images(rng, batch, height, width):
    return rng.normal(0, 1, (batch, 3, height, width)).astype(np.float32)


def image_classifier(name, opset, module_class, seed, example_size, feed_sizes) -> Built:
    """A seeded image classifier `image` -> `logits`, exported at batch 2 and `example_size`
    (height, width) with dynamic batch, height and width, fed at `feed_sizes` (batch, height,
    width)."""
    seeded(seed)
    module = perturb(module_class(), seed)
    rng = np.random.default_rng(seed)
    example = {"image": images(rng, 2, *example_size)}
    feeds = [{"image": images(rng, *size)} for size in feed_sizes]
    axes = {"image": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}}
    return legacy_built(name, opset, "batch, height, width", module, example, feeds, axes)


def vit() -> Built:
    seeded(4)
    module = perturb(ViT(), 4)
    rng = np.random.default_rng(4)
    example = {"pixel_values": images(rng, 2, 16, 16)}
    feeds = [{"pixel_values": images(rng, 1, 16, 16)}, {"pixel_values": images(rng, 3, 16, 16)}]
    axes = {"pixel_values": {0: "batch"}, "logits": {0: "batch"}}
    return legacy_built("vit_legacy_op17", 17, "batch", module, example, feeds, axes)


# --------------------------------------------------------------------------------------------
# ResNet


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class ResNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 8, 3, 1, 1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1),
        )
        self.layer1 = BasicBlock(8, 8, 1)
        self.layer2 = BasicBlock(8, 16, 2)
        # pre-activation ResNets end in BatchNorm/ReLU after the last residual Add: the exporter
        # folds every Conv -> BatchNorm pair into the Conv, so this is the BatchNormalization
        # that stays in the graph
        self.final_bn = nn.BatchNorm2d(16)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = torch.relu(self.final_bn(self.layer2(self.layer1(self.stem(x)))))
        return self.fc(torch.flatten(self.pool(x), 1))


def resnet() -> Built:
    return image_classifier(
        "resnet_legacy_op14", 14, ResNet, 5, (24, 24), [(1, 32, 32), (3, 20, 28)]
    )


# --------------------------------------------------------------------------------------------
# MobileNetV2


class SqueezeExcite(nn.Module):
    def __init__(self, channels, squeezed):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeezed, 1)
        self.relu = nn.ReLU()
        self.fc2 = nn.Conv2d(squeezed, channels, 1)
        self.gate = nn.Hardsigmoid()

    def forward(self, x):
        return x * self.gate(self.fc2(self.relu(self.fc1(self.pool(x)))))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand, hard_swish=False, se=False):
        super().__init__()
        mid = cin * expand
        act = nn.Hardswish if hard_swish else nn.ReLU6
        layers = [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), act()]
        layers += [nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid)]
        layers += [act()]
        if se:
            layers.append(SqueezeExcite(mid, max(4, mid // 4)))
        layers += [nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV2(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU6(inplace=True),
            InvertedResidual(8, 8, 1, 1),
            InvertedResidual(8, 12, 2, 4),
            InvertedResidual(12, 12, 1, 4),
            InvertedResidual(12, 16, 2, 4, hard_swish=True, se=True),
            nn.Conv2d(16, 32, 1, bias=False),
            nn.BatchNorm2d(32),
            nn.Hardswish(),
        )
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(32, classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


def mobilenetv2(dynamo: bool) -> Built:
    seeded(6)
    module = perturb(MobileNetV2(), 6)
    rng = np.random.default_rng(6)
    example = {"image": images(rng, 2, 32, 32)}
    feeds = [{"image": images(rng, 1, 40, 40)}, {"image": images(rng, 3, 24, 32)}]
    if dynamo:
        batch, height, width = (torch.export.Dim(n, min=2, max=512) for n in ("b", "h", "w"))
        shapes = {"image": {0: batch, 2: height, 3: width}}
        # the batch of 1 would be specialized on: Dims are at least 2, so feed 0 has batch 2
        feeds[0] = {"image": images(rng, 2, 40, 40)}
        model = export_dynamo(module, example, 18, ["image"], ["logits"], shapes)
        name, made_by, opset = "mobilenetv2_dynamo_op18", "torch.onnx dynamo, optimize=True", 18
    else:
        axes = {"image": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}}
        model = export_legacy(module, example, 17, ["image"], ["logits"], axes)
        name, made_by, opset = "mobilenetv2_legacy_op17", "torch.onnx legacy", 17
    return torch_built(name, made_by, opset, "batch, height, width", module, model, feeds)


# --------------------------------------------------------------------------------------------
# UNet / diffusion-VAE-style block


class SpatialAttention(nn.Module):
    """Self-attention over the pixels, as diffusion VAEs write it: `b, c, h, w = x.shape`, views
    to [b, c, h * w], and back."""

    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(4, channels)
        self.qkv = nn.Conv2d(channels, 3 * channels, 1)
        self.proj = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=1)
        q = q.reshape(b, c, h * w).permute(0, 2, 1)
        k = k.reshape(b, c, h * w)
        v = v.reshape(b, c, h * w).permute(0, 2, 1)
        weights = torch.softmax(torch.bmm(q, k) * (c**-0.5), dim=-1)
        attended = torch.bmm(weights, v).permute(0, 2, 1).reshape(b, c, h, w)
        return x + self.proj(attended)


class UNetBlock(nn.Module):
    def __init__(self, channels=16):
        super().__init__()
        self.conv_in = nn.Conv2d(3, channels, 3, padding=1)
        self.norm1 = nn.GroupNorm(4, channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.down = nn.Conv2d(channels, channels, 3, stride=2, padding=1)
        self.attention = SpatialAttention(channels)
        self.norm2 = nn.GroupNorm(4, 2 * channels)
        self.conv_out = nn.Conv2d(2 * channels, 3, 3, padding=1)

    def forward(self, x):
        h = self.conv_in(x)
        skip = h + self.conv1(nn.functional.silu(self.norm1(h)))
        low = self.attention(self.down(skip))
        up = nn.functional.interpolate(low, size=skip.shape[-2:], mode="nearest")
        joined = torch.cat((up, skip), dim=1)
        return self.conv_out(nn.functional.silu(self.norm2(joined)))


def unet(opset: int) -> Built:
    seeded(17)
    module = perturb(UNetBlock(), 17)
    rng = np.random.default_rng(17)
    example = {"image": images(rng, 2, 8, 8)}
    feeds = [{"image": images(rng, 1, 12, 16)}, {"image": images(rng, 3, 9, 7)}]
    axes = {
        "image": {0: "batch", 2: "height", 3: "width"},
        "decoded": {0: "batch", 2: "height", 3: "width"},
    }
    return legacy_built(
        f"unet_legacy_op{opset}",
        opset,
        "batch, height, width",
        module,
        example,
        feeds,
        axes,
        made_by="torch.onnx legacy" + (" (Upsample with run-time scales)" if opset < 10 else ""),
    )


# --------------------------------------------------------------------------------------------
# YOLO-style detector


class DetectHead(nn.Module):
    """A YOLOv5-style head: per level a 1x1 Conv, view/permute to [batch, anchors, ny, nx, out],
    a grid from `meshgrid(arange(ny), arange(nx))` of the run-time feature size, and the decoded
    boxes written by in-place slice assignment (the exporter's ScatterND)."""

    def __init__(self, anchors=2, classes=3, channels=(8, 16), strides=(4, 8)):
        super().__init__()
        self.anchors, self.outputs, self.strides = anchors, classes + 5, strides
        self.convs = nn.ModuleList(nn.Conv2d(c, anchors * self.outputs, 1) for c in channels)
        sizes = torch.tensor([[[4.0, 6.0], [8.0, 5.0]], [[10.0, 12.0], [16.0, 9.0]]])
        self.register_buffer("anchor_sizes", sizes)

    def forward(self, p3, p4):
        decoded = []
        for level, x in enumerate((p3, p4)):
            x = self.convs[level](x)
            batch, _, ny, nx = x.shape
            x = x.view(batch, self.anchors, self.outputs, ny, nx).permute(0, 1, 3, 4, 2)
            rows, cols = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
            grid = torch.stack((cols, rows), 2).view(1, 1, ny, nx, 2).float()
            y = x.contiguous().sigmoid()
            y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * self.strides[level]
            sizes = self.anchor_sizes[level].view(1, self.anchors, 1, 1, 2)
            y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * sizes
            decoded.append(y.view(batch, -1, self.outputs))
        return torch.cat(decoded, 1)


class Yolo(nn.Module):
    def __init__(self):
        super().__init__()
        self.focus = nn.Sequential(nn.Conv2d(12, 8, 3, 1, 1), nn.BatchNorm2d(8), nn.SiLU())
        self.down = nn.Sequential(nn.Conv2d(8, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.SiLU())
        self.lateral = nn.Conv2d(16, 8, 1)
        self.detect = DetectHead()

    def forward(self, images):
        x = images
        # the Focus layer: four strided slices stacked on the channels
        x = torch.cat(
            (x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]), 1
        )
        p3 = self.focus(x)
        p4 = self.down(p3)
        p3 = p3 + nn.functional.interpolate(self.lateral(p4), scale_factor=2.0, mode="nearest")
        return self.detect(p3, p4)


def yolo(opset: int) -> Built:
    seeded(22)
    module = perturb(Yolo(), 22)
    rng = np.random.default_rng(22)
    example = {"images": images(rng, 1, 32, 32)}
    feeds = [{"images": images(rng, 2, 32, 48)}, {"images": images(rng, 1, 16, 16)}]
    axes = {
        "images": {0: "batch", 2: "height", 3: "width"},
        "detections": {0: "batch", 1: "boxes"},
    }
    return legacy_built(
        f"yolo_legacy_op{opset}",
        opset,
        "batch, height, width",
        module,
        example,
        feeds,
        axes,
        made_by="torch.onnx legacy"
        + (" (YOLOv5's historical default opset)" if opset == 12 else ""),
    )


# --------------------------------------------------------------------------------------------
# T5-style encoder


def position_buckets(relative, buckets=16, max_distance=64):
    """T5's bidirectional relative-position buckets: half the buckets for each sign, the nearer
    half of those one per distance, the rest logarithmic up to max_distance."""
    half = buckets // 2
    sign_offset = (relative > 0).to(torch.long) * half
    distance = relative.abs()
    exact = half // 2
    scaled = torch.log(distance.float() / exact) / math.log(max_distance / exact)
    far = exact + (scaled * (half - exact)).to(torch.long)
    far = torch.min(far, torch.full_like(far, half - 1))
    return sign_offset + torch.where(distance < exact, distance, far)


class T5LayerNorm(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class T5Encoder(nn.Module):
    def __init__(self, vocab=60, hidden=32, heads=4, ff=64, layers=2, buckets=16):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.embed = nn.Embedding(vocab, hidden)
        self.relative_bias = nn.Embedding(buckets, heads)
        self.norms = nn.ModuleList(T5LayerNorm(hidden) for _ in range(2 * layers))
        self.qkv = nn.ModuleList(nn.Linear(hidden, 3 * hidden, bias=False) for _ in range(layers))
        self.out = nn.ModuleList(nn.Linear(hidden, hidden, bias=False) for _ in range(layers))
        self.ff_in = nn.ModuleList(nn.Linear(hidden, ff, bias=False) for _ in range(layers))
        self.ff_out = nn.ModuleList(nn.Linear(ff, hidden, bias=False) for _ in range(layers))
        self.final_norm = T5LayerNorm(hidden)

    def forward(self, input_ids, attention_mask):
        batch, length = input_ids.shape
        positions = torch.arange(length, dtype=torch.long)
        relative = positions[None, :] - positions[:, None]
        bias = self.relative_bias(position_buckets(relative)).permute(2, 0, 1).unsqueeze(0)
        mask = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        bias = bias + mask
        x = self.embed(input_ids)
        for i in range(len(self.qkv)):
            h = self.norms[2 * i](x)
            q, k, v = self.qkv[i](h).view(batch, -1, 3, self.heads, self.head_dim).unbind(2)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            scores = torch.matmul(q, k.transpose(3, 2)) + bias  # T5 does not scale
            attended = torch.matmul(torch.softmax(scores.float(), dim=-1), v)
            x = x + self.out[i](
                attended.transpose(1, 2).reshape(batch, -1, self.heads * self.head_dim)
            )
            x = x + self.ff_out[i](torch.relu(self.ff_in[i](self.norms[2 * i + 1](x))))
        return self.final_norm(x)


def t5() -> Built:
    seeded(23)
    module = perturb(T5Encoder(), 23)
    rng = np.random.default_rng(23)

    def feed(batch, seq):
        return {"input_ids": ids(rng, 60, batch, seq), "attention_mask": padding_mask(batch, seq)}

    example, feeds = feed(2, 6), [feed(2, 11), feed(3, 5)]
    axes = {n: {0: "batch", 1: "sequence"} for n in ("input_ids", "attention_mask")}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    return legacy_built(
        "t5_encoder_legacy_op14", 14, "batch, sequence", module, example, feeds, axes
    )


# --------------------------------------------------------------------------------------------
# CRNN text recognizer


class CRNN(nn.Module):
    """The classic CRNN: Conv/BatchNorm/ReLU/MaxPool until the height is 1, `squeeze(2)`,
    `permute(2, 0, 1)` to [width, batch, channels], a bidirectional LSTM, Linear, log_softmax.
    Exported with the height declared dynamic (as many do), the legacy exporter writes the squeeze
    of that symbolic dim as If(Shape(x)[2] == 1, Squeeze, Identity): branches of rank 3 and 4."""

    def __init__(self, classes=12):
        super().__init__()

        def stage(cin, cout):
            return [nn.Conv2d(cin, cout, 3, 1, 1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)]

        self.cnn = nn.Sequential(*stage(1, 8), *stage(8, 16), *stage(16, 16), *stage(16, 16))
        self.rnn = nn.LSTM(16, 16, bidirectional=True)
        self.fc = nn.Linear(32, classes)

    def forward(self, image):
        features = self.cnn(image).squeeze(2).permute(2, 0, 1)
        states, _ = self.rnn(features)
        return torch.log_softmax(self.fc(states), dim=-1)


def crnn() -> Built:
    seeded(20)
    module = perturb(CRNN(), 20)
    rng = np.random.default_rng(20)

    def feed(batch, width):
        return {"image": rng.normal(0, 1, (batch, 1, 16, width)).astype(np.float32)}

    example, feeds = feed(2, 48), [feed(1, 64), feed(3, 32)]  # the height is 16 for any width
    axes = {"image": {0: "batch", 2: "height", 3: "width"}, "log_probs": {0: "steps", 1: "batch"}}
    return legacy_built(
        "crnn_legacy_op14",
        14,
        "batch, height (declared; 16 runs), width",
        module,
        example,
        feeds,
        axes,
    )


# --------------------------------------------------------------------------------------------
# torch.cond through the dynamo exporter


class CondOnBatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        def large(x):
            return torch.relu(self.linear(x)) * 2.0

        def small(x):
            return torch.sigmoid(self.linear(x)) - 1.0

        return torch.cond(x.shape[0] > 2, large, small, (x,)).sum(0)


def cond_dynamo() -> Built:
    seeded(18)
    module = CondOnBatch().eval()
    rng = np.random.default_rng(18)

    def feed(batch):
        return {"x": rng.normal(0, 1, (batch, 8)).astype(np.float32)}

    example, feeds = feed(3), [feed(2), feed(5)]  # 2 takes the `small` branch, 5 `large`
    shapes = {"x": {0: torch.export.Dim("batch", min=2, max=64)}}
    model = export_dynamo(module, example, 18, ["x"], ["y"], shapes)
    return torch_built(
        "cond_dynamo_op18",
        "torch.cond, torch.onnx dynamo, optimize=True",
        18,
        "batch",
        module,
        model,
        feeds,
    )


# --------------------------------------------------------------------------------------------
# recurrent taggers, MLP


class Tagger(nn.Module):
    def __init__(self, cell, vocab=50, embed=16, hidden=24, tags=7):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        if cell == "lstm":
            self.rnn = nn.LSTM(embed, hidden, batch_first=True, bidirectional=True)
            width = 2 * hidden
        else:
            self.rnn = nn.GRU(embed, hidden, num_layers=2, batch_first=True)
            width = hidden
        self.out = nn.Linear(width, tags)

    def forward(self, tokens):
        states, _ = self.rnn(self.embed(tokens))
        return torch.log_softmax(self.out(states), dim=-1)


def tagger(cell: str, opset: int) -> Built:
    seeded(7)
    module = Tagger(cell).eval()
    rng = np.random.default_rng(7)
    example = {"tokens": ids(rng, 50, 2, 6)}
    feeds = [{"tokens": ids(rng, 50, 3, 11)}, {"tokens": ids(rng, 50, 1, 4)}]
    axes = {"tokens": {0: "batch", 1: "sequence"}, "tag_scores": {0: "batch", 1: "sequence"}}
    return legacy_built(
        f"{cell}_tagger_legacy_op{opset}", opset, "batch, sequence", module, example, feeds, axes
    )


def mlp() -> Built:
    seeded(8)
    module = nn.Sequential(
        nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 5), nn.Softmax(-1)
    ).eval()
    rng = np.random.default_rng(8)

    def feed(batch):
        return {"features": rng.normal(0, 1, (batch, 20)).astype(np.float32)}

    example, feeds = feed(4), [feed(1), feed(6)]
    axes = {"features": {0: "batch"}, "probabilities": {0: "batch"}}
    return legacy_built("mlp_legacy_op14", 14, "batch", module, example, feeds, axes)


# --------------------------------------------------------------------------------------------
# data-dependent shapes through the legacy exporter


class Dataflow(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(1, 3))

    def forward(self, x, scores):
        k = x.shape[1] // 2
        top_values, top_indices = torch.topk(scores, k, dim=1)
        picked = torch.gather(x, 1, top_indices)
        positive = torch.nonzero(x > 0)
        count = torch.tensor(positive.shape[0], dtype=torch.int64) + positive[:, 1].sum() * 0
        bias = self.bias.expand(x.shape[0], -1)
        zeros = x.new_zeros(x.shape)
        running = torch.cumsum(zeros + x, dim=1)
        return top_values, picked * 2.0, count, bias + running[:, :3], positive


def dataflow() -> Built:
    seeded(9)
    module = Dataflow().eval()
    rng = np.random.default_rng(9)

    def feed(batch, width):
        return {
            "x": rng.normal(0, 1, (batch, width)).astype(np.float32),
            "scores": rng.permutation(batch * width).reshape(batch, width).astype(np.float32),
        }

    example, feeds = feed(2, 6), [feed(3, 8), feed(1, 5)]
    outputs = ["top_values", "picked", "positive_count", "shifted", "positive_indices"]
    axes = {n: {0: "batch", 1: "width"} for n in ("x", "scores")}
    axes |= {"top_values": {0: "batch", 1: "k"}, "picked": {0: "batch", 1: "k"}}
    axes |= {"shifted": {0: "batch"}, "positive_indices": {0: "nonzero"}}
    return legacy_built(
        "dataflow_legacy_op17",
        17,
        "batch, width",
        module,
        example,
        feeds,
        axes,
        outputs,
        made_by="torch.onnx legacy (TopK, NonZero, Expand, new_zeros)",
    )


# --------------------------------------------------------------------------------------------
# torch.jit.script control flow


class LoopIfAppend(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x):
        h = self.proj(x)
        out: list[torch.Tensor] = []
        for i in range(h.size(0)):
            row = h[i]
            if bool(row.sum() > 0):
                out.append(torch.relu(row) * 2.0)
            else:
                out.append(row - 1.0)
        return torch.stack(out).max(dim=0)[0]


class IfRank(nn.Module):
    def forward(self, x):
        x = x * 2.0 + 1.0
        if x.size(1) == 1:
            y = x.squeeze(1)
        else:
            y = x
        reduced = y.mean(dim=-1)
        return reduced, reduced.sum()


def script_loop_if_append() -> Built:
    seeded(10)
    module = torch.jit.script(LoopIfAppend().eval())
    rng = np.random.default_rng(10)

    def feed(rows):
        return {"x": rng.normal(0, 1, (rows, 6)).astype(np.float32)}

    example, feeds = feed(4), [feed(5), feed(2)]
    axes = {"x": {0: "rows"}}
    return legacy_built(
        "script_loop_if_append_op17",
        17,
        "rows",
        module,
        example,
        feeds,
        axes,
        outputs=["row_max"],
        made_by="torch.jit.script module, torch.onnx legacy",
    )


def script_if_rank() -> Built:
    seeded(11)
    module = torch.jit.script(IfRank().eval())
    rng = np.random.default_rng(11)

    def feed(batch, channels, length):
        return {"x": rng.normal(0, 1, (batch, channels, length)).astype(np.float32)}

    example, feeds = feed(2, 2, 5), [feed(3, 1, 4), feed(2, 3, 6)]
    axes = {"x": {0: "batch", 1: "channels", 2: "length"}}
    return legacy_built(
        "script_if_rank_op17",
        17,
        "all three",
        module,
        example,
        feeds,
        axes,
        outputs=["reduced", "total"],
        made_by="torch.jit.script module, torch.onnx legacy",
    )


# --------------------------------------------------------------------------------------------
# Paddle-style graphs with onnx.helper: `dim_value: -1` for unknown dims, as paddle2onnx writes


PADDLE_OPSET, PADDLE_IR = 13, 7


def paddle_info(name, elem, dims):
    """A value_info whose unknown dims are `dim_value: -1`."""
    info = helper.make_tensor_value_info(name, elem, None)
    shape = info.type.tensor_type.shape
    shape.SetInParent()
    for d in dims:
        shape.dim.add().dim_value = d
    return info


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def floats(name, values):
    return numpy_helper.from_array(np.asarray(values, np.float32), name)


def paddle_model(name, nodes, inputs, outputs, initializers) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", PADDLE_OPSET)],
        ir_version=PADDLE_IR,
        producer_name="PaddlePaddle-style (onnx.helper)",
    )
    onnx.checker.check_model(model)
    return model


def paddle_built(name, dynamic, model, feeds) -> Built:
    return Built(
        name, "onnx.helper, Paddle-style (`dim_value: -1`)", PADDLE_OPSET, dynamic, model, feeds
    )


def paddle_reshape_reduce() -> Built:
    rng = np.random.default_rng(12)
    node = helper.make_node
    nodes = [
        node("Shape", ["x"], ["shape"], name="shape_0"),
        node("Slice", ["shape", "zero", "two", "zero"], ["lead"], name="slice_0"),
        node("Concat", ["lead", "minus_one"], ["flat_shape"], axis=0, name="concat_0"),
        node("Reshape", ["x", "flat_shape"], ["flat"], name="reshape2_0"),
        node("ReduceMean", ["flat"], ["mean"], axes=[2], keepdims=1, name="reduce_mean_0"),
        node("Sub", ["flat", "mean"], ["centred"], name="elementwise_sub_0"),
        node("Softmax", ["centred"], ["probs"], axis=-1, name="softmax_0"),
        node("Transpose", ["flat"], ["flat_t"], perm=[0, 2, 1], name="transpose2_0"),
        node("MatMul", ["probs", "flat_t"], ["mixed"], name="matmul_v2_0"),
        node("MatMul", ["mixed", "w"], ["projected"], name="matmul_v2_1"),
        node("Add", ["projected", "mean"], ["y"], name="elementwise_add_0"),
    ]
    model = paddle_model(
        "paddle_reshape_reduce",
        nodes,
        [paddle_info("x", TensorProto.FLOAT, [-1, 4, -1, -1])],
        [paddle_info("y", TensorProto.FLOAT, [-1, 4, 3])],
        [
            ints("zero", [0]),
            ints("two", [2]),
            ints("minus_one", [-1]),
            floats("w", rng.normal(0, 0.5, (4, 3))),
        ],
    )

    def feed(batch, height, width):
        return {"x": rng.normal(0, 1, (batch, 4, height, width)).astype(np.float32)}

    feeds = [feed(2, 5, 6), feed(3, 4, 4)]
    return paddle_built("paddle_reshape_reduce_op13", "batch, height, width", model, feeds)


def paddle_shape_arith() -> Built:
    rng = np.random.default_rng(13)
    node = helper.make_node
    nodes = [
        node("Shape", ["x"], ["shape"], name="shape_0"),
        node("Gather", ["shape", "i0"], ["batch"], axis=0, name="gather_0"),  # scalar
        node("Gather", ["shape", "i1"], ["seq"], axis=0, name="gather_1"),
        node("Mul", ["batch", "seq"], ["rows"], name="elementwise_mul_0"),
        node("Unsqueeze", ["rows", "axes0"], ["rows_1d"], name="unsqueeze2_0"),
        node("Concat", ["rows_1d", "minus_one"], ["flat_shape"], axis=0, name="concat_0"),
        node("Reshape", ["x", "flat_shape"], ["flat"], name="reshape2_0"),
        node("MatMul", ["flat", "w"], ["proj"], name="matmul_v2_0"),
        node("Div", ["width", "two"], ["half"], name="elementwise_div_0"),
        node("Unsqueeze", ["batch", "axes0"], ["batch_1d"], name="unsqueeze2_1"),
        node("Unsqueeze", ["seq", "axes0"], ["seq_1d"], name="unsqueeze2_2"),
        node("Unsqueeze", ["half", "axes0"], ["half_1d"], name="unsqueeze2_3"),
        node("Concat", ["batch_1d", "seq_1d", "half_1d", "two_1d"], ["split"], axis=0, name="c1"),
        node("Reshape", ["proj", "split"], ["heads"], name="reshape2_1"),
        node("Expand", ["head_bias", "split"], ["bias"], name="expand_v2_0"),
        node("Add", ["heads", "bias"], ["y"], name="elementwise_add_0"),
        node("ReduceSum", ["x", "axes1"], ["summed"], keepdims=1, name="reduce_sum_0"),
        node("Cast", ["seq"], ["seq_f"], to=TensorProto.FLOAT, name="cast_0"),
        node("Div", ["summed", "seq_f"], ["mean"], name="elementwise_div_1"),
        node("Concat", ["one_1d", "seq_1d", "one_1d"], ["repeats"], axis=0, name="concat_2"),
        node("Tile", ["mean", "repeats"], ["tiled"], name="tile_0"),
        node("Sub", ["x", "tiled"], ["z"], name="elementwise_sub_0"),
    ]
    model = paddle_model(
        "paddle_shape_arith",
        nodes,
        [paddle_info("x", TensorProto.FLOAT, [-1, -1, 8])],
        [
            paddle_info("y", TensorProto.FLOAT, [-1, -1, 4, 2]),
            paddle_info("z", TensorProto.FLOAT, [-1, -1, 8]),
        ],
        [
            numpy_helper.from_array(np.array(0, np.int64), "i0"),
            numpy_helper.from_array(np.array(1, np.int64), "i1"),
            numpy_helper.from_array(np.array(8, np.int64), "width"),
            numpy_helper.from_array(np.array(2, np.int64), "two"),
            ints("axes0", [0]),
            ints("axes1", [1]),
            ints("minus_one", [-1]),
            ints("two_1d", [2]),
            ints("one_1d", [1]),
            floats("w", rng.normal(0, 0.4, (8, 8))),
            floats("head_bias", rng.normal(0, 0.1, (1, 1, 4, 2))),
        ],
    )

    def feed(batch, seq):
        return {"x": rng.normal(0, 1, (batch, seq, 8)).astype(np.float32)}

    return paddle_built(
        "paddle_shape_arith_op13", "batch, sequence", model, [feed(2, 3), feed(4, 7)]
    )


def paddle_if_shape() -> Built:
    node = helper.make_node
    then_branch = helper.make_graph(
        [
            node("Reshape", ["x", "one_row"], ["flat"], name="then_reshape"),
            node("Softmax", ["flat"], ["then_out"], axis=-1, name="then_softmax"),
        ],
        "then_branch",
        [],
        [paddle_info("then_out", TensorProto.FLOAT, [1, -1])],
    )
    else_branch = helper.make_graph(
        [node("Softmax", ["x"], ["else_out"], axis=-1, name="else_softmax")],
        "else_branch",
        [],
        [paddle_info("else_out", TensorProto.FLOAT, [-1, -1])],
    )
    nodes = [
        node("Shape", ["x"], ["shape"], name="shape_0"),
        node("Gather", ["shape", "i0"], ["batch"], axis=0, name="gather_0"),
        node("Greater", ["batch", "two"], ["cond"], name="greater_than_0"),
        node("If", ["cond"], ["picked"], then_branch=then_branch, else_branch=else_branch),
        node("Mul", ["picked", "scale"], ["y"], name="scale_0"),
        node("ReduceSum", ["picked"], ["total"], keepdims=0, name="reduce_sum_0"),
    ]
    model = paddle_model(
        "paddle_if_shape",
        nodes,
        [paddle_info("x", TensorProto.FLOAT, [-1, -1])],
        [
            paddle_info("y", TensorProto.FLOAT, [-1, -1]),
            paddle_info("total", TensorProto.FLOAT, []),
        ],
        [
            numpy_helper.from_array(np.array(0, np.int64), "i0"),
            numpy_helper.from_array(np.array(2, np.int64), "two"),
            ints("one_row", [1, -1]),
            numpy_helper.from_array(np.array(3.0, np.float32), "scale"),
        ],
    )
    rng = np.random.default_rng(14)

    def feed(batch, width):
        return {"x": rng.normal(0, 1, (batch, width)).astype(np.float32)}

    # batch 2 takes the else branch ([2, 5]), batch 4 the then branch ([1, 12])
    return paddle_built("paddle_if_shape_op13", "batch, width", model, [feed(2, 5), feed(4, 3)])


def paddle_loop() -> Built:
    node = helper.make_node
    # for i in range(batch): acc += x[i] * i; scan out sum(x[i])
    body = helper.make_graph(
        [
            node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
            node("Gather", ["x", "i"], ["row"], axis=0, name="body_gather"),
            node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT, name="body_cast"),
            node("Mul", ["row", "i_f"], ["weighted"], name="body_mul"),
            node("Add", ["acc_in", "weighted"], ["acc_out"], name="body_add"),
            node("ReduceSum", ["row", "axes0"], ["row_sum"], keepdims=1, name="body_sum"),
        ],
        "for_body",
        [
            paddle_info("i", TensorProto.INT64, []),
            paddle_info("cond_in", TensorProto.BOOL, []),
            paddle_info("acc_in", TensorProto.FLOAT, [-1]),
        ],
        [
            paddle_info("cond_out", TensorProto.BOOL, []),
            paddle_info("acc_out", TensorProto.FLOAT, [-1]),
            paddle_info("row_sum", TensorProto.FLOAT, [1]),
        ],
    )
    # while i + 1 < width // 2: grown = concat(grown, grown[:, -1:] * 0.5 + i); i += 1
    while_body = helper.make_graph(
        [
            node("Slice", ["grown_in", "minus_one", "big", "one"], ["last"], name="w_slice"),
            node("Mul", ["last", "half"], ["halved"], name="w_mul"),
            node("Cast", ["j"], ["j_f"], to=TensorProto.FLOAT, name="w_cast"),
            node("Add", ["halved", "j_f"], ["column"], name="w_add"),
            node("Concat", ["grown_in", "column"], ["grown_out"], axis=1, name="w_concat"),
            node("Add", ["j", "one_scalar"], ["j_next"], name="w_inc"),
            node("Add", ["j_next", "one_scalar"], ["j_next_1"], name="w_inc2"),
            node("Less", ["j_next_1", "limit"], ["keep_going"], name="w_less"),
        ],
        "while_body",
        [
            paddle_info("j", TensorProto.INT64, []),
            paddle_info("w_cond_in", TensorProto.BOOL, []),
            paddle_info("grown_in", TensorProto.FLOAT, [-1, -1]),
        ],
        [
            paddle_info("keep_going", TensorProto.BOOL, []),
            paddle_info("grown_out", TensorProto.FLOAT, [-1, -1]),
        ],
    )
    nodes = [
        node("Shape", ["x"], ["shape"], name="shape_0"),
        node("Gather", ["shape", "i0"], ["batch"], axis=0, name="gather_0"),
        node("Gather", ["shape", "i1"], ["width"], axis=0, name="gather_1"),
        node("ConstantOfShape", ["width_1d"], ["acc0"], name="fill_constant_0"),
        node("Loop", ["batch", "true", "acc0"], ["acc", "row_sums"], body=body, name="for_0"),
        node("Div", ["width", "two"], ["limit"], name="elementwise_div_0"),
        node("Slice", ["x", "zero", "one", "one"], ["first"], name="slice_0"),
        node("Loop", ["", "true", "first"], ["grown"], body=while_body, name="while_0"),
    ]
    nodes.insert(3, node("Unsqueeze", ["width", "axes0"], ["width_1d"], name="unsqueeze2_0"))
    model = paddle_model(
        "paddle_loop",
        nodes,
        [paddle_info("x", TensorProto.FLOAT, [-1, -1])],
        [
            paddle_info("acc", TensorProto.FLOAT, [-1]),
            paddle_info("row_sums", TensorProto.FLOAT, [-1, 1]),
            paddle_info("grown", TensorProto.FLOAT, [-1, -1]),
        ],
        [
            numpy_helper.from_array(np.array(0, np.int64), "i0"),
            numpy_helper.from_array(np.array(1, np.int64), "i1"),
            numpy_helper.from_array(np.array(2, np.int64), "two"),
            numpy_helper.from_array(np.array(1, np.int64), "one_scalar"),
            numpy_helper.from_array(np.array(True), "true"),
            numpy_helper.from_array(np.array(0.5, np.float32), "half"),
            ints("axes0", [0]),
            ints("zero", [0]),
            ints("one", [1]),
            ints("minus_one", [-1]),
            ints("big", [1 << 30]),
        ],
    )
    rng = np.random.default_rng(15)

    def feed(batch, width):
        return {"x": rng.normal(0, 1, (batch, width)).astype(np.float32)}

    return paddle_built("paddle_loop_op13", "batch, width", model, [feed(3, 8), feed(5, 5)])


def paddle_dataflow() -> Built:
    node = helper.make_node
    nodes = [
        node("Greater", ["x", "zero_f"], ["positive"], name="greater_than_0"),
        node("NonZero", ["positive"], ["where"], name="where_index_0"),
        node("Transpose", ["where"], ["where_t"], perm=[1, 0], name="transpose2_0"),
        node("GatherND", ["x", "where_t"], ["selected"], name="gather_nd_0"),
        node("ReduceSum", ["selected"], ["selected_sum"], keepdims=0, name="reduce_sum_0"),
        node("Shape", ["x"], ["shape"], name="shape_0"),
        node("Slice", ["shape", "one", "two", "zero"], ["width_1d"], name="slice_0"),
        node("Div", ["width_1d", "two"], ["k"], name="elementwise_div_0"),
        node("TopK", ["x", "k"], ["top_values", "top_indices"], axis=1, name="top_k_v2_0"),
        node("Slice", ["shape", "zero", "one", "zero"], ["batch_1d"], name="slice_1"),
        node("Concat", ["batch_1d", "three"], ["expand_shape"], axis=0, name="concat_0"),
        node("Expand", ["row_bias", "expand_shape"], ["expanded"], name="expand_v2_0"),
        node(
            "ConstantOfShape",
            ["shape"],
            ["ones"],
            name="fill_any_like_0",
            value=numpy_helper.from_array(np.array([1.0], np.float32)),
        ),
        node("Add", ["x", "ones"], ["shifted"], name="elementwise_add_0"),
    ]
    model = paddle_model(
        "paddle_dataflow",
        nodes,
        [paddle_info("x", TensorProto.FLOAT, [-1, -1])],
        [
            paddle_info("selected", TensorProto.FLOAT, [-1]),
            paddle_info("selected_sum", TensorProto.FLOAT, []),
            paddle_info("top_values", TensorProto.FLOAT, [-1, -1]),
            paddle_info("top_indices", TensorProto.INT64, [-1, -1]),
            paddle_info("expanded", TensorProto.FLOAT, [-1, 3]),
            paddle_info("shifted", TensorProto.FLOAT, [-1, -1]),
        ],
        [
            numpy_helper.from_array(np.array(0.0, np.float32), "zero_f"),
            ints("zero", [0]),
            ints("one", [1]),
            ints("two", [2]),
            ints("three", [3]),
            floats("row_bias", [[0.5, -1.0, 2.0]]),
        ],
    )
    rng = np.random.default_rng(16)

    def feed(batch, width):
        # distinct values, so TopK has no ties
        values = rng.permutation(batch * width).astype(np.float32) - batch * width / 2
        return {"x": (values.reshape(batch, width) / 4).astype(np.float32)}

    return paddle_built("paddle_dataflow_op13", "batch, width", model, [feed(2, 6), feed(4, 9)])


# --------------------------------------------------------------------------------------------
# tf2onnx- and keras2onnx-style graphs with onnx.helper


def symbolic_info(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


def tf_style() -> Built:
    """What tf2onnx writes for a small Keras CNN: NHWC input named `input_1:0` with an invented
    `unk__` batch dim, Transposes around each Conv, the Keras Flatten as
    `Reshape(x, Concat(Slice(Shape(x), 0, 1), [-1]))`, MatMul + Add for Dense, names with `/`
    and `:`."""
    rng = np.random.default_rng(24)
    node = helper.make_node
    nodes = [
        node(
            "Transpose",
            ["input_1:0"],
            ["conv2d/Conv2D__6:0"],
            perm=[0, 3, 1, 2],
            name="conv2d/Conv2D__6",
        ),
        node(
            "Conv",
            ["conv2d/Conv2D__6:0", "conv2d/kernel", "conv2d/bias"],
            ["conv2d/BiasAdd:0"],
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            name="conv2d/Conv2D",
        ),
        node("Relu", ["conv2d/BiasAdd:0"], ["conv2d/Relu:0"], name="conv2d/Relu"),
        node(
            "Transpose",
            ["conv2d/Relu:0"],
            ["conv2d/Relu__9:0"],
            perm=[0, 2, 3, 1],
            name="conv2d/Relu__9",
        ),
        node("Shape", ["conv2d/Relu__9:0"], ["flatten/Shape:0"], name="flatten/Shape"),
        node(
            "Slice",
            ["flatten/Shape:0", "const_starts__10", "const_ends__11", "const_axes__12"],
            ["flatten/strided_slice:0"],
            name="flatten/strided_slice",
        ),
        node(
            "Concat",
            ["flatten/strided_slice:0", "const_fold_opt__13"],
            ["flatten/Reshape/shape:0"],
            axis=0,
            name="flatten/Reshape/shape",
        ),
        node(
            "Reshape",
            ["conv2d/Relu__9:0", "flatten/Reshape/shape:0"],
            ["flatten/Reshape:0"],
            name="flatten/Reshape",
        ),
        node(
            "MatMul",
            ["flatten/Reshape:0", "dense/MatMul/ReadVariableOp:0"],
            ["dense/MatMul:0"],
            name="dense/MatMul",
        ),
        node(
            "Add",
            ["dense/MatMul:0", "dense/BiasAdd/ReadVariableOp:0"],
            ["dense/BiasAdd:0"],
            name="dense/BiasAdd",
        ),
        node("Softmax", ["dense/BiasAdd:0"], ["dense/Softmax:0"], axis=1, name="dense/Softmax"),
    ]
    graph = helper.make_graph(
        nodes,
        "tf2onnx",
        [symbolic_info("input_1:0", TensorProto.FLOAT, ["unk__27", 8, 8, 3])],
        [symbolic_info("dense/Softmax:0", TensorProto.FLOAT, ["unk__28", 10])],
        [
            floats("conv2d/kernel", rng.normal(0, 0.3, (6, 3, 3, 3))),
            floats("conv2d/bias", rng.normal(0, 0.1, (6,))),
            ints("const_starts__10", [0]),
            ints("const_ends__11", [1]),
            ints("const_axes__12", [0]),
            ints("const_fold_opt__13", [-1]),
            floats("dense/MatMul/ReadVariableOp:0", rng.normal(0, 0.2, (96, 10))),
            floats("dense/BiasAdd/ReadVariableOp:0", rng.normal(0, 0.1, (10,))),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7, producer_name="tf2onnx"
    )
    onnx.checker.check_model(model)

    def feed(batch):
        return {"input_1:0": rng.normal(0, 1, (batch, 8, 8, 3)).astype(np.float32)}

    return Built(
        "tf_style_cnn_op13",
        "onnx.helper, tf2onnx-style (`unk__` dims, NHWC)",
        13,
        "batch",
        model,
        [feed(2), feed(5)],
    )


def scan_rnn() -> Built:
    """A keras2onnx-style SimpleRNN: a Scan over the time axis of [batch, time, 4] whose body is
    h = tanh(x_t W + h R + b), the initial state zeros of [batch, 8] from Shape."""
    rng = np.random.default_rng(25)
    node = helper.make_node
    body = helper.make_graph(
        [
            node("MatMul", ["x_t", "W"], ["xw"], name="body/MatMul"),
            node("MatMul", ["h_in", "R"], ["hr"], name="body/MatMul_1"),
            node("Add", ["xw", "hr"], ["pre"], name="body/add"),
            node("Add", ["pre", "b"], ["pre_b"], name="body/add_1"),
            node("Tanh", ["pre_b"], ["h_out"], name="body/Tanh"),
            node("Identity", ["h_out"], ["h_scan"], name="body/Identity"),
        ],
        "scan_body",
        [
            helper.make_tensor_value_info("h_in", TensorProto.FLOAT, ["N", 8]),
            helper.make_tensor_value_info("x_t", TensorProto.FLOAT, ["N", 4]),
        ],
        [
            helper.make_tensor_value_info("h_out", TensorProto.FLOAT, ["N", 8]),
            helper.make_tensor_value_info("h_scan", TensorProto.FLOAT, ["N", 8]),
        ],
    )
    nodes = [
        node("Shape", ["inputs"], ["shape"], name="simple_rnn/Shape"),
        node("Slice", ["shape", "zero", "one", "zero"], ["batch"], name="simple_rnn/strided_slice"),
        node("Concat", ["batch", "units"], ["state_shape"], axis=0, name="simple_rnn/zeros/packed"),
        node(
            "ConstantOfShape",
            ["state_shape"],
            ["h0"],
            name="simple_rnn/zeros",
            value=numpy_helper.from_array(np.array([0.0], np.float32)),
        ),
        node(
            "Scan",
            ["h0", "inputs"],
            ["h_last", "states"],
            body=body,
            num_scan_inputs=1,
            scan_input_axes=[1],
            scan_output_axes=[1],
            name="simple_rnn/while",
        ),
        node(
            "ReduceMean",
            ["states"],
            ["pooled"],
            axes=[1],
            keepdims=0,
            name="global_average_pooling1d/Mean",
        ),
        node("Add", ["pooled", "h_last"], ["features"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "keras2onnx",
        [helper.make_tensor_value_info("inputs", TensorProto.FLOAT, ["N", "T", 4])],
        [
            helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", 8]),
            helper.make_tensor_value_info("states", TensorProto.FLOAT, ["N", "T", 8]),
        ],
        [
            floats("W", rng.normal(0, 0.5, (4, 8))),
            floats("R", rng.normal(0, 0.3, (8, 8))),
            floats("b", rng.normal(0, 0.1, (8,))),
            ints("zero", [0]),
            ints("one", [1]),
            ints("units", [8]),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=6, producer_name="keras2onnx"
    )
    onnx.checker.check_model(model)

    def feed(batch, time):
        return {"inputs": rng.normal(0, 1, (batch, time, 4)).astype(np.float32)}

    return Built(
        "scan_rnn_op11",
        "onnx.helper, keras2onnx-style Scan",
        11,
        "batch, time",
        model,
        [feed(2, 5), feed(3, 9)],
    )


# --------------------------------------------------------------------------------------------
# ConvNeXt


class ChannelsFirstLayerNorm(nn.Module):
    """ConvNeXt's LayerNorm over the channel axis of NCHW, written with mean/pow as its authors do."""

    def __init__(self, channels, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(1, keepdim=True)
        var = (x - mean).pow(2).mean(1, keepdim=True)
        x = (x - mean) / torch.sqrt(var + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(0.5 + torch.rand(dim))

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x).permute(0, 2, 3, 1)
        x = self.pwconv2(F.gelu(self.pwconv1(self.norm(x))))
        return shortcut + (self.gamma * x).permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    def __init__(self, dims=(16, 32), classes=10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, dims[0], 4, stride=4), ChannelsFirstLayerNorm(dims[0])
        )
        self.stage0 = ConvNeXtBlock(dims[0])
        self.down = nn.Sequential(
            ChannelsFirstLayerNorm(dims[0]), nn.Conv2d(dims[0], dims[1], 2, stride=2)
        )
        self.stage1 = ConvNeXtBlock(dims[1])
        self.norm = nn.LayerNorm(dims[1])
        self.head = nn.Linear(dims[1], classes)

    def forward(self, x):
        x = self.stage1(self.down(self.stage0(self.stem(x))))
        return self.head(self.norm(x.mean([-2, -1])))


def convnext() -> Built:
    return image_classifier(
        "convnext_legacy_op17", 17, ConvNeXt, 21, (64, 64), [(1, 32, 48), (3, 64, 40)]
    )


# --------------------------------------------------------------------------------------------
# Swin-style shifted-window attention


class WindowAttention(nn.Module):
    def __init__(self, dim, heads, window):
        super().__init__()
        self.dim, self.heads, self.window = dim, heads, window
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.table = nn.Parameter(0.1 * torch.randn((2 * window - 1) ** 2, heads))
        coords = torch.stack(
            torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")
        )
        flat = coords.flatten(1)
        relative = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0) + (window - 1)
        self.register_buffer("index", relative[..., 0] * (2 * window - 1) + relative[..., 1])

    def forward(self, x):  # x: (windows * batch, window * window, dim)
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attention = (q * (c // self.heads) ** -0.5) @ k.transpose(-2, -1)
        bias = self.table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        attention = (attention + bias.unsqueeze(0)).softmax(-1)
        return self.proj((attention @ v).transpose(1, 2).reshape(b, n, c))


class SwinBlock(nn.Module):
    def __init__(self, dim=16, heads=2, window=4, shift=2):
        super().__init__()
        self.window, self.shift = window, shift
        self.norm1 = nn.LayerNorm(dim)
        self.attention = WindowAttention(dim, heads, window)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):  # x: (batch, height, width, dim), height and width multiples of window
        b, h, w, c = x.shape
        ws = self.window
        shortcut = x
        x = torch.roll(self.norm1(x), shifts=(-self.shift, -self.shift), dims=(1, 2))
        windows = x.view(b, h // ws, ws, w // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        windows = self.attention(windows.reshape(-1, ws * ws, c))
        x = (
            windows.view(b, h // ws, w // ws, ws, ws, c)
            .permute(0, 1, 3, 2, 4, 5)
            .reshape(b, h, w, c)
        )
        x = shortcut + torch.roll(x, shifts=(self.shift, self.shift), dims=(1, 2))
        return x + self.mlp(self.norm2(x))


class Swin(nn.Module):
    def __init__(self, dim=16, classes=5):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 2, stride=2)
        self.block = SwinBlock(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, image):
        x = self.block(self.patch(image).permute(0, 2, 3, 1))
        return self.head(x.mean((1, 2)))


def swin() -> Built:
    return image_classifier("swin_legacy_op17", 17, Swin, 22, (16, 24), [(1, 16, 16), (3, 24, 32)])


# --------------------------------------------------------------------------------------------
# Whisper-style audio encoder (dynamo)


class WhisperEncoder(nn.Module):
    def __init__(self, mels=8, dim=32, heads=4, layers=2, max_frames=256):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, dim, 3, padding=1)
        self.conv2 = nn.Conv1d(dim, dim, 3, stride=2, padding=1)
        position = torch.arange(max_frames)[:, None]
        scales = torch.exp(-math.log(10000) * torch.arange(dim // 2) / (dim // 2 - 1))
        self.register_buffer(
            "positions", torch.cat([torch.sin(position * scales), torch.cos(position * scales)], 1)
        )
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(
                dim,
                heads,
                2 * dim,
                dropout=0.0,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
            for _ in range(layers)
        )
        self.norm = nn.LayerNorm(dim)

    def forward(self, mel):  # (batch, mels, frames)
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).permute(0, 2, 1)
        x = x + self.positions[: x.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


def whisper_encoder() -> Built:
    seeded(23)
    module = perturb(WhisperEncoder(), 23)
    rng = np.random.default_rng(23)

    def mel(batch, frames):
        return rng.normal(0, 1, (batch, 8, frames)).astype(np.float32)

    example = {"mel": mel(2, 40)}
    feeds = [{"mel": mel(2, 30)}, {"mel": mel(3, 64)}]
    batch, frames = torch.export.Dim("batch", min=2, max=64), torch.export.Dim(
        "frames", min=8, max=500
    )
    shapes = {"mel": {0: batch, 2: 2 * frames}}
    model = export_dynamo(module, example, 18, ["mel"], ["features"], shapes)
    return torch_built(
        "whisper_encoder_dynamo_op18",
        "torch.onnx dynamo, optimize=True",
        18,
        "batch, frames",
        module,
        model,
        feeds,
    )


# --------------------------------------------------------------------------------------------
# Seq2seq decoder with cross-attention (BART/T5-like), legacy exporter


class BartAttention(nn.Module):
    """Attention as HF's BART writes it: separate projections, `view(b, -1, heads, head_dim)`."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))

    def split(self, x):
        return x.view(x.shape[0], -1, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x, source, bias):
        q = self.split(self.q(x) * self.head_dim**-0.5)
        scores = q @ self.split(self.k(source)).transpose(-1, -2) + bias
        out = scores.softmax(-1) @ self.split(self.v(source))
        return self.o(out.transpose(1, 2).reshape(x.shape[0], x.shape[1], -1))


class CrossDecoderLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.self_attention = BartAttention(dim, heads)
        self.cross_attention = BartAttention(dim, heads)
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(3))
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, x, memory, causal, memory_padding):
        h = self.norms[0](x)
        x = x + self.self_attention(h, h, causal)
        x = x + self.cross_attention(self.norms[1](x), memory, memory_padding)
        return x + self.mlp(self.norms[2](x))


class Seq2SeqDecoder(nn.Module):
    def __init__(self, vocab=40, dim=32, heads=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(64, dim)
        self.layers = nn.ModuleList(CrossDecoderLayer(dim, heads) for _ in range(2))
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens, memory, memory_mask):
        length = tokens.shape[1]
        x = self.embed(tokens) + self.position(torch.arange(length, device=tokens.device))
        causal = torch.triu(torch.full((length, length), torch.finfo(torch.float32).min), 1)
        padding = (1.0 - memory_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, memory, causal, padding)
        return self.lm_head(x).log_softmax(-1)


def seq2seq_decoder() -> Built:
    seeded(24)
    module = perturb(Seq2SeqDecoder(), 24)
    rng = np.random.default_rng(24)

    def feed(batch, length, source):
        mask = np.ones((batch, source), np.int64)
        for b in range(batch):
            mask[b, max(1, source - 2 * b) :] = 0
        return {
            "tokens": rng.integers(0, 40, (batch, length)).astype(np.int64),
            "memory": rng.normal(0, 1, (batch, source, 32)).astype(np.float32),
            "memory_mask": mask,
        }

    example = feed(2, 5, 7)
    feeds = [feed(1, 3, 4), feed(3, 9, 11)]
    axes = {
        "tokens": {0: "batch", 1: "length"},
        "memory": {0: "batch", 1: "source"},
        "memory_mask": {0: "batch", 1: "source"},
        "log_probs": {0: "batch", 1: "length"},
    }
    return legacy_built(
        "seq2seq_decoder_legacy_op14", 14, "batch, length, source", module, example, feeds, axes
    )


# --------------------------------------------------------------------------------------------
# TCN: dilated causal Conv1d


class TemporalBlock(nn.Module):
    def __init__(self, channels_in, channels, dilation):
        super().__init__()
        self.pad = 2 * dilation
        self.conv1 = nn.Conv1d(channels_in, channels, 3, dilation=dilation)
        self.conv2 = nn.Conv1d(channels, channels, 3, dilation=dilation)
        self.residual = nn.Conv1d(channels_in, channels, 1) if channels_in != channels else None

    def forward(self, x):
        h = F.relu(self.conv1(F.pad(x, (self.pad, 0))))
        h = F.relu(self.conv2(F.pad(h, (self.pad, 0))))
        return F.relu(h + (x if self.residual is None else self.residual(x)))


class TCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(
            TemporalBlock(4, 16, 1), TemporalBlock(16, 16, 2), TemporalBlock(16, 16, 4)
        )
        self.head = nn.Linear(16, 3)

    def forward(self, x):  # (batch, 4, time) -> (batch, time, 3)
        return self.head(self.blocks(x).transpose(1, 2))


def tcn() -> Built:
    seeded(25)
    module = TCN().eval()
    rng = np.random.default_rng(25)

    def feed(batch, time):
        return {"signal": rng.normal(0, 1, (batch, 4, time)).astype(np.float32)}

    axes = {"signal": {0: "batch", 2: "time"}, "scores": {0: "batch", 1: "time"}}
    return legacy_built(
        "tcn_legacy_op13", 13, "batch, time", module, feed(2, 20), [feed(1, 7), feed(3, 50)], axes
    )


# --------------------------------------------------------------------------------------------
# Graph neural network: message passing with index_add / scatter_add


class GraphConv(nn.Module):
    def __init__(self, dim_in, dim):
        super().__init__()
        self.message = nn.Linear(dim_in, dim)
        self.update = nn.Linear(dim_in + dim, dim)

    def forward(self, x, source, target):
        messages = self.message(x[source])
        index = target.unsqueeze(1).expand(-1, messages.shape[1])
        summed = torch.zeros(x.shape[0], messages.shape[1]).scatter_add(0, index, messages)
        degree = torch.zeros(x.shape[0]).scatter_add(
            0, target, torch.ones_like(target, dtype=torch.float32)
        )
        mean = summed / degree.clamp(min=1).unsqueeze(1)
        return F.relu(self.update(torch.cat([x, mean], 1)))


class GNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = GraphConv(6, 16)
        self.conv2 = GraphConv(16, 16)
        self.head = nn.Linear(16, 2)

    def forward(self, features, edges):
        source, target = edges[0], edges[1]
        h = self.conv2(self.conv1(features, source, target), source, target)
        return self.head(h.max(0).values)


def gnn() -> Built:
    seeded(26)
    module = GNN().eval()
    rng = np.random.default_rng(26)

    def feed(nodes, edges):
        return {
            "features": rng.normal(0, 1, (nodes, 6)).astype(np.float32),
            "edges": rng.integers(0, nodes, (2, edges)).astype(np.int64),
        }

    axes = {"features": {0: "nodes"}, "edges": {1: "edges"}}
    return legacy_built(
        "gnn_legacy_op16",
        16,
        "nodes, edges",
        module,
        feed(5, 9),
        [feed(3, 4), feed(12, 40)],
        axes,
        outputs=["graph_scores"],
    )


# --------------------------------------------------------------------------------------------
# Mixture of experts: top-2 routing with dynamic token selection


class MoE(nn.Module):
    def __init__(self, dim=16, experts=4):
        super().__init__()
        self.router = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, 2 * dim), nn.SiLU(), nn.Linear(2 * dim, dim))
            for _ in range(experts)
        )

    def forward(self, x):  # (tokens, dim)
        weights = self.router(x).softmax(-1)
        top_weights, top_experts = weights.topk(2, dim=-1)
        top_weights = top_weights / top_weights.sum(-1, keepdim=True)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            token, slot = torch.where(top_experts == e)
            out = out.index_add(0, token, expert(x[token]) * top_weights[token, slot, None])
        return out


def moe() -> Built:
    seeded(27)
    module = MoE().eval()
    rng = np.random.default_rng(27)

    def feed(tokens):
        return {"hidden": rng.normal(0, 1, (tokens, 16)).astype(np.float32)}

    axes = {"hidden": {0: "tokens"}, "mixed": {0: "tokens"}}
    return legacy_built(
        "moe_legacy_op17", 17, "tokens", module, feed(10), [feed(3), feed(25)], axes
    )


# --------------------------------------------------------------------------------------------
# Super-resolution: PixelShuffle and bilinear upsampling


class SuperResolution(nn.Module):
    def __init__(self, scale=2):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 5, padding=2),
            nn.Tanh(),
            nn.Conv2d(16, 3 * scale * scale, 3, padding=1),
        )
        self.shuffle = nn.PixelShuffle(scale)
        self.scale = scale

    def forward(self, x):
        base = F.interpolate(x, scale_factor=self.scale, mode="bilinear", align_corners=False)
        return base + self.shuffle(self.body(x))


def super_resolution(opset: int) -> Built:
    seeded(28)
    module = SuperResolution().eval()
    rng = np.random.default_rng(28)
    example = {"image": images(rng, 1, 16, 16)}
    feeds = [{"image": images(rng, 1, 12, 20)}, {"image": images(rng, 2, 24, 16)}]
    axes = {
        "image": {0: "batch", 2: "height", 3: "width"},
        "upscaled": {0: "batch", 2: "h2", 3: "w2"},
    }
    return legacy_built(
        f"super_resolution_legacy_op{opset}",
        opset,
        "batch, height, width",
        module,
        example,
        feeds,
        axes,
    )


# --------------------------------------------------------------------------------------------
# Convolutional autoencoder: ConvTranspose with output_padding


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 8, 3, stride=2, padding=1),
            nn.BatchNorm2d(8),
            nn.LeakyReLU(0.1),
            nn.Conv2d(8, 16, 3, stride=2, padding=1),
            nn.ELU(),
        )
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.ConvTranspose2d(8, 1, 3, stride=2, padding=1, output_padding=1),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.decoder(self.encoder(x))


def autoencoder() -> Built:
    seeded(29)
    module = perturb(AutoEncoder(), 29)
    rng = np.random.default_rng(29)

    def feed(batch, h, w):
        return {"image": rng.random((batch, 1, h, w)).astype(np.float32)}

    axes = {
        "image": {0: "batch", 2: "height", 3: "width"},
        "reconstruction": {0: "batch", 2: "height", 3: "width"},
    }
    return legacy_built(
        "autoencoder_legacy_op13",
        13,
        "batch, height, width",
        module,
        feed(2, 16, 16),
        [feed(1, 8, 12), feed(3, 28, 20)],
        axes,
    )


# --------------------------------------------------------------------------------------------
# Spatial transformer: affine_grid + grid_sample


class SpatialTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.localization = nn.Sequential(nn.Conv2d(1, 4, 5), nn.MaxPool2d(2), nn.ReLU())
        self.theta = nn.Linear(4, 6)
        with torch.no_grad():
            self.theta.weight.mul_(0.1)
            self.theta.bias.copy_(torch.tensor([1.0, 0.1, 0.0, -0.1, 0.9, 0.05]))
        self.classifier = nn.Conv2d(1, 3, 3)

    def forward(self, x):
        features = self.localization(x).mean((2, 3))
        theta = self.theta(features).view(-1, 2, 3)
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        warped = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        return self.classifier(warped).amax((2, 3))


def spatial_transformer() -> Built:
    seeded(30)
    module = SpatialTransformer().eval()
    rng = np.random.default_rng(30)

    def feed(batch, h, w):
        return {"image": rng.random((batch, 1, h, w)).astype(np.float32)}

    axes = {"image": {0: "batch", 2: "height", 3: "width"}, "scores": {0: "batch"}}
    return legacy_built(
        "spatial_transformer_legacy_op20",
        20,
        "batch, height, width",
        module,
        feed(2, 20, 20),
        [feed(1, 16, 24), feed(3, 28, 28)],
        axes,
    )


# --------------------------------------------------------------------------------------------
# Audio front end: torch.stft, mel projection, log, Conv


class AudioClassifier(nn.Module):
    def __init__(self, n_fft=64, hop=16, mels=10):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("mel", torch.rand(n_fft // 2 + 1, mels))
        self.conv = nn.Conv1d(mels, 8, 3, padding=1)
        self.head = nn.Linear(8, 4)

    def forward(self, audio):  # (batch, samples)
        spectrum = torch.stft(
            audio, self.n_fft, self.hop, window=self.window, center=False, return_complex=False
        )
        power = spectrum.pow(2).sum(-1)  # (batch, bins, frames)
        features = torch.log(power.transpose(1, 2) @ self.mel + 1e-6).transpose(1, 2)
        return self.head(F.relu(self.conv(features)).mean(-1))


def audio_classifier() -> Built:
    seeded(31)
    module = AudioClassifier().eval()
    rng = np.random.default_rng(31)

    def feed(batch, samples):
        return {"audio": rng.normal(0, 0.3, (batch, samples)).astype(np.float32)}

    axes = {"audio": {0: "batch", 1: "samples"}, "scores": {0: "batch"}}
    return legacy_built(
        "audio_stft_legacy_op17",
        17,
        "batch, samples",
        module,
        feed(2, 400),
        [feed(1, 160), feed(3, 1000)],
        axes,
    )


# --------------------------------------------------------------------------------------------
# TorchScript greedy decoding loop with an early exit


class GreedyDecoder(nn.Module):
    def __init__(self, vocab: int = 12, dim: int = 16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.input = nn.Linear(dim, dim)
        self.recurrent = nn.Linear(dim, dim, bias=False)
        self.out = nn.Linear(dim, vocab)

    def forward(self, state: torch.Tensor, max_steps: torch.Tensor) -> torch.Tensor:
        token = torch.zeros_like(state[:, 0]).long()
        tokens = []
        for _ in range(int(max_steps)):
            state = torch.tanh(self.input(self.embed(token)) + self.recurrent(state))
            token = self.out(state).argmax(-1)
            tokens.append(token)
            if bool((token == 1).all()):
                break
        return torch.cat([t.unsqueeze(1) for t in tokens], 1)


def script_greedy() -> Built:
    seeded(32)
    module = GreedyDecoder().eval()
    scripted = torch.jit.script(module)
    rng = np.random.default_rng(32)

    def feed(batch, steps):
        return {
            "state": rng.normal(0, 1, (batch, 16)).astype(np.float32),
            "max_steps": np.array(steps, np.int64),
        }

    axes = {"state": {0: "batch"}, "tokens": {0: "batch", 1: "steps"}}
    model = export_legacy(scripted, feed(2, 5), 17, ["state", "max_steps"], ["tokens"], axes)
    feeds = [feed(1, 4), feed(3, 9)]
    return torch_built(
        "script_greedy_op17",
        "torch.jit.script + torch.onnx legacy",
        17,
        "batch, steps",
        module,
        model,
        feeds,
    )


# --------------------------------------------------------------------------------------------
# Ranking: argsort, cumsum, masks


class Ranker(nn.Module):
    def forward(self, scores, lengths):  # (batch, items), (batch,)
        positions = torch.arange(scores.shape[1]).unsqueeze(0)
        valid = positions < lengths.unsqueeze(1)
        masked = scores.masked_fill(~valid, float("-inf"))
        order = masked.argsort(-1, descending=True)
        ranked = masked.gather(1, order)
        gains = torch.where(torch.isinf(ranked), torch.zeros_like(ranked), ranked.exp())
        discounts = 1.0 / torch.log2(positions.float() + 2.0)
        return order, (gains * discounts).cumsum(-1)


def ranker() -> Built:
    module = Ranker().eval()
    rng = np.random.default_rng(33)

    def feed(batch, items):
        return {
            "scores": rng.normal(0, 1, (batch, items)).astype(np.float32),
            "lengths": rng.integers(1, items + 1, (batch,)).astype(np.int64),
        }

    axes = {
        "scores": {0: "batch", 1: "items"},
        "lengths": {0: "batch"},
        "order": {0: "batch", 1: "items"},
        "dcg": {0: "batch", 1: "items"},
    }
    model = export_legacy(module, feed(2, 6), 17, ["scores", "lengths"], ["order", "dcg"], axes)
    feeds = [feed(1, 3), feed(4, 11)]
    return torch_built(
        "ranker_legacy_op17", "torch.onnx legacy", 17, "batch, items", module, model, feeds
    )


# --------------------------------------------------------------------------------------------
# float16 MLP


class HalfMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(12, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4)
        )

    def forward(self, x):
        return self.layers(x).softmax(-1)


def half_mlp() -> Built:
    seeded(34)
    module = HalfMLP().eval().half()
    rng = np.random.default_rng(34)

    def feed(batch):
        return {"features": rng.normal(0, 1, (batch, 12)).astype(np.float16)}

    axes = {"features": {0: "batch"}, "probabilities": {0: "batch"}}
    return legacy_built(
        "half_mlp_legacy_op17",
        17,
        "batch",
        module,
        feed(4),
        [feed(1), feed(7)],
        axes,
        made_by="torch.onnx legacy (module.half())",
    )


# --------------------------------------------------------------------------------------------
# Models rewritten by onnxruntime's own tools from the exports above (read back from the output
# folder, so their sources are built first): the transformer optimizer's fusions and the
# quantization tool's dynamic, QDQ and QOperator formats.


def stored_feeds(source: str, out: Path) -> list[dict[str, np.ndarray]]:
    with np.load(out / f"{source}.npz") as data:
        sets: dict[int, dict[str, np.ndarray]] = {}
        for key in data.files:
            k, kind, name = key.split(":", 2)
            if kind == "input":
                sets.setdefault(int(k), {})[name] = data[key]
    return [sets[k] for k in sorted(sets)]


def ort_optimized(source: str, model_type: str, out: Path) -> Built:
    """`onnxruntime.transformers.optimizer.optimize_model(model_type=..., opt_level=1)`: heads and
    hidden size found by the optimizer itself (num_heads=0, hidden_size=0)."""
    from onnxruntime.transformers import optimizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optimized = optimizer.optimize_model(
            str(out / f"{source}.onnx"),
            model_type=model_type,
            num_heads=0,
            hidden_size=0,
            opt_level=1,
        )
    model = optimized.model
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    made_by = f"onnxruntime.transformers optimizer (model_type {model_type}) of {source}"
    return Built(
        f"{source}_ortopt", made_by, opset, "as the source", model, stored_feeds(source, out)
    )


class _Calibration:
    """Seeded calibration batches for quantize_static (the CalibrationDataReader protocol)."""

    def __init__(self, feeds: list[dict[str, np.ndarray]], seed: int):
        rng = np.random.default_rng(seed)
        self.batches = iter(
            [
                {n: rng.normal(0, 1, v.shape).astype(v.dtype) for n, v in f.items()}
                for f in feeds * 2
            ]
        )

    def get_next(self):
        return next(self.batches, None)


def ort_quantized(source: str, mode: str, out: Path) -> Built:
    """onnxruntime.quantization: `dynamic` (quantize_dynamic, int8 weights), `qdq` and `qop`
    (quantize_static, uint8 activations and int8 weights, QDQ or QOperator format, calibrated on
    seeded normal batches of the stored feeds' shapes)."""
    import tempfile

    from onnxruntime import quantization as q

    feeds = stored_feeds(source, out)
    with tempfile.TemporaryDirectory() as scratch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        target = Path(scratch) / "quantized.onnx"
        if mode == "dynamic":
            q.quantize_dynamic(out / f"{source}.onnx", target, weight_type=q.QuantType.QInt8)
            how = "quantize_dynamic (int8 weights)"
        else:
            q.quantize_static(
                out / f"{source}.onnx",
                target,
                _Calibration(feeds, seed=40),
                quant_format=q.QuantFormat.QDQ if mode == "qdq" else q.QuantFormat.QOperator,
                activation_type=q.QuantType.QUInt8,
                weight_type=q.QuantType.QInt8,
            )
            how = f"quantize_static ({'QDQ' if mode == 'qdq' else 'QOperator'} format)"
        model = onnx.load(target)
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    made_by = f"onnxruntime.quantization {how} of {source}"
    suffix = {"dynamic": "qdynamic", "qdq": "qdq", "qop": "qoperator"}[mode]
    return Built(f"{source}_{suffix}", made_by, opset, "as the source", model, feeds)


# --------------------------------------------------------------------------------------------

BUILDERS: dict[str, Callable[..., Built]] = {
    "bert_legacy_op11": lambda: bert(11, dynamo=False),
    "bert_legacy_op14": lambda: bert(14, dynamo=False),
    "bert_legacy_op17": lambda: bert(17, dynamo=False),
    "bert_dynamo_op18": lambda: bert(18, dynamo=True),
    "gpt2_legacy_op14": lambda: gpt2(14),
    "gpt2_legacy_op17": lambda: gpt2(17),
    "gpt2_past_legacy_op14": gpt2_past,
    "llama_legacy_op17": llama,
    "decoder_sdpa_dynamo_op23": sdpa_decoder,
    "vit_legacy_op17": vit,
    "resnet_legacy_op14": resnet,
    "mobilenetv2_legacy_op17": lambda: mobilenetv2(dynamo=False),
    "mobilenetv2_dynamo_op18": lambda: mobilenetv2(dynamo=True),
    "lstm_tagger_legacy_op14": lambda: tagger("lstm", 14),
    "gru_tagger_legacy_op17": lambda: tagger("gru", 17),
    "mlp_legacy_op14": mlp,
    "dataflow_legacy_op17": dataflow,
    "script_loop_if_append_op17": script_loop_if_append,
    "script_if_rank_op17": script_if_rank,
    "unet_legacy_op9": lambda: unet(9),
    "unet_legacy_op17": lambda: unet(17),
    "crnn_legacy_op14": crnn,
    "yolo_legacy_op12": lambda: yolo(12),
    "yolo_legacy_op14": lambda: yolo(14),
    "t5_encoder_legacy_op14": t5,
    "cond_dynamo_op18": cond_dynamo,
    "paddle_reshape_reduce_op13": paddle_reshape_reduce,
    "paddle_shape_arith_op13": paddle_shape_arith,
    "paddle_if_shape_op13": paddle_if_shape,
    "paddle_loop_op13": paddle_loop,
    "paddle_dataflow_op13": paddle_dataflow,
    "tf_style_cnn_op13": tf_style,
    "scan_rnn_op11": scan_rnn,
    "convnext_legacy_op17": convnext,
    "swin_legacy_op17": swin,
    "whisper_encoder_dynamo_op18": whisper_encoder,
    "seq2seq_decoder_legacy_op14": seq2seq_decoder,
    "tcn_legacy_op13": tcn,
    "gnn_legacy_op16": gnn,
    "moe_legacy_op17": moe,
    "super_resolution_legacy_op11": lambda: super_resolution(11),
    "super_resolution_legacy_op18": lambda: super_resolution(18),
    "autoencoder_legacy_op13": autoencoder,
    "spatial_transformer_legacy_op20": spatial_transformer,
    "audio_stft_legacy_op17": audio_classifier,
    "script_greedy_op17": script_greedy,
    "ranker_legacy_op17": ranker,
    "half_mlp_legacy_op17": half_mlp,
    # onnxruntime's tools applied to the exports above (each builder takes the output folder)
    "bert_legacy_op14_ortopt": lambda out: ort_optimized("bert_legacy_op14", "bert", out),
    "gpt2_legacy_op14_ortopt": lambda out: ort_optimized("gpt2_legacy_op14", "gpt2", out),
    "vit_legacy_op17_ortopt": lambda out: ort_optimized("vit_legacy_op17", "vit", out),
    "llama_legacy_op17_ortopt": lambda out: ort_optimized("llama_legacy_op17", "gpt2", out),
    "gpt2_legacy_op14_qdynamic": lambda out: ort_quantized("gpt2_legacy_op14", "dynamic", out),
    "vit_legacy_op17_qdynamic": lambda out: ort_quantized("vit_legacy_op17", "dynamic", out),
    "resnet_legacy_op14_qdq": lambda out: ort_quantized("resnet_legacy_op14", "qdq", out),
    "resnet_legacy_op14_qoperator": lambda out: ort_quantized("resnet_legacy_op14", "qop", out),
    "mobilenetv2_legacy_op17_qdq": lambda out: ort_quantized("mobilenetv2_legacy_op17", "qdq", out),
    "mobilenetv2_legacy_op17_qoperator": lambda out: ort_quantized(
        "mobilenetv2_legacy_op17", "qop", out
    ),
}


# The builders that read an earlier model back from the output folder.
DERIVED = frozenset(
    n for n in BUILDERS if n.endswith(("_ortopt", "_qdynamic", "_qdq", "_qoperator"))
)


def build(name: str, out: Path) -> dict:
    builder = BUILDERS[name]
    built = builder(out) if name in DERIVED else builder()
    assert built.name == name, (built.name, name)
    return save_built(built, out, "torch")


ABOUT = [
    "Needs torch: `.venv/bin/pip install torch==2.13.0 onnxscript==0.7.2`, then "
    "`.venv/bin/python -m tools.make_real_models`.",
    "",
    "- torch.onnx legacy: `torch.onnx.export(module, args, dynamo=False, opset_version=OPSET, "
    "input_names=..., output_names=..., dynamic_axes=..., do_constant_folding=True)` "
    "(a `torch.jit.script` module for the script_* models), torch 2.13.0.",
    "- torch.onnx dynamo: `torch.onnx.export(module, args, dynamo=True, opset_version=OPSET, "
    "input_names=..., output_names=..., dynamic_shapes=(torch.export.Dim ...), "
    "optimize=True)`, onnxscript 0.7.2; each node's stack-trace metadata dropped.",
    "- onnx.helper: written node by node in the style of the named converter.",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", nargs="*", help="rebuild only these models (no README)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.only or list(BUILDERS)
    rows = []
    for name in names:
        row = build(name, args.out)
        rows.append(row)
        print(f"{name}: {row['bytes']} bytes, {row['sizes']}")
    if not args.only:
        remove_models(args.out, write_readme_section(args.out, TOOL, ABOUT, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
