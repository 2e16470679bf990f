"""Real exported models (tests/real_models/, built by tools/make_real_models.py (torch),
tools/make_tf_models.py (tf2onnx) and tools/make_paddle_models.py (paddle2onnx); see the README
there for which exporter made each): each compiles in both variants and reproduces onnxruntime
1.31.1's stored outputs on both stored feed sets, as exported and again with every input dim made
symbolic.

- `test_real_model`: the model as the exporter wrote it.
- `test_real_model_symbolic`: every graph input dim rewritten to its own dim_param, value_info
  dropped, and every graph output dim made an unnamed unknown dim (onnx.checker requires a main
  graph output to keep a `shape`, so the rank stays), so nothing but the graph itself tells the
  compiler a shape.

The exact variant may refuse a model for an operator of the refusal list (tests/test_conformance.py's
REFUSAL_LIST), naming it and pointing at `--variant fast`; that counts as the expected outcome.

Every other failure today is listed in XFAIL below, keyed by (model, variant, symbolic), with the
exact one-line failure as the reason; the marks are strict, so a fixed case shows up as XPASS
failing and its line is removed. `python tests/test_real_models.py` prints the current failures
in the table's format. This test never needs torch.

301 cases (75 models x 2 variants x as-is/symbolic, and the set check).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest

if __name__ == "__main__":  # `python tests/test_real_models.py` from the repository root
    sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).parent)]

from test_conformance import REFUSAL_LIST  # noqa: E402

from onemodel_compile import CompileError, ExactnessError, compile_model  # noqa: E402
from tests.harness.compare import compare  # noqa: E402
from tests.harness.modules import import_generated  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "tests" / "real_models"
MODELS = sorted(p.stem for p in FOLDER.glob("*.onnx"))
VARIANTS = ("fast", "exact")
RTOL, ATOL = 1e-3, 1e-5
# A float16 output: four of its ulps (2**-10 relative at the bottom of a binade). onnxruntime and
# numpy round float16 products and sums at different points (half_mlp_legacy_op17's Gemm and
# LayerNormalization), so float16 results differ by one to three ulps where 1e-3 is one or two.
HALF_RTOL = 4 * 2.0**-10
# An XFAIL reason that starts with this runs its case in a child process: compiling it kills the
# process (a C++ assertion in onnx's shape inference), which would take the test run with it.
ABORTED = "process aborted"

# (model, variant, symbolic) -> the failure's one line, as `outcome` reports it. Empty: the last
# entries, script_if_rank_op17's ReduceMean of an If whose branches have different ranks ("the
# rank of input 0 is unknown"), pass since emitters handle unknown ranks (tests/test_unknown_rank.py).
# fmt: off
XFAIL: dict[tuple[str, str, bool], str] = {}
# fmt: on


def load_feeds(name: str) -> list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
    """The stored feed sets: [(inputs, onnxruntime's outputs)] keyed by ONNX names."""
    sets: dict[int, tuple[dict, dict]] = {}
    with np.load(FOLDER / f"{name}.npz") as data:
        for key in data.files:
            k, kind, onnx_name = key.split(":", 2)
            sets.setdefault(int(k), ({}, {}))[kind == "output"][onnx_name] = data[key]
    return [sets[k] for k in sorted(sets)]


def make_symbolic(model: onnx.ModelProto) -> onnx.ModelProto:
    """Every input dim a dim_param of its own, no value_info, every output dim unknown."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    for value in graph.input:
        if value.name in initializers or not value.type.HasField("tensor_type"):
            continue
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            dim.Clear()
            dim.dim_param = f"{value.name}_dim{axis}"
    del graph.value_info[:]
    for value in graph.output:
        if value.type.HasField("tensor_type"):
            for dim in value.type.tensor_type.shape.dim:
                dim.Clear()
    return model


def outcome(name: str, variant: str, symbolic: bool, folder: Path) -> str | None:
    """None when the compiled model reproduces every stored output; "refused: ..." for a refusal;
    else the failure on one line."""
    model = onnx.load(FOLDER / f"{name}.onnx")
    if symbolic:
        model = make_symbolic(model)
    tag = f"{name}_{variant}_{'symbolic' if symbolic else 'asis'}"
    try:
        path = compile_model(model, folder / f"{tag}.py", variant)
    except ExactnessError as exc:
        return f"refused: {exc}"
    except CompileError as exc:
        return f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - an internal error is a failure to report
        return f"internal {type(exc).__name__}: {exc}".splitlines()[0]
    try:
        module = import_generated(path, f"real_{tag}")
        for index, (inputs, expected) in enumerate(load_feeds(name)):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                actual = module.run_feeds(inputs)
            for output, value in expected.items():
                rtol = HALF_RTOL if value.dtype == np.float16 else RTOL
                problem = compare(value, actual[output], rtol, ATOL, f"set {index} {output}")
                if problem:
                    return f"mismatch: {problem}"
    except Exception as exc:  # noqa: BLE001
        return f"run {type(exc).__name__}: {exc}".splitlines()[0]
    return None


def outcome_in_child(name: str, variant: str, symbolic: bool) -> str | None:
    """`outcome` in a child process, for the cases that abort the process that compiles them."""
    command = [sys.executable, __file__, "--one", name, variant, str(int(symbolic))]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=ROOT, timeout=600, check=False
    )
    if done.returncode < 0:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        return f"{ABORTED} by {signal.Signals(-done.returncode).name}: {last}"
    if done.returncode:
        return f"child exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"
    line = done.stdout.strip().splitlines()[-1]
    return None if line == "None" else line


def check(name: str, variant: str, symbolic: bool, folder: Path) -> None:
    if XFAIL.get((name, variant, symbolic), "").startswith(ABORTED):
        problem = outcome_in_child(name, variant, symbolic)
    else:
        problem = outcome(name, variant, symbolic, folder)
    if problem and problem.startswith("refused: ") and variant == "exact":
        operator = problem.removeprefix("refused: ").split()[0]
        assert operator in REFUSAL_LIST, f"refused {operator}, not on the list: {problem}"
        assert "--variant fast" in problem, problem
        return
    assert problem is None, problem


def params(symbolic: bool):
    for name in MODELS:
        for variant in VARIANTS:
            reason = XFAIL.get((name, variant, symbolic))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(name, variant, id=f"{name}-{variant}", marks=marks)


def test_the_set_is_there() -> None:
    assert len(MODELS) >= 14, MODELS
    for name in MODELS:
        assert (FOLDER / f"{name}.npz").exists(), name
    stale = {key[0] for key in XFAIL} - set(MODELS)
    assert not stale, f"XFAIL names models that are not there: {sorted(stale)}"


@pytest.mark.parametrize("name,variant", list(params(symbolic=False)))
def test_real_model(name: str, variant: str, tmp_path: Path) -> None:
    check(name, variant, False, tmp_path)


@pytest.mark.parametrize("name,variant", list(params(symbolic=True)))
def test_real_model_symbolic(name: str, variant: str, tmp_path: Path) -> None:
    check(name, variant, True, tmp_path)


def main(argv: list[str]) -> None:
    """`--one MODEL VARIANT 0|1`: print that case's outcome (the child of `outcome_in_child`).
    No arguments: run every case, each in a child process, and print the failures as XFAIL lines
    (refusals of a refusal-list operator as comments)."""
    if argv[:1] == ["--one"]:
        name, variant, symbolic = argv[1], argv[2], argv[3] == "1"
        with tempfile.TemporaryDirectory() as scratch:
            print(outcome(name, variant, symbolic, Path(scratch)))
        return
    for name in MODELS:
        for symbolic in (False, True):
            for variant in VARIANTS:
                line = outcome_in_child(name, variant, symbolic)
                if line and line.startswith("refused: "):
                    print(f"    # {name} {variant} symbolic={symbolic}: {line}")
                elif line:
                    print(f"    ({name!r}, {variant!r}, {symbolic}): {line!r},")


if __name__ == "__main__":
    main(sys.argv[1:])
