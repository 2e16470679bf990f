"""Benchmark (not a test): the exact kernels of another checkout against this one's, in one process.

    .venv/bin/python -m tools.bench_exact_ab OTHER-CHECKOUT [--only NAME ...] [--seconds S]

Each of make bench-exact's models (tools/bench_exact.py) is compiled once (this checkout's
compiler); its exact module is imported twice, once calling this checkout's runtime_support and
once with OTHER-CHECKOUT's runtime_support/exact.py (loaded as a module of its own; every other
kernel is this checkout's), and the fast module once. The three run in turn, in blocks of about
0.2 s, for about 3 * S seconds at one thread; the median CPU time per run of each is printed,
with both exact / fast ratios and this checkout's exact time over the other's. Both exact
modules' outputs are checked to be the same bits first.

The tool of make bench-exact measures one checkout per process, and between two processes on
this shared machine the ratios move by 10 to 30% (the fast run's time alone by up to 60%); in one
process the three sides see the same machine, so a change of a few percent shows.
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"  # before numpy is imported, or the setting has no effect

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import statistics  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402

import runtime_support as rt  # noqa: E402
from tools import bench_exact  # noqa: E402


def other_runtime(checkout: Path) -> types.ModuleType:
    """A stand-in for `runtime_support` whose exact kernels are `checkout`'s exact.py."""
    spec = importlib.util.spec_from_file_location(
        "other_exact", checkout / "runtime_support" / "exact.py"
    )
    assert spec is not None and spec.loader is not None
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)

    class Runtime(types.ModuleType):
        def __getattr__(self, name):
            return getattr(other if name in other.__all__ else rt, name)

    return Runtime("other_runtime_support")


def imported(path: Path, runtime, tag: str):
    spec = importlib.util.spec_from_file_location(f"{path.stem}_{tag}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.rt = runtime  # the generated code calls its kernels through this name
    return module


def medians(sides: dict, feeds: dict, seconds: float) -> dict[str, float]:
    """Median seconds per run of each side, alternating (bench_exact's blocks), `seconds` in all."""
    times = bench_exact.run_in_blocks(sides, feeds, seconds / len(sides), 5)
    return {side: statistics.median(t) for side, t in times.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "other", type=Path, help="the other checkout (its runtime_support/exact.py)"
    )
    parser.add_argument("--only", nargs="*", default=[], help="models whose name contains one")
    parser.add_argument("--seconds", type=float, default=2.0, help="per side and model")
    parser.add_argument("--cache", type=Path, default=bench_exact.ROOT / ".cache" / "bench-exact")
    args = parser.parse_args(argv)
    other = other_runtime(args.other)
    names = [m for m in bench_exact.MODELS if not args.only or any(o in m for o in args.only)]
    for model in bench_exact.prepare(args.cache, names):
        fast = bench_exact.compiled(model, "fast", args.cache)
        exact = bench_exact.compiled(model, "exact", args.cache)
        path = Path(exact.__file__)
        sides = {
            "fast": imported(Path(fast.__file__), rt, "fast"),
            "other": imported(path, other, "other"),
            "this": imported(path, rt, "this"),
        }
        ours, theirs = sides["this"].run_feeds(model.feeds), sides["other"].run_feeds(model.feeds)
        if any(ours[k].tobytes() != theirs[k].tobytes() for k in ours):
            print(f"{model.name}: the two exact modules' outputs differ")
            return 1
        m = medians(sides, model.feeds, 3 * args.seconds)
        print(
            f"{model.name:18} fast {m['fast'] * 1e3:8.3f} ms  exact other {m['other'] * 1e3:8.3f} "
            f"ms (x{m['other'] / m['fast']:.2f})  exact this {m['this'] * 1e3:8.3f} ms "
            f"(x{m['this'] / m['fast']:.2f})  this / other {m['this'] / m['other']:.3f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
