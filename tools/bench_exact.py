"""Benchmark (not a test): the exact variant of generated modules against the fast variant.

    .venv/bin/python -m tools.bench_exact [--report docs/exact-performance.md] [--only NAME ...]
        [--budget SECONDS] [--cache DIR]

`make bench-exact` runs it with `--report docs/exact-performance.md`. Models: the example model
(examples/tiny_classifier.onnx, batch 1), the multilayer perceptrons at batch 1 and 256 and the
BERT-style encoder at batch 1 of tools/bench_models.py (matrix products), and the MobileNet-style
net of tools/bench_models.py and light_squeezenet of the onnx wheel (convolutions). Models and
compiled modules go under `--cache` (default .cache/bench-exact/).

Both variants are compiled and imported into this one process, which runs at one thread
(OPENBLAS/OMP/MKL_NUM_THREADS=1, set before numpy is imported): the exact variant's cost is the
arithmetic it does, not how BLAS spreads it. After one warm-up run each (whose outputs are
compared: the largest difference relative to the largest fast output is reported), the two run
in alternating blocks of about 0.2 s until each has had `--budget` seconds (at least 3 runs); the
median run time of each is kept. Times are the process's CPU time (CLOCK), which other work on the
machine does not stretch as it stretches wall time. The machine is shared, so ratios are compared, never times
across runs.

Models whose exact run is more than TARGET times the fast one are profiled (cProfile over about
PROFILE_SECONDS of exact runs): the runtime_support kernels that take the most time, as a share of
the run.

The report keeps, unchanged, everything from its "## Analysis" heading on (written by hand).
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"  # before numpy is imported, or the setting has no effect

import argparse  # noqa: E402
import cProfile  # noqa: E402
import platform  # noqa: E402
import pstats  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from tools.bench import import_generated  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGET = 4.0  # issue #15's aim: exact at most this many times slower than fast on every model
ACCEPTED = 8.0  # issue #12's acceptance bound
ANALYSIS_HEADING = "## Analysis"
# Times are this process's CPU time (user + system), not wall time: on the shared 2-core machine
# under a load of 10 or more, a call of several milliseconds is preempted several times and its
# wall time grows with the run queue while a short call often runs through, which skewed wall-time
# ratios (measured: float64 slice products against a float32 product 22 to 29 times by wall time,
# where the models themselves ran at 6 to 8). BLAS runs at one thread, so CPU time is the work.
CLOCK = time.process_time
BLOCK_SECONDS = 0.2
PROFILE_SECONDS = 1.0  # profiled exact runs: about this long in all, and at least PROFILE_MIN_RUNS
PROFILE_MIN_RUNS = 3
MODELS = ("tiny_classifier", "mlp_b1", "mlp_b256", "bert_b1", "mobilenet", "light_squeezenet")
KIND = {
    "tiny_classifier": "example (conv)",
    "mlp_b1": "matmul",
    "mlp_b256": "matmul",
    "bert_b1": "matmul (transformer)",
    "mobilenet": "conv",
    "light_squeezenet": "conv",
}


# The bench models' dominant products (M x K @ K x N): the exact variant's BLAS work for each is
# two float64 products of integer-valued slices (exact_matmul, float32 operands: [A_0; A_1] @ B_0
# and A_0 @ B_1), the fast variant's one float32 product. Their time ratio is the floor of
# exact / fast wherever products dominate.
FLOOR_SHAPES = (
    ("mlp_b256 fc0", 256, 784, 512),
    ("bert_b1 FFN in", 128, 256, 1024),
    ("bert_b1 FFN out", 128, 1024, 256),
    ("light_squeezenet conv10 (1x1, 512 -> 1000, 13x13)", 1000, 512, 169),
    ("light_squeezenet expand3x3 (16 -> 64, 55x55)", 64, 144, 3025),
    ("mobilenet pointwise (64 -> 128, 28x28)", 128, 64, 784),
    ("mlp_b1 fc0 (matrix-vector)", 1, 784, 512),
)


def alternate(sides: dict, budget: float) -> dict[str, float]:
    """Median CPU seconds of each side's call, the sides run in turn for about `budget` seconds
    (at least 5 runs each)."""
    times: dict[str, list[float]] = {side: [] for side in sides}
    end = CLOCK() + budget
    while CLOCK() < end or min(len(t) for t in times.values()) < 5:
        for side, run in sides.items():
            start = CLOCK()
            run()
            times[side].append(CLOCK() - start)
    return {side: statistics.median(t) for side, t in times.items()}


def blas_floor(budget: float) -> list[dict]:
    """Per FLOOR_SHAPES entry: median seconds of the float32 product and of the exact variant's
    two float64 products (integer-valued slices of 21 bits, as exact_matmul makes them),
    alternating for about `budget` seconds."""
    rng = np.random.default_rng(0)
    rows = []
    for label, m, k, n in FLOOR_SHAPES:
        a32, b32 = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n)))
        stack = np.rint(rng.uniform(-(2.0**21), 2.0**21, (2 * m, k)))  # A_0 over A_1
        b0, b1 = (np.rint(rng.uniform(-(2.0**21), 2.0**21, (k, n))) for _ in range(2))
        sides = {
            "fast": lambda a32=a32, b32=b32: a32 @ b32,
            "exact": lambda s=stack, b0=b0, b1=b1, m=m: (s @ b0, s[:m] @ b1),
        }
        medians = alternate(sides, budget)
        fast, exact = medians["fast"], medians["exact"]
        rows.append({"label": label, "shape": (m, k, n), "fast": fast, "exact": exact})
    return rows


@dataclass
class Model:
    name: str
    source: Path
    feeds: dict


def prepare(cache: Path, names: list[str]) -> list[Model]:
    """The models and their feeds: the example model here, the others through tools.bench."""
    from tools import bench

    models = []
    for name in names:
        if name == "tiny_classifier":
            feeds = {"image": np.random.default_rng(0).standard_normal((1, 3, 32, 32), np.float32)}
            models.append(Model(name, ROOT / "examples" / "tiny_classifier.onnx", feeds))
            continue
        (case,) = [c for c in bench.prepare(cache, [name]) if c.name == name]
        models.append(Model(name, Path(case.source), bench.load_feeds(case)))
    return models


def compiled(model: Model, variant: str, cache: Path):
    """Compile `model` in `variant` into `cache` and import the module."""
    from onemodel_compile import compile_model

    path = compile_model(model.source, cache / "compiled" / f"{model.name}_{variant}.py", variant)
    return import_generated(path)


def largest_difference(fast: dict, exact: dict) -> float:
    """max |exact - fast| / max |fast| over the float outputs."""
    worst = 0.0
    for name, value in fast.items():
        if value.dtype.kind != "f":
            continue
        a, b = value.astype(np.float64), exact[name].astype(np.float64)
        scale = max(float(np.max(np.abs(a), initial=0.0)), np.finfo(np.float64).tiny)
        worst = max(worst, float(np.max(np.abs(a - b), initial=0.0)) / scale)
    return worst


def run_in_blocks(modules: dict, feeds: dict, budget: float, runs: int) -> dict[str, list[float]]:
    """Seconds of every run of each module (by side name) over `feeds`, the sides in alternating
    blocks of BLOCK_SECONDS, until each has spent `budget` seconds and made `runs` runs."""
    times: dict[str, list[float]] = {side: [] for side in modules}
    spent = {side: 0.0 for side in modules}
    while min(spent.values()) < budget or min(len(t) for t in times.values()) < runs:
        for side, module in modules.items():
            block_start = CLOCK()
            while True:
                start = CLOCK()
                module.run_feeds(feeds)
                end = CLOCK()
                times[side].append(end - start)
                if end - block_start >= BLOCK_SECONDS:
                    break
            spent[side] += CLOCK() - block_start
    return times


def time_alternately(fast, exact, feeds: dict, budget: float) -> tuple[float, float, int, int]:
    """Median seconds per run of each, in alternating blocks; and the number of runs of each."""
    times = run_in_blocks({"fast": fast, "exact": exact}, feeds, budget, 3)
    return (
        statistics.median(times["fast"]),
        statistics.median(times["exact"]),
        len(times["fast"]),
        len(times["exact"]),
    )


def kernel_profile(module, feeds: dict, runs: int = 3, top: int = 6) -> list[tuple[str, float]]:
    """The runtime_support functions (and numpy built-ins) with the most own time over `runs`
    runs, as (name, share of the total run time)."""
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for _ in range(runs):
        module.run_feeds(feeds)
    profiler.disable()
    total = time.perf_counter() - start
    stats = pstats.Stats(profiler).stats
    rows = []
    for (filename, _, function), (_, _, own, _, _) in stats.items():
        where = Path(filename)
        if "runtime_support" in where.parts:
            label = f"rt.{where.stem}.{function}"
        elif filename == "~":
            label = function.strip("<>").replace("built-in method ", "").replace("method ", "")
        else:
            continue
        rows.append((label, own / total))
    return sorted(rows, key=lambda row: -row[1])[:top]


def measure(model: Model, cache: Path, budget: float) -> dict:
    fast, exact = compiled(model, "fast", cache), compiled(model, "exact", cache)
    difference = largest_difference(fast.run_feeds(model.feeds), exact.run_feeds(model.feeds))
    fast_s, exact_s, fast_runs, exact_runs = time_alternately(fast, exact, model.feeds, budget)
    row = {
        "name": model.name,
        "fast_ms": fast_s * 1e3,
        "exact_ms": exact_s * 1e3,
        "ratio": exact_s / fast_s,
        "runs": (fast_runs, exact_runs),
        "difference": difference,
        "profile": None,
    }
    if row["ratio"] > TARGET:
        # About a second of runs: with only a few, one-off costs (a page fault, a collection)
        # land on whichever function is running and can look like a quarter of the run.
        runs = max(PROFILE_MIN_RUNS, round(PROFILE_SECONDS / exact_s))
        row["profile"] = kernel_profile(exact, model.feeds, runs=runs)
        row["profile_runs"] = runs
    return row


def render(rows: list[dict], budget: float, floor: list[dict] | None = None) -> str:
    lines = [
        "# Exact variant: cost against the fast variant",
        "",
        "Generated by `make bench-exact` (`python -m tools.bench_exact --report "
        "docs/exact-performance.md`); a benchmark, not a test. Both variants of each model run in",
        "one process at one thread, alternating, and the median run (CPU time) is kept (see the tool's "
        "docstring).",
        f"The aim (issue #15): exact at most {TARGET:g} times slower than fast on every model; "
        f"issue #12 accepts {ACCEPTED:g}.",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs (shared "
        f"with other work); Python {platform.python_version()}, numpy {np.__version__}; "
        f"{budget:g} s per side and model.",
        "",
        "| model | kind | fast (ms) | exact (ms) | exact / fast | runs (fast, exact) "
        "| largest difference |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row['name']} | {KIND.get(row['name'], '')} | {row['fast_ms']:.3f} "
            f"| {row['exact_ms']:.3f} | {row['ratio']:.1f} | {row['runs'][0]}, {row['runs'][1]} "
            f"| {row['difference']:.1e} |"
        )
    lines += [
        "",
        "Largest difference: max |exact - fast| / max |fast| over the outputs.",
    ]
    if floor:
        lines += [
            "",
            "## The BLAS floor",
            "",
            "The exact variant's float64 products of a float32 product (`[A_0; A_1] @ B_0` and "
            "`A_0 @ B_1`, integer-valued slices,",
            "exact_matmul) against the fast variant's float32 product, for the bench models' "
            "dominant shapes, alternating",
            "in this process (median CPU times): where products dominate a model, its exact / fast ratio "
            "cannot go below this",
            "one without another definition of the exact product.",
            "",
            "| product | M x K x N | float32 (ms) | float64 products (ms) | ratio |",
            "| --- | --- | ---: | ---: | ---: |",
        ]
        for row in floor:
            m, k, n = row["shape"]
            lines.append(
                f"| {row['label']} | {m} x {k} x {n} | {row['fast'] * 1e3:.3f} "
                f"| {row['exact'] * 1e3:.3f} | {row['exact'] / row['fast']:.1f} |"
            )
    profiled = [row for row in rows if row["profile"]]
    if profiled:
        lines += [
            "",
            f"## Where the time goes (models above {TARGET:g} times)",
            "",
            "Own time of the exact run's busiest functions (cProfile over about "
            f"{PROFILE_SECONDS:g} s of runs, at least {PROFILE_MIN_RUNS}), as a share of the run:",
            "",
        ]
        for row in profiled:
            shares = ", ".join(f"`{name}` {share:.0%}" for name, share in row["profile"])
            lines.append(f"- {row['name']} ({row['profile_runs']} runs): {shares}")
    return "\n".join(lines) + "\n"


def write_report(path: Path, text: str) -> None:
    """Write `text`, keeping the hand-written part from ANALYSIS_HEADING on."""
    kept = ""
    if path.exists():
        old = path.read_text()
        if ANALYSIS_HEADING in old:
            kept = "\n" + old[old.index(ANALYSIS_HEADING) :]
    path.write_text(text + kept)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, help="write the markdown report here")
    parser.add_argument("--only", nargs="*", default=[], help="models whose name contains one")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds per side and model")
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench-exact")
    args = parser.parse_args(argv)
    names = [m for m in MODELS if not args.only or any(o in m for o in args.only)]
    rows = []
    for model in prepare(args.cache, names):
        row = measure(model, args.cache, args.budget)
        rows.append(row)
        print(
            f"{row['name']:18} fast {row['fast_ms']:9.3f} ms  exact {row['exact_ms']:9.3f} ms  "
            f"x{row['ratio']:.1f}  difference {row['difference']:.1e}",
            flush=True,
        )
        if row["profile"]:
            print("    " + ", ".join(f"{n} {s:.0%}" for n, s in row["profile"]), flush=True)
    floor = blas_floor(min(args.budget, 1.0)) if not args.only else None
    for row in floor or ():
        print(f"floor {row['label']:52} x{row['exact'] / row['fast']:.1f}", flush=True)
    if args.report:
        write_report(args.report, render(rows, args.budget, floor))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
