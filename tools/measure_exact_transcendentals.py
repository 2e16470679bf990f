"""Measure the accuracy of runtime_support.exact_math and exact_trig against correctly rounded
references.

    python -m tools.measure_exact_transcendentals [--jobs 2] [--quick] [--only sin cos ...]
    python -m tools.measure_exact_transcendentals --validate-reference 100000 --only sin ...
    python -m tools.measure_exact_transcendentals --rows 2000   (exact_softmax, exact_log_softmax)
    python -m tools.measure_exact_transcendentals --turns 300000   (exact_trig.cos_sin_of_turns)

float32 exp, log, the trigonometric functions (sin, cos, tan, asin, acos, atan) and elu: every
one of the 2**32 bit patterns. The other float32 functions: samples spread over the whole range (half
uniform over the bit patterns, which reaches every binade and the specials, half uniform over the
interval where the function is not saturated; pow's samples aim a quarter of the pairs at every
finite result; sin, cos and tan's a quarter at the floats nearest to multiples of pi/2).
float16: every one of the 65536 values (pow: every base with a set of exponents). float64:
samples (10**8 for the trigonometric functions, see FLOAT64_SAMPLE).

References: numpy's float64 functions for the exhaustive float32 runs (libm or SIMD quality, a few
2**-53 at worst, so good to 2**-27 of a float32 ulp), numpy longdouble (x87 extended, 64-bit
significand: exp, log, expm1, log1p, tanh, pow, sin, ... within a few 2**-63; glibc's long double
sin, cos and tan reduce huge arguments exactly) for the samples and float16, mpmath (60 digits) for
erf. `--validate-reference N` measures the longdouble references against mpmath on N arguments
of each function (spread as the samples are) and prints their largest error in longdouble ulps. The reference converted once to the result type is the candidate correctly rounded
value cr, and |ref - cr| in ulps of the binade where ref lies is its error. mpmath decides every
result that differs from cr and every case where ref falls so close to a rounding boundary (half an
ulp, within MARGIN) that the reference's own error could flip it; the "not correctly rounded" count
and the errors of those results are mpmath's.

The float64 samples of the trigonometric functions (10**8 each) are judged by the longdouble
reference wherever it is far from a rounding boundary (mpmath there and for the largest error
found): the validated reference is within 2**-11 of a float64 ulp, so a result it finds not
correctly rounded at least MARGIN away from the boundary is not, and the errors it gives are exact
to 2**-11 ulp.

Special values (NaN, infinities) must match exactly (NaN: any NaN).
--quick runs small samples and only part of the exhaustive ranges (for a smoke test).
"""

from __future__ import annotations

import argparse
import datetime
import math
import multiprocessing
import sys
import time
from dataclasses import dataclass, field

import mpmath as mp
import numpy as np

from runtime_support import activation
from runtime_support import exact_math as em
from runtime_support import exact_trig as et

LD = np.longdouble
mp.mp.dps = 60

# --- references -----------------------------------------------------------------------------------


def _ld_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _ld_softplus(x):
    return np.where(x > 0, x + np.log1p(np.exp(-np.abs(x))), np.log1p(np.exp(x)))


_LD_PI = LD("3.14159265358979323846264338327950288")
# The activations' constants as the kernels take them (runtime_support/activation.py's defaults
# and literals, float64): the functions measured are those with these constants.
_SELU = (1.67326319, 1.05070102)
_GELU_TANH = (0.044715,)


def _ld_elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def _ld_selu(x):
    return LD(_SELU[1]) * np.where(x > 0, x, LD(_SELU[0]) * np.expm1(np.minimum(x, 0)))


def _ld_mish(x):
    return x * np.tanh(np.where(x > 0, x + np.log1p(np.exp(-np.abs(x))), np.log1p(np.exp(x))))


def _ld_swish(x):
    return x / (1 + np.exp(-x))


def _ld_gelu_tanh(x):
    inner = np.sqrt(LD(2) / _LD_PI) * (x + LD(_GELU_TANH[0]) * x * x * x)
    return LD(0.5) * x * (1 + np.tanh(inner))


LONGDOUBLE = {
    "elu": _ld_elu,
    "celu": _ld_elu,  # alpha = 1
    "selu": _ld_selu,
    "mish": _ld_mish,
    "swish": _ld_swish,
    "gelu_tanh": _ld_gelu_tanh,
    "exp": np.exp,
    "log": np.log,
    "expm1": np.expm1,
    "log1p": np.log1p,
    "sigmoid": _ld_sigmoid,
    "tanh": np.tanh,
    "softplus": _ld_softplus,
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
}

TRIG = ("sin", "cos", "tan", "asin", "acos", "atan")
# The bulk references of the exhaustive float32 runs (their own errors are bounded by MARGIN).
FLOAT64 = {
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "exp": np.exp,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
}
EXHAUSTIVE = tuple(FLOAT64)


def _mp_elu(v):
    return v if v > 0 else mp.expm1(v)


def _mp_gelu(v):
    """x/2 erfc(-x/sqrt 2); beyond |x| = 1e6 its limits, x or -0 (mpmath's erfc overflows there);
    at the infinities the ONNX formula's values (-inf * 0 is NaN), as the kernels give them."""
    if not mp.isfinite(v):
        return v / 2 * (1 + mp.erf(v / mp.sqrt(2)))
    if abs(v) > 10**6:
        return v if v > 0 else mp.mpf(0)
    return v / 2 * mp.erfc(-v / mp.sqrt(2))


def _mp_gelu_tanh(v):
    inner = mp.sqrt(2 / mp.pi) * (v + mp.mpf(_GELU_TANH[0]) * v**3)
    return v / 2 * (1 + mp.tanh(inner))


MPMATH = {
    "elu": _mp_elu,
    "celu": _mp_elu,
    "selu": lambda v: mp.mpf(_SELU[1]) * (v if v > 0 else mp.mpf(_SELU[0]) * mp.expm1(v)),
    "mish": lambda v: v * mp.tanh(mp.log1p(mp.exp(v))),
    "swish": lambda v: v / (1 + mp.exp(-v)),
    # erfc, not 1 + erf: the same value, without the cancellation that left no correct digit of
    # the reference for x below about -11 (a result near 1e-61 against 1 at 40 digits)
    "gelu": _mp_gelu,
    "gelu_tanh": _mp_gelu_tanh,
    "exp": mp.exp,
    "log": mp.log,
    "expm1": mp.expm1,
    "log1p": lambda v: mp.log1p(v),
    "sigmoid": lambda v: 1 / (1 + mp.exp(-v)),
    "tanh": mp.tanh,
    "softplus": lambda v: mp.log1p(mp.exp(v)),
    "erf": mp.erf,
    "pow": lambda v, w: mp.power(v, w),
    "sinh": mp.sinh,
    "cosh": mp.cosh,
    "asinh": mp.asinh,
    "acosh": mp.acosh,
    "atanh": mp.atanh,
    "sin": mp.sin,
    "cos": mp.cos,
    "tan": mp.tan,
    "asin": mp.asin,
    "acos": mp.acos,
    "atan": mp.atan,
}

KERNELS = {
    "elu": activation.exact_elu,
    "celu": activation.exact_celu,
    "selu": activation.exact_selu,
    "mish": activation.exact_mish,
    "swish": activation.exact_swish,
    "gelu": activation.exact_gelu,
    "gelu_tanh": lambda x: activation.exact_gelu(x, approximate="tanh"),
    "exp": em.exact_exp,
    "log": em.exact_log,
    "expm1": em.exact_expm1,
    "log1p": em.exact_log1p,
    "sigmoid": em.exact_sigmoid,
    "tanh": em.exact_tanh,
    "softplus": em.exact_softplus,
    "erf": em.exact_erf,
    "pow": em.exact_pow,
    "sinh": em.exact_sinh,
    "cosh": em.exact_cosh,
    "asinh": em.exact_asinh,
    "acosh": em.exact_acosh,
    "atanh": em.exact_atanh,
    "sin": et.exact_sin,
    "cos": et.exact_cos,
    "tan": et.exact_tan,
    "asin": et.exact_asin,
    "acos": et.exact_acos,
    "atan": et.exact_atan,
}


def mp_value(name: str, args: tuple[float, ...]):
    """The exact value (60 digits) of function `name` at float arguments, or a float special."""
    if any(np.isnan(a) for a in args):
        return float("nan")
    try:
        v = MPMATH[name](*(mp.mpf(float(a)) for a in args))
    except (ValueError, ZeroDivisionError):
        return float("nan")
    if isinstance(v, mp.mpc):
        return float("nan") if v.imag != 0 else v.real
    return v


def correctly_rounded(value, dtype) -> np.generic:
    """value (mpf, or a float special) rounded to nearest-even in dtype, decided in mpmath."""
    if not isinstance(value, mp.mpf) or not mp.isfinite(value):
        return dtype.type(float(value))
    top = mp.mpf(float(np.finfo(dtype).max))
    half_ulp = mp.mpf(2) ** (np.finfo(dtype).maxexp - np.finfo(dtype).nmant - 2)
    if abs(value) >= top + half_ulp:  # beyond max + half its ulp: rounds to inf
        return dtype.type(np.copysign(np.inf, float(value)))
    guess = dtype.type(float(value))  # float() rounds to double first: at most one step off
    with np.errstate(over="ignore"):
        candidates = [
            np.nextafter(guess, dtype.type(-np.inf)),
            guess,
            np.nextafter(guess, dtype.type(np.inf)),
        ]
    best = None
    for c in candidates:
        if not np.isfinite(c):
            continue
        d = abs(mp.mpf(float(c)) - value)
        even = (int(np.array(c).view(_uint(dtype))) & 1) == 0
        key = (d, not even)
        if best is None or key < best[0]:
            best = (key, c)
    return best[1]


def _uint(dtype):
    return {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]


def mp_ulps(y: float, value, dtype) -> float:
    """|y - value| in ulps of value (mpmath), for finite value."""
    fi = np.finfo(dtype)
    e = fi.minexp
    if abs(value) >= mp.mpf(2) ** fi.minexp:
        e = int(mp.floor(mp.log(abs(value), 2)))
        if mp.mpf(2) ** e > abs(value):  # log rounded up at a power of two
            e -= 1
    return float(abs(mp.mpf(float(y)) - value) / mp.mpf(2) ** (e - fi.nmant))


# --- one batch against longdouble ---------------------------------------------------------------


@dataclass
class Stats:
    checked: int = 0
    specials: int = 0
    max_ulps: float = 0.0
    worst: tuple = ()
    not_rounded: int = 0
    mp_decided: int = 0
    failures: list = field(default_factory=list)

    def merge(self, other: "Stats") -> None:
        self.checked += other.checked
        self.specials += other.specials
        if other.max_ulps > self.max_ulps:
            self.max_ulps, self.worst = other.max_ulps, other.worst
        self.not_rounded += other.not_rounded
        self.mp_decided += other.mp_decided
        self.failures += other.failures[: max(0, 20 - len(self.failures))]


def check_batch(
    name: str,
    dtype,
    args: tuple[np.ndarray, ...],
    ref: np.ndarray | None,
    by_reference: bool = False,
) -> Stats:
    """Compare the kernel on args with the reference (a float64 or longdouble array, or None: mpmath
    for every element).

    With ref converted once to dtype as the candidate correctly rounded result cr, and the gap to
    cr's neighbour on ref's side (the ulp where ref lies), ratio = |ref - cr| / gap is the error of
    cr in ulps. Where ratio is within MARGIN of 1/2, the reference's own error could put it on the
    wrong side of the rounding boundary, so mpmath decides; it also decides every y != cr, unless
    `by_reference` (a validated longdouble reference): then a y != cr away from the boundary is
    counted as not correctly rounded and its error, |y - ref| in ulps of ref's binade, taken from
    the reference."""
    stats = Stats()
    y = KERNELS[name](*args)
    stats.checked = y.size
    if ref is None:
        for i in range(y.size):
            point = tuple(a.flat[i] for a in args)
            _judge_mp(stats, name, dtype, point, y.flat[i])
        stats.mp_decided = y.size
        return stats
    with np.errstate(all="ignore"):
        finite = np.isfinite(ref)
        special = ~finite
        # Specials: NaN must be NaN, infinities equal.
        s_y, s_ref = y[special], ref[special]
        bad = ~((np.isnan(s_y) & np.isnan(s_ref)) | (s_y.astype(ref.dtype) == s_ref))
        stats.specials = int(special.sum())
        for i in np.flatnonzero(special)[bad][:20]:
            stats.failures.append((tuple(float(a.flat[i]) for a in args), float(y[i]), "special"))
        fy, fref = y[finite], ref[finite]
        # numpy converts longdouble to float16 through float32 (two roundings): through float64
        # the second rounding can only go wrong within 2**-42 of a boundary, where mpmath decides.
        cr = (fref.astype(np.float64) if dtype.itemsize == 2 else fref).astype(dtype)
        toward = np.where(fref > cr.astype(ref.dtype), dtype.type(np.inf), dtype.type(-np.inf))
        gap = np.abs(np.nextafter(cr, toward).astype(ref.dtype) - cr.astype(ref.dtype))
        ratio = (np.abs(fref - cr.astype(ref.dtype)) / gap).astype(np.float64)
        ratio[np.isinf(cr)] = 0.0  # overflowed: judged by equality (and mpmath if different)
        margin = MARGIN[(np.dtype(ref.dtype).itemsize > 8, np.dtype(dtype).itemsize)]
        near = np.abs(ratio - 0.5) <= margin
        differ = (fy != cr) & ~(np.isnan(fy) & np.isnan(cr))
        err = ratio
        if by_reference:
            far = differ & ~near
            stats.not_rounded += int(far.sum())
            err[far] = _reference_ulps(fy[far], fref[far], dtype)
            differ = np.zeros_like(differ)
        decide = np.flatnonzero(near | differ)
        finite_idx = np.flatnonzero(finite)
        for j in decide:
            i = finite_idx[j]
            point = tuple(a.flat[i] for a in args)
            stats.mp_decided += 1
            err[j] = _judge_mp(stats, name, dtype, point, fy[j], count_checked=False)
        if err.size:
            k = int(np.argmax(err))
            if float(err[k]) > stats.max_ulps:
                i = finite_idx[k]
                stats.max_ulps = float(err[k])
                stats.worst = tuple(float(a.flat[i]) for a in args)
    return stats


def _reference_ulps(y: np.ndarray, ref: np.ndarray, dtype) -> np.ndarray:
    """|y - ref| in ulps of dtype in ref's binade (subnormal binades: the smallest ulp), computed
    in the reference's type."""
    info = np.finfo(dtype)
    exponent = np.frexp(ref)[1].astype(np.int64) - 1  # ref = 1.f * 2**exponent
    ulp = np.ldexp(np.ones_like(ref), np.maximum(exponent, info.minexp) - info.nmant)
    return (np.abs(y.astype(ref.dtype) - ref) / ulp).astype(np.float64)


# How close to 1/2 ulp the reference may fall before mpmath decides, by (reference is longdouble,
# result itemsize): float64 references (libm, a few 2**-53 at worst) against float32 results are
# good to ~2**-27 of a float32 ulp; longdouble (2**-63) to ~2**-10 of a float64 ulp.
MARGIN = {
    (False, 2): 2.0**-30,
    (False, 4): 2.0**-20,
    (True, 2): 2.0**-40,
    (True, 4): 2.0**-30,
    (True, 8): 2.0**-6,
}


def _judge_mp(stats: Stats, name, dtype, point, y, count_checked=True) -> float:
    """Judge one result with mpmath; returns its error in ulps (0 for a matching special)."""
    value = mp_value(name, point)
    cr = correctly_rounded(value, np.dtype(dtype))
    if not isinstance(value, mp.mpf) or not mp.isfinite(value) or not np.isfinite(cr):
        ok = (np.isnan(y) and np.isnan(cr)) or y == cr
        if not ok:
            stats.failures.append((tuple(float(p) for p in point), float(y), "special"))
        stats.specials += count_checked
        return 0.0
    if y != cr:
        stats.not_rounded += 1
    err = mp_ulps(y, value, np.dtype(dtype)) if np.isfinite(y) else float("inf")
    if count_checked and err > stats.max_ulps:
        stats.max_ulps, stats.worst = err, tuple(float(p) for p in point)
    return err


# --- the runs -----------------------------------------------------------------------------------


def _exhaustive_chunk(task):
    name, start, size = task
    bits = np.arange(start, start + size, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    with np.errstate(all="ignore"):
        ref = FLOAT64[name](x.astype(np.float64))
    return check_batch(name, np.dtype(np.float32), (x,), ref)


def exhaustive_float32(name: str, jobs: int, quick: bool) -> Stats:
    chunk = 1 << 22
    starts = range(0, 1 << 32, chunk)
    if quick:
        starts = [s for s in starts if s % (chunk * 64) == 0]
    tasks = [(name, s, chunk) for s in starts]
    total = Stats()
    if jobs > 1:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for stats in pool.imap_unordered(_exhaustive_chunk, tasks):
                total.merge(stats)
    else:
        for task in tasks:
            total.merge(_exhaustive_chunk(task))
    return total


SAMPLE_RANGES = {  # where the function is not saturated, for the uniform part of the samples
    "elu": (-20.0, 20.0),
    "celu": (-20.0, 20.0),
    "selu": (-20.0, 20.0),
    "mish": (-30.0, 30.0),
    "swish": (-110.0, 30.0),
    "gelu": (-10.0, 10.0),
    "gelu_tanh": (-10.0, 10.0),
    "exp": (-745.0, 710.0),
    "log": (0.0, 10.0),
    "expm1": (-20.0, 90.0),
    "log1p": (-1.0, 10.0),
    "sigmoid": (-110.0, 20.0),
    "tanh": (-10.0, 10.0),
    "softplus": (-110.0, 20.0),
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
FLOAT64_SAMPLE = {name: 100_000_000 for name in TRIG}  # the others: a tenth of --sample


def _sample(rng, dtype, n, low, high):
    """Half uniform over the bit patterns (every binade, the specials), half uniform in [low, high]."""
    uint = _uint(dtype)
    info = np.iinfo(uint)
    bits = rng.integers(0, int(info.max) + 1, n // 2, dtype=np.uint64).astype(uint)
    return np.concatenate([bits.view(dtype), rng.uniform(low, high, n - n // 2).astype(dtype)])


def near_multiples_of_half_pi(rng, dtype, n: int) -> np.ndarray:
    """Floats next to k*pi/2 (the nearest one and up to 3 ulps either side), k log-uniform from 1
    to 2**60 (float32: to 2**100) and of either sign: where sin, cos and tan need their reduction
    most. k*pi/2 in longdouble is within 2**-63 of it relatively, so its rounding to the type is
    the nearest float or (rarely) its neighbour."""
    top = 100 if np.dtype(dtype) == np.float32 else 60
    k = np.floor(np.exp2(rng.uniform(0, top, n))).astype(LD)
    half_pi = LD("1.5707963267948966192313216916397514")
    with np.errstate(over="ignore"):
        x = (k * half_pi).astype(dtype)
    steps = rng.integers(-3, 4, n)
    for _ in range(3):
        x = np.where(steps > 0, np.nextafter(x, dtype(np.inf)), x)
        x = np.where(steps < 0, np.nextafter(x, dtype(-np.inf)), x)
        steps = steps - np.sign(steps)
    return np.where(rng.random(n) < 0.5, -x, x).astype(dtype)


# --above X: measure only arguments >= X (for functions whose formula cancels below some point,
# such as Gelu's 1 + erf(x / sqrt 2) for very negative x). A list so that main can set it.
ABOVE: list = [None]


def sampled(name: str, dtype, n: int, seed: int) -> Stats:
    rng = np.random.default_rng(seed)
    total = Stats()
    batch = 1 << 20
    for start in range(0, n, batch):
        m = min(batch, n - start)
        if name == "pow":
            x = _sample(rng, dtype, m, 0.0, 4.0)
            y = np.where(
                rng.random(m) < 0.25,
                rng.integers(-40, 41, m).astype(dtype),
                rng.uniform(-30, 30, m).astype(dtype),
            ).astype(dtype)
            x = np.where(rng.random(m) < 0.2, -x, x)
            # A quarter aimed at every finite result, down to the smallest subnormal and up to
            # the overflow edge: y = z / log(x) for z uniform over that range of log(result).
            info = np.finfo(dtype)
            aimed = rng.random(m) < 0.25
            base = rng.uniform(0.5, 3.0, m)
            z = rng.uniform(np.log(float(info.smallest_subnormal)), np.log(float(info.max)), m)
            with np.errstate(all="ignore"):
                x = np.where(aimed, base.astype(dtype), x)
                y = np.where(aimed, (z / np.log(base)).astype(dtype), y)
                ref = np.power(x.astype(LD), y.astype(LD))
            total.merge(check_batch(name, np.dtype(dtype), (x, y), ref))
            continue
        x = _sample(rng, dtype, m, *SAMPLE_RANGES[name])
        if ABOVE[0] is not None:  # --above: only arguments >= it (the rest drawn and dropped)
            x = x[x >= ABOVE[0]]
        if name in ("sin", "cos", "tan"):
            x[: m // 4] = near_multiples_of_half_pi(rng, dtype, m // 4)
        if name in MPMATH_ONLY:  # every reference from mpmath: keep the sample small (see main)
            total.merge(check_batch(name, np.dtype(dtype), (x,), None))
            continue
        with np.errstate(all="ignore"):
            ref = LONGDOUBLE[name](x.astype(LD))
        by_reference = name in TRIG and np.dtype(dtype) == np.float64
        total.merge(check_batch(name, np.dtype(dtype), (x,), ref, by_reference))
    if name in TRIG and np.dtype(dtype) == np.float64 and total.worst:
        # The largest error found by the reference, confirmed (and replaced) by mpmath's.
        x = np.array(total.worst, dtype=dtype)
        total.max_ulps = mp_ulps(KERNELS[name](x)[0], mp_value(name, tuple(x)), np.dtype(dtype))
    return total


def all_float16(name: str) -> Stats:
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    if ABOVE[0] is not None:
        x = x[x >= ABOVE[0]]
    if name == "pow":
        xs, ys = np.meshgrid(x, FLOAT16_EXPONENTS)
        # mpmath for every pair would be slow: longdouble bulk, mpmath near boundaries (as float32).
        with np.errstate(all="ignore"):
            ref = np.power(xs.ravel().astype(LD), ys.ravel().astype(LD))
        return check_batch(name, np.dtype(np.float16), (xs.ravel(), ys.ravel()), ref)
    if name in MPMATH_ONLY:
        return check_batch(name, np.dtype(np.float16), (x,), None)
    with np.errstate(all="ignore"):
        ref = LONGDOUBLE[name](x.astype(LD))
    return check_batch(name, np.dtype(np.float16), (x,), ref)


ERF_SAMPLE = 200_000  # erf's references all come from mpmath (about 100 microseconds each)
MPMATH_ONLY = ("erf", "gelu")  # no longdouble erf in numpy: mpmath for every reference
# The exact twins of the activations (runtime_support/activation.py): float64 arithmetic in their
# docstrings' order with the library's functions, rounded once; not claimed correctly rounded.
ACTIVATIONS = ("elu", "celu", "selu", "mish", "swish", "gelu", "gelu_tanh")
FLOAT16_EXPONENTS = np.array(
    [0, 0.5, -0.5, 1, -1, 2, -2, 3, -3, 0.25, 1.5, -1.5, 2.5, 7, -7, 10, 11, -11, 13.5]
    + [0.1 * k for k in range(-22, 23) if k % 5],
    dtype=np.float16,
)
FUNCTIONS = (
    (
        "exp",
        "log",
        "expm1",
        "log1p",
        "sigmoid",
        "tanh",
        "softplus",
        "erf",
        "pow",
        "sinh",
        "cosh",
        "asinh",
        "acosh",
        "atanh",
    )
    + TRIG
    + ACTIVATIONS
)


NUMPY_COUNTERPART = {  # what the fast variant computes instead, for --speed
    "exp": np.exp,
    "log": lambda x: np.log(np.abs(x)),
    "expm1": np.expm1,
    "log1p": lambda x: np.log1p(np.abs(x)),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softplus": lambda x: np.log1p(np.exp(x)),
    "erf": None,
    "pow": lambda x, y: np.power(np.abs(x), y),
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asinh": np.arcsinh,
    "acosh": lambda x: np.arccosh(np.abs(x) + 1),
    "atanh": lambda x: np.arctanh(x / 21),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": lambda x: np.arcsin(x / 21),
    "acos": lambda x: np.arccos(x / 21),
    "atan": np.arctan,
}


ARGUMENT = {  # --speed: arguments inside the domain
    "log": np.abs,
    "log1p": np.abs,
    "acosh": lambda v: np.abs(v) + 1,
    "atanh": lambda v: v / 21,
    "asin": lambda v: v / 21,
    "acos": lambda v: v / 21,
}


def speed(names, size: int = 1 << 20, repeats: int = 15) -> None:
    """CPU time (process time: other processes on the machine do not count) per element of each
    kernel on float32 data, the best of `repeats`, against numpy's own function."""

    def best(f):
        times = []
        for _ in range(repeats):
            t0 = time.process_time()
            f()
            times.append(time.process_time() - t0)
        return min(times) * 1e9 / size

    rng = np.random.default_rng(0)
    x = rng.uniform(-20, 20, size).astype(np.float32)
    y = rng.uniform(-3, 3, size).astype(np.float32)
    print(
        f"| function | exact ns/element | numpy ns/element | ratio |  (float32, {size:,} elements)"
    )
    print("|---|---|---|---|")
    for name in names:
        args = (x, y) if name == "pow" else (ARGUMENT.get(name, lambda v: v)(x),)
        exact = best(lambda: KERNELS[name](*args))
        plain = NUMPY_COUNTERPART[name]
        with np.errstate(all="ignore"):
            numpy = best(lambda: plain(*args)) if plain else float("nan")
        print(f"| {name} | {exact:.1f} | {numpy:.2f} | {exact / numpy:.0f} |", flush=True)


def _ld_to_mpf(v: np.longdouble) -> mp.mpf:
    """A longdouble as an mpf, exactly: its 64-bit significand as an integer, and the exponent."""
    significand, exponent = np.frexp(v)
    return mp.ldexp(mp.mpf(int(np.ldexp(significand, 64))), int(exponent) - 64)


def validate_reference(names, n: int, seed: int = 5) -> None:
    """The error of each longdouble reference in longdouble ulps (of the exact value's binade)
    against mpmath, on n float64 arguments spread as the float64 samples are."""
    info = np.finfo(LD)
    print("| function | arguments | max error of the longdouble reference (ld ulp) | at |")
    print("|---|---|---|---|")
    for name in names:
        rng = np.random.default_rng(seed)
        x = _sample(rng, np.float64, n, *SAMPLE_RANGES.get(name, (-10.0, 10.0)))
        if name in ("sin", "cos", "tan"):
            x[: n // 4] = near_multiples_of_half_pi(rng, np.float64, n // 4)
        with np.errstate(all="ignore"):
            ref = LONGDOUBLE[name](x.astype(LD))
        worst, at = 0.0, None
        for xi, ri in zip(x, ref):
            value = mp_value(name, (xi,))
            if not isinstance(value, mp.mpf) or not np.isfinite(ri) or value == 0:
                continue
            e = int(mp.floor(mp.log(abs(value), 2)))
            if mp.mpf(2) ** e > abs(value):
                e -= 1
            ulp = mp.mpf(2) ** (max(e, info.minexp) - info.nmant)
            err = float(abs(_ld_to_mpf(ri) - value) / ulp)
            if err > worst:
                worst, at = err, float(xi)
        print(f"| {name} | {n:,} | {worst:.4f} | {at!r} |", flush=True)


# --- functions of a row: softmax and log-softmax ------------------------------------------------

ROW_FUNCTIONS = ("softmax", "log_softmax")


def _row_reference(name: str, row: list[float]) -> list:
    """softmax or log-softmax of `row` (floats) in mpmath at 40 digits."""
    with mp.workdps(40):
        values = [mp.mpf(v) for v in row]
        peak = max(values)
        total = mp.fsum(mp.exp(v - peak) for v in values)
        if name == "softmax":
            return [mp.exp(v - peak) / total for v in values]
        return [v - peak - mp.log(total) for v in values]


def rows(name: str, dtype, count: int, seed: int) -> tuple[Stats, float]:
    """exact_softmax or exact_log_softmax of `count` rows (lengths 2 to 256, values normal times
    1, 10 or 100) against mpmath. The error is in ulps of the result's binade for softmax, and in
    ulps of max(|result|, 1) for log-softmax (a logarithm's absolute error scale: a result near 0
    comes from log(s) with s near 1). Also returned: the largest error divided by 1 + |x - max|,
    the condition of exp at the rounded difference both kernels take in the type (docs/exact-
    kernels.md), which the error is expected to stay below a small multiple of."""
    from runtime_support.exact import exact_log_softmax, exact_softmax

    kernel = exact_softmax if name == "softmax" else exact_log_softmax
    rng = np.random.default_rng(seed)
    stats, ratio = Stats(), 0.0
    dtype = np.dtype(dtype)
    one = mp.mpf(1)
    for _ in range(count):
        width = int(rng.integers(2, 257))
        row = (rng.standard_normal(width) * rng.choice([1.0, 10.0, 100.0])).astype(dtype)
        got = kernel(row[np.newaxis], axis=-1)[0]
        spread = np.abs(row.astype(np.float64) - float(row.max())).tolist()
        for y, value, d in zip(got.tolist(), _row_reference(name, row.tolist()), spread):
            stats.checked += 1
            if name == "softmax" and abs(value) < mp.mpf(2) ** np.finfo(dtype).minexp:
                stats.specials += 1  # below the normal range: judged by the absolute error
                if abs(mp.mpf(y) - value) > mp.mpf(2) ** np.finfo(dtype).minexp:
                    stats.failures.append(f"{name}: {y} for {value} (underflow)")
                continue
            if name == "softmax" or abs(value) >= one:
                error = mp_ulps(y, value, dtype)
            else:  # |y - value| in ulps of 1 (computed in mpmath: a float sum would round it)
                error = float(abs(mp.mpf(y) - value) * 2 ** np.finfo(dtype).nmant)
            if dtype.type(y) != correctly_rounded(value, dtype):
                stats.not_rounded += 1
            if error > stats.max_ulps:
                stats.max_ulps, stats.worst = error, (width,)
            ratio = max(ratio, error / (1 + d))
    return stats, ratio


def measure_rows(names, count: int) -> None:
    """The --rows table: softmax and log-softmax, float32 and float64."""
    print(
        "| function | dtype | rows | values checked | max error (ulp) | max error / (1 + |x - max|)"
        " | not correctly rounded | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        for dtype in (np.float32, np.float64):
            t0 = time.time()
            stats, ratio = rows(name, dtype, count, 7)
            print(
                f"| {name} | {np.dtype(dtype).name} | {count:,} | {stats.checked:,} | "
                f"{stats.max_ulps:.4f} | {ratio:.4f} | {stats.not_rounded:,} | "
                f"{time.time() - t0:.0f} |",
                flush=True,
            )
            for failure in stats.failures:
                print(f"FAILURE {failure}", file=sys.stderr)


# --- cos_sin_of_turns: the DFT's twiddles and the windows' cosines --------------------------------


def _turn_pairs(rng, count: int, per_n: int = 500):
    """(n, m array) pairs, `count` values of m in all: n log-uniform in [1, 2**24] (an FFT or window
    length); per n, half of the m uniform in [0, n) and half next to the octant boundaries
    (round(k n / 8) + j, k = 0..8, |j| <= 2) where the symmetries meet; a quarter negated or
    shifted by a multiple of n (the kernel reduces m mod n)."""
    for _ in range(max(1, count // per_n)):
        n = int(np.exp2(rng.uniform(0, 24)))
        uniform = rng.integers(0, n, per_n - per_n // 2)
        k = rng.integers(0, 9, per_n // 2)
        near = np.rint(k * n / 8).astype(np.int64) + rng.integers(-2, 3, per_n // 2)
        m = np.concatenate([uniform, near])
        moved = rng.random(m.size) < 0.25
        m = np.where(moved, m + n * rng.integers(-3, 4, m.size), m)
        yield n, m


def turns(count: int, seed: int = 11) -> None:
    """The --turns table: exact_trig.cos_sin_of_turns (float64 cos(2 pi m/n), sin(2 pi m/n))
    against mpmath's cospi / sinpi of 2m/n at 40 digits (the angle exact), errors in ulps of the
    result's binade. Exact zeros must be +0."""
    rng = np.random.default_rng(seed)
    stats = {"cos": Stats(), "sin": Stats()}
    began = time.time()
    with mp.workdps(40):
        for n, m in _turn_pairs(rng, count):
            cosine, sine = et.cos_sin_of_turns(m, n)
            for (name, got), reference in ((("cos", cosine), mp.cospi), (("sin", sine), mp.sinpi)):
                st = stats[name]
                for mi, y in zip(m.tolist(), got.tolist()):
                    value = reference(mp.mpf(2 * mi) / n)
                    st.checked += 1
                    if value == 0:
                        st.specials += 1
                        if y != 0.0 or math.copysign(1.0, y) < 0:
                            st.failures.append(f"{name}(2 pi {mi}/{n}) = {y!r}, not +0")
                        continue
                    if y != float(value):  # mpmath's conversion rounds to nearest
                        st.not_rounded += 1
                    error = mp_ulps(y, value, np.float64)
                    if error > st.max_ulps:
                        st.max_ulps, st.worst = error, (mi, n)
    print(
        "| function | pairs (m, n) | exact zeros | max error (ulp) | at (m, n) | not correctly rounded | seconds |"
    )
    print("|---|---|---|---|---|---|---|")
    seconds = time.time() - began
    for name, st in stats.items():
        print(
            f"| {name}(2 pi m/n) | {st.checked:,} | {st.specials:,} | {st.max_ulps:.4f} | "
            f"{st.worst} | {st.not_rounded:,} | {seconds:.0f} (both) |"
        )
        for failure in st.failures[:20]:
            print(f"FAILURE {failure}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="processes for the exhaustive runs")
    parser.add_argument("--quick", action="store_true", help="small samples, 1/64 of exhaustive")
    parser.add_argument("--only", nargs="*", default=None, help="functions to measure")
    parser.add_argument("--sample", type=int, default=10_000_000, help="float32 sample size")
    parser.add_argument(
        "--float64-sample", type=int, default=None, help="float64 sample size (every function)"
    )
    parser.add_argument("--speed", action="store_true", help="time the kernels against numpy")
    parser.add_argument(
        "--above", type=float, default=None, help="only arguments >= this (sampled, float16)"
    )
    parser.add_argument(
        "--turns", type=int, default=None, help="cos_sin_of_turns on this many (m, n) pairs"
    )
    parser.add_argument(
        "--rows", type=int, default=None, help="softmax and log-softmax on this many rows each"
    )
    parser.add_argument(
        "--validate-reference",
        type=int,
        metavar="N",
        default=None,
        help="measure the longdouble references against mpmath on N float64 arguments each",
    )
    args = parser.parse_args(argv)
    names = args.only or FUNCTIONS
    ABOVE[0] = args.above
    if args.rows:
        measure_rows([n for n in names if n in ROW_FUNCTIONS] or ROW_FUNCTIONS, args.rows)
        return 0
    if args.speed:
        speed(names)
        return 0
    if args.turns:
        turns(args.turns)
        return 0
    if args.validate_reference:
        validate_reference([n for n in names if n in LONGDOUBLE], args.validate_reference)
        return 0
    sample = 200_000 if args.quick else args.sample
    began = time.time()
    print(f"# exact_math accuracy, {datetime.date.today().isoformat()}, numpy {np.__version__}")
    print(
        f"# command: python -m tools.measure_exact_transcendentals {' '.join(argv or sys.argv[1:])}"
    )
    print()
    print(
        "| function | dtype | inputs | checked | special values | max error (ulp) | at | "
        "not correctly rounded | decided by mpmath | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    failed = False
    for name in names:
        runs = []
        if name in EXHAUSTIVE:
            runs.append(
                (
                    "float32",
                    "all 2^32" if not args.quick else "1/64 of 2^32",
                    lambda: exhaustive_float32(name, args.jobs, args.quick),
                )
            )
        else:
            n32 = min(sample, ERF_SAMPLE) if name in MPMATH_ONLY else sample
            runs.append(("float32", f"{n32:,} sampled", lambda: sampled(name, np.float32, n32, 1)))
        runs.append(
            (
                "float16",
                "all 65536" + (f" x {FLOAT16_EXPONENTS.size} exponents" if name == "pow" else ""),
                lambda: all_float16(name),
            )
        )
        if name not in MPMATH_ONLY:
            n64 = sample // 10
            if not args.quick:
                n64 = args.float64_sample or FLOAT64_SAMPLE.get(name, n64)
            runs.append(("float64", f"{n64:,} sampled", lambda: sampled(name, np.float64, n64, 2)))
        else:
            runs.append(
                (
                    "float64",
                    f"{ERF_SAMPLE:,} sampled",
                    lambda: sampled(name, np.float64, ERF_SAMPLE, 2),
                )
            )
        for dtype, what, run in runs:
            t0 = time.time()
            stats = run()
            seconds = time.time() - t0
            at = ", ".join(f"{v!r}" for v in stats.worst)
            print(
                f"| {name} | {dtype} | {what} | {stats.checked:,} | {stats.specials:,} | "
                f"{stats.max_ulps:.4f} | {at} | {stats.not_rounded:,} | {stats.mp_decided:,} | "
                f"{seconds:.0f} |",
                flush=True,
            )
            for failure in stats.failures:
                failed = True
                print(f"FAILURE {name} {dtype}: {failure}", file=sys.stderr)
    print()
    print(f"# total {time.time() - began:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
