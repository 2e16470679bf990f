"""Conformance: compile a backend node case, run every data set, compare with the case's outputs.

Each case ends as one of:
  pass            every output matches (dtype, shape, values within the case's rtol/atol)
  mismatch        an output differs; the detail says which and by how much
  unsupported     the compiler refused something outside its scope, naming it
  refused         the exact variant refused a non-exact operator, naming it
  compile error   compiling failed otherwise (the message)
  runtime error   the generated module raised (the message)

The command line (`python -m tools.conformance`) writes the report and the expected-pass lists
that CI holds the compiler to.
"""

from __future__ import annotations

import multiprocessing
import tempfile
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.harness import backend_cases
from tests.harness.compare import compare
from tests.harness.modules import import_generated

EXPECTED_DIR = backend_cases.ROOT / "tests" / "conformance"
STATUSES = ("pass", "mismatch", "unsupported", "refused", "compile error", "runtime error")


@dataclass(frozen=True)
class Outcome:
    name: str
    variant: str
    status: str
    detail: str = ""


def expected_file(variant: str) -> Path:
    return EXPECTED_DIR / f"expected_pass_{variant}.txt"


def expected_passes(variant: str) -> set[str]:
    path = expected_file(variant)
    if not path.exists():
        return set()
    return {
        line.strip()
        for line in path.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }


def hide_shapes(model):
    """`model` loaded and checked, then altered so that its graph inputs, outputs and value infos
    keep their element types but lose their shapes: the later stages must work with ranks and dims
    they do not know. (onnx's checker requires a shape on main-graph inputs, so a model file
    cannot say this; in real models unknown ranks arise inside, from If, Loop and Reshape.)"""
    import dataclasses

    import onnx

    from onemodel_compile.load import load

    loaded = load(model)
    hidden = onnx.ModelProto()
    hidden.CopyFrom(loaded.proto)
    graph = hidden.graph
    del graph.value_info[:]
    for info in list(graph.input) + list(graph.output):
        _forget_shape(info.type)
    return dataclasses.replace(loaded, proto=hidden)


def _forget_shape(type_proto) -> None:
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        type_proto.tensor_type.ClearField("shape")
    elif kind == "sequence_type":
        _forget_shape(type_proto.sequence_type.elem_type)
    elif kind == "optional_type":
        _forget_shape(type_proto.optional_type.elem_type)


def _execute(case, name: str, variant: str, folder: str, hidden: bool = False):
    """Compile `case` in `variant` (with its shapes hidden from the compiler if `hidden`) and run
    every data set: the list of each data set's results, or the Outcome that stopped it (refused,
    compile or runtime error)."""
    from onemodel_compile import CompileError, ExactnessError, UnsupportedError, compile_model

    model = hide_shapes(case.model) if hidden else case.model
    try:
        path = compile_model(model, Path(folder) / f"model_{variant}.py", variant)
    except ExactnessError as exc:
        return Outcome(name, variant, "refused", str(exc))
    except UnsupportedError as exc:
        return Outcome(name, variant, "unsupported", str(exc))
    except CompileError as exc:
        return Outcome(name, variant, "compile error", str(exc))
    except Exception as exc:
        return Outcome(name, variant, "compile error", f"internal: {type(exc).__name__}: {exc}")
    try:
        module = import_generated(path, f"conformance_{name}_{variant}", register=False)
        results = []
        for inputs, _ in case.data_sets:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                results.append(list(module.run(*backend_cases.as_numpy(list(inputs)))))
        return results
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return Outcome(
            name,
            variant,
            "runtime error",
            f"{type(exc).__name__}: {exc} ({Path(frame.filename).name}:{frame.lineno})",
        )


def _first_difference(case, reference_sets, result_sets) -> str | None:
    """What differs between two runs' outputs (data set by data set), at the case's tolerance."""
    for index, (expected, actual) in enumerate(zip(reference_sets, result_sets)):
        if len(actual) != len(expected):
            return f"{len(actual)} outputs, expected {len(expected)}"
        for position, (e, a) in enumerate(zip(expected, actual)):
            problem = compare(e, a, case.rtol, case.atol, f"data set {index}, output {position}")
            if problem:
                return problem
    return None


def run_case(name: str, variant: str, hidden: bool = False) -> Outcome:
    """Compile and run one backend case in one variant; compare with the backend's outputs. With
    `hidden`, the compiler is not told the shapes of the graph's inputs and outputs."""
    case = backend_cases.case(name)
    with tempfile.TemporaryDirectory(prefix="conformance-") as folder:
        results = _execute(case, name, variant, folder, hidden)
    if isinstance(results, Outcome):
        return results
    expected = [backend_cases.as_numpy(list(outputs)) for _, outputs in case.data_sets]
    problem = _first_difference(case, expected, results)
    return (
        Outcome(name, variant, "mismatch", problem) if problem else Outcome(name, variant, "pass")
    )


AGREEMENT = "fast~exact"  # the Outcome.variant of an agreement check


def run_agreement(name: str) -> Outcome:
    """Compile one backend case in both variants and compare their outputs with each other at the
    case's tolerance (the exact run taken as the reference): "pass" when they agree, "mismatch"
    when not, or the outcome that kept either variant from running (a refusal, say)."""
    case = backend_cases.case(name)
    with tempfile.TemporaryDirectory(prefix="conformance-") as folder:
        exact = _execute(case, name, "exact", folder)
        if isinstance(exact, Outcome):
            return Outcome(name, AGREEMENT, exact.status, exact.detail)
        fast = _execute(case, name, "fast", folder)
    if isinstance(fast, Outcome):
        return Outcome(name, AGREEMENT, fast.status, fast.detail)
    problem = _first_difference(case, exact, fast)
    return (
        Outcome(name, AGREEMENT, "mismatch", problem)
        if problem
        else Outcome(name, AGREEMENT, "pass")
    )


def _run_packed(args) -> Outcome:
    name, variant, hidden = args
    return run_agreement(name) if variant == AGREEMENT else run_case(name, variant, hidden)


def run_all(
    names: list[str], variants: list[str], jobs: int, hidden: bool = False
) -> list[Outcome]:
    work = [(name, variant, hidden) for variant in variants for name in names]
    if jobs <= 1:
        return [_run_packed(w) for w in work]
    context = multiprocessing.get_context("fork")
    with context.Pool(jobs, maxtasksperchild=200) as pool:
        return pool.map(_run_packed, work, chunksize=4)
