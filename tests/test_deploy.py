"""Deployment without the compiler (docs/contract.md, "Deployment"): the README's deploy lines run
word for word in a temporary folder, in a fresh virtual environment that holds only numpy and the
onemodel-runtime distribution (from the repository's runtime/ folder; numpy from PyPI or pip's
cache), and the compiled module's output there matches onnxruntime's in this environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import runtime_support
from onemodel_compile.version import __version__ as compiler_version
from tests import readme

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "tiny_classifier.onnx"
# Distributions a fresh venv holds besides what we install (pip's own tooling).
VENV_TOOLING = {"pip", "setuptools", "wheel"}

# Runs inside the deployed environment: the module's output on seeded inputs, and what was imported.
CHECK = """
import sys, numpy as np
sys.path[:0] = ["deploy", "examples"]
import app, tiny_classifier
images = app.sample_images(5, 3)
probabilities = tiny_classifier.run(images).probabilities
compiler_modules = sorted(m for m in sys.modules if m.split(".")[0] in
                          ("onnx", "onemodel_compile", "black", "jinja2", "google", "onnxruntime"))
np.savez(sys.argv[1], images=images, probabilities=probabilities, numpy=np.__version__,
         compiler_modules=np.array(compiler_modules, dtype=str))
"""


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # `onemodel-compile` and `python` are this environment's, as after activating it
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def workspace(tmp_path: Path) -> Path:
    """A folder in which the README's relative paths (examples/, runtime/) are the repository's:
    examples/ a link, runtime/ a copy with runtime_support inside (pip builds a local folder in
    place, and two builds in one folder at once collide)."""
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    ignore = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    shutil.copytree(ROOT / "runtime", tmp_path / "runtime", ignore=ignore)  # follows the link
    return tmp_path


def installed(venv: Path) -> set[str]:
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {line.split("==")[0].lower() for line in result.stdout.split()}


def check_deployment(folder: Path, venv: Path) -> str:
    """Run CHECK in `venv` and compare its output with onnxruntime's; return its numpy version."""
    out = folder / "check.npz"
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-c", CHECK, str(out)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    with np.load(out) as saved:
        images, probabilities = saved["images"], saved["probabilities"]
        assert list(saved["compiler_modules"]) == [], "the deployed module imported the compiler"
        numpy_version = str(saved["numpy"])
    onnxruntime = pytest.importorskip("onnxruntime")
    session = onnxruntime.InferenceSession(str(EXAMPLE), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"image": images})
    assert probabilities.dtype == np.float32 and probabilities.shape == (5, 10)
    np.testing.assert_allclose(probabilities, expected, rtol=0, atol=1e-5)
    return numpy_version


def test_readme_deploy_commands_in_a_fresh_venv(tmp_path):
    (block,) = readme.blocks("Deploy without the compiler")
    folder = workspace(tmp_path)
    for command in readme.commands(block):
        result = shell(command, folder)
        assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
        if "app.py" in command:
            assert "gives the same probabilities" in result.stdout, result.stdout
    venv = folder / "deploy" / "venv"
    assert installed(venv) - VENV_TOOLING == {"numpy", "onemodel-runtime"}
    for absent in ("onnx", "onemodel_compile", "google.protobuf", "jinja2", "black"):
        probe = subprocess.run([str(venv / "bin" / "python"), "-c", f"import {absent}"])
        assert probe.returncode != 0, f"{absent} is importable in the deployed environment"
    assert check_deployment(folder, venv) == np.__version__


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="numpy 1.26 ships no wheel for Python 3.13")
def test_runtime_at_its_lowest_numpy(tmp_path):
    """onemodel-runtime claims numpy>=1.26: a module compiled here (numpy 2.x) runs there too."""
    folder = workspace(tmp_path)
    commands = [
        "onemodel-compile examples/tiny_classifier.onnx -o deploy/tiny_classifier.py",
        "python -m venv deploy/venv",
        "deploy/venv/bin/pip install numpy==1.26.4 ./runtime",
    ]
    for command in commands:
        result = shell(command, folder)
        assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    assert check_deployment(folder, folder / "deploy" / "venv") == "1.26.4"


def test_versions_agree():
    """The compiler requires the runtime of its own version; both read one number each."""
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert (
        f"onemodel-runtime=={runtime_support.__version__}" in pyproject["project"]["dependencies"]
    )
    assert runtime_support.__version__ == compiler_version
    runtime = tomllib.loads((ROOT / "runtime" / "pyproject.toml").read_text())["project"]
    assert runtime["dependencies"] == ["numpy>=1.26,<3"]
    assert (ROOT / "runtime" / "runtime_support" / "__init__.py").resolve() == (
        Path(runtime_support.__file__).resolve()
    )
