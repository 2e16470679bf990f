"""The library's own transcendental functions (runtime_support.exact_math, and the trigonometric
ones of runtime_support.exact_trig): special values as IEEE and numpy give them, accuracy against mpmath within the bounds measured by
tools/measure_exact_transcendentals.py (docs/exact-transcendentals.md), every float16 and bfloat16
input correctly rounded, and the same bits with numpy's SIMD code paths switched off and under
another numpy when one is named (subprocesses, SHA-256 digests, also held against digests committed
here)."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import ml_dtypes
import mpmath as mp
import numpy as np
import pytest

from runtime_support import exact_math, exact_trig
from runtime_support.exact_math import (
    exact_acosh,
    exact_asinh,
    exact_atanh,
    exact_cosh,
    exact_erf,
    exact_exp,
    exact_expm1,
    exact_log,
    exact_log1p,
    exact_pow,
    exact_sigmoid,
    exact_sinh,
    exact_softplus,
    exact_tanh,
)
from runtime_support.exact_trig import (
    exact_acos,
    exact_asin,
    exact_atan,
    exact_cos,
    exact_sin,
    exact_tan,
)
from tests.harness.bit_identity import NO_AVX2, other_numpy_python, run_json_script
from tools.measure_exact_transcendentals import correctly_rounded, mp_ulps, mp_value

ROOT = Path(__file__).resolve().parents[1]
UNARY = {
    "exp": exact_exp,
    "log": exact_log,
    "expm1": exact_expm1,
    "log1p": exact_log1p,
    "sigmoid": exact_sigmoid,
    "tanh": exact_tanh,
    "softplus": exact_softplus,
    "erf": exact_erf,
    "sinh": exact_sinh,
    "cosh": exact_cosh,
    "asinh": exact_asinh,
    "acosh": exact_acosh,
    "atanh": exact_atanh,
    "sin": exact_sin,
    "cos": exact_cos,
    "tan": exact_tan,
    "asin": exact_asin,
    "acos": exact_acos,
    "atan": exact_atan,
}
FLOATS = (np.float16, np.float32, np.float64)

# Largest error in ulps allowed, from the measured maxima (docs/exact-transcendentals.md) with a
# little room: float16 and float32 results are correctly rounded but for rare near-halfway inputs.
NARROW_BOUND = 0.5 + 2.0**-10
FLOAT64_BOUND = {
    "exp": 0.52,
    "log": 1.0,
    "expm1": 2.5,
    "log1p": 1.0,
    "sigmoid": 2.5,
    "tanh": 4.0,
    "softplus": 2.0,
    "erf": 2.5,
    "sinh": 3.5,
    "cosh": 1.2,
    "asinh": 2.0,
    "acosh": 2.0,
    "atanh": 2.0,
    "pow": 0.75,
    "sin": 0.85,
    "cos": 0.85,
    "tan": 1.0,
    "asin": 0.7,
    "acos": 0.7,
    "atan": 0.52,
}


def test_nan_results_are_the_default_nan():
    payloads = np.array([0x7FF0000000000001, 0xFFF8000000000123, 0x7FF8000000000000], np.uint64)
    x = payloads.view(np.float64)
    for f in UNARY.values():
        for dtype in FLOATS:
            with np.errstate(invalid="ignore"):
                y = f(x.astype(dtype))
            assert np.array_equal(bits(y), bits(np.full(3, np.nan, dtype))), (f, dtype)


def bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def same(y: np.ndarray, want: np.ndarray) -> bool:
    """Equal bits, any NaN matching any NaN."""
    both_nan = np.isnan(y) & np.isnan(want)
    return bool(np.all(both_nan | (bits(y) == bits(want))))


# --- special values -------------------------------------------------------------------------------

INF, NAN = np.inf, np.nan
SPECIALS = {  # (x, result) pairs that hold in every float type
    "exp": [
        (0.0, 1.0),
        (-0.0, 1.0),
        (INF, INF),
        (-INF, 0.0),
        (NAN, NAN),
        (1e30, INF),
        (-1e30, 0.0),
    ],
    "log": [
        (1.0, 0.0),
        (0.0, -INF),
        (-0.0, -INF),
        (-1.0, NAN),
        (-INF, NAN),
        (INF, INF),
        (NAN, NAN),
    ],
    "expm1": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -1.0), (NAN, NAN), (-1e30, -1.0)],
    "log1p": [(0.0, 0.0), (-0.0, -0.0), (-1.0, -INF), (-2.0, NAN), (INF, INF), (NAN, NAN)],
    "sigmoid": [(0.0, 0.5), (-0.0, 0.5), (INF, 1.0), (-INF, 0.0), (NAN, NAN)],
    "tanh": [(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (30.0, 1.0)],
    "softplus": [(INF, INF), (-INF, 0.0), (NAN, NAN)],
    "erf": [(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (10.0, 1.0)],
    "sinh": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -INF), (NAN, NAN), (1e30, INF)],
    "cosh": [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, INF), (NAN, NAN), (-1e30, INF)],
    "asinh": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -INF), (NAN, NAN)],
    "acosh": [(1.0, 0.0), (INF, INF), (0.5, NAN), (-1.0, NAN), (-INF, NAN), (NAN, NAN)],
    "atanh": [
        (0.0, 0.0),
        (-0.0, -0.0),
        (1.0, INF),
        (-1.0, -INF),
        (2.0, NAN),
        (INF, NAN),
        (NAN, NAN),
    ],
    "sin": [(0.0, 0.0), (-0.0, -0.0), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "cos": [(0.0, 1.0), (-0.0, 1.0), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "tan": [(0.0, 0.0), (-0.0, -0.0), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "asin": [
        (0.0, 0.0),
        (-0.0, -0.0),
        (1.5, NAN),
        (-2.0, NAN),
        (INF, NAN),
        (-INF, NAN),
        (NAN, NAN),
    ],
    "acos": [(1.0, 0.0), (1.5, NAN), (-2.0, NAN), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "atan": [(0.0, 0.0), (-0.0, -0.0), (NAN, NAN)],
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(SPECIALS))
def test_special_values(name, dtype):
    with np.errstate(over="ignore"):
        x = np.array([p[0] for p in SPECIALS[name]], dtype=dtype)
        want = np.array([p[1] for p in SPECIALS[name]], dtype=dtype)
    y = UNARY[name](x)
    assert y.dtype == dtype and y.shape == x.shape
    assert same(y, want), (x, y, want)


def edge_inputs(dtype) -> np.ndarray:
    """Zeros, subnormals, the normal and overflow edges of exp, and their neighbours."""
    info = np.finfo(dtype)
    t = np.dtype(dtype).type
    tiny = [info.smallest_subnormal, info.smallest_normal, info.smallest_normal / t(2)]
    points = [t(1), t(2), info.max, info.eps, info.epsneg]
    # x where exp(x) reaches the overflow and underflow thresholds, and the subnormal range.
    log_max = float(mp.log(mp.mpf(float(info.max))))
    log_min = float(mp.log(mp.mpf(float(info.smallest_subnormal)) / 2))
    log_normal = float(mp.log(mp.mpf(float(info.smallest_normal))))
    for v in (log_max, log_min, log_normal, 0.5 * log_min):
        v = t(v)
        points += [np.nextafter(v, t(-INF)), v, np.nextafter(v, t(INF))]
    values = np.array(tiny + points, dtype=dtype)
    return np.concatenate([values, -values])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_edges_against_mpmath(name, dtype):
    x = edge_inputs(dtype)
    if name == "exp" and dtype == np.float64:
        # float64 subnormal results: the far path (2**-1022 taken out, one rounding at the end).
        x = np.concatenate([x, np.linspace(-745.2, -700.0, 2001)])
    y = UNARY[name](x)
    check_against_mpmath(name, np.dtype(dtype), (x,), y)


def check_against_mpmath(name, dtype, args, y):
    bound = NARROW_BOUND if dtype != np.float64 else FLOAT64_BOUND.get(name, NARROW_BOUND)
    mp.mp.dps = 40
    for i in range(y.size):
        point = tuple(a.flat[i] for a in args)
        value = mp_value(name, point)
        want = correctly_rounded(value, dtype)
        got = y.flat[i]
        if not isinstance(value, mp.mpf) or not np.isfinite(want):
            assert (np.isnan(got) and np.isnan(want)) or got == want, (name, point, got, want)
            continue
        if not np.isfinite(got):
            pytest.fail(f"{name}{point} = {got}, want {want}")
        assert mp_ulps(got, value, dtype) <= bound, (name, point, got, want)


# --- accuracy on random values --------------------------------------------------------------------

RANGES = {
    "exp": (-110.0, 90.0),
    "log": (0.0, 100.0),
    "expm1": (-20.0, 20.0),
    "log1p": (-1.0, 10.0),
    "sigmoid": (-40.0, 40.0),
    "tanh": (-10.0, 10.0),
    "softplus": (-40.0, 40.0),
    "erf": (-6.0, 6.0),
    "sinh": (-90.0, 90.0),
    "cosh": (-90.0, 90.0),
    "asinh": (-100.0, 100.0),
    "acosh": (1.0, 100.0),
    "atanh": (-1.0, 1.0),
    "sin": (-1000.0, 1000.0),
    "cos": (-1000.0, 1000.0),
    "tan": (-1000.0, 1000.0),
    "asin": (-1.0, 1.0),
    "acos": (-1.0, 1.0),
    "atan": (-20.0, 20.0),
}


def random_inputs(dtype, n, low, high, seed):
    """Half uniform in [low, high], half uniform over the bit patterns (every binade)."""
    r = np.random.default_rng(seed)
    uniform = r.uniform(low, high, n - n // 2).astype(dtype)
    width = np.dtype(dtype).itemsize * 8
    patterns = r.integers(0, 2**width, n // 2, dtype=np.uint64, endpoint=False)
    patterns = patterns.astype(bits(np.zeros(1, dtype)).dtype).view(dtype)
    return np.concatenate([uniform, patterns])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_random_values_against_mpmath(name, dtype):
    x = random_inputs(dtype, 1500, *RANGES[name], seed=sorted(UNARY).index(name))
    check_against_mpmath(name, np.dtype(dtype), (x,), UNARY[name](x))


@pytest.mark.parametrize("dtype", FLOATS)
def test_pow_random_values_against_mpmath(dtype):
    r = np.random.default_rng(7)
    x = random_inputs(dtype, 1500, 0.0, 8.0, seed=11)
    x = np.where(r.random(x.size) < 0.3, -x, x)
    y = np.where(
        r.random(x.size) < 0.3,
        r.integers(-20, 21, x.size).astype(dtype),
        r.uniform(-12, 12, x.size).astype(dtype),
    ).astype(dtype)
    check_against_mpmath("pow", np.dtype(dtype), (x, y), exact_pow(x, y))


def test_float64_pow_near_overflow_and_underflow():
    """float64 results from 2**-1074 to the overflow edge, and bases next to 1 with huge exponents:
    the double-length logarithm keeps y*log(x) accurate where the result amplifies its error most.
    """
    r = np.random.default_rng(12)
    x = np.concatenate([r.uniform(0.5, 3.0, 600), 1 + r.uniform(-1e-9, 1e-9, 300)])
    target = np.concatenate([r.uniform(-745.0, 709.7, 600), r.uniform(-700.0, 700.0, 300)])
    y = target / np.log(x)
    check_against_mpmath("pow", np.dtype(np.float64), (x, y), exact_pow(x, y))


# --- every float16 input ------------------------------------------------------------------------


def _float16_reference(name: str, x: np.ndarray) -> np.ndarray:
    """Correctly rounded float16 results: a longdouble (or float64 libm) reference rounded once,
    mpmath where that reference lies near a rounding boundary."""
    with np.errstate(all="ignore"):
        ld = x.astype(np.longdouble)
        ref = {
            "exp": np.exp,
            "log": np.log,
            "expm1": np.expm1,
            "log1p": np.log1p,
            "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
            "tanh": np.tanh,
            "softplus": lambda v: np.where(
                v > 0, v + np.log1p(np.exp(-np.abs(v))), np.log1p(np.exp(v))
            ),
            "erf": lambda v: np.array([math.erf(float(e)) for e in v], dtype=np.longdouble),
            "sinh": np.sinh,
            "cosh": np.cosh,
            "asinh": np.arcsinh,
            "acosh": np.arccosh,
            "atanh": np.arctanh,
            "sin": np.sin,
            "cos": np.cos,
            "tan": np.tan,
            "asin": np.arcsin,
            "acos": np.arccos,
            "atan": np.arctan,
        }[name](ld)
        want = ref.astype(np.float64).astype(np.float16)  # numpy's longdouble -> float16 goes
        # through float32 (two roundings); through float64 the second one is caught below.
        finite = np.isfinite(want) & np.isfinite(ref)
        toward = np.where(ref > want.astype(ref.dtype), np.float16(INF), np.float16(-INF))
        gap = np.abs(np.nextafter(want, toward).astype(ref.dtype) - want.astype(ref.dtype))
        ratio = np.abs(ref - want.astype(ref.dtype)) / gap
    mp.mp.dps = 40
    for i in np.flatnonzero(finite & (np.abs(ratio - 0.5) < 2.0**-20)):
        want[i] = correctly_rounded(mp_value(name, (x[i],)), np.dtype(np.float16))
    return want


@pytest.mark.parametrize("name", sorted(UNARY))
def test_every_float16_correctly_rounded(name):
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    y = UNARY[name](x)
    want = _float16_reference(name, x)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(y), nan)
    # Zeros: compare values (the reference's sign of zero is libm's); the special-value tests
    # check the signs.
    wrong = np.flatnonzero(~nan & (y != want))
    assert wrong.size == 0, [(float(x[i]), float(y[i]), float(want[i])) for i in wrong[:10]]


def _nearest_bfloat16(ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 ref rounded to nearest-even bfloat16 by choosing among the neighbours of a first
    guess, and where ref is so close to halfway that its own error could matter."""
    bf16 = ml_dtypes.bfloat16
    guess = ref.astype(bf16)
    candidates = [np.nextafter(guess, bf16(-INF)), guess, np.nextafter(guess, bf16(INF))]
    dist = np.stack([np.abs(c.astype(np.float64) - ref) for c in candidates])
    odd = np.stack([(c.view(np.uint16) & 1).astype(bool) for c in candidates])
    order = np.lexsort((odd, dist), axis=0)[0]
    best = np.choose(order, candidates)
    first, second = np.sort(dist, axis=0)[:2]
    near = (second - first) <= 2.0**-30 * np.abs(ref)
    return best, near


def test_every_bfloat16_correctly_rounded():
    bf16 = ml_dtypes.bfloat16
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(bf16)
    with np.errstate(invalid="ignore"):
        x64 = x.astype(np.float64)
    for name, f in UNARY.items():
        y = f(x)
        assert y.dtype == bf16
        with np.errstate(all="ignore"):
            ref = (
                np.array([math.erf(v) for v in x64])
                if name == "erf"
                else UNARY[name](x64)  # float64 results: within a few 2**-53 (tests above)
            )
        finite = np.isfinite(ref) & (np.abs(ref) < 3.3e38)
        want, near = _nearest_bfloat16(ref[finite])
        got = y[finite]
        wrong = ~near & (got.view(np.uint16) != want.view(np.uint16)) & (got != want)
        assert not wrong.any(), (name, x[finite][wrong][:5], got[wrong][:5], want[wrong][:5])
        assert near.sum() < 20
        assert np.array_equal(np.isnan(y), np.isnan(ref))


def test_bfloat16_results_are_rounded_once():
    """Through float32 by round-to-odd: 1 + 2**-8 + 2**-30 is just above halfway between bfloat16
    1 and 1 + 2**-7, which rounding to nearest float32 first would turn into a tie (and 1)."""
    y = np.array([1 + 2**-8 + 2**-30, 1 + 2**-8 - 2**-30, 1 + 2**-8, -(1 + 2**-8 + 2**-30), 1e39])
    with np.errstate(over="ignore"):
        got = exact_math._float32_round_to_odd(y).astype(ml_dtypes.bfloat16).astype(np.float64)
    assert got.tolist() == [1 + 2**-7, 1.0, 1.0, -(1 + 2**-7), INF]


# --- pow's special cases --------------------------------------------------------------------------

POW_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, INF, -INF, NAN]


@pytest.mark.parametrize("dtype", FLOATS)
def test_pow_special_cases_follow_ieee(dtype):
    """Every pair with a zero, infinite or NaN operand, or base 1: numpy's pow gives C99 Annex F's
    results there (elsewhere its float32 pow is not always correctly rounded: mpmath tests those).
    """
    x, y = np.meshgrid(np.array(POW_VALUES, dtype=dtype), np.array(POW_VALUES, dtype=dtype))
    special = ~np.isfinite(x) | ~np.isfinite(y) | (x == 0) | (y == 0) | (x == 1)
    x, y = x[special], y[special]
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    got = exact_pow(x, y)
    assert got.dtype == dtype
    assert same(got, want), [
        (float(a), float(b), float(g), float(w))
        for a, b, g, w in zip(x, y, got, want)
        if not same(np.array([g]), np.array([w]))
    ]


def test_pow_broadcasts_and_takes_other_exponent_types():
    x = np.array([[1.5], [-2.0]], dtype=np.float32)
    assert exact_pow(x, np.array([2, 3], dtype=np.int64)).tolist() == [[2.25, 3.375], [4.0, -8.0]]
    assert exact_pow(x, np.float64(0.5)).shape == (2, 1)
    with pytest.raises(TypeError):
        exact_pow(np.ones(2, np.bool_), np.ones(2))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint64])
def test_pow_integer_base_integral_exponents_are_integer_powers(dtype):
    """An integer-valued float exponent gives the exact integer power, wrapped to the base's type
    as integer Pow wraps, wherever the power is below 2**53 (Python's integer ** is the reference).
    """
    info = np.iinfo(dtype)
    bases, exponents = [], []
    for base in range(max(info.min, -20), min(info.max, 20) + 1):
        for exponent in range(0, 60):
            if abs(base) ** exponent < 2**53:
                bases.append(base)
                exponents.append(exponent)
    x = np.array(bases, dtype=dtype)
    for exponent_type in (np.float32, np.float64):
        got = exact_pow(x, np.array(exponents, dtype=exponent_type))
        assert got.dtype == dtype
        bits = info.bits
        want = [(b**e) % 2**bits for b, e in zip(bases, exponents)]
        want = [w - 2**bits if info.min < 0 and w > info.max else w for w in want]
        assert got.tolist() == want


def test_pow_integer_base_truncates_toward_zero():
    r = np.random.default_rng(21)
    x = r.integers(-1000, 1000, 400).astype(np.int64)
    y = r.uniform(-3, 4, 400)
    y[x < 0] = np.round(y[x < 0])  # a negative base needs an integer exponent for a real power
    got = exact_pow(x, y)
    for base, exponent, value in zip(x.tolist(), y.tolist(), got.tolist()):
        if base == 0 and exponent < 0:
            continue  # infinite: see the special cases below
        exact = mp.power(mp.mpf(base), mp.mpf(exponent))
        if abs(exact - mp.nint(exact)) < 1e-6 * max(1, abs(exact)):
            continue  # too near an integer for the 0.5-ulp float64 power to decide the truncation
        assert value == int(exact), (base, exponent)


def test_pow_integer_base_outside_the_type_is_defined():
    """NaN, infinities and powers beyond int64 become -2**63 and wrap; uint64 keeps [2**63, 2**64)."""
    nan_inf = (np.array([-2, 0, 10]), np.array([0.5, -1.0, 400.0]))  # NaN, inf, beyond 2**63
    assert exact_pow(nan_inf[0].astype(np.int64), nan_inf[1]).tolist() == [-(2**63)] * 3
    assert exact_pow(nan_inf[0].astype(np.int32), nan_inf[1]).tolist() == [0] * 3
    big = exact_pow(np.array([2, 2, 3], np.uint64), np.array([63.0, 64.0, 1.5]))
    assert big.tolist() == [2**63, 2**63, 5]
    assert exact_pow(np.array([2, 3], np.uint8), np.array([9.0, 5.5])).tolist() == [0, 420 - 256]


# --- shapes, types, blocks ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(UNARY))
def test_shapes_and_types(name):
    f = UNARY[name]
    assert f(np.float32(0.5)).shape == ()
    assert f(np.zeros((0, 3), np.float16)).shape == (0, 3)
    assert f(np.ones(2, ml_dtypes.bfloat16)).dtype == ml_dtypes.bfloat16
    a = np.linspace(0.1, 3, 24, dtype=np.float32).reshape(2, 3, 4)
    assert np.array_equal(f(a.transpose(2, 0, 1)), f(a).transpose(2, 0, 1), equal_nan=True)
    with pytest.raises(TypeError):
        f(np.ones(3, dtype=np.int32))


def test_results_do_not_depend_on_blocking():
    x = random_inputs(np.float32, 3 * exact_math._BLOCK + 17, -20, 20, seed=3)
    whole = exact_tanh(x)
    pieces = np.concatenate([exact_tanh(x[i : i + 1000]) for i in range(0, x.size, 1000)])
    assert same(whole, pieces)


# --- the same bits without numpy's SIMD code ------------------------------------------------------

DIGEST_SCRIPT = r"""
import hashlib, json, sys
import numpy as np
import ml_dtypes
import runtime_support as rt

def inputs(dtype, n=1 << 15):
    # Spread bit patterns (a Weyl sequence, no random generator) and a uniform ramp.
    width = np.dtype(dtype).itemsize * 8
    k = np.arange(n, dtype=np.uint64)
    patterns = ((k * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - width)).astype(
        {16: np.uint16, 32: np.uint32, 64: np.uint64}[width]).view(dtype)
    ramp = np.linspace(-30, 30, n).astype(dtype)
    return np.concatenate([patterns, ramp])

def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()

out = {}
for dtype in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64):
    x = inputs(dtype)
    for name in ("exp", "log", "expm1", "log1p", "sigmoid", "tanh", "softplus", "erf", "sinh",
                 "cosh", "asinh", "acosh", "atanh", "sin", "cos", "tan", "asin", "acos", "atan"):
        out[f"{name} {np.dtype(dtype).name}"] = digest(getattr(rt, "exact_" + name)(x))
    with np.errstate(all="ignore"):
        exponent = x[::-1] / 8
    out[f"pow {np.dtype(dtype).name}"] = digest(rt.exact_pow(np.abs(x), exponent))
bases = np.arange(-(1 << 15), 1 << 15, dtype=np.int32)
out["pow int32"] = digest(rt.exact_pow(bases, np.linspace(-3, 5, bases.size)))
with np.errstate(all="ignore"):
    plain = digest(np.exp(inputs(np.float32)))
json.dump({"exact": out, "np.exp float32": plain, "numpy": np.__version__}, sys.stdout)
"""

# Every SIMD level numpy 2.x or 1.26 could dispatch to, in both versions' names.
NO_SIMD = NO_AVX2

# SHA-256 of DIGEST_SCRIPT's outputs: a machine or numpy version that computes other bits fails.
GOLDEN = {
    "exp float16": "f34b658a7e3eef46710b234a693cf8a34e8b234f0cf91c4cb08d0d7a4f9142b7",
    "log float16": "76074a2e34fdef136237f56c9eb74d1fc55736aacbb0c5112df815efbbeb5e83",
    "expm1 float16": "4ff56bfbab2da925150d5c91bcca217e645f73ffbddace9241bff5052560b496",
    "log1p float16": "661d86916d82bed8f8fdc525a0d870911ffa02898b75a4459caa6cc92953e087",
    "sigmoid float16": "e653c5c32dfe210d8c559019f90923cb436cda98f8723fc51ae1f0b1bb1f6039",
    "tanh float16": "af7e2c0ab9e7a2d8a770f6890ced8b453b3657c7a24cc3d9e98505a46ec6de76",
    "softplus float16": "fab57ded950b7bd749e212ce2422027c2ae61cb8e3487e164453418ac2727ae7",
    "erf float16": "4443413660ecaf5d82d37242c9f25b1e5770db4d83da2cd8def844223603dd99",
    "sinh float16": "09e0b6e734463f0cfa5765cf8004641ccbbcdefee27e9bfc94bccbffc3241f99",
    "cosh float16": "acbf23413724a774c4d4f00eaa294630ba2b7996380a9028576d3a8baf5bd374",
    "asinh float16": "bef5839893dc52329e033e68a36607d821dd04bd6ebf7be18c364c78fe5ff8f0",
    "acosh float16": "0be0fcc0b7e53c6c07d904289b92222430066ab4f8473d5874cecae32b32847e",
    "atanh float16": "62bc78722d7bf761705501ac725e73885e12cb71a125271c410d3660b58ec89c",
    "pow float16": "b1b0301ea1f897055a66463f933b42fc7a0f925c90094f1d9001a852f33c65ba",
    "exp bfloat16": "1cbe18cb04cc7500c2c183769aa3d15d34af4b9d52e53e618e5a1d73581098f6",
    "log bfloat16": "bc8274aa44422dd483dcebcf6050dff5060abc3451ff358c84450f9a24e28957",
    "expm1 bfloat16": "ad2006aed69edd69412ab31dc7a1e22b29ff2d074b454e7b3fede7ea9acfb7dc",
    "log1p bfloat16": "e47d6f8099c68768ed96442e0d05bc4c6bbd8553b1bfe3db3d56164d5c3b1ffc",
    "sigmoid bfloat16": "0cd742c9f7513873d7db16c182d89334f322879448971111197a716a821a0feb",
    "tanh bfloat16": "26dad91d139840f77405a5339f37a0bfeb26ad8cb3917b5fba2f372567c73912",
    "softplus bfloat16": "6d3b7c72224d9e5e3f5a9c65d7fef0443007e719878dc5f5fc2e9bb535846f37",
    "erf bfloat16": "2de1c4b077e9cafb28374d24cf77f35a41bbeed34fbaac2781bc401417eedb10",
    "sinh bfloat16": "a91b402328dc044d9a81f2e467eef2af0295c8fdd6ad051acbe351479c221464",
    "cosh bfloat16": "92820aff193989bef46eaa28b98bf2441f6bdaa38c9877e0a4e7c8a3cff48d29",
    "asinh bfloat16": "130c0ceffad9b0284a2f2c7e333280564b15567fc904966ab114e138a4b0962f",
    "acosh bfloat16": "2636f0d6189d8e0bd23d0b9ced858151e4f9b2f74def9d55cc60b3f883ba148b",
    "atanh bfloat16": "1fce776360c73f48fb26046f4019d7f14090b46cfbdae4fe2fb8e028962b8d03",
    "pow bfloat16": "6ce34e940a54aed1a35cbd5210c95c9ecb137f845e0b1caf11ba9964e5ee35e1",
    "exp float32": "81089b7eea2c26453b045bb5acf1f93b715dbaed664b1db296a6326cd7961aab",
    "log float32": "a258e0138d65fc5a6d11311e815691f38c37a419c4277b0848631d023c4899db",
    "expm1 float32": "bb588a17fd13a28c500c1d2eac3365b22be2edb7451ce0887ac7b9eb52aea7a1",
    "log1p float32": "feabba8ec34927745ec2289f21758c0e1d0bfac2d3bf63009a7546d71780e082",
    "sigmoid float32": "6940e1b7f3c0dd813205772d6f8333e9ffe8c0830d7b980942acf56a1d8bfae2",
    "tanh float32": "7192bc04b56354505984983d02fe8c3c3a0e8f23322b4dbd0ba0238a113c7276",
    "softplus float32": "a69b87a8dac1c3100811187c398afdbc573827e9dc4ec36dc6d44e69deb7c5b5",
    "erf float32": "4b834ce579542b7d5ccb1741349fa3bdbb2f679319cc6d09e66490f516104726",
    "sinh float32": "c4064e8d43b68c305caf6f7818704431251940eed3be742ca59e1f89e5a35707",
    "cosh float32": "265826ed032ad4c3bf9d0d31706193e0923f07f6680e1fdd7939ce5ac209bfed",
    "asinh float32": "9802a8bee6bce5aa722d1142db7dd3dd4c9ec0ada45865a5878ff9aa1e0e4c54",
    "acosh float32": "717b6ba6d8783bbbee04026f98cd58c3fb5c17e0a0661c69920c06c592d3b451",
    "atanh float32": "3237aae22c9f55ef8ed0c8bd401cbc8355b9cd402a6e76a95ea680bab70f312e",
    "pow float32": "f02a362e654c6842cadc2f6307e00b1648c672709c8e06a6d371fae0dac68eea",
    "exp float64": "e0291d61d82fbd2d768d232845e8050ec56823d5c398bfd427f9b7fc68b418f3",
    "log float64": "becb35cf84f9e5522ca90201f1f79511d44d6bd260c590f178f6feb3caa7c56c",
    "expm1 float64": "2b867d4d77a61f120653752433c34e3cc2ae6c583d4def6c5ac02b1cd5551c2f",
    "log1p float64": "4c116563e1f1b0af5bb7b182bd4e06605a9bea2f8f8175346778302254fd0ea3",
    "sigmoid float64": "2eaf5c219ead660ee85c3cf02ecaf0da3e10de750c058b1a677333f70ee06442",
    "tanh float64": "dfaf1da3de5d2823b0c567a672e8dc136714d1755e2638e156581f57b1d458fc",
    "softplus float64": "425a39bd86206716910f97e12b5c3724499325f680ac4829d3d63701ac291017",
    "erf float64": "6846ea74b917bbc60c32ad59363d292ef2d7e0a5aa9c189f9f3991f393f5ef10",
    "sinh float64": "4261732033f8791a23e47b0d0897774c4a6dbc658314910925792d0217b2eeb1",
    "cosh float64": "2e379849bbf5ab0051b32abc3c4f831aa2f0b76a16f76cd10f98ac205c07b930",
    "asinh float64": "45932092e72ac8e8c5ae995c514c5bb64ef410285cf721d1a0b55dec6b780cad",
    "acosh float64": "b3ff8001276517285036e109b4bafb6a822c644fd20249c865ec71b1fa473de3",
    "atanh float64": "c06f5d5510f75fccba9bfd080c142100881d90537de2f96c907f3653363f25b7",
    "pow float64": "04e913fc9dfdf0841d4b2c5d077ad5a0efbc532b3a16f4873b3f006c41072848",
    "sin float16": "86e707a811d72adc57a1aedbe54785244c5b4ddd60a7ad0522e8fad72a7a42c4",
    "cos float16": "78d29082b3ff7d439b276f42d2724a423435f25e0bd2517b094c492d9ab09cfe",
    "tan float16": "606366ae29ce0bdec7aa98dd29133e68cb8e58e177774d1fbf3b5af31a58a265",
    "asin float16": "1b089a7c3aea682b8f8728d781afc84a7a022b6b5524e0a9e77984f711670276",
    "acos float16": "d26392db5d27684069a05fd50594efbfdb0a78b3f3514c20b984e133cbfc6c49",
    "atan float16": "a3ea26be5df8cfebf9da3d7fd1c9e1d78fc22b199e0027567f12f4069d6e533d",
    "sin bfloat16": "73c5b545ee26b53add787e2732112959939184c66476ea1c9efbc18a922827cf",
    "cos bfloat16": "d927659eca226c11ec980c1ad7bf316d6daf1520e70ffbaf4d8edbd2fe4ab1cc",
    "tan bfloat16": "80ff346b2554c2130dadff3e6502e67e9e85a71ef3521c473fa549bc322b68d7",
    "asin bfloat16": "b5842804b0fa75e4d216dd2ed813aa276ebe98e25368109e2c5dbb5c8ba61af6",
    "acos bfloat16": "0c39a1677afe27fd6e7172096d94815679da2322dfbdafd864cacd59b0973333",
    "atan bfloat16": "29deb0eb5a542254b252051ff6ca87c7bae353017a5f2bbb3ee8f0d9079db1f0",
    "sin float32": "a90c30be3ce3ee61980d7f84dfae206db2ee83683855176c00ec80d0e9dfceac",
    "cos float32": "c9e9750844b781b7367ef1fba01cb18bcaa8cd520a6f2afd20e0d57ff561b427",
    "tan float32": "2c516f4d5d10d08cbc385d5836d3259742e0efa403c1a9fdee723414cf7220d2",
    "asin float32": "69b6facb995fb63b6b28a8014b7f107577dc39bd112d184f1511d8d5b0f862ad",
    "acos float32": "8b18ace013df37ca23a1f9e8000472b981c91f9f05fa10afb9272a9623dd01cd",
    "atan float32": "19ea6aaf30891c9cd64ee3027500027b68700be9c0048f0b2edbd29203d6190e",
    "sin float64": "fb1726664f6c52e41f216bfe3b330e9e090922ad6090e2a93bf50944885c45ed",
    "cos float64": "558dd9880836d1bee974feb14d7976e8bc8542c1735a94d0d72853f56afc45d3",
    "tan float64": "85f04d7caa195153950090db5622bdebe7caf7bf59cd7d9a22a36cce8e5bf117",
    "asin float64": "27a193511f0777158911146a29e6dd27a54cc54e3739eaecf2efdb693ccc3187",
    "acos float64": "d42b8ccd0798dd56eb4d7b4d4eb38843fe0f4f680a1def56a03308e35618970b",
    "atan float64": "66da0fd4575a1be52f30dec3dd9e8d57b61f3cac285e55b163b213492f6184d9",
    "pow int32": "e93c45e3bb357607e458191da77f37d2fb4ff5ce1911df6be54ef6bbfbc5a7f4",
}


def run_digests(settings: dict, python: str = sys.executable) -> dict:
    return run_json_script(DIGEST_SCRIPT, settings, python)


def test_same_bits_without_simd():
    default = run_digests({})
    plain = run_digests({"NPY_DISABLE_CPU_FEATURES": NO_SIMD})
    assert plain["exact"] == default["exact"]
    assert default["exact"] == GOLDEN
    # Reported, not asserted: whether numpy's own float32 exp changes bits here.
    changed = plain["np.exp float32"] != default["np.exp float32"]
    print(
        f"\nnp.exp float32 bits with SIMD off: {'differ' if changed else 'same'} (numpy "
        f"{default['numpy']}); exact_math: same"
    )


def test_same_bits_with_another_numpy():
    other = other_numpy_python()
    for settings in ({}, {"NPY_DISABLE_CPU_FEATURES": NO_SIMD}):
        assert run_digests(settings, other)["exact"] == GOLDEN


def test_digest_script_covers_every_function():
    names = exact_math.__all__ + exact_trig.__all__
    for name in names:  # as a word: "sin" must not pass for being part of "sinh"
        assert re.search(rf"\b{name.removeprefix('exact_')}\b", DIGEST_SCRIPT), name


@pytest.mark.parametrize("dtype, low, bound", [(np.float32, -14.0, 0.5), (np.float64, -38.0, 4.0)])
def test_gelu_negative_half_against_mpmath(dtype, low, bound):
    """Gelu's erfc form for x <= -3/4 (where 1 + erf(x / sqrt 2) cancels; before it, float32
    results were off by up to 2e7 ulps): within `bound` ulps of mpmath's x/2 erfc(-x / sqrt 2),
    over inputs spread evenly over the bit patterns of [low, -3/4] (every binade), float32
    down to its subnormal results. Bounds as measured by tools/bench_exact_gelu.py."""
    from runtime_support.activation import exact_gelu

    itype = np.int32 if dtype == np.float32 else np.int64
    ends = np.array([-0.75, low], dtype=dtype).view(itype)
    x = np.random.default_rng(7).integers(ends[0], ends[1], 1500, dtype=itype).view(dtype)
    y = exact_gelu(x)
    reference = [v / 2 * mp.erfc(-mp.mpf(float(v)) / mp.sqrt(2)) for v in x.astype(np.float64)]
    rounded = np.array([float(r) for r in reference]).astype(dtype)
    spacing = np.maximum(np.spacing(np.abs(rounded)), np.finfo(dtype).smallest_subnormal)
    errors = [abs(mp.mpf(float(v)) - r) / float(s) for v, r, s in zip(y, reference, spacing)]
    assert max(errors) <= bound + 1e-3
