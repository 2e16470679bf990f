"""Reviewability (docs/contract.md): compiling the same model twice gives byte-identical `.py` and weights
files with no timestamp and no absolute path; the output passes py_compile, black and pyflakes; a
local change to the model gives a local diff."""

from __future__ import annotations

import difflib
import os
import py_compile
import re
import socket
import subprocess
import sys
from pathlib import Path

import black
import numpy as np
import pytest
from onnx import numpy_helper

import onemodel_compile
from tests import models

WEIGHTS = ".weights.safetensors"
DIGEST = re.compile(r"\b[0-9a-f]{64}\b")
BLACK_LINE_LENGTH = 100  # the project's black setting (pyproject.toml [tool.black])


def compile_to(
    model, folder: Path, stem: str = "net", variant: str = "fast"
) -> tuple[bytes, bytes]:
    path = onemodel_compile.compile_model(model, folder / f"{stem}.py", variant)
    weights = path.with_name(stem + WEIGHTS)
    return path.read_bytes(), weights.read_bytes() if weights.exists() else b""


@pytest.mark.parametrize("variant", ["fast", "exact"])
def test_same_model_twice_in_two_folders(tmp_path, variant):
    model = models.conv_model() if variant == "fast" else models.two_input_model()
    path = models.save(model, tmp_path / "model" / "net.onnx")
    first = compile_to(path, tmp_path / "first", variant=variant)
    second = compile_to(path, tmp_path / "second" / "deeper", variant=variant)
    assert first[0] == second[0]
    assert first[1] == second[1]
    if variant == "fast":
        assert first[1], "the conv model has weights"


def test_path_and_proto_give_identical_weights_and_code(tmp_path):
    """Everything but the source's name, which only a path has, is the same."""
    model = models.conv_model()
    path = models.save(model, tmp_path / "net.onnx")
    from_path = compile_to(path, tmp_path / "a")
    from_proto = compile_to(model, tmp_path / "b")
    assert from_path[1] == from_proto[1]

    def without_source_name(source: bytes) -> list[str]:
        text = source.decode()
        return [
            line.replace("'net.onnx'", "<source>").replace("'<ModelProto>'", "<source>")
            for line in text.splitlines()
        ]

    assert without_source_name(from_path[0]) == without_source_name(from_proto[0])


def test_independent_of_hash_seed_and_working_folder(tmp_path):
    """Two processes with different hash seeds (set and dict-of-str order) and working folders."""
    path = models.save(models.conv_model(), tmp_path / "net.onnx")
    outputs = []
    for seed, cwd in (("0", tmp_path), ("4242", Path("/"))):
        folder = tmp_path / f"seed{seed}"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        result = subprocess.run(
            [sys.executable, "-m", "onemodel_compile", str(path), "-o", str(folder / "net.py")],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        outputs.append(((folder / "net.py").read_bytes(), (folder / f"net{WEIGHTS}").read_bytes()))
    assert outputs[0] == outputs[1]


def test_no_timestamp_and_no_absolute_path(tmp_path):
    folder = tmp_path / "some-unusual-folder-name"
    path = models.save(models.conv_model(), folder / "net.onnx")
    source, weights = compile_to(path, folder / "out")
    text = source.decode()
    for forbidden in (str(tmp_path), str(folder), str(folder / "out")):
        assert forbidden not in text, f"the module contains {forbidden!r}"
        assert forbidden.encode() not in weights, f"the weights contain {forbidden!r}"
    assert "some-unusual-folder-name" not in text
    for forbidden in (
        str(Path.home()),
        os.getcwd(),
        sys.prefix,
        sys.executable,
        socket.gethostname(),
    ):
        if len(forbidden) >= 6:  # short ones (a host called "vm") can occur by chance
            assert forbidden not in text, f"the module contains {forbidden!r}"
    assert not re.search(r"\b(19|20)\d\d[-/.](0[1-9]|1[0-2])[-/.]\d\d\b", text), "a date"
    preamble = "\n".join(models.header_comments(text)) + (models.module_docstring(text) or "")
    assert not re.search(r"\b\d\d:\d\d(:\d\d)?\b", preamble), "a time of day"


def test_local_change_to_a_weight_changes_only_digests(tmp_path):
    model = models.mlp_model()
    before, _ = compile_to(model, tmp_path / "before")
    changed = models.mlp_model()
    w1 = next(t for t in changed.graph.initializer if t.name == "W1")
    value = numpy_helper.to_array(w1).copy()
    value[0, 0] += 1
    w1.CopyFrom(numpy_helper.from_array(value, "W1"))
    after, _ = compile_to(changed, tmp_path / "after")
    diff = [
        line
        for line in difflib.unified_diff(
            before.decode().splitlines(), after.decode().splitlines(), n=0
        )
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert diff, "the digests must change"
    assert all(DIGEST.search(line) for line in diff), diff


def test_renaming_one_value_changes_only_its_lines(tmp_path):
    model = models.mlp_model()
    before, _ = compile_to(model, tmp_path / "before")
    renamed = models.mlp_model()
    for node in renamed.graph.node:
        node.input[:] = ["h1_renamed" if n == "h1" else n for n in node.input]
        node.output[:] = ["h1_renamed" if n == "h1" else n for n in node.output]
    after, _ = compile_to(renamed, tmp_path / "after")
    diff = [
        line
        for line in difflib.unified_diff(
            before.decode().splitlines(), after.decode().splitlines(), n=0
        )
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert diff
    for line in diff:
        assert DIGEST.search(line) or re.search(r"\bh1(_renamed)?\b", line), line


# --- the output is valid, formatted and lint-free --------------------------------------------


def _lint(source: str, filename: str) -> list[str]:
    from pyflakes import api, reporter

    class Collect(reporter.Reporter):
        def __init__(self):
            self.messages: list[str] = []

        def unexpectedError(self, filename, message):
            self.messages.append(f"unexpected error: {message}")

        def syntaxError(self, filename, message, lineno, offset, text):
            self.messages.append(f"syntax error line {lineno}: {message}")

        def flake(self, message):
            self.messages.append(str(message))

    collect = Collect()
    api.check(source, filename, collect)
    return collect.messages


MODELS_WITH_WEIGHTS = {"conv": models.conv_model, "mlp": models.mlp_model}


@pytest.mark.parametrize("name", sorted(MODELS_WITH_WEIGHTS))
def test_output_compiles_is_black_and_pyflakes_clean(tmp_path, name):
    model = MODELS_WITH_WEIGHTS[name]()
    path = onemodel_compile.compile_model(model, tmp_path / "net.py")
    py_compile.compile(str(path), cfile=str(tmp_path / "net.pyc"), doraise=True)
    source = path.read_text()
    assert black.format_str(source, mode=black.Mode(line_length=BLACK_LINE_LENGTH)) == source
    assert f"black {black.__version__}" in "\n".join(models.header_comments(source))
    assert _lint(source, str(path)) == []


def test_black_check_command_line(tmp_path):
    """`black --check` itself (the installed version) accepts the module."""
    path = onemodel_compile.compile_model(models.conv_model(), tmp_path / "net.py")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "black",
            "--check",
            "--line-length",
            str(BLACK_LINE_LENGTH),
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_py_compile_command_line(tmp_path):
    path = onemodel_compile.compile_model(models.mlp_model(), tmp_path / "net.py")
    result = subprocess.run(
        [sys.executable, "-m", "py_compile", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_module_without_weights_is_pyflakes_clean(tmp_path):
    path = onemodel_compile.compile_model(models.two_input_model(), tmp_path / "net.py")
    assert not path.with_name("net" + WEIGHTS).exists()
    assert _lint(path.read_text(), str(path)) == []


def test_module_without_weights_compiles_and_is_black(tmp_path):
    path = onemodel_compile.compile_model(models.two_input_model(), tmp_path / "net.py")
    py_compile.compile(str(path), cfile=str(tmp_path / "net.pyc"), doraise=True)
    source = path.read_text()
    assert black.format_str(source, mode=black.Mode(line_length=BLACK_LINE_LENGTH)) == source
    module = models.import_generated(path)
    a = np.ones((2, 3), dtype=np.float32)
    np.testing.assert_array_equal(module.run(a, a)[0], a + a)
