"""A small application that uses the compiled tiny classifier, as a user would write it.

Compile the model once (the command line, or `onemodel_compile.compile_model` from Python):

    onemodel-compile examples/tiny_classifier.onnx -o examples/build/tiny_classifier.py

That writes `tiny_classifier.py` and its weights file `tiny_classifier.weights.safetensors`. The
module is plain Python: put its folder on sys.path (or copy the two files next to your code),
`import tiny_classifier` and call `tiny_classifier.run(image)`. At run time it needs numpy and
`runtime_support` only; onnx and the compiler are not imported.

Usage: python examples/app.py [--build FOLDER] [--batch N] [--seed S]
(compiles the model into FOLDER first when the module is not there yet; default examples/build)
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import numpy as np

import runtime_support

HERE = Path(__file__).resolve().parent
MODEL = HERE / "tiny_classifier.onnx"
BUILD = HERE / "build"
MODULE = "tiny_classifier"


def import_classifier(build: Path = BUILD):
    """`import tiny_classifier` from `build`, compiling the model there first if needed."""
    build = Path(build)
    if not (build / f"{MODULE}.py").exists():
        from onemodel_compile import compile_model  # only needed to compile, not to run

        compile_model(MODEL, build / f"{MODULE}.py")
    sys.path.insert(0, str(build))
    return importlib.import_module(MODULE)  # i.e. `import tiny_classifier`


def sample_images(batch: int = 4, seed: int = 0) -> np.ndarray:
    """A seeded random batch of 'images': a colour tint per image plus pixel noise."""
    rng = np.random.default_rng(seed)
    tint = rng.standard_normal((batch, 3, 1, 1))
    noise = rng.standard_normal((batch, 3, 32, 32)) * 0.5
    return (tint + noise).astype(np.float32)


def classify(classifier, images: np.ndarray) -> np.ndarray:
    """Class probabilities [batch, 10] from the generated module's own API."""
    outputs = classifier.run(images)  # a NamedTuple, one field per graph output
    return outputs.probabilities


def classify_like_onnxruntime(classifier, images: np.ndarray) -> np.ndarray:
    """The same through onnxruntime's API: code written for onnxruntime changes one line only."""
    # session = onnxruntime.InferenceSession("tiny_classifier.onnx")   # before
    session = runtime_support.InferenceSession(classifier)  # after
    input_name = session.get_inputs()[0].name
    (probabilities,) = session.run(None, {input_name: images})
    return probabilities


def report(probabilities: np.ndarray) -> None:
    for index, row in enumerate(probabilities):
        top = int(np.argmax(row))
        shown = " ".join(f"{p:.3f}" for p in row)
        print(f"image {index}: class {top} ({row[top]:.1%})  probabilities [{shown}]")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Classify a seeded random batch of images.")
    parser.add_argument("--build", type=Path, default=BUILD, help="folder of the compiled module")
    parser.add_argument("--batch", type=int, default=4, help="number of images")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random images")
    args = parser.parse_args(argv)

    tiny_classifier = import_classifier(args.build)
    images = sample_images(args.batch, args.seed)
    print(f"input 'image': {images.dtype} {list(images.shape)}")
    probabilities = classify(tiny_classifier, images)
    report(probabilities)

    same = classify_like_onnxruntime(tiny_classifier, images)
    if not np.array_equal(same, probabilities):
        print("error: InferenceSession and run() disagree", file=sys.stderr)
        return 1
    print("runtime_support.InferenceSession(tiny_classifier) gives the same probabilities")
    return 0


if __name__ == "__main__":
    sys.exit(main())
