"""Build examples/tiny_classifier.onnx: a small image classifier made with onnx.helper and numpy.

    image float32 [batch, 3, 32, 32]
      -> Conv 3x3 (8 channels, padding 1, bias) -> BatchNormalization -> Relu -> MaxPool 2x2
      -> Conv 3x3 (16 channels, padding 1, bias) -> Relu -> GlobalAveragePool -> Flatten
      -> Gemm (16 -> 10) -> Softmax
    -> probabilities float32 [batch, 10]

The weights are random (seeded), so the classes mean nothing, but the graph is the shape of a real
exported CNN. Running the script again writes a byte-identical file; no network is used.

Usage: python examples/make_model.py [OUTPUT.onnx]   (default: tiny_classifier.onnx beside it)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
# The IR version that goes with opset 17. onnx 1.23.2 would write IR 14 by default, which
# onnxruntime 1.31.1 refuses; the model needs nothing newer than IR 8.
IR_VERSION = 8
SEED = 18
CLASSES = 10
DEFAULT_OUTPUT = Path(__file__).resolve().parent / "tiny_classifier.onnx"


def he_normal(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def build_model(seed: int = SEED) -> onnx.ModelProto:
    """The classifier with seeded random weights; same seed, same model, bit for bit."""
    rng = np.random.default_rng(seed)
    weights = {
        "conv1.weight": he_normal(rng, (8, 3, 3, 3), 3 * 3 * 3),
        "conv1.bias": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "bn1.weight": rng.uniform(0.5, 1.5, 8).astype(np.float32),
        "bn1.bias": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "bn1.running_mean": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "bn1.running_var": rng.uniform(0.5, 2.0, 8).astype(np.float32),
        "conv2.weight": he_normal(rng, (16, 8, 3, 3), 8 * 3 * 3),
        "conv2.bias": (rng.standard_normal(16) * 0.1).astype(np.float32),
        # Gemm with transB=1, as PyTorch's Linear exports: weight is [out_features, in_features].
        "fc.weight": he_normal(rng, (CLASSES, 16), 16) * np.float32(2.0),
        "fc.bias": (rng.standard_normal(CLASSES) * 0.1).astype(np.float32),
    }
    initializers = [numpy_helper.from_array(array, name) for name, array in weights.items()]

    nodes = [
        helper.make_node(
            "Conv",
            ["image", "conv1.weight", "conv1.bias"],
            ["conv1_out"],
            name="conv1",
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        helper.make_node(
            "BatchNormalization",
            ["conv1_out", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var"],
            ["bn1_out"],
            name="bn1",
            epsilon=1e-5,
        ),
        helper.make_node("Relu", ["bn1_out"], ["relu1_out"], name="relu1"),
        helper.make_node(
            "MaxPool",
            ["relu1_out"],
            ["pool1_out"],
            name="pool1",
            kernel_shape=[2, 2],
            strides=[2, 2],
        ),
        helper.make_node(
            "Conv",
            ["pool1_out", "conv2.weight", "conv2.bias"],
            ["conv2_out"],
            name="conv2",
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        helper.make_node("Relu", ["conv2_out"], ["relu2_out"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["relu2_out"], ["gap_out"], name="gap"),
        helper.make_node("Flatten", ["gap_out"], ["features"], name="flatten", axis=1),
        helper.make_node(
            "Gemm", ["features", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1
        ),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_classifier",
        inputs=[helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        outputs=[
            helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", CLASSES])
        ],
        initializer=initializers,
        doc_string="A tiny CNN image classifier with random weights (onemodel-compile example).",
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="onemodel-compile examples/make_model.py",
        ir_version=IR_VERSION,
    )
    onnx.checker.check_model(model, full_check=True)
    return model


def write_model(path: str | Path = DEFAULT_OUTPUT, seed: int = SEED) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(build_model(seed).SerializeToString(deterministic=True))
    return path


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) > 1:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    path = write_model(argv[0] if argv else DEFAULT_OUTPUT)
    print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
