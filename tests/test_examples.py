"""The shipped example (examples/): the committed model is what examples/make_model.py builds, the
compiled module matches onnxruntime, and examples/app.py runs as a user would run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from onemodel_compile import compile_model
from tests.harness.modules import import_generated

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MODEL = EXAMPLES / "tiny_classifier.onnx"


def run_script(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_make_model_reproduces_the_committed_model(tmp_path: Path) -> None:
    output = tmp_path / "regenerated.onnx"
    result = run_script(EXAMPLES / "make_model.py", output, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert output.read_bytes() == MODEL.read_bytes(), (
        "examples/tiny_classifier.onnx is not what examples/make_model.py builds; "
        "rerun `python examples/make_model.py` and commit the model"
    )


def test_example_model_is_small_and_valid() -> None:
    assert MODEL.stat().st_size < 100_000
    model = onnx.load(MODEL)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version <= 13  # onnxruntime 1.31.1 reads IR 13 at most
    assert [(i.name, i.type.tensor_type.shape.dim[0].dim_param) for i in model.graph.input] == [
        ("image", "batch")
    ]
    assert [o.name for o in model.graph.output] == ["probabilities"]


@pytest.mark.parametrize("batch", [1, 5])
def test_compiled_example_matches_onnxruntime(tmp_path: Path, batch: int) -> None:
    onnxruntime = pytest.importorskip("onnxruntime")
    path = compile_model(MODEL, tmp_path / "tiny_classifier.py")
    assert (tmp_path / "tiny_classifier.weights.safetensors").exists()
    module = import_generated(path)
    assert module.INPUTS == (("image", "float32", ("batch", 3, 32, 32)),)
    assert module.OUTPUTS == (("probabilities", "float32", ("batch", 10)),)

    rng = np.random.default_rng(batch)
    images = (
        rng.standard_normal((batch, 3, 1, 1)) + rng.standard_normal((batch, 3, 32, 32)) * 0.5
    ).astype(np.float32)
    probabilities = module.run(images).probabilities
    session = onnxruntime.InferenceSession(MODEL.read_bytes(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"image": images})
    assert probabilities.dtype == np.float32 and probabilities.shape == (batch, 10)
    np.testing.assert_allclose(probabilities, expected, rtol=0, atol=1e-5)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=0, atol=1e-5)


def test_app_runs(tmp_path: Path) -> None:
    build = tmp_path / "build"
    result = run_script(EXAMPLES / "app.py", "--build", build, "--batch", 3, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (build / "tiny_classifier.py").exists()
    lines = result.stdout.splitlines()
    assert sum(line.startswith("image ") for line in lines) == 3, result.stdout
    assert "InferenceSession" in result.stdout
    # A second run imports the module already compiled there.
    again = run_script(EXAMPLES / "app.py", "--build", build, "--batch", 3, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == result.stdout
