"""Exports the transformer models of tools/bench_data/ with torch.onnx (needs torch; the benchmark
itself does not: it reads the committed .onnx files).

    .venv/bin/pip install torch    # CPU wheel, into your own venv only: not a project dependency
    .venv/bin/python -m tools.bench_data.export_models

The models are small copies of Hugging Face's BERT, MiniLM (BERT code with
scaled_dot_product_attention, as transformers >= 4.36 runs it), GPT-2 and ViT, written here in
plain torch as those classes compute them, exported by the TorchScript exporter
(`dynamo=False`) at opsets 14 and 17 with dynamic batch and sequence axes. That is what the
exporters write for them: at opset 14 LayerNorm decomposed (ReduceMean, Sub, Pow, ReduceMean, Add,
Sqrt, Div, Mul, Add), the erf Gelu in five nodes, GPT-2's `gelu_new` as the tanh formula, its
Conv1D as Gemm between Reshapes, and its causal mask sliced from a buffer by Shape arithmetic.

The weights are seeded random; to keep the repository small, every float initializer with more
than `KEEP` elements is written with its data removed (dims kept, marked in its doc_string) and
`tools/bench_models.py` fills it in again from a seed, so the files hold the exporter's graph and
its small constants exactly and a few kB of everything else.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper
import torch
from torch import nn
from torch.nn import functional as F

HERE = Path(__file__).resolve().parent
KEEP = 4096  # float initializers up to this many elements keep their data
SEEDED = "seeded"  # doc_string of an initializer whose data the loader regenerates


class SelfAttention(nn.Module):
    """BertSelfAttention (eager) or BertSdpaSelfAttention (sdpa=True)."""

    def __init__(self, hidden: int, heads: int, sdpa: bool):
        super().__init__()
        self.heads, self.head_dim, self.sdpa = heads, hidden // heads, sdpa
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def split(self, x):
        shape = x.size()[:-1] + (self.heads, self.head_dim)
        return x.view(shape).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        if self.sdpa:
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
            if mask is not None:
                scores = scores + mask
            probs = nn.functional.softmax(scores, dim=-1)
            context = torch.matmul(probs, v)
        context = context.permute(0, 2, 1, 3).contiguous()
        return context.view(context.size()[:-2] + (self.heads * self.head_dim,))


class BertLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, sdpa: bool, eps: float):
        super().__init__()
        self.attention = SelfAttention(hidden, heads, sdpa)
        self.attention_output = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Linear(hidden, ffn)
        self.output = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x, mask):
        x = self.norm1(self.attention_output(self.attention(x, mask)) + x)
        return self.norm2(self.output(F.gelu(self.intermediate(x))) + x)


class Bert(nn.Module):
    def __init__(self, vocab=1000, hidden=384, heads=6, layers=2, ffn=1536, sdpa=False, eps=1e-12):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(512, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, ffn, sdpa, eps) for _ in range(layers))
        self.register_buffer("position_ids", torch.arange(512).unsqueeze(0), persistent=False)

    def forward(self, input_ids, attention_mask, token_type_ids):
        seq = input_ids.size(1)
        x = self.word(input_ids) + self.token_type(token_type_ids)
        x = self.norm(x + self.position(self.position_ids[:, :seq]))
        # get_extended_attention_mask: (1 - mask) * finfo.min, as [B, 1, 1, S]
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, mask)
        return x


def gelu_new(x):
    """GPT-2's activation (transformers' NewGELUActivation)."""
    return (
        0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    )


class Conv1D(nn.Module):
    """GPT-2's linear layer: addmm on the rows, which torch.onnx writes as Gemm."""

    def __init__(self, n_in: int, n_out: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_in, n_out) * 0.02)
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        shape = x.size()[:-1] + (self.weight.size(-1),)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(shape)


class GptBlock(nn.Module):
    def __init__(self, hidden: int, heads: int, positions: int):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.ln_1 = nn.LayerNorm(hidden)
        self.c_attn = Conv1D(hidden, 3 * hidden)
        self.c_proj = Conv1D(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = Conv1D(hidden, 4 * hidden)
        self.mlp_proj = Conv1D(4 * hidden, hidden)
        bias = torch.tril(torch.ones(positions, positions, dtype=torch.bool))
        self.register_buffer("bias", bias.view(1, 1, positions, positions), persistent=False)

    def split(self, x):
        return x.view(x.size()[:-1] + (self.heads, self.head_dim)).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.c_attn(self.ln_1(x)).split(self.heads * self.head_dim, dim=2)
        q, k, v = self.split(q), self.split(k), self.split(v)
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / torch.full([], v.size(-1) ** 0.5, dtype=scores.dtype)
        query_length, key_length = q.size(-2), k.size(-2)
        causal = self.bias[:, :, key_length - query_length : key_length, :key_length]
        lowest = torch.full([], torch.finfo(scores.dtype).min, dtype=scores.dtype)
        scores = torch.where(causal, scores, lowest)
        context = torch.matmul(nn.functional.softmax(scores, dim=-1), v)
        context = context.permute(0, 2, 1, 3).contiguous()
        context = context.view(context.size()[:-2] + (self.heads * self.head_dim,))
        x = x + self.c_proj(context)
        return x + self.mlp_proj(gelu_new(self.c_fc(self.ln_2(x))))


class Gpt2(nn.Module):
    def __init__(self, vocab=1000, hidden=384, heads=6, layers=2, positions=256):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(positions, hidden)
        self.blocks = nn.ModuleList(GptBlock(hidden, heads, positions) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.size(-1), dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return torch.matmul(self.ln_f(x), self.wte.weight.t())  # tied LM head


class VitLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
        self.attention = SelfAttention(hidden, heads, sdpa=False)
        self.attention_output = nn.Linear(hidden, hidden)
        self.norm2 = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, ffn)
        self.output = nn.Linear(ffn, hidden)

    def forward(self, x):
        x = x + self.attention_output(self.attention(self.norm1(x), None))
        return x + self.output(F.gelu(self.intermediate(self.norm2(x))))


class Vit(nn.Module):
    def __init__(self, size=224, patch=16, hidden=384, heads=6, layers=2, ffn=1536, classes=1000):
        super().__init__()
        self.patches = nn.Conv2d(3, hidden, patch, stride=patch)
        self.cls = nn.Parameter(torch.randn(1, 1, hidden) * 0.02)
        self.position = nn.Parameter(torch.randn(1, (size // patch) ** 2 + 1, hidden) * 0.02)
        self.layers = nn.ModuleList(VitLayer(hidden, heads, ffn) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, pixel_values):
        x = self.patches(pixel_values).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls.expand(x.size(0), -1, -1), x), dim=1) + self.position
        for layer in self.layers:
            x = layer(x)
        return self.classifier(self.norm(x)[:, 0, :])


# name -> (module, example inputs, input names, dynamic axes); the opset is appended to the name.
def specs():
    ids = torch.randint(0, 1000, (4, 14))
    mask = torch.ones(4, 14, dtype=torch.long)
    types = torch.zeros(4, 14, dtype=torch.long)
    text_axes = {name: {0: "batch", 1: "sequence"} for name in ("input_ids", "attention_mask")}
    text_axes["token_type_ids"] = {0: "batch", 1: "sequence"}
    text_axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    text = (ids, mask, types), ["input_ids", "attention_mask", "token_type_ids"]
    return {
        "bert": (Bert(layers=2), *text, ["last_hidden_state"], text_axes),
        "minilm": (Bert(layers=3, sdpa=True), *text, ["last_hidden_state"], text_axes),
        "gpt2": (
            Gpt2(layers=2),
            (torch.randint(0, 1000, (4, 14)),),
            ["input_ids"],
            ["logits"],
            {"input_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}},
        ),
        "vit": (
            Vit(layers=2),
            (torch.randn(1, 3, 224, 224),),
            ["pixel_values"],
            ["logits"],
            {"pixel_values": {0: "batch"}, "logits": {0: "batch"}},
        ),
    }


def strip(model: onnx.ModelProto) -> onnx.ModelProto:
    """Large float initializers lose their data (see the module docstring)."""
    for tensor in model.graph.initializer:
        size = int(np.prod(tensor.dims)) if tensor.dims else 1
        if tensor.data_type == onnx.TensorProto.FLOAT and size > KEEP:
            std = float(onnx.numpy_helper.to_array(tensor).std())
            tensor.ClearField("raw_data")
            tensor.ClearField("float_data")
            tensor.doc_string = f"{SEEDED} std={std:.6g}"
    return model


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--opset", type=int, action="append", help="default: 14 and 17")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    for name, (module, inputs, input_names, output_names, axes) in specs().items():
        module.eval()
        for opset in args.opset or (14, 17):
            path = args.out / f"{name}_op{opset}.onnx"
            torch.onnx.export(
                module,
                inputs,
                str(path),
                dynamo=False,
                opset_version=opset,
                input_names=input_names,
                output_names=output_names,
                dynamic_axes=axes,
                do_constant_folding=True,
            )
            model = strip(onnx.load(str(path)))
            onnx.save(model, str(path))
            print(f"{path} ({path.stat().st_size / 1e3:.0f} kB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
