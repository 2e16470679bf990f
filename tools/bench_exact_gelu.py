"""Accuracy (not a test): the exact variant's Gelu (erf form) against mpmath, before and after
the erfc form for x <= -3/4.

    .venv/bin/python -m tools.bench_exact_gelu [--samples N]

Inputs: N float32 and N float64 values drawn uniformly over the bit patterns of each range (so
every binade is represented), in [-14, -3/4] for float32 (below -14 Gelu is under float32's
smallest subnormal... up to its last few binades) and [-38, -3/4] for float64, plus (-3/4, 0)
and (0, 8] where the formula did not change. Reference: mpmath at 40 digits,
x/2 * erfc(-x / sqrt 2). Error: |y - ref| / ulp(ref) in the output type (the output rounded to
the type as the kernel returns it; ulp of the smallest subnormal where ref underflows).
"""

from __future__ import annotations

import argparse

import mpmath as mp
import numpy as np

from runtime_support.activation import exact_gelu
from runtime_support.exact_math import exact_erf

mp.mp.dps = 40


def old_gelu(x: np.ndarray) -> np.ndarray:
    """The formula before: (0.5 x)(1 + erf(x / sqrt 2)) in float64 with exact_erf."""
    x64 = x.astype(np.float64)
    return ((0.5 * x64) * (1.0 + exact_erf(x64 / np.float64(1.4142135623730951)))).astype(x.dtype)


def sample(dtype, low: float, high: float, n: int, rng) -> np.ndarray:
    """n values of `dtype` uniform over the bit patterns between low and high (same sign)."""
    itype = np.int32 if dtype == np.float32 else np.int64
    a, b = (np.array([v], dtype=dtype).view(itype)[0] for v in (low, high))
    lo, hi = min(a, b), max(a, b)
    return rng.integers(lo, hi, n, dtype=itype, endpoint=True).view(dtype)


def ulps(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    dtype = y.dtype
    ref = [x_ / 2 * mp.erfc(-mp.mpf(float(x_)) / mp.sqrt(2)) for x_ in x.astype(np.float64)]
    ref_t = np.array([float(r) for r in ref]).astype(dtype)
    spacing = np.spacing(np.abs(ref_t)).astype(np.float64)
    tiny = np.finfo(dtype).smallest_subnormal
    spacing = np.maximum(spacing, float(tiny))
    return (
        np.array([abs(float(mp.mpf(float(v)) - r)) for v, r in zip(y.astype(np.float64), ref)])
        / spacing
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(
        "| type | x in | values | before: max ulp, share > 0.5 ulp | after: max ulp, share > 0.5 ulp |"
    )
    print("| --- | --- | ---: | --- | --- |")
    ranges = {
        np.float32: ((-14.0, -0.75), (-0.75, -1e-30), (1e-30, 8.0)),
        np.float64: ((-38.0, -0.75), (-0.75, -1e-300), (1e-300, 8.0)),
    }
    for dtype, spans in ranges.items():
        for low, high in spans:
            x = sample(dtype, low, high, args.samples, rng)
            before, after = ulps(old_gelu(x), x), ulps(exact_gelu(x), x)
            name = np.dtype(dtype).name
            print(
                f"| {name} | [{low:g}, {high:g}] | {x.size:,} | {before.max():.3g}, "
                f"{np.mean(before > 0.5):.2%} | {after.max():.3g}, {np.mean(after > 0.5):.2%} |"
            )


if __name__ == "__main__":
    main()
