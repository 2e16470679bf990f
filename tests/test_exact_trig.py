"""What is particular to the trigonometric kernels of runtime_support.exact_trig: the argument
reduction (Cody-Waite below 2**20, Payne-Hanek above) against mpmath's exact one, the hardest
arguments (the floats nearest to multiples of pi/2, huge arguments, the float64 closest to a
multiple of pi/2), the constants against mpmath, symmetry, and independence of the blocking.
The generic checks (special values, random samples, every float16 and bfloat16, the digests with
SIMD off and under another numpy) are in tests/test_exact_math.py, which covers these functions
too."""

from __future__ import annotations

import subprocess
import sys

import mpmath as mp
import numpy as np
import pytest

from runtime_support import exact_trig
from runtime_support.exact_trig import (
    exact_acos,
    exact_asin,
    exact_atan,
    exact_cos,
    exact_sin,
    exact_tan,
)
from tests.test_exact_math import ROOT, check_against_mpmath

PERIODIC = {"sin": exact_sin, "cos": exact_cos, "tan": exact_tan}


def assert_within_bound(name: str, x: np.ndarray, y: np.ndarray) -> None:
    """Within the bound of tests/test_exact_math.py (mpmath raises its working precision itself to
    reduce huge arguments); NaN where the function is not real."""
    check_against_mpmath(name, x.dtype, (x,), y)


def nearest_to_multiples_of_half_pi(dtype, ks) -> np.ndarray:
    """The float nearest to k*pi/2 for each k (mpmath, 60 digits), and its two neighbours."""
    mp.mp.dps = 60
    t = np.dtype(dtype).type
    centre = np.array([float(mp.mpf(k) * mp.pi / 2) for k in ks]).astype(dtype)
    with np.errstate(over="ignore"):
        below, above = np.nextafter(centre, t(-np.inf)), np.nextafter(centre, t(np.inf))
    x = np.concatenate([centre, below, above])
    return x[np.isfinite(x)]


def test_exact_reduction_of_both_methods():
    """(q, r_hi + r_lo) against mpmath: k = nearest integer to x*2/pi, r = x - k*pi/2, on both
    sides of 2**20 and up to the largest float64; r keeps its 70 leading bits (Payne-Hanek's
    docstring: at least 75 where r is smallest; Cody-Waite's error is k * 2**-160 plus the
    double-length sums' 2**-106 of r)."""
    r = np.random.default_rng(3)
    near = nearest_to_multiples_of_half_pi(np.float64, [1, 2, 3, 7, 1000, 2**19, 2**20 + 1])
    a = np.concatenate(
        [
            r.uniform(0, 2**20, 300),
            np.exp2(r.uniform(20, 1023.9, 400)),
            [2.0**20, np.nextafter(2.0**20, 0), np.finfo(np.float64).max],
            6381956970095103 * 2.0 ** np.arange(-70, 798, 13),
            np.abs(near),
        ]
    )
    q, r_hi, r_lo = exact_trig._reduce(a, True)
    mp.mp.dps = 400  # enough for x*2/pi of the largest double to keep 60 fractional digits
    for x, quadrant, hi, lo in zip(a.tolist(), q.tolist(), r_hi.tolist(), r_lo.tolist()):
        k = mp.nint(mp.mpf(x) * 2 / mp.pi)
        exact = mp.mpf(x) - k * mp.pi / 2
        assert int(k % 4) == quadrant, x
        assert abs(mp.mpf(hi) + mp.mpf(lo) - exact) <= abs(exact) * mp.mpf(2) ** -70, x
        assert abs(lo) <= abs(hi) * 2.0**-52, x  # a normalised pair


def test_narrow_reduction_is_accurate_to_the_float64_ulp():
    """Narrow (float32 and shorter results): r in plain float64, within 2**-51 relatively."""
    x = nearest_to_multiples_of_half_pi(np.float32, [1, 3, 1000, 2**19, 2**30, 2**60, 2**100])
    a = np.abs(x.astype(np.float64))
    q, r, lo = exact_trig._reduce(a, False)
    assert lo is None
    mp.mp.dps = 100
    for value, quadrant, reduced in zip(a.tolist(), q.tolist(), r.tolist()):
        k = mp.nint(mp.mpf(value) * 2 / mp.pi)
        exact = mp.mpf(value) - k * mp.pi / 2
        assert int(k % 4) == quadrant
        assert abs(mp.mpf(reduced) - exact) <= abs(exact) * mp.mpf(2) ** -51, value


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(PERIODIC))
def test_floats_nearest_to_multiples_of_half_pi(name, dtype):
    """Where sin, cos or tan is tiny or tan huge: r is a small difference of large numbers."""
    top = {np.float16: 15, np.float32: 126, np.float64: 1020}[dtype]
    r = np.random.default_rng(8)
    ks = sorted({int(2**e) for e in r.uniform(0, top, 120)} | {1, 2, 3, 4, 5, 6, 7, 8})
    x = nearest_to_multiples_of_half_pi(dtype, ks)
    x = np.concatenate([x, -x])
    assert_within_bound(name, x, PERIODIC[name](x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(PERIODIC))
def test_huge_arguments(name, dtype):
    """Every binade from 2**20 to the largest float (Payne-Hanek), its ends, and the neighbours
    of 2**20 where the two reductions meet."""
    info = np.finfo(dtype)
    t = np.dtype(dtype).type
    r = np.random.default_rng(4)
    exponents = np.arange(20, info.maxexp)
    x = np.concatenate(
        [
            np.ldexp(r.uniform(1, 2, exponents.size), exponents),
            np.ldexp(np.ones(exponents.size), exponents),
            [info.max, np.nextafter(info.max, 0), 2.0**20, np.nextafter(t(2.0**20), t(0))],
        ]
    ).astype(dtype)
    x = np.concatenate([x, -x])
    assert_within_bound(name, x, PERIODIC[name](x))


def test_the_float64_closest_to_a_multiple_of_half_pi():
    """6381956970095103 * 2**797 lies within 4.7e-19 of a multiple of pi/2 (Kahan and McDonald):
    its cosine is that difference, |tan| its inverse."""
    x = np.array([6381956970095103 * 2.0**797])
    assert_within_bound("cos", x, exact_cos(x))
    assert_within_bound("tan", x, exact_tan(x))
    assert_within_bound("sin", x, exact_sin(x))
    assert abs(exact_cos(x)[0] + 4.687165924254628e-19) < 1e-33


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_inverse_functions_at_their_edges(dtype):
    """asin and acos at ±1, ±1/2 (where the method changes) and their neighbours; atan around 1
    (where 1/|x| takes over), 2**60 (where it is clamped) and the table's steps j/64 +- 1/128."""
    t = np.dtype(dtype).type
    edges = np.array([1, 0.5, 2.0**-10, 1 / 128, 3 / 128, 127 / 128], dtype=dtype)
    with np.errstate(over="ignore"):
        both = np.concatenate([edges, np.nextafter(edges, t(0)), np.nextafter(edges, t(2))])
    both = np.concatenate([both, -both])
    assert_within_bound("asin", both, exact_asin(both))
    assert_within_bound("acos", both, exact_acos(both))
    steps = (np.arange(1, 130) / 128).astype(dtype)
    with np.errstate(over="ignore"):  # what float16 and float32 cannot hold becomes inf: dropped
        large = np.array([2.0**60, 2.0**59, 2.0**61, 1e300, np.finfo(dtype).max], dtype=dtype)
    x = np.concatenate([steps, 1 / steps, both, large[np.isfinite(large)]])
    assert_within_bound("atan", x, exact_atan(x))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_symmetry(dtype):
    """sin, tan, asin, atan are odd and cos is even, bit for bit (each is computed on |x|)."""
    r = np.random.default_rng(5)
    width = np.dtype(dtype).itemsize * 8
    x = r.integers(0, 2 ** (width - 1), 5000, dtype=np.uint64).astype(f"uint{width}").view(dtype)
    for f in (exact_sin, exact_tan, exact_asin, exact_atan):
        assert np.array_equal(f(-x), -f(x), equal_nan=True), f
    assert np.array_equal(exact_cos(-x), exact_cos(x), equal_nan=True)


def test_results_do_not_depend_on_neighbours():
    """Payne-Hanek runs on the huge elements of a block only: a mixed block gives each element
    what it gives alone."""
    r = np.random.default_rng(6)
    x = np.concatenate([r.uniform(-10, 10, 500), np.exp2(r.uniform(18, 1000, 500))])
    r.shuffle(x)
    for f in (exact_sin, exact_cos, exact_tan):
        alone = np.concatenate([f(x[i : i + 1]) for i in range(x.size)])
        assert np.array_equal(f(x), alone)
        narrow = np.clip(x, -3e38, 3e38).astype(np.float32)
        assert np.array_equal(f(narrow), f(narrow[::-1])[::-1])


def test_constants_other_than_the_polynomials_against_mpmath():
    """The bits of 2/pi, pi/2's Cody-Waite parts and the atan table (the Remez polynomials: see
    the slow test below)."""
    with mp.workdps(450):
        assert exact_trig._TWO_OVER_PI == int(mp.floor(2 / mp.pi * mp.mpf(2) ** 1280))
        parts = [mp.mpf(float(p)) for p in exact_trig._PIO2_PARTS]
        assert abs(mp.fsum(parts) - mp.pi / 2) < mp.mpf(2) ** -155
        for p in exact_trig._PIO2_PARTS[:3]:  # 33 significant bits: k * part exact for k < 2**20
            m, _ = mp.frexp(mp.mpf(float(p)))
            assert mp.mpf(m) * 2**33 == int(mp.mpf(m) * 2**33)
        for j in range(65):
            exact = mp.atan(mp.mpf(j) / 64)
            head, tail = exact_trig._ATAN_TABLE[2 * j : 2 * j + 2]
            assert abs(mp.mpf(float(head)) + mp.mpf(float(tail)) - exact) <= mp.mpf(2) ** -106
            head, tail = exact_trig._ATAN_COMPLEMENT[2 * j : 2 * j + 2]
            assert abs(mp.mpf(float(head)) + mp.mpf(float(tail)) - (mp.pi / 2 - exact)) <= (
                mp.mpf(2) ** -105
            )


@pytest.mark.slow
def test_every_constant_is_derived():
    """tools/derive_exact_coefficients.py --check (both modules, a few minutes)."""
    done = subprocess.run(
        [sys.executable, "-m", "tools.derive_exact_coefficients", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0 and "all constants match" in done.stdout, done.stdout + done.stderr
