"""A quick look at chosen benchmark models (not the report): compiled / onnxruntime ratio in one
process, both sides in alternating blocks, and optionally where the time goes per node.

    .venv/bin/python -m tools.bench_pair bert gpt2 [--threads 1] [--budget 3] [--profile] \\
        [--compare-split] [--compare-blas] [--compare-kernel] [--cache .cache/bench-pair]

Models are onnx's light_*.onnx (as tools/bench prepares them) and those of tools/bench_models.MODELS
whose name contains one of the arguments. The thread
count (1 by default) is set through runtime_support.set_num_threads for the compiled side and as
intra_op_num_threads for onnxruntime.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from tools.bench import blas_own_choice  # noqa: E402 (imports no numpy)

blas_own_choice()  # OpenBLAS picks its kernels, before numpy loads

import numpy as np  # noqa: E402
import onnxruntime

import runtime_support
from onemodel_compile import compile_model
from tools.bench import (
    ROOT,
    import_generated,
    light_folder,
    light_model,
    ort_ops,
    statement_profile,
)
from tools.bench_models import MODELS, Built


def models():
    """(name, build) of every benchmark model, the light ones first as in the report."""
    for path in sorted(light_folder().glob("light_*.onnx")):
        yield path.stem, lambda path=path: Built(*light_model(path))
    for spec in MODELS:
        yield spec.name, spec.build


def session(model_bytes: bytes, threads: int, profile: str | None = None):
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = options.inter_op_num_threads = threads
    options.log_severity_level = 3
    if profile:
        options.enable_profiling = True
        options.profile_file_prefix = profile
    return onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def interleaved(functions, budget: float, block: float = 0.25, settle: float = 0.05):
    """Median seconds of each function, run in alternating blocks of `block` seconds: wall
    clock, and the calling thread's CPU time (at one thread both sides compute in the calling
    thread, and its CPU time leaves out the time other processes of a shared machine take)."""
    wall = [[] for _ in functions]
    cpu = [[] for _ in functions]
    spent = [0.0 for _ in functions]
    while min(spent) < budget or min(len(t) for t in wall) < 5:
        for i, function in enumerate(functions):
            start_block = time.perf_counter()
            while time.perf_counter() - start_block < block:
                start, start_cpu = time.perf_counter(), time.thread_time()
                function()
                elapsed = time.perf_counter() - start
                cpu[i].append(time.thread_time() - start_cpu)
                wall[i].append(elapsed)
                spent[i] += elapsed
            time.sleep(settle)
    return [statistics.median(t) for t in wall], [statistics.median(t) for t in cpu]


def compare_split(module, arguments, budget: float) -> str:
    """The module's run with runtime_support's kernels splitting their work over the threads set
    from SPLIT_SIZE elements on and unsplit, interleaved: wall clock, the split's only gain."""
    from runtime_support import _threads

    def with_split_min(split_min):
        def run():
            before, _threads.SPLIT_MIN = _threads.SPLIT_MIN, split_min
            try:
                module.run(*arguments)
            finally:
                _threads.SPLIT_MIN = before

        return run

    runs = [with_split_min(_threads.SPLIT_SIZE), with_split_min(None)]
    (split, whole), _ = interleaved(runs, budget)
    return (
        f"own kernels split {1e3 * split:8.3f} ms, unsplit {1e3 * whole:8.3f} ms "
        f"(split / unsplit {split / whole:5.2f})"
    )


def compare_blas_hold(module, arguments, sess, feeds, budget: float) -> str:
    """The module as the thread count runs it and with numpy's BLAS held at one thread for the
    whole run (every kernel's raise to the count made a no-op), and onnxruntime, interleaved:
    what OpenBLAS's own threads gain or cost the model at the count set."""
    from runtime_support import _threads

    blas = _threads._blas()
    setter = blas._set

    def held():
        blas.set(1)
        blas._set = None  # _Blas.set is then a no-op
        try:
            module.run(*arguments)
        finally:
            blas._set = setter
            blas.set(_threads.get_num_threads())

    runs = [lambda: module.run(*arguments), held, lambda: sess.run(None, feeds)]
    (free, one, ort), (free_cpu, one_cpu, ort_cpu) = interleaved(runs, budget)
    return (
        f"BLAS as set {1e3 * free:8.3f} ms (/ ort {free / ort:5.2f}), held at 1 "
        f"{1e3 * one:8.3f} ms (/ ort {one / ort:5.2f}), ort {1e3 * ort:8.3f} ms; "
        f"cpu time / ort: {free_cpu / ort_cpu:5.2f} and {one_cpu / ort_cpu:5.2f}"
    )


def compare_weight_kernel(module, arguments, sess, feeds, budget: float) -> str:
    """The module with rt.matmul_weight's kernel and with its np.matmul fallback forced, and
    onnxruntime, interleaved: the kernel's gain in one process (runtime_support/linalg.py)."""
    from runtime_support import linalg

    kernel = linalg._kernel()

    def with_kernel(function):
        def run():
            before, linalg._state["kernel"] = linalg._state["kernel"], function
            try:
                module.run(*arguments)
            finally:
                linalg._state["kernel"] = before

        return run

    runs = [with_kernel(kernel), with_kernel(None), lambda: sess.run(None, feeds)]
    (ours, fallback, ort), (ours_cpu, fallback_cpu, ort_cpu) = interleaved(runs, budget)
    return (
        f"{linalg.weight_kernel()}: {1e3 * ours:8.3f} ms (/ ort {ours / ort:5.2f}), np.matmul "
        f"{1e3 * fallback:8.3f} ms (/ ort {fallback / ort:5.2f}), ort {1e3 * ort:8.3f} ms; "
        f"cpu time / ort: {ours_cpu / ort_cpu:5.2f} and {fallback_cpu / ort_cpu:5.2f}"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*")
    parser.add_argument("--budget", type=float, default=3.0)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench-pair")
    parser.add_argument(
        "--compare-split",
        action="store_true",
        help="also time the module with runtime_support's own kernels split and unsplit",
    )
    parser.add_argument(
        "--compare-blas",
        action="store_true",
        help="also time the module with numpy's BLAS held at one thread for the whole run",
    )
    parser.add_argument(
        "--compare-kernel",
        action="store_true",
        help="also time the module with rt.matmul_weight's kernel and its np.matmul fallback",
    )
    args = parser.parse_args(argv)
    threads = args.threads
    runtime_support.set_num_threads(threads)
    args.cache.mkdir(parents=True, exist_ok=True)
    for name, build in models():
        if args.only and not any(o in name for o in args.only):
            continue
        built = build()
        path = compile_model(built.model, args.cache / f"{name}.py")
        module = import_generated(Path(path))
        model_bytes = built.model.SerializeToString()
        sess = session(model_bytes, threads)
        arguments = [built.feeds[name] for name, _, _ in module.INPUTS]
        ours, theirs = list(module.run(*arguments)), sess.run(None, built.feeds)
        diff = max(
            float(np.max(np.abs(a - e))) / max(float(np.max(np.abs(e))), 1e-30)
            for a, e in zip(ours, theirs)
        )
        (compiled, ort), (compiled_cpu, ort_cpu) = interleaved(
            [lambda: module.run(*arguments), lambda: sess.run(None, built.feeds)], args.budget
        )
        print(
            f"{name:20s} compiled {1e3 * compiled:8.3f} ms  ort {1e3 * ort:8.3f} ms  "
            f"ratio {compiled / ort:5.2f}  (cpu time: {1e3 * compiled_cpu:8.3f} / "
            f"{1e3 * ort_cpu:8.3f} = {compiled_cpu / ort_cpu:5.2f})  max rel diff {diff:.1e}",
            flush=True,
        )
        if args.compare_split:
            print("  " + compare_split(module, arguments, args.budget), flush=True)
        if args.compare_blas:
            print("  " + compare_blas_hold(module, arguments, sess, built.feeds, args.budget))
        if args.compare_kernel:
            line = compare_weight_kernel(module, arguments, sess, built.feeds, args.budget)
            print("  " + line, flush=True)
        if args.profile:
            runs = max(3, int(1.0 / compiled))
            profile = statement_profile(module, arguments, runs)
            print(f"  traced {profile['traced_run_ms']:.3f} ms; by op type:")
            for op, ms, n in profile["ops"][:12]:
                print(f"    {op:24s} {ms:8.3f} ms  {n:3d} nodes")
            print("  slowest nodes:")
            for op, node, ms in profile["nodes"][:12]:  # not `name`: the model's, used below
                print(f"    {op:20s} {node[:50]:50s} {ms:8.3f} ms")
            prefix = str(args.cache / f"ort_{name}")
            ops = ort_ops(session(model_bytes, threads, prefix), built.feeds, runs)
            print("  onnxruntime by op type:")
            for op, ms, n in ops[:10]:
                print(f"    {op:24s} {ms:8.3f} ms  {n:3d} nodes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
