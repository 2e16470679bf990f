"""The bit-identity command line over tests/harness/bit_identity.py (docs/bit-identity.md).

Usage:
  python -m tools.bit_identity                   the matrix on the exact and the fast variant
  python -m tools.bit_identity --variant exact   exact only (what tests/test_bit_identity.py checks)
  python -m tools.bit_identity --update-golden   add the digests of cases new to the golden file
                                                 (a full exact run; an existing digest that changed
                                                 is reported as a bug and nothing is written)
  python -m tools.bit_identity compile WORK [--variant exact] [-k SUBSTRING]
  python -m tools.bit_identity run WORK [--out FILE.json]

Exit code of the matrix: 1 when an exact digest differs between environments or from the golden file
(or the set of exact-compilable cases differs from it); the fast variant's differences are reported,
not judged: they show that the matrix discriminates.

Only the standard library and numpy are imported: the run step must work in the numpy-1.26
environment, which has neither onnx nor the compiler.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from tests.harness.bit_identity import (
    DEFAULT,
    ENVIRONMENTS,
    GOLDEN_FILE,
    ROOT,
    _names,
    compile_cases,
    describe_run,
    ensure_numpy126_python,
    golden_growth_problems,
    judge,
    load_golden,
    run_cases,
    run_matrix,
    write_golden,
)

# --- command line ----------------------------------------------------------------------------------


def _main_compile(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bit_identity compile")
    parser.add_argument("work", type=Path)
    parser.add_argument("--variant", choices=("exact", "fast"), default="exact")
    parser.add_argument("-k", dest="pattern")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    manifest = compile_cases(args.work, args.variant, args.pattern, args.jobs)
    print(
        f"{args.variant}: {len(manifest['cases'])} compiled, {len(manifest['refused'])} refused, "
        f"{len(manifest['not compiled'])} not compiled -> {args.work}"
    )
    return 0


def _main_run(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bit_identity run")
    parser.add_argument("work", type=Path)
    parser.add_argument("--out", type=Path, help="write the result here as JSON")
    parser.add_argument("--quiet", action="store_true", help="print only the overall digest")
    args = parser.parse_args(argv)
    result = run_cases(args.work)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, sort_keys=True))
    if not args.quiet:
        for name, digest in sorted(result["digests"].items()):
            print(f"{digest}  {name}")
        for name, digest in sorted(result["probes"].items()):
            print(f"{digest}  probe: numpy {name}")
    print(f"{result['overall']}  overall ({len(result['digests'])} cases, numpy {result['numpy']})")
    return 0


def _main_matrix(argv) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bit_identity",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--variant",
        action="append",
        choices=("exact", "fast"),
        help="variant(s) to run (default: both)",
    )
    parser.add_argument(
        "--update-golden",
        action="store_true",
        help=f"add the cases new to {GOLDEN_FILE.relative_to(ROOT)} from a full exact run "
        "(existing digests must not change)",
    )
    parser.add_argument("-k", dest="pattern", help="only the cases whose name contains this")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--work", type=Path, help="work folder (default: a temporary one)")
    args = parser.parse_args(argv)
    variants = args.variant or (["exact"] if args.update_golden else ["exact", "fast"])
    if args.update_golden and (args.pattern or "exact" not in variants):
        parser.error("--update-golden needs the whole exact suite (no -k)")
    failed = False
    with tempfile.TemporaryDirectory(prefix="bit-identity-") as temporary:
        base = args.work or Path(temporary)
        numpy126_python = ensure_numpy126_python()
        for variant in variants:
            start = time.perf_counter()
            manifest = compile_cases(base / variant, variant, args.pattern, args.jobs)
            compiled = time.perf_counter() - start
            results = run_matrix(base / variant, ENVIRONMENTS, args.jobs, numpy126_python)
            golden = load_golden() if variant == "exact" and not args.pattern else None
            verdict = judge(results, None if args.update_golden else golden)
            base_result = results[DEFAULT]
            print(
                f"{variant}: {len(manifest['cases'])} cases compiled ({compiled:.0f} s), "
                f"{len(manifest['refused'])} refused, {len(manifest['not compiled'])} not compiled; "
                f"{len(base_result['errors'])} raise when run; overall digest "
                f"{base_result['overall'][:16]}... in {DEFAULT}"
            )
            print("\n".join(describe_run(results, verdict)))
            all_differing = sorted({c for cases in verdict.differing.values() for c in cases})
            if variant == "fast":
                print(
                    f"fast: {len(all_differing)} of {len(base_result['digests'])} cases differ "
                    f"across environments (not judged: it shows that the matrix discriminates); "
                    f"for example {_names(all_differing, 8) or '-'}"
                )
                continue
            if verdict.problems:
                failed = True
                print(f"exact: {len(verdict.problems)} problems:")
                print("\n".join(f"  {p}" for p in verdict.problems))
            else:
                print(
                    "exact: every digest is equal in every environment"
                    + (" and to the golden file" if golden and not args.update_golden else "")
                )
            growth = golden_growth_problems(base_result, golden) if args.update_golden else []
            if growth:
                failed = True
                print(
                    f"exact: not written: {len(growth)} cases of the golden file changed (a bug "
                    "to report, not digests to overwrite):"
                )
                print("\n".join(f"  {p}" for p in growth))
            elif args.update_golden and not verdict.problems:
                added = len(base_result["digests"]) - len((golden or {}).get("digests", {}))
                write_golden(base_result, manifest)
                print(
                    f"wrote {GOLDEN_FILE.relative_to(ROOT)} ({len(base_result['digests'])} cases, "
                    f"{added} new)"
                )
    return 1 if failed else 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    commands = {"compile": _main_compile, "run": _main_run}
    if argv and argv[0] in commands:
        return commands[argv[0]](argv[1:])
    return _main_matrix(argv)


if __name__ == "__main__":
    sys.exit(main())
