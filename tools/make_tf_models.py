"""(Re)builds the tf2onnx models of tests/real_models/: small seeded Keras models and tf.functions
converted the way users convert them (`tf2onnx.convert.from_keras` / `from_function`), each
with two feed sets at two sizes of its dynamic axes and onnxruntime 1.31.1's outputs, which are
also checked against TensorFlow's own (rtol 1e-3, atol 1e-4).

NEEDS TENSORFLOW AND TF2ONNX, which are not project dependencies and do not install beside the
project's test extra. Make a venv of their own (what was used, on Python 3.11):

    python3 -m venv /work/tfenv
    /work/tfenv/bin/pip install tensorflow-cpu==2.21.0 tf2onnx==1.17.0 onnxruntime==1.31.1
    # (keras 3.15.1, onnx 1.23.2, protobuf 7.36.2, numpy 2.4.6 come with them)
    /work/tfenv/bin/python -m tools.make_tf_models [--out tests/real_models] [--only NAME ...]

Rebuilds give byte-identical NAME.npz files (inputs, onnxruntime's outputs) and the same graph
(the same operators in the same order, the same weights), but NOT byte-identical NAME.onnx files:
tf2onnx 1.17 merges equal constants and numbers the names it invents (`const_fold_opt__N`,
`unk__N`) in an order that changes from process to process, even with PYTHONHASHSEED=0, a process
per model (tools/real_models_common.py's build_in_children) and the frozen graph's nodes sorted
by name (tried: the order comes from inside the converter). Rebuild only to change the models.

The models (tf2onnx writes NHWC Keras graphs with Transposes around each Conv, Keras Flatten and
reshapes as Shape -> Gather/Slice -> Concat -> Reshape chains, `unk__N` dynamic dims):

- keras_cnn_op13: Conv2D/BatchNormalization/ReLU/MaxPooling2D twice, Flatten, Dense, softmax;
  dynamic batch.
- keras_mobilenet_op13: a MobileNetV2-style block: 1x1 expand, DepthwiseConv2D, ReLU6, 1x1
  project, residual Add, a strided depthwise stage, GlobalAveragePooling2D, Dense; dynamic batch,
  height, width.
- keras_lstm_op13: Embedding, LSTM(return_sequences), LSTM (last state), Dense; dynamic batch
  and time (tf2onnx's rewriter turns Keras' while loop into ONNX LSTM where it can).
- keras_gru_op14: GRU (reset_after, Keras' default) and a Bidirectional GRU; dynamic batch,
  time.
- keras_simplernn_op11: SimpleRNN with a mask (Masking): a form tf2onnx does not rewrite, left as
  its Loop; dynamic batch, time.
- keras_text_op13: Embedding + GlobalAveragePooling1D + Dense text classifier; int32 tokens,
  dynamic batch, sequence.
- keras_transformer_op17: token + position embeddings, MultiHeadAttention, LayerNormalization,
  a feed-forward with the tanh GELU (the exact one is Erfc, which tf2onnx cannot convert); dynamic batch, sequence.
- tf_resize_op13: a tf.function: tf.image.resize bilinear (half-pixel) to twice the run-time
  size and nearest back, NHWC; dynamic batch, height, width.
- keras_unet_op15: Conv2D, a strided Conv2D, Conv2DTranspose (stride 2), nearest UpSampling2D,
  Concatenate, sigmoid mask; dynamic batch, height, width (bilinear UpSampling2D does not trace
  in Keras 3.15 with unknown height and width).
- keras_bilstm_op18: Conv1D, Bidirectional(LSTM), dot-product Attention, GlobalMaxPooling1D,
  Dense; dynamic batch, time.
- tf_scan_rnn_op13: a tf.function: a dynamic RNN written with tf.scan over the time axis, initial
  state zeros of the run-time batch; dynamic batch, time.
- tf_dataflow_op13: a tf.function: top_k with k from the run-time width, gather with
  batch_dims=1, boolean_mask, one_hot of an argmax, sort, cumsum; dynamic batch, width.

Left out: a tf.function with tf.signal.stft. tf2onnx 1.17 converts its RFFT only together with
the ComplexAbs after it and loses the shape of the complex pair there ("ComplexAbs expected the
first dimension to be 2"), with a dynamic batch and with a fixed one, leaving RFFT and ComplexAbs
nodes no runtime has; tf.math.real / imag instead are unsupported ops in tf2onnx.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from tools.real_models_common import (
    OUT,
    Built,
    build_in_children,
    remove_models,
    save_built,
    write_readme_section,
)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
try:
    import keras
    import tensorflow as tf
    import tf2onnx
except ImportError:  # pragma: no cover - a message, not a traceback
    sys.exit(
        "tools/make_tf_models.py needs tensorflow and tf2onnx (not project dependencies): "
        "python3 -m venv /work/tfenv && /work/tfenv/bin/pip install tensorflow-cpu==2.21.0 "
        "tf2onnx==1.17.0 onnxruntime==1.31.1"
    )

TOOL = "tools/make_tf_models.py"
layers = keras.layers


def fresh(seed: int) -> None:
    keras.utils.set_random_seed(seed)


def narrow(model: keras.Model, seed: int) -> keras.Model:
    """Non-trivial BatchNormalization statistics and LayerNormalization gains (fresh ones are
    0, 1, 1, 0)."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, layers.BatchNormalization):
            gamma, beta, mean, var = layer.get_weights()
            layer.set_weights(
                [
                    gamma + 0.2 * rng.standard_normal(gamma.shape).astype(np.float32),
                    beta + 0.1 * rng.standard_normal(beta.shape).astype(np.float32),
                    0.2 * rng.standard_normal(mean.shape).astype(np.float32),
                    (0.5 + rng.random(var.shape)).astype(np.float32),
                ]
            )
    return model


def from_keras(name, model, specs, opset, dynamic, feeds, about) -> Built:
    onnx_model, _ = tf2onnx.convert.from_keras(model, input_signature=specs, opset=opset)
    outputs = []
    for feed in feeds:
        args = [tf.constant(v) for v in feed.values()]
        result = model(args[0] if len(args) == 1 else args, training=False)
        result = result if isinstance(result, (list, tuple)) else [result]
        outputs.append([np.asarray(r) for r in result])
    return Built(
        name, f"tf2onnx.convert.from_keras ({about})", opset, dynamic, onnx_model, feeds, outputs
    )


def from_function(name, function, specs, opset, dynamic, feeds, about) -> Built:
    onnx_model, _ = tf2onnx.convert.from_function(function, input_signature=specs, opset=opset)
    outputs = []
    for feed in feeds:
        result = function(*[tf.constant(v) for v in feed.values()])
        result = result if isinstance(result, (list, tuple)) else [result]
        outputs.append([np.asarray(r) for r in result])
    made_by = f"tf2onnx.convert.from_function ({about})"
    return Built(name, made_by, opset, dynamic, onnx_model, feeds, outputs)


def images(rng, name, *shapes):
    return [{name: rng.normal(0, 1, s).astype(np.float32)} for s in shapes]


def tokens(rng, name, vocab, *shapes):
    return [{name: rng.integers(0, vocab, s).astype(np.int32)} for s in shapes]


# --------------------------------------------------------------------------------------------


def keras_cnn() -> Built:
    fresh(101)
    image = keras.Input((16, 16, 3), name="image")
    x = layers.Conv2D(8, 3, padding="same", name="conv1")(image)
    x = layers.BatchNormalization(name="bn1")(x)
    x = layers.ReLU(name="relu1")(x)
    x = layers.MaxPooling2D(2, name="pool1")(x)
    x = layers.Conv2D(12, 3, padding="valid", use_bias=False, name="conv2")(x)
    x = layers.BatchNormalization(name="bn2")(x)
    x = layers.Activation("relu", name="relu2")(x)
    x = layers.MaxPooling2D(2, name="pool2")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(10, activation="softmax", name="classes")(x)
    model = narrow(keras.Model(image, x, name="cnn"), 101)
    rng = np.random.default_rng(101)
    specs = [tf.TensorSpec((None, 16, 16, 3), tf.float32, name="image")]
    feeds = images(rng, "image", (2, 16, 16, 3), (5, 16, 16, 3))
    return from_keras("keras_cnn_op13", model, specs, 13, "batch", feeds, "Keras CNN")


def keras_mobilenet() -> Built:
    fresh(102)
    image = keras.Input((None, None, 3), name="image")
    x = layers.Conv2D(8, 3, strides=2, padding="same", use_bias=False, name="stem")(image)
    x = layers.BatchNormalization(name="stem_bn")(x)
    x = layers.ReLU(6.0, name="stem_relu6")(x)
    skip = x
    x = layers.Conv2D(24, 1, use_bias=False, name="expand")(x)
    x = layers.BatchNormalization(name="expand_bn")(x)
    x = layers.ReLU(6.0, name="expand_relu6")(x)
    x = layers.DepthwiseConv2D(3, padding="same", use_bias=False, name="depthwise")(x)
    x = layers.BatchNormalization(name="depthwise_bn")(x)
    x = layers.ReLU(6.0, name="depthwise_relu6")(x)
    x = layers.Conv2D(8, 1, use_bias=False, name="project")(x)
    x = layers.BatchNormalization(name="project_bn")(x)
    x = layers.Add(name="residual")([skip, x])
    x = layers.DepthwiseConv2D(3, strides=2, padding="same", name="down")(x)
    x = layers.ReLU(6.0, name="down_relu6")(x)
    x = layers.GlobalAveragePooling2D(name="pool")(x)
    x = layers.Dense(5, name="logits")(x)
    model = narrow(keras.Model(image, x, name="mobilenet_block"), 102)
    rng = np.random.default_rng(102)
    specs = [tf.TensorSpec((None, None, None, 3), tf.float32, name="image")]
    feeds = images(rng, "image", (1, 20, 24, 3), (3, 13, 9, 3))
    return from_keras(
        "keras_mobilenet_op13", model, specs, 13, "batch, height, width", feeds, "DepthwiseConv2D"
    )


def keras_lstm() -> Built:
    fresh(103)
    ids = keras.Input((None,), dtype="int32", name="tokens")
    x = layers.Embedding(50, 8, name="embedding")(ids)
    x = layers.LSTM(12, return_sequences=True, name="lstm1")(x)
    x = layers.LSTM(10, name="lstm2")(x)
    x = layers.Dense(4, name="logits")(x)
    model = keras.Model(ids, x, name="lstm")
    rng = np.random.default_rng(103)
    specs = [tf.TensorSpec((None, None), tf.int32, name="tokens")]
    feeds = tokens(rng, "tokens", 50, (2, 7), (3, 12))
    return from_keras("keras_lstm_op13", model, specs, 13, "batch, time", feeds, "Keras LSTM")


def keras_gru() -> Built:
    fresh(104)
    signal = keras.Input((None, 6), name="frames")
    x = layers.GRU(8, return_sequences=True, name="gru")(signal)
    x = layers.Bidirectional(layers.GRU(5, return_sequences=True, name="bigru"), name="bi")(x)
    x = layers.Dense(3, name="tags")(x)
    model = keras.Model(signal, x, name="gru")
    rng = np.random.default_rng(104)
    specs = [tf.TensorSpec((None, None, 6), tf.float32, name="frames")]
    feeds = images(rng, "frames", (2, 5, 6), (4, 11, 6))
    return from_keras("keras_gru_op14", model, specs, 14, "batch, time", feeds, "Keras GRU")


def keras_simplernn() -> Built:
    fresh(105)
    signal = keras.Input((None, 4), name="frames")
    x = layers.Masking(0.0, name="masking")(signal)
    x = layers.SimpleRNN(6, name="rnn")(x)
    x = layers.Dense(2, name="out")(x)
    model = keras.Model(signal, x, name="simplernn")
    rng = np.random.default_rng(105)
    specs = [tf.TensorSpec((None, None, 4), tf.float32, name="frames")]
    feeds = images(rng, "frames", (3, 6, 4), (2, 9, 4))
    for feed in feeds:  # trailing padding, masked out
        feed["frames"][0, -2:] = 0.0
    return from_keras(
        "keras_simplernn_op11", model, specs, 11, "batch, time", feeds, "Masking + SimpleRNN"
    )


def keras_text() -> Built:
    fresh(106)
    ids = keras.Input((None,), dtype="int32", name="text")
    x = layers.Embedding(80, 16, name="embedding")(ids)
    x = layers.GlobalAveragePooling1D(name="average")(x)
    x = layers.Dense(8, activation="relu", name="hidden")(x)
    x = layers.Dense(1, activation="sigmoid", name="score")(x)
    model = keras.Model(ids, x, name="text")
    rng = np.random.default_rng(106)
    specs = [tf.TensorSpec((None, None), tf.int32, name="text")]
    feeds = tokens(rng, "text", 80, (2, 9), (5, 20))
    return from_keras("keras_text_op13", model, specs, 13, "batch, sequence", feeds, "Embedding")


class PositionEmbedding(layers.Layer):
    """Token embeddings plus learned positions sliced to the run-time length (as Keras' examples
    write a transformer's input layer)."""

    def __init__(self, vocab, length, width, **kwargs):
        super().__init__(**kwargs)
        self.tokens = layers.Embedding(vocab, width, name="token_embedding")
        self.positions = layers.Embedding(length, width, name="position_embedding")

    def call(self, ids):
        positions = tf.range(tf.shape(ids)[-1])
        return self.tokens(ids) + self.positions(positions)


def keras_transformer() -> Built:
    fresh(107)
    ids = keras.Input((None,), dtype="int32", name="input_ids")
    x = PositionEmbedding(60, 32, 16, name="embed")(ids)
    attention = layers.MultiHeadAttention(num_heads=2, key_dim=8, name="attention")(x, x)
    x = layers.LayerNormalization(epsilon=1e-6, name="norm1")(x + attention)
    # Keras 3's exact gelu is written with Erfc, which tf2onnx 1.17 cannot convert: the tanh form
    ff = layers.Dense(32, name="ff1")(x)
    ff = layers.Activation(lambda v: keras.activations.gelu(v, approximate=True), name="gelu")(ff)
    ff = layers.Dense(16, name="ff2")(ff)
    x = layers.LayerNormalization(epsilon=1e-6, name="norm2")(x + ff)
    x = layers.Dense(6, name="head")(x)
    model = keras.Model(ids, x, name="transformer")
    rng = np.random.default_rng(107)
    for layer in model.layers:  # non-trivial norm gains
        if isinstance(layer, layers.LayerNormalization):
            gamma, beta = layer.get_weights()
            layer.set_weights(
                [
                    gamma + 0.2 * rng.standard_normal(gamma.shape).astype(np.float32),
                    beta + 0.1 * rng.standard_normal(beta.shape).astype(np.float32),
                ]
            )
    specs = [tf.TensorSpec((None, None), tf.int32, name="input_ids")]
    feeds = tokens(rng, "input_ids", 60, (2, 5), (3, 11))
    return from_keras(
        "keras_transformer_op17", model, specs, 17, "batch, sequence", feeds, "MultiHeadAttention"
    )


def tf_resize() -> Built:
    fresh(109)

    @tf.function
    def resample(image):
        size = tf.shape(image)[1:3]
        up = tf.image.resize(image, size * 2, method="bilinear")
        down = tf.image.resize(up, size, method="nearest")
        return tf.nn.relu(down - image) + up[:, ::2, ::2, :]

    rng = np.random.default_rng(109)
    specs = [tf.TensorSpec((None, None, None, 3), tf.float32, name="image")]
    feeds = images(rng, "image", (1, 6, 8, 3), (2, 9, 5, 3))
    return from_function(
        "tf_resize_op13", resample, specs, 13, "batch, height, width", feeds, "tf.image.resize"
    )


def keras_unet() -> Built:
    fresh(110)
    image = keras.Input((None, None, 2), name="image")
    x1 = layers.Conv2D(6, 3, padding="same", activation="relu", name="down1")(image)
    x2 = layers.Conv2D(8, 3, strides=2, padding="same", activation="relu", name="down2")(x1)
    x3 = layers.Conv2DTranspose(6, 3, strides=2, padding="same", name="up_transpose")(x2)
    x4 = layers.UpSampling2D(2, name="up_nearest")(x2)
    x = layers.Concatenate(name="skip")([x1, x3, x4])
    x = layers.Conv2D(1, 1, activation="sigmoid", name="mask")(x)
    model = keras.Model(image, x, name="unet")
    rng = np.random.default_rng(110)
    specs = [tf.TensorSpec((None, None, None, 2), tf.float32, name="image")]
    feeds = images(rng, "image", (1, 8, 12, 2), (2, 10, 6, 2))
    return from_keras(
        "keras_unet_op15",
        model,
        specs,
        15,
        "batch, height, width",
        feeds,
        "Conv2DTranspose, UpSampling2D",
    )


def keras_bilstm() -> Built:
    fresh(111)
    signal = keras.Input((None, 5), name="signal")
    x = layers.Conv1D(8, 3, padding="same", activation="relu", name="conv1d")(signal)
    x = layers.Bidirectional(layers.LSTM(6, return_sequences=True, name="lstm"), name="bi")(x)
    attended = layers.Attention(name="attention")([x, x])
    x = layers.GlobalMaxPooling1D(name="max")(attended)
    x = layers.Dense(3, activation="softmax", name="classes")(x)
    model = keras.Model(signal, x, name="bilstm")
    rng = np.random.default_rng(111)
    specs = [tf.TensorSpec((None, None, 5), tf.float32, name="signal")]
    feeds = images(rng, "signal", (2, 7, 5), (3, 12, 5))
    return from_keras(
        "keras_bilstm_op18", model, specs, 18, "batch, time", feeds, "Bidirectional LSTM"
    )


def tf_scan_rnn() -> Built:
    fresh(112)
    rng = np.random.default_rng(112)
    w_value = rng.normal(0, 0.4, (4, 6)).astype(np.float32)
    u_value = rng.normal(0, 0.4, (6, 6)).astype(np.float32)

    @tf.function
    def rnn(frames):
        # constants made inside: tf2onnx turns captured eager tensors into graph inputs
        w, u = tf.constant(w_value), tf.constant(u_value)
        steps = tf.transpose(frames, [1, 0, 2])
        start = tf.zeros([tf.shape(frames)[0], 6])
        states = tf.scan(lambda h, x: tf.tanh(x @ w + h @ u), steps, initializer=start)
        return tf.reduce_max(states, axis=0), tf.transpose(states, [1, 0, 2])[:, -1]

    specs = [tf.TensorSpec((None, None, 4), tf.float32, name="frames")]
    feeds = [{"frames": rng.normal(0, 1, s).astype(np.float32)} for s in ((2, 5, 4), (3, 9, 4))]
    return from_function(
        "tf_scan_rnn_op13", rnn, specs, 13, "batch, time", feeds, "tf.scan (a dynamic RNN)"
    )


def tf_dataflow() -> Built:
    fresh(113)

    @tf.function
    def select(scores, values):
        k = tf.shape(scores)[1] // 2
        top, index = tf.math.top_k(scores, k=k)
        picked = tf.gather(values, index, batch_dims=1)
        positive = tf.boolean_mask(values, values > 0.0)
        hot = tf.one_hot(tf.argmax(scores, axis=-1), depth=tf.shape(scores)[1])
        ranked = tf.cumsum(tf.sort(scores, direction="DESCENDING"), axis=1)
        return top * picked, tf.reduce_sum(positive), hot * ranked

    rng = np.random.default_rng(113)

    def feed(batch, width):
        return {
            "scores": rng.permutation(batch * width).reshape(batch, width).astype(np.float32),
            "values": rng.normal(0, 1, (batch, width)).astype(np.float32),
        }

    specs = [
        tf.TensorSpec((None, None), tf.float32, name="scores"),
        tf.TensorSpec((None, None), tf.float32, name="values"),
    ]
    return from_function(
        "tf_dataflow_op13",
        select,
        specs,
        13,
        "batch, width",
        [feed(2, 6), feed(4, 9)],
        "top_k, gather, boolean_mask, one_hot, sort, cumsum",
    )


BUILDERS: dict[str, Callable[[], Built]] = {
    "keras_cnn_op13": keras_cnn,
    "keras_mobilenet_op13": keras_mobilenet,
    "keras_lstm_op13": keras_lstm,
    "keras_gru_op14": keras_gru,
    "keras_simplernn_op11": keras_simplernn,
    "keras_text_op13": keras_text,
    "keras_transformer_op17": keras_transformer,
    "tf_resize_op13": tf_resize,
    "keras_unet_op15": keras_unet,
    "keras_bilstm_op18": keras_bilstm,
    "tf_scan_rnn_op13": tf_scan_rnn,
    "tf_dataflow_op13": tf_dataflow,
}

ABOUT = [
    "Needs tensorflow-cpu 2.21.0 (Keras 3.15.1) and tf2onnx 1.17.0 in a venv of their own (the "
    "module docstring says how); `/work/tfenv/bin/python -m tools.make_tf_models`.",
    "",
    "- tf2onnx.convert.from_keras: `from_keras(model, input_signature=[tf.TensorSpec(..., "
    "name=...)], opset=OPSET)`, every other option at its default.",
    "- tf2onnx.convert.from_function: the same for a `tf.function`.",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", nargs="*", help="rebuild only these models (no README)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # one model, in this process
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.child:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        built = BUILDERS[args.child]()
        assert built.name == args.child, (built.name, args.child)
        print(json.dumps(save_built(built, args.out, "tensorflow")))
        return 0
    rows = build_in_children("tools.make_tf_models", args.only or list(BUILDERS), args.out)
    if not args.only:
        remove_models(args.out, write_readme_section(args.out, TOOL, ABOUT, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
