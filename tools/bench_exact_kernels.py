"""Benchmark (not a test): the exact kernels of runtime_support.exact against what the fast variant
runs for the same operation, as a markdown table of times and exact/fast ratios.

    .venv/bin/python -m tools.bench_exact_kernels [--repeat N] [--quick]

Each row times both sides alternately, `repeat` times each, and keeps the fastest run of each (the
least disturbed by other work on the machine). BLAS uses its default thread count unless
OPENBLAS_NUM_THREADS says otherwise.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import runtime_support as rt


def _best(fast, exact, repeat: int) -> tuple[float, float]:
    fast(), exact()  # warm up (allocations, BLAS threads)
    times = {fast: [], exact: []}
    for _ in range(repeat):
        for function in (fast, exact):
            start = time.perf_counter()
            function()
            times[function].append(time.perf_counter() - start)
    return min(times[fast]), min(times[exact])


def _cases(quick: bool):
    generator = np.random.default_rng(0)

    def normal(shape, dtype=np.float32):
        return generator.standard_normal(shape).astype(dtype)

    for size in (64, 256) if quick else (64, 256, 1024):
        for dtype in (np.float32, np.float64):
            A, B = normal((size, size), dtype), normal((size, size), dtype)
            yield (
                f"MatMul {size}x{size}x{size} {np.dtype(dtype).name}",
                lambda A=A, B=B: np.matmul(A, B),
                lambda A=A, B=B: rt.exact_matmul(A, B),
            )
    A, B, C = normal((512, 768)), normal((3072, 768)), normal((3072,))
    yield (
        "Gemm 512x768 @ (3072x768).T + C float32",
        lambda: A @ B.T + C,
        lambda: rt.exact_gemm(A, B, C, transB=1),
    )
    X = normal((8, 768, 128) if quick else (32, 768, 128))
    name = "x".join(map(str, X.shape))
    yield (
        f"ReduceSum {name} axis 2",
        lambda: np.sum(X, axis=2, keepdims=True),
        lambda: rt.exact_reduce_sum(X, (2,)),
    )
    yield (
        f"ReduceSum {name} axis 1",
        lambda: np.sum(X, axis=1, keepdims=True),
        lambda: rt.exact_reduce_sum(X, (1,)),
    )
    yield (f"ReduceSum {name} all", lambda: np.sum(X), lambda: rt.exact_reduce_sum(X, keepdims=0))
    yield (
        f"ReduceMean {name} axis 2",
        lambda: np.mean(X, axis=2, keepdims=True),
        lambda: rt.exact_reduce_mean(X, (2,)),
    )
    yield (
        f"ReduceL2 {name} axis 1",
        lambda: np.sqrt(np.sum(np.square(X), axis=1, keepdims=True)),
        lambda: rt.exact_reduce_l2(X, (1,)),
    )
    yield (f"CumSum {name} axis 2", lambda: np.cumsum(X, axis=2), lambda: rt.exact_cumsum(X, 2))
    yield (
        f"Softmax {name} axis 2 (np.exp)",
        lambda: rt.softmax(X, axis=2),
        lambda: rt.exact_softmax(X, axis=2),
    )
    yield (
        f"LayerNorm statistics {name} axis 2",
        lambda: rt.layer_normalization(X, X[0, 0])[0],
        lambda: rt.exact_standardize(X, (2,), 1e-5)[0],
    )
    images = normal((1, 64, 56, 56) if quick else (4, 64, 56, 56))
    filters = normal((64, 64, 3, 3))
    geometry = dict(pads=(1, 1, 1, 1), strides=(1, 1), dilations=(1, 1))
    yield (
        f"Conv {'x'.join(map(str, images.shape))} 3x3, 64 maps",
        lambda: rt.conv(images, filters, **geometry),
        lambda: rt.exact_conv(images, filters, **geometry),
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="smaller sizes only")
    args = parser.parse_args(argv)
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(f"numpy {np.__version__}, OPENBLAS_NUM_THREADS={threads}, best of {args.repeat}\n")
    print("| operation | fast (ms) | exact (ms) | exact / fast |")
    print("| --- | ---: | ---: | ---: |")
    for name, fast, exact in _cases(args.quick):
        fast_time, exact_time = _best(fast, exact, args.repeat)
        print(
            f"| {name} | {fast_time * 1e3:.3f} | {exact_time * 1e3:.3f} "
            f"| {exact_time / fast_time:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
