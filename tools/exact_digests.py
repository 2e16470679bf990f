"""Digests of exact outputs (not a test): the evidence that a change to the exact kernels kept
every bit.

    .venv/bin/python -m tools.exact_digests OUT.json [--cache DIR]
    cd OTHER-CHECKOUT && PYTHON path/to/tools/exact_digests.py OTHER.json
    .venv/bin/python -m tools.exact_digests --compare OTHER.json OUT.json

The folder it runs in is measured: its compiler and runtime_support are imported first. It
records the SHA-256 of:
- every exact output of make bench-exact's six models (tools/bench_exact.py), each on its bench
  feeds and on more float feeds (seeded normal data at three scales, one with a NaN and an
  infinity); the modules are compiled into --cache by the checkout's own compiler;
- tests/test_exact_kernels.py's digest script (every exact kernel on its fixed inputs);
- the kernels of the small-call paths (Gemm, MatMul, Conv, softmax, means over pooling axes) on
  shapes from batch 1 up, float16, float32 and float64, special values and subnormals, constant
  (read-only) and fresh operands, each called twice (the second call reads cached slices).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

ROOT = Path.cwd()  # the checkout whose compiler and runtime_support are measured
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402


def digest(value) -> str:
    return hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()


def immutable(array: np.ndarray) -> np.ndarray:
    """A read-only copy over bytes, as the weights file's arrays are."""
    return np.frombuffer(array.tobytes(), dtype=array.dtype).reshape(array.shape)


def float_feeds(feeds: dict, seed: int) -> list[dict]:
    """The bench feeds and variants of their float inputs."""
    rng = np.random.default_rng(seed)
    variants = [feeds]
    for scale in (1.0, 300.0, 1e-3, "special"):
        changed = dict(feeds)
        for name, value in feeds.items():
            if value.dtype.kind != "f":
                continue
            data = rng.standard_normal(value.shape) * (1.0 if scale == "special" else scale)
            data = data.astype(value.dtype)
            if scale == "special" and data.size > 3:
                flat = data.reshape(-1)
                flat[1], flat[2] = np.nan, np.inf
            changed[name] = data
        variants.append(changed)
    return variants


def model_digests(cache: Path) -> dict:
    from onemodel_compile import compile_model
    from tools import bench_exact

    results = {}
    for model in bench_exact.prepare(cache, list(bench_exact.MODELS)):
        path = cache / "compiled" / f"{model.name}_exact.py"
        module = bench_exact.import_generated(compile_model(model.source, path, "exact"))
        for index, feeds in enumerate(float_feeds(model.feeds, seed=len(model.name))):
            with np.errstate(all="ignore"):
                outputs = module.run_feeds(feeds)
            for name, value in outputs.items():
                results[f"{model.name}[{index}].{name}"] = digest(value)
    return results


def kernel_script_digests() -> dict:
    from tests.test_exact_kernels import DIGEST_SCRIPT

    done = subprocess.run(
        [sys.executable, "-c", DIGEST_SCRIPT], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return {f"script.{k}": v for k, v in json.loads(done.stdout)["exact"].items()}


def _operand(rng, shape, dtype, kind):
    data = rng.standard_normal(shape)
    if kind == "wide":
        data *= np.exp2(rng.integers(-30, 30, shape))
    elif kind == "relu":
        data = np.maximum(data, 0.0)
    elif kind == "special" and data.size > 4:
        flat = data.reshape(-1)
        flat[0], flat[3] = np.inf, -np.inf
        flat[-1] = np.nan
    elif kind == "subnormal":
        data *= 1e-41 if dtype != np.float64 else 1e-310
    return data.astype(dtype)


def small_call_digests() -> dict:
    import runtime_support as rt

    results = {}
    rng = np.random.default_rng(15)
    kinds = ("normal", "wide", "relu", "special", "subnormal")
    dtypes = (np.float16, np.float32, np.float64)
    # Gemm and MatMul: batch 1 to 64, K from 1 past the 2048 block, both layouts of the weight
    for m, k, n in ((1, 1, 3), (1, 16, 10), (1, 784, 512), (2, 300, 7), (1, 2100, 5), (64, 97, 33)):
        for dtype in dtypes:
            for kind in kinds:
                a = _operand(rng, (m, k), dtype, kind)
                w = immutable(_operand(rng, (n, k), dtype, "normal" if kind == "relu" else kind))
                c = immutable(_operand(rng, (n,), dtype, "normal"))
                tag = f"{m}x{k}x{n}.{np.dtype(dtype).name}.{kind}"
                for call in range(2):
                    with np.errstate(all="ignore"):
                        results[f"gemm.{tag}.{call}"] = digest(rt.exact_gemm(a, w, c, transB=1))
                        results[f"gemm_a.{tag}.{call}"] = digest(
                            rt.exact_gemm(a, w.T.copy(), c, alpha=0.5, beta=2.0)
                        )
                        results[f"matmul.{tag}.{call}"] = digest(rt.exact_matmul(a, w.T))
                        results[f"matmul_v.{tag}.{call}"] = digest(rt.exact_matmul(a[0], w.T))
    # a constant left-hand operand (Conv's filters are one), one and several inner blocks
    for m, k, n in ((3, 40, 9), (5, 2100, 4), (1, 700, 30)):
        for dtype in dtypes:
            for kind in kinds:
                a = immutable(_operand(rng, (m, k), dtype, kind))
                b = _operand(rng, (k, n), dtype, "relu" if kind == "special" else kind)
                tag = f"{m}x{k}x{n}.{np.dtype(dtype).name}.{kind}"
                for call in range(2):
                    with np.errstate(all="ignore"):
                        results[f"matmul_left.{tag}.{call}"] = digest(rt.exact_matmul(a, b))
                        both = rt.exact_matmul(a, immutable(b))
                        results[f"matmul_both.{tag}.{call}"] = digest(both)
    # Conv: the gather and the windows-view im2col paths, groups, the direct sum
    convs = (
        ((1, 3, 32, 32), (8, 3, 3, 3), 1, (1, 1, 1, 1), (1, 1)),
        ((1, 8, 16, 16), (16, 8, 3, 3), 1, (1, 1, 1, 1), (1, 1)),
        ((2, 8, 20, 20), (16, 4, 3, 3), 2, (1, 1, 1, 1), (2, 2)),
        ((1, 16, 40, 40), (32, 16, 3, 3), 1, (0, 1, 0, 1), (1, 1)),
        ((1, 64, 12, 12), (40, 64, 1, 1), 1, (0, 0, 0, 0), (1, 1)),
        ((1, 8, 9, 9), (8, 1, 3, 3), 8, (1, 1, 1, 1), (1, 1)),
        ((1, 240, 6, 6), (6, 240, 3, 3), 1, (1, 0, 1, 0), (1, 1)),
        ((2, 6, 11, 9), (6, 2, 3, 2), 3, (2, 1, 0, 1), (2, 1)),
    )
    for x_shape, w_shape, group, pads, strides in convs:
        for dtype in dtypes:
            for kind in kinds:
                x = _operand(rng, x_shape, dtype, kind)
                w = immutable(_operand(rng, w_shape, dtype, "normal"))
                b = immutable(_operand(rng, (w_shape[0],), dtype, "normal"))
                tag = f"{x_shape}.{w_shape}.{np.dtype(dtype).name}.{kind}"
                for call in range(2):
                    with np.errstate(all="ignore"):
                        y = rt.exact_conv(x, w, b, pads=pads, strides=strides, group=group)
                        results[f"conv.{tag}.{call}"] = digest(y)
                        y = rt.exact_conv(x, w, None, pads=pads, strides=strides, group=group)
                        results[f"conv_nobias.{tag}.{call}"] = digest(y)
    # softmax, means over the spatial axes, sums
    for shape in ((1, 10), (3, 7), (1, 1000), (2, 5, 17)):
        for dtype in dtypes:
            for kind in kinds:
                x = _operand(rng, shape, dtype, kind) * 10
                tag = f"{shape}.{np.dtype(dtype).name}.{kind}"
                with np.errstate(all="ignore"):
                    results[f"softmax.{tag}"] = digest(rt.exact_softmax(x, axis=-1))
                    results[f"softmax0.{tag}"] = digest(rt.exact_softmax(x, axis=0))
                    results[f"log_softmax.{tag}"] = digest(rt.exact_log_softmax(x, axis=-1))
                    results[f"sum.{tag}"] = digest(rt.exact_sum(x, axis=-1))
    for shape in ((1, 16, 16, 16), (2, 3, 7, 5), (1, 1, 1, 1), (1, 4, 33, 2)):
        for dtype in dtypes:
            for kind in kinds:
                x = _operand(rng, shape, dtype, kind)
                tag = f"{shape}.{np.dtype(dtype).name}.{kind}"
                with np.errstate(all="ignore"):
                    results[f"mean23.{tag}"] = digest(rt.exact_mean(x, axis=(2, 3), keepdims=True))
                    results[f"mean1.{tag}"] = digest(rt.exact_mean(x, axis=1))
                    results[f"reduce_mean.{tag}"] = digest(rt.exact_reduce_mean(x, [2, 3]))
    return results


def compare(first: Path, second: Path) -> int:
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    differ = sorted(k for k in a.keys() & b.keys() if a[k] != b[k])
    missing = sorted(a.keys() ^ b.keys())
    print(
        f"{len(a.keys() & b.keys())} digests compared, {len(differ)} differ, {len(missing)} unpaired"
    )
    for key in differ[:40] + missing[:40]:
        print("  ", key)
    return 1 if differ or missing else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "exact-digests")
    parser.add_argument("--compare", type=Path, nargs=2)
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    results = {}
    results.update(small_call_digests())
    results.update(kernel_script_digests())
    results.update(model_digests(args.cache))
    args.out.write_text(json.dumps(results, indent=0, sort_keys=True))
    print(f"{len(results)} digests -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
