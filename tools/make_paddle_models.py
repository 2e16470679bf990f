"""(Re)builds the paddle2onnx models of tests/real_models/: small seeded PaddlePaddle layers
exported the way users export them (`paddle.onnx.export`, which runs paddle2onnx and then its
default Polygraphy constant folding), each with two feed sets at two sizes of its dynamic axes
and onnxruntime 1.31.1's outputs, which are also checked against Paddle's own (rtol 1e-3,
atol 1e-4).

NEEDS PADDLEPADDLE AND PADDLE2ONNX, which are not project dependencies. Make a venv of their own
(what was used, on Python 3.11):

    python3 -m venv /work/paddleenv
    /work/paddleenv/bin/pip install paddlepaddle==3.3.1 paddle2onnx==2.1.0 onnxruntime==1.31.1 \\
        onnx_graphsurgeon==0.6.1 sympy==1.14.0
    # (polygraphy 0.53.6, onnx 1.17.0, protobuf 7.36.2, numpy 2.4.6 come with them;
    #  onnx_graphsurgeon and sympy are what Polygraphy's folding would otherwise pip-install
    #  itself on first use)
    /work/paddleenv/bin/python -m tools.make_paddle_models [--out tests/real_models] [--only NAME ...]

Each model is built in a process of its own with PYTHONHASHSEED=0 (tools/real_models_common.py's
build_in_children), from `paddle.seed`.

The models (paddle2onnx writes `-1` dims as `dim_value: -1`... or dim_params, NCHW, Paddle's op
forms: HardSwish, HardSigmoid with Paddle's slope 1/6, Pad/Resize with run-time arguments):

- paddle_ppocr_backbone_op13: a PP-OCR / PP-LCNet-like backbone: Conv/BatchNorm/Hardswish stem,
  depthwise-separable blocks, a squeeze-excite with ReLU and Hardsigmoid, AdaptiveAvgPool2D,
  Linear; dynamic batch, height, width.
- paddle_mlp_op11: a classifier: Linear/ReLU/Dropout(eval)/LayerNorm/Linear, softmax; dynamic
  batch.
- paddle_lstm_op13: Embedding, a 2-layer bidirectional nn.LSTM, Linear per step; dynamic batch,
  time.
- paddle_transformer_op17: Embedding plus positions sliced to the run-time length,
  nn.TransformerEncoderLayer (GELU, pre-norm) with an additive padding mask, Linear; dynamic
  batch, sequence.
- paddle_pad_resize_op13: F.pad (reflect), Conv, F.interpolate (bilinear, align_corners=False, to
  twice the run-time size, and nearest back to the input's size); dynamic batch, height, width.
  (paddle2onnx 2.1.0 fails on F.interpolate with a scale_factor: "the 0th elementwise MUST be
  ir::FloatAttribute".)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import onnx

from tools.real_models_common import (
    OUT,
    Built,
    build_in_children,
    remove_models,
    save_built,
    write_readme_section,
)

try:
    import paddle
    import paddle.nn.functional as F
    from paddle import nn
    from paddle.static import InputSpec
except ImportError:  # pragma: no cover - a message, not a traceback
    sys.exit(
        "tools/make_paddle_models.py needs paddlepaddle and paddle2onnx (not project "
        "dependencies): python3 -m venv /work/paddleenv && /work/paddleenv/bin/pip install "
        "paddlepaddle==3.3.1 paddle2onnx==2.1.0 onnxruntime==1.31.1"
    )

TOOL = "tools/make_paddle_models.py"


def perturb(layer: nn.Layer, seed: int) -> nn.Layer:
    """Non-trivial norms and running statistics (fresh ones are 1, 0, 0, 1), then eval mode."""
    rng = np.random.default_rng(seed)
    for sub in layer.sublayers():
        if isinstance(sub, (nn.BatchNorm2D, nn.LayerNorm)):
            if sub.weight is not None:
                sub.weight.set_value(
                    sub.weight.numpy() + 0.2 * rng.standard_normal(sub.weight.shape).astype("f4")
                )
            if sub.bias is not None:
                sub.bias.set_value(
                    sub.bias.numpy() + 0.1 * rng.standard_normal(sub.bias.shape).astype("f4")
                )
        if isinstance(sub, nn.BatchNorm2D):
            sub._mean.set_value(0.2 * rng.standard_normal(sub._mean.shape).astype("f4"))
            sub._variance.set_value((0.5 + rng.random(sub._variance.shape)).astype("f4"))
    layer.eval()
    return layer


def unused_pad_values_zero(model: onnx.ModelProto) -> None:
    """paddle2onnx 2.1.0 gives a reflect or edge Pad a constant_value input (a Constant node)
    holding uninitialized memory (3.5e-44 in one run, 1.0 in the next); such a Pad never reads
    it. Written as 0.0, so that rebuilds are byte-identical; nothing else is changed."""
    constants = {n.output[0]: n for n in model.graph.node if n.op_type == "Constant"}
    for node in model.graph.node:
        mode = next((a.s for a in node.attribute if a.name == "mode"), b"constant")
        if node.op_type == "Pad" and mode != b"constant" and len(node.input) > 2:
            constant = constants.get(node.input[2])
            if constant is not None:
                value = constant.attribute[0].t
                value.raw_data = np.zeros(
                    (), onnx.helper.tensor_dtype_to_np_dtype(value.data_type)
                ).tobytes()


def export(name, layer, specs, opset, dynamic, feeds, about) -> Built:
    with tempfile.TemporaryDirectory(prefix="paddle2onnx-") as scratch:
        prefix = str(Path(scratch) / "model")
        paddle.onnx.export(layer, prefix, input_spec=specs, opset_version=opset)
        model = onnx.load(prefix + ".onnx")
    unused_pad_values_zero(model)
    outputs = []
    for feed in feeds:
        with paddle.no_grad():
            result = layer(*[paddle.to_tensor(v) for v in feed.values()])
        result = result if isinstance(result, (list, tuple)) else [result]
        outputs.append([r.numpy() for r in result])
    made_by = f"paddle.onnx.export ({about})"
    return Built(name, made_by, opset, dynamic, model, feeds, outputs)


# --------------------------------------------------------------------------------------------


class ConvBNLayer(nn.Layer):
    def __init__(self, cin, cout, kernel, stride=1, groups=1, act=True):
        super().__init__()
        self.conv = nn.Conv2D(
            cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias_attr=False
        )
        self.bn = nn.BatchNorm2D(cout)
        self.act = nn.Hardswish() if act else None

    def forward(self, x):
        x = self.bn(self.conv(x))
        return self.act(x) if self.act is not None else x


class SEModule(nn.Layer):
    def __init__(self, channels, reduction=4):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.reduce = nn.Conv2D(channels, channels // reduction, 1)
        self.expand = nn.Conv2D(channels // reduction, channels, 1)

    def forward(self, x):
        s = F.relu(self.reduce(self.pool(x)))
        return x * F.hardsigmoid(self.expand(s))


class DepthwiseSeparable(nn.Layer):
    def __init__(self, cin, cout, stride, se):
        super().__init__()
        self.dw = ConvBNLayer(cin, cin, 3, stride, groups=cin)
        self.se = SEModule(cin) if se else None
        self.pw = ConvBNLayer(cin, cout, 1)

    def forward(self, x):
        x = self.dw(x)
        if self.se is not None:
            x = self.se(x)
        return self.pw(x)


class PPOCRBackbone(nn.Layer):
    def __init__(self):
        super().__init__()
        self.stem = ConvBNLayer(3, 8, 3, 2)
        self.blocks = nn.Sequential(
            DepthwiseSeparable(8, 16, 1, False),
            DepthwiseSeparable(16, 16, 2, False),
            DepthwiseSeparable(16, 24, 1, True),
        )
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.head = nn.Linear(24, 6)

    def forward(self, x):
        x = self.pool(self.blocks(self.stem(x)))
        return self.head(paddle.flatten(x, 1))


def ppocr_backbone() -> Built:
    paddle.seed(201)
    layer = perturb(PPOCRBackbone(), 201)
    rng = np.random.default_rng(201)
    specs = [InputSpec([None, 3, None, None], "float32", "x")]
    feeds = [
        {"x": rng.normal(0, 1, s).astype(np.float32)} for s in ((1, 3, 32, 48), (2, 3, 20, 28))
    ]
    return export(
        "paddle_ppocr_backbone_op13",
        layer,
        specs,
        13,
        "batch, height, width",
        feeds,
        "Hardswish, Hardsigmoid",
    )


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.dropout = nn.Dropout(0.3)
        self.norm = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 5)

    def forward(self, x):
        x = self.norm(self.dropout(F.relu(self.fc1(x))))
        return F.softmax(self.fc2(x), axis=-1)


def mlp() -> Built:
    paddle.seed(202)
    layer = perturb(MLP(), 202)
    rng = np.random.default_rng(202)
    specs = [InputSpec([None, 20], "float32", "features")]
    feeds = [{"features": rng.normal(0, 1, s).astype(np.float32)} for s in ((1, 20), (7, 20))]
    return export("paddle_mlp_op11", layer, specs, 11, "batch", feeds, "Linear, LayerNorm")


class LSTMTagger(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(40, 8)
        self.lstm = nn.LSTM(8, 10, num_layers=2, direction="bidirect")
        self.out = nn.Linear(20, 4)

    def forward(self, tokens):
        states, _ = self.lstm(self.embedding(tokens))
        return self.out(states)


def lstm() -> Built:
    paddle.seed(203)
    layer = perturb(LSTMTagger(), 203)
    rng = np.random.default_rng(203)
    specs = [InputSpec([None, None], "int64", "tokens")]
    feeds = [{"tokens": rng.integers(0, 40, s).astype(np.int64)} for s in ((2, 6), (3, 13))]
    return export("paddle_lstm_op13", layer, specs, 13, "batch, time", feeds, "nn.LSTM")


class Transformer(nn.Layer):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(50, 16)
        self.positions = self.create_parameter([32, 16])
        self.encoder = nn.TransformerEncoderLayer(
            16, 2, 32, dropout=0.0, activation="gelu", normalize_before=True
        )
        self.head = nn.Linear(16, 3)

    def forward(self, ids, mask):
        length = paddle.shape(ids)[1]
        x = self.tokens(ids) + self.positions[:length]
        bias = (1.0 - mask.unsqueeze([1, 2])) * -1e4
        return self.head(self.encoder(x, bias))


def transformer() -> Built:
    paddle.seed(204)
    layer = perturb(Transformer(), 204)
    rng = np.random.default_rng(204)
    specs = [
        InputSpec([None, None], "int64", "input_ids"),
        InputSpec([None, None], "float32", "attention_mask"),
    ]

    def feed(batch, length):
        mask = np.ones((batch, length), np.float32)
        mask[0, length - 2 :] = 0.0
        ids = rng.integers(0, 50, (batch, length)).astype(np.int64)
        return {"input_ids": ids, "attention_mask": mask}

    return export(
        "paddle_transformer_op17",
        layer,
        specs,
        17,
        "batch, sequence",
        [feed(2, 6), feed(3, 11)],
        "nn.TransformerEncoderLayer",
    )


class PadResize(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 4, 3)

    def forward(self, x):
        padded = F.pad(x, [1, 1, 1, 1], mode="reflect")
        features = self.conv(padded)
        # by size: paddle2onnx 2.1.0 fails on a scale_factor ("the 0th elementwise MUST be
        # ir::FloatAttribute"), 2 or 2.0 or [2.0, 2.0]
        size = paddle.shape(features)[2:] * 2
        up = F.interpolate(features, size=size, mode="bilinear", align_corners=False)
        back = F.interpolate(up, size=paddle.shape(x)[2:], mode="nearest")
        return up, back + features


def pad_resize() -> Built:
    paddle.seed(205)
    layer = perturb(PadResize(), 205)
    rng = np.random.default_rng(205)
    specs = [InputSpec([None, 3, None, None], "float32", "x")]
    feeds = [{"x": rng.normal(0, 1, s).astype(np.float32)} for s in ((1, 3, 6, 8), (2, 3, 9, 5))]
    return export(
        "paddle_pad_resize_op13",
        layer,
        specs,
        13,
        "batch, height, width",
        feeds,
        "F.pad, F.interpolate",
    )


BUILDERS: dict[str, Callable[[], Built]] = {
    "paddle_ppocr_backbone_op13": ppocr_backbone,
    "paddle_mlp_op11": mlp,
    "paddle_lstm_op13": lstm,
    "paddle_transformer_op17": transformer,
    "paddle_pad_resize_op13": pad_resize,
}

ABOUT = [
    "Needs paddlepaddle 3.3.1 and paddle2onnx 2.1.0 in a venv of their own (the module docstring "
    "says how); `/work/paddleenv/bin/python -m tools.make_paddle_models`.",
    "",
    "- paddle.onnx.export: `paddle.onnx.export(layer, prefix, input_spec=[InputSpec([None, ...], "
    "dtype, name)], opset_version=OPSET)`, every other option at its default (paddle2onnx, then "
    "Polygraphy's constant folding).",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", nargs="*", help="rebuild only these models (no README)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # one model, in this process
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.child:
        paddle.set_device("cpu")
        built = BUILDERS[args.child]()
        assert built.name == args.child, (built.name, args.child)
        print(json.dumps(save_built(built, args.out, "paddle")))
        return 0
    rows = build_in_children("tools.make_paddle_models", args.only or list(BUILDERS), args.out)
    if not args.only:
        remove_models(args.out, write_readme_section(args.out, TOOL, ABOUT, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
