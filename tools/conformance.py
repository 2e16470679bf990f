"""Conformance: compile each in-scope backend node case, run every data set, compare.

Each case ends as one of:
  pass            every output matches (dtype, shape, values within the case's rtol/atol)
  mismatch        an output differs; the detail says which and by how much
  unsupported     the compiler refused something outside its scope, naming it
  refused         the exact variant refused a non-exact operator, naming it
  compile error   compiling failed otherwise (the message)
  runtime error   the generated module raised (the message)

Run `python -m tools.conformance --report docs/conformance.md` to regenerate the report from a real
run; `--update-expected` rewrites the expected-pass lists that CI holds the compiler to.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import multiprocessing
import sys
import tempfile
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tools import backend_cases

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


def import_module_from(path: Path, module_name: str):
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compare(expected, actual, rtol: float, atol: float, where: str) -> str | None:
    """None when `actual` matches `expected`, else what differs."""
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{where}: expected a sequence of {len(expected)}, got {type(actual).__name__}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            problem = compare(e, a, rtol, atol, f"{where}[{i}]")
            if problem:
                return problem
        return None
    if expected is None:
        return None if actual is None else f"{where}: expected None"
    if actual is None:
        return f"{where}: got None"
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.dtype != actual.dtype:
        return f"{where}: dtype {actual.dtype}, expected {expected.dtype}"
    if expected.shape != actual.shape:
        return f"{where}: shape {actual.shape}, expected {expected.shape}"
    if expected.dtype.kind in "fc" or expected.dtype.name == "bfloat16":
        e64, a64 = expected.astype(np.float64), actual.astype(np.float64)
        same_nan = np.isnan(e64) == np.isnan(a64)
        close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True) | (e64 == a64)
        if not (same_nan.all() and close.all()):
            bad = ~(close & same_nan)
            diff = np.abs(a64 - e64)[bad]
            diff = diff[~np.isnan(diff)]
            largest = (
                f"largest difference {diff.max():.3g}"
                if diff.size
                else "NaN where a number is expected"
            )
            return f"{where}: {int(bad.sum())} of {e64.size} values differ ({largest})"
        return None
    if not np.array_equal(expected, actual):
        bad = int((expected != actual).sum())
        return f"{where}: {bad} of {expected.size} values differ"
    return None


def as_numpy(value):
    """Backend data holds some tensors as TensorProto (bfloat16, float16); sequences as lists."""
    import onnx
    from onnx import numpy_helper

    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [as_numpy(v) for v in value]
    return value


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
        module = import_module_from(path, f"conformance_{name}_{variant}")
        results = []
        for inputs, _ in case.data_sets:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                results.append(list(module.run(*as_numpy(list(inputs)))))
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
    expected = [as_numpy(list(outputs)) for _, outputs in case.data_sets]
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


def render_report(outcomes: list[Outcome], variants: list[str]) -> str:
    by_case = {(o.name, o.variant): o for o in outcomes}
    names = sorted({o.name for o in outcomes})
    lines = [
        "# Conformance against the ONNX backend node tests",
        "",
        "Generated by `make conformance-report` (`python -m tools.conformance --variant fast "
        "--variant exact --agreement --report docs/conformance.md`) from a real run; do not edit "
        "by hand.",
        f"Cases: the {len(names)} in-scope node tests of onnx 1.23.2 (`tests/conformance/scope.json`), "
        "compared at each case's tolerance (rtol 1e-3, atol 1e-7 unless the case says otherwise); "
        "dtype and shape must match.",
        "",
        "## Totals",
        "",
        "| status | " + " | ".join(variants) + " |",
        "|---|" + "---|" * len(variants),
    ]
    for status in STATUSES:
        counts = [
            sum(1 for o in outcomes if o.variant == v and o.status == status) for v in variants
        ]
        lines.append(f"| {status} | " + " | ".join(str(c) for c in counts) + " |")
    lines += [
        "",
        "## By operator",
        "",
        "A case counts for every operator its model uses.",
        "",
        "| operator | cases | " + " | ".join(f"{v} pass" for v in variants) + " |",
        "|---|---|" + "---|" * len(variants),
    ]
    per_op: dict[str, list[str]] = collections.defaultdict(list)
    for name in names:
        for op in backend_cases.operators(name):
            per_op[op].append(name)
    for op in sorted(per_op):
        cells = [str(sum(by_case[(n, v)].status == "pass" for n in per_op[op])) for v in variants]
        lines.append(f"| {op} | {len(per_op[op])} | " + " | ".join(cells) + " |")
    agreement = [o for o in outcomes if o.variant == AGREEMENT]
    if agreement:
        compared = [o for o in agreement if o.status in ("pass", "mismatch")]
        differing = [o for o in compared if o.status == "mismatch"]
        lines += [
            "",
            "## Fast and exact agree",
            "",
            f"Every case both variants compile and run, the fast outputs compared with the exact "
            f"ones at the case's tolerance (`--agreement`): {len(compared)} compared, "
            f"{len(compared) - len(differing)} agree, {len(differing)} differ; "
            f"{len(agreement) - len(compared)} not compared (refused in exact, or not running).",
        ]
        if differing:
            lines += ["", "| case | difference |", "|---|---|"]
            lines += [f"| {o.name} | {o.detail} |" for o in sorted(differing, key=lambda o: o.name)]
    lines += [
        "",
        "## onnx's model tests",
        "",
        "The 149 model tests onnx ships beside these node tests (pytorch-converted, "
        "pytorch-operator, simple, light) run in `tests/test_onnx_model_tests.py`, both variants; "
        "see docs/model-tests.md. `simple/test_gradient_of_*` (Gradient, ai.onnx.preview.training) "
        "and `simple/test_strnorm_*` (string tensors) wait for the types-and-domains issue, as "
        "strict xfails.",
    ]
    lines += ["", "## Cases not passing", ""]
    for variant in variants:
        failing = [o for o in outcomes if o.variant == variant and o.status != "pass"]
        lines += [f"### {variant} ({len(failing)})", ""]
        if failing:
            lines += ["| case | status | reason |", "|---|---|---|"]
            for o in sorted(failing, key=lambda o: o.name):
                detail = o.detail.replace("|", "\\|").replace("\n", " ")[:300]
                lines.append(f"| {o.name} | {o.status} | {detail} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.conformance",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--variant",
        action="append",
        choices=("fast", "exact"),
        help="variant(s) to run (default: fast)",
    )
    parser.add_argument(
        "--agreement",
        action="store_true",
        help="also compare the fast variant's outputs with the exact variant's, case by case",
    )
    parser.add_argument("--report", type=Path, help="write the markdown report here")
    parser.add_argument(
        "--update-expected",
        action="store_true",
        help="rewrite tests/conformance/expected_pass_<variant>.txt from this run",
    )
    parser.add_argument("-k", dest="pattern", help="only cases whose name contains this")
    parser.add_argument(
        "--hide-shapes",
        action="store_true",
        help="compile with the shapes of graph inputs and outputs hidden (unknown ranks)",
    )
    parser.add_argument("-j", "--jobs", type=int, default=multiprocessing.cpu_count())
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case not passing")
    args = parser.parse_args(argv)
    variants = args.variant or ["fast"]
    names = [n for n in backend_cases.in_scope_names() if not args.pattern or args.pattern in n]
    backend_cases.all_cases()  # generate once before forking
    outcomes = run_all(names, variants + [AGREEMENT] * args.agreement, args.jobs, args.hide_shapes)
    if args.agreement:
        agreement = [o for o in outcomes if o.variant == AGREEMENT]
        counts = collections.Counter(o.status for o in agreement)
        print(
            f"fast vs exact: {counts['pass']} agree, {counts['mismatch']} differ, "
            f"{len(agreement) - counts['pass'] - counts['mismatch']} not compared"
        )
        for o in agreement:
            if o.status == "mismatch":
                print(f"  {o.name}: fast and exact differ: {o.detail}")
    for variant in variants:
        mine = [o for o in outcomes if o.variant == variant]
        counts = collections.Counter(o.status for o in mine)
        summary = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
        print(f"{variant}: {summary} (of {len(mine)})")
        expected = expected_passes(variant)
        passing = {o.name for o in mine if o.status == "pass"}
        lost = sorted((expected & set(names)) - passing)
        if lost:
            print(f"{variant}: {len(lost)} expected passes now fail: {', '.join(lost)}")
        if args.verbose:
            for o in mine:
                if o.status != "pass":
                    print(f"  {o.name}: {o.status}: {o.detail}")
        if args.update_expected:
            if args.pattern or args.hide_shapes:
                parser.error("--update-expected needs the whole suite (no -k, no --hide-shapes)")
            header = f"# Backend cases the {variant} variant must pass; written by tools.conformance --update-expected\n"
            expected_file(variant).write_text(header + "".join(f"{n}\n" for n in sorted(passing)))
    if args.report:
        if args.pattern:
            parser.error("--report needs the whole suite (no -k)")
        args.report.write_text(render_report(outcomes, variants))
        print(f"wrote {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
