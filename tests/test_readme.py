"""The README's Compile, Import, Threads and Verify sections, run word for word in order in a
fresh folder that holds the repository's examples/ (the Deploy section: tests/test_deploy.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import readme

ROOT = Path(__file__).resolve().parent.parent


def environment(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["ONEMODEL_CACHE_DIR"] = str(tmp_path / "cache")  # InferenceSession's compile cache
    return env


def run(argv, folder: Path, env: dict) -> subprocess.CompletedProcess:
    result = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{argv}\n{result.stdout}\n{result.stderr}"
    return result


def test_readme_sections_word_for_word(tmp_path):
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    env = environment(tmp_path)

    (compile_block,) = readme.blocks("Compile", "sh")
    outputs = [run(["bash", "-euo", "pipefail", "-c", line], tmp_path, env)
               for line in readme.commands(compile_block)]  # fmt: skip
    assert "operators (" in outputs[0].stderr and "time: " in outputs[0].stderr  # --verbose
    assert outputs[1].stdout == outputs[1].stderr == ""  # --quiet
    for name in ("tiny_classifier", "tiny_classifier_exact", "tiny_classifier_b8"):
        assert (tmp_path / "build" / f"{name}.py").is_file(), name
    assert "('image', 'float32', (8, 3, 32, 32))" in str(
        (tmp_path / "build" / "tiny_classifier_b8.py").read_text()
    ).replace('"', "'")

    module_block, session_block = readme.blocks("Import", "python")
    shown = run([sys.executable, "-c", module_block], tmp_path, env).stdout.splitlines()
    assert shown == [
        "(('image', 'float32', ('batch', 3, 32, 32)),)",
        "(('probabilities', 'float32', ('batch', 10)),)",
        "(2, 10)",
    ]
    session = run([sys.executable, "-c", session_block], tmp_path, env).stdout
    assert session.strip() == "image ['batch', 3, 32, 32] tensor(float)"

    (threads_block,) = readme.blocks("Threads", "sh")
    for line in readme.commands(threads_block):
        assert "gives the same probabilities" in run(["bash", "-c", line], tmp_path, env).stdout

    (verify_block,) = readme.blocks("Verify", "sh")
    (line,) = readme.commands(verify_block)
    result = run(["bash", "-c", line], tmp_path, env)
    assert result.stdout.splitlines()[-2] == "OK: every value within tolerance"
    assert "worst node:" in result.stdout
    assert "<svg" in (tmp_path / "build" / "verify.html").read_text()
