"""What `make demo` runs: compile the example model, run it, and compare it with onnxruntime.

1. compiles examples/tiny_classifier.onnx into examples/build/ with the public API
   (`onemodel_compile.compile_model`; the command line `onemodel-compile` does the same);
2. shows the generated module's path and its first lines;
3. runs examples/app.py's logic on a seeded random batch and prints the probabilities;
4. runs the same batch through onnxruntime and prints the largest absolute difference.

Exit code 0 on success, 1 if the difference exceeds 1e-4.
"""

from __future__ import annotations

import sys
from pathlib import Path

import app  # examples/app.py, beside this script
import numpy as np
import onnx

from onemodel_compile import compile_model

TOLERANCE = 1e-4
SHOWN_LINES = 30
BATCH = 4
SEED = 0


def main() -> int:
    module_path = compile_model(app.MODEL, app.BUILD / f"{app.MODULE}.py")
    weights = sorted(p.name for p in module_path.parent.glob(f"{app.MODULE}.*safetensors"))
    print(f"compiled {display(app.MODEL)} -> {display(module_path)}")
    print(f"weights file: {', '.join(weights) or '(none: every constant is inline)'}")
    print(f"\n--- first {SHOWN_LINES} lines of {module_path.name} ---")
    lines = module_path.read_text(encoding="utf-8").splitlines()
    print("\n".join(lines[:SHOWN_LINES]))
    print(f"--- ({len(lines)} lines in all) ---\n")

    tiny_classifier = app.import_classifier(app.BUILD)
    images = app.sample_images(BATCH, SEED)
    print(f"input 'image': {images.dtype} {list(images.shape)} (seed {SEED})")
    probabilities = app.classify(tiny_classifier, images)
    app.report(probabilities)
    through_session = app.classify_like_onnxruntime(tiny_classifier, images)
    if not np.array_equal(through_session, probabilities):
        print("error: runtime_support.InferenceSession and run() disagree", file=sys.stderr)
        return 1

    expected = run_onnxruntime(app.MODEL, images)
    difference = float(np.max(np.abs(probabilities.astype(np.float64) - expected)))
    same_top = bool(np.array_equal(probabilities.argmax(axis=1), expected.argmax(axis=1)))
    print(f"\nonnxruntime: largest absolute difference {difference:.3g} (tolerance {TOLERANCE:g})")
    print(f"onnxruntime: same top class for every image: {'yes' if same_top else 'no'}")
    if not difference <= TOLERANCE:  # also fails on NaN
        print("error: the compiled module and onnxruntime disagree", file=sys.stderr)
        return 1
    print("demo: OK")
    return 0


def run_onnxruntime(model_path: Path, images: np.ndarray) -> np.ndarray:
    import onnxruntime  # a test extra, installed by `make demo`

    model = onnx.load(model_path)
    # onnxruntime 1.31.1 reads IR versions up to 13 (onnx 1.23.2 writes 14 by default).
    model.ir_version = min(model.ir_version, 13)
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (probabilities,) = session.run(None, {"image": images})
    return probabilities.astype(np.float64)


def display(path: Path) -> str:
    """`path` relative to the current folder when it is inside it (shorter to read)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
