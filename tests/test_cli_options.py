"""The command line's reporting options (docs/contract.md, "The command line"): --verbose's compile
report, --quiet, --debug, the progress line (terminals only), --input-dim, and the note for an
output folder it creates."""

from __future__ import annotations

import contextlib
import io
import time

import numpy as np
import pytest

from onemodel_compile import cli as cli_module
from tests import models
from tests.test_cli import assert_clean_error, cli


def test_verbose_reports_operators_folding_weights_and_stages(tmp_path):
    path = models.save(models.conv_model(), tmp_path / "conv.onnx")
    result = cli(path, "--verbose", "-o", tmp_path / "conv.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tmp_path / "conv.py")  # stdout: the path only
    report = [line.removeprefix("onemodel-compile: ") for line in result.stderr.splitlines()]
    weights = (tmp_path / "conv.weights.safetensors").stat().st_size
    import onnx

    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    assert report[0].startswith(f"operators ({len(onnx.load(path).graph.node)} nodes): ")
    for op in ops:
        assert f"{op} " in report[0], (op, report[0])
    assert report[1].startswith("run time: ") and "folded into constants: " in report[1]
    assert "fused: " in report[1]
    assert report[2].startswith(f"weights: {weights} bytes")
    for stage in ("load", "ir", "resolve", "optimize", "emit"):
        assert f"{stage} " in report[3], report[3]


def test_verbose_counts_what_the_fast_variant_fused(tmp_path):
    """conv_model's BatchNormalization is folded into its Conv in the fast variant, not the exact."""
    path = models.save(models.conv_model(), tmp_path / "conv.onnx")
    fast = cli(path, "-v", "-o", tmp_path / "fast.py").stderr
    exact = cli(path, "-v", "--variant", "exact", "-o", tmp_path / "exact.py").stderr
    assert "fused: 0" in exact and "optimize" not in exact
    if "BatchNormalization" in fast:
        assert "fused: 0" not in fast, fast


def test_quiet_prints_nothing_on_success(tmp_path):
    path = models.save(models.relu_model(opset=6), tmp_path / "relu.onnx")
    result = cli(path, "--quiet")
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    assert (tmp_path / "relu.py").is_file()
    error = cli(tmp_path / "missing.onnx", "--quiet")
    assert_clean_error(error, "missing.onnx")


def test_verbose_and_quiet_exclude_each_other(tmp_path):
    result = cli(tmp_path / "m.onnx", "-v", "-q")
    assert result.returncode == 2 and "not allowed with" in result.stderr


def _internal_bug(*args, **kwargs):
    raise ZeroDivisionError("a bug of ours")


def test_internal_errors_one_line_or_the_traceback_with_debug(tmp_path, monkeypatch):
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    monkeypatch.setattr(cli_module, "compile_model", _internal_bug)
    plain = cli(path)
    assert plain.returncode == 2
    assert_clean_error(plain, "internal error", "ZeroDivisionError", "--debug")
    debug = cli(path, "--debug")
    assert debug.returncode == 2
    assert "Traceback (most recent call last)" in debug.stderr and "_internal_bug" in debug.stderr
    assert debug.stderr.strip().splitlines()[-1].startswith("onemodel-compile: internal error")


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _slow_compile(model, output, variant, name, *, input_dims, report):
    with report.stage("resolve"):
        time.sleep(0.6)
    return output


@pytest.mark.parametrize("tty", [True, False])
def test_progress_line_on_a_terminal_only(tmp_path, monkeypatch, tty):
    monkeypatch.setattr(cli_module, "PROGRESS_AFTER", 0.1)
    monkeypatch.setattr(cli_module, "PROGRESS_EVERY", 0.05)
    monkeypatch.setattr(cli_module, "compile_model", _slow_compile)
    stderr, stdout = (_Terminal() if tty else io.StringIO()), io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
        code = cli_module.main([str(tmp_path / "slow.onnx"), "-o", str(tmp_path / "slow.py")])
    assert code == 0
    text = stderr.getvalue()
    if tty:
        assert "\r\x1b[Konemodel-compile: compiling slow.onnx: resolve (" in text, repr(text)
        assert text.endswith("\r\x1b[K"), "the line is erased at the end"
    else:
        assert text == "", "no progress in pipes and logs"


def test_input_dim_pins_a_symbolic_dim(tmp_path):
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    result = cli(path, "--input-dim", "N=3", "-o", tmp_path / "pinned.py")
    assert result.returncode == 0, result.stderr
    module = models.import_generated(tmp_path / "pinned.py")
    assert module.INPUTS == (("x", "float32", (3, 4)),)
    x = models.rng(0).standard_normal((3, 4)).astype(np.float32)
    expected = models.ort_run(models.mlp_model(), {"x": x})
    np.testing.assert_allclose(module.run(x).probs, expected["probs"], rtol=1e-5, atol=1e-6)
    with pytest.raises(Exception, match="'x'"):
        module.run(np.zeros((2, 4), np.float32))


@pytest.mark.parametrize(
    "argument, fragments",
    [("B=3", ["--input-dim B", "N"]), ("N=x", ["--input-dim", "NAME=SIZE"]), ("N", ["NAME=SIZE"])],
)
def test_input_dim_errors(tmp_path, argument, fragments):
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    result = cli(path, "--input-dim", argument)
    assert result.returncode in (1, 2) and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    for fragment in fragments:
        assert fragment in last, (fragment, last)
    assert not (tmp_path / "mlp.py").exists()


def test_a_created_output_folder_is_said(tmp_path):
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    result = cli(path, "-o", tmp_path / "new" / "deeper" / "mlp.py")
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"onemodel-compile: created the folder {tmp_path / 'new'}\n"
    again = cli(path, "-o", tmp_path / "new" / "deeper" / "mlp.py")
    assert again.stderr == ""
