"""`onemodel-compile verify` (docs/verify.md): the table, the exit codes, per-node comparison, the
worst node of a deliberately wrong module, inputs from a file, pinned dims, the reference
evaluator, and the HTML report."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

import runtime_support
from onemodel_compile import verify
from tests import models
from tests.test_cli import assert_clean_error, cli

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "tiny_classifier.onnx"


def chain_model():
    """x[N, 4] -> MatMul -> Softmax 'middle' -> MatMul -> Relu -> y: the Softmax (an rt kernel)
    sits in the middle, so a wrong one spoils every value after it."""
    r = models.rng(4)
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h"], name="first"),
        helper.make_node("Softmax", ["h"], ["s"], name="middle", axis=-1),
        helper.make_node("MatMul", ["s", "W2"], ["t"], name="last"),
        helper.make_node("Relu", ["t"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "chain",
        [models.tensor("x", ["N", 4])],
        [models.tensor("y", ["N", 5])],
        [
            models.init("W1", r.standard_normal((4, 6)).astype(np.float32)),
            models.init("W2", r.standard_normal((6, 5)).astype(np.float32)),
        ],
    )
    return models.finish(graph)


def test_example_model_verifies(tmp_path):
    verbose = cli("verify", EXAMPLE, "--verbose")
    assert verbose.returncode == 0 and "onemodel-compile: operators (" in verbose.stderr
    result = cli("verify", EXAMPLE)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "verify tiny_classifier.onnx: fast variant against onnxruntime"
    assert any(
        line.startswith("probabilities  Softmax 'softmax'  float32  [1, 10]") for line in lines
    )
    for column in ("max abs", "max rel", "max ULP", "worst node"):
        assert column in result.stdout, column
    assert "float32: atol 1e-05, rtol 0.0001" in result.stdout
    assert lines[-1] == "OK: every value within tolerance"


@pytest.mark.parametrize("against", ["onnxruntime", "reference"])
@pytest.mark.parametrize("variant", ["fast", "exact"])
def test_per_node_against_both_references(tmp_path, against, variant):
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    result = verify.verify(path, against=against, variant=variant, per_node=True)
    assert result.ok, "\n".join(verify.summary(result))
    assert [c.name for c in result.outputs] == ["probs", "hidden"]
    assert [c.name for c in result.nodes] == ["h0", "h1", "hidden", "logits", "probs"]
    assert [c.depth for c in result.nodes] == [1, 2, 3, 4, 5]
    assert [c.node for c in result.nodes][:2] == ["MatMul 'fc1'", "Add 'bias1'"]


def test_a_wrong_kernel_is_the_worst_node(tmp_path, monkeypatch):
    """A Softmax kernel that is off by 1%: verify fails and names the Softmax node, although the
    error is larger still in the values after it."""
    path = models.save(chain_model(), tmp_path / "chain.onnx")
    real = runtime_support.softmax
    monkeypatch.setattr(runtime_support, "softmax", lambda x, **kw: real(x, **kw) * 1.01)
    result = cli("verify", path, "--per-node", "--html", tmp_path / "report.html")
    assert result.returncode == 1, result.stdout + result.stderr
    worst = [line for line in result.stdout.splitlines() if line.startswith("worst node:")]
    assert worst == [worst[0]] and worst[0].startswith("worst node: Softmax 'middle' -> 's'")
    assert "the first above the tolerance" in worst[0]
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if "  " in line}
    assert rows["h"].endswith("yes") and "NO" in rows["s"] and "NO" in rows["y"]
    assert result.stdout.splitlines()[-2].startswith("FAIL: 3 of 4 values above tolerance")
    page = (tmp_path / "report.html").read_text()
    svg = page[page.index("<svg") : page.index("</svg>") + 6]
    circles = ElementTree.fromstring(svg).findall("{http://www.w3.org/2000/svg}circle")
    assert len(circles) == 4 and sum(c.get("fill") == "#d62728" for c in circles) == 3
    # without --per-node the outputs alone: y fails, and its node is named
    result = cli("verify", path, "--quiet")
    assert result.returncode == 1 and result.stdout == ""
    assert "FAIL" in result.stderr


def test_inputs_from_a_file_and_pinned_dims(tmp_path):
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    x = models.rng(3).standard_normal((6, 4)).astype(np.float32)
    np.savez(tmp_path / "inputs.npz", x=x)
    result = cli("verify", path, "--inputs", tmp_path / "inputs.npz")
    assert result.returncode == 0, result.stderr
    assert "inputs from the file: x float32 [6, 4]" in result.stdout
    result = cli("verify", path, "--input-dim", "N=5")
    assert result.returncode == 0, result.stderr
    assert "inputs generated (seed 0): x float32 [5, 4]" in result.stdout
    assert "probs   Softmax 'softmax'  float32  [5, 3]" in result.stdout


def test_tolerance_options_decide_the_exit_code(tmp_path):
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    # a tolerance only equality meets: the exit code follows whether any element differs
    result = verify.verify(path, atol=0.0, rtol=0.0)
    equal = all(c.max_abs == 0 for c in result.outputs)
    assert result.ok == equal
    code = cli("verify", path, "--atol", "0", "--rtol", "0").returncode
    assert code == (0 if equal else 1)
    assert cli("verify", path, "--atol", "1", "--rtol", "1").returncode == 0


VERIFY_ERRORS = {
    "missing model": (lambda t: [t / "missing.onnx"], ["missing.onnx"]),
    "inputs file missing": (
        lambda t: [models.save(models.mlp_model(), t / "m.onnx"), "--inputs", t / "no.npz"],
        ["no.npz"],
    ),
    "unknown input dim": (
        lambda t: [models.save(models.mlp_model(), t / "m.onnx"), "--input-dim", "B=2"],
        ["--input-dim B", "N"],
    ),
}


@pytest.mark.parametrize("case", sorted(VERIFY_ERRORS))
def test_verify_errors_are_one_line_and_exit_2(tmp_path, case):
    build, fragments = VERIFY_ERRORS[case]
    result = cli("verify", *build(tmp_path))
    assert result.returncode == 2
    assert_clean_error(result, *fragments)


def test_wrong_inputs_file_names_the_inputs(tmp_path):
    path = models.save(models.mlp_model(), tmp_path / "m.onnx")
    np.savez(tmp_path / "bad.npz", y=np.zeros((1, 4), np.float32))
    result = cli("verify", path, "--inputs", tmp_path / "bad.npz")
    assert_clean_error(result, "['x']", "missing ['x']", "unknown ['y']")


def test_ulp_distance_against_an_independent_count():
    """ULPs counted by stepping with np.nextafter from one value to the other."""
    start = np.float32(1.0)
    values = [start]
    for _ in range(5):
        values.append(np.nextafter(values[-1], np.float32(2)))
    ours = np.array([values[5], -values[3], np.float32(0.0)], np.float32)
    theirs = np.array([values[0], -values[0], np.float32(-0.0)], np.float32)
    np.testing.assert_array_equal(verify._ulp_distance(ours, theirs), [5, 3, 0])
    tiny = np.nextafter(np.float32(0), np.float32(1))
    np.testing.assert_array_equal(
        verify._ulp_distance(np.array([tiny], np.float32), np.array([-tiny], np.float32)), [2]
    )
