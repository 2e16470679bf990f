"""Derive and measure the float32 erf of the fast variant (runtime_support/math.py `erf`).

    python -m tools.derive_erf_float32                # fit, print the coefficients
    python -m tools.derive_erf_float32 --check        # compare them with the module (exit 1 if not)
    python -m tools.derive_erf_float32 --measure N    # also measure the kernel on N inputs

The approximation: erf(x) = tanh(x * P(t) / Q(t)) with t = min(x*x, CLAMP**2), P of degree NUM
and Q of degree DEN in t (Q(0) = 1). Why tanh: erf and tanh both saturate to
+-1, so g(x) = atanh(erf(x)) is smooth and a short rational in t approximates g(x)/x, and an error
d in the argument moves the result by only (1 - y*y) * d: large |x| need little accuracy, the
result never leaves [-1, 1], and tanh(4 * P(16)/Q(16)) = tanh(9.3) rounds to 1 in float32 (erf(x)
does from about 3.919 on). numpy's tanh is one vectorized pass, cheaper than the three or four
Horner steps it saves.

The fit: R(t) = P(t)/Q(t) against G(t) = atanh(erf(sqrt t))/sqrt t on [0, CLAMP**2], G from
mpmath at 40 digits on a Chebyshev grid, minimizing the largest error it causes in erf relative to
erf: |R/G - 1| * W, W = (1 - y*y) * atanh(y) / y, y = erf(sqrt t). The rational minimax is
approached by the linearized problem min max W |P - G Q| / (G Q_prev) (Loeb), its weights refined
by Lawson's iteration; float64 least squares in the scaled variable s = t / CLAMP**2 (well
conditioned). Then each coefficient is rounded to float32 and the error measured again.

--measure evaluates the library kernel itself (float32 arithmetic, blocks as it runs) on every
float32 in [2, 4] and beyond the clamp, and on random samples: N uniform in [-5, 5] and N with
random bit patterns (every magnitude from subnormals up), against libm's float64 erf (math.erf,
accurate to about 1 double ulp; checked against mpmath on a subsample). The error is given in
float32 ulps of the correctly rounded result (ulp = 2**(e-23) for a result in [2**e, 2**(e+1))).
"""

from __future__ import annotations

import argparse
import math
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 40

CLAMP = 4.0
NUM = 3  # degree of P in t
DEN = 3  # degree of Q in t
GRID = 3000


def _target(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """G(t) = atanh(erf(sqrt t))/sqrt t (2/sqrt(pi) at t = 0) and the weight W(t), from mpmath."""
    values, weights = [], []
    for v in t:
        x = mp.sqrt(mp.mpf(float(v)))
        if x == 0:
            values.append(2 / mp.sqrt(mp.pi))
            weights.append(1.0)
            continue
        y = mp.erf(x)
        g = mp.atanh(y)
        values.append(g / x)
        weights.append(float((1 - y * y) * g / y))
    return np.array([float(v) for v in values]), np.array(weights)


def fit(num: int = NUM, den: int = DEN, clamp: float = CLAMP, iterations: int = 200):
    """Coefficients (p0..p_num, q1..q_den) in t (q0 = 1) and the fitted relative error."""
    top = clamp * clamp
    s = (1 - np.cos(np.linspace(0, np.pi, GRID))) / 2  # Chebyshev points on [0, 1]
    f, w_erf = _target(s * top)
    powers = np.vander(s, max(num, den) + 1, increasing=True)
    weights = np.ones_like(s)
    q_prev = np.ones_like(s)
    best = None
    for _ in range(iterations):
        scale = w_erf / (f * q_prev)
        A = np.hstack([powers[:, : num + 1], -(f[:, None] * powers[:, 1 : den + 1])])
        A = A * (scale * np.sqrt(weights))[:, None]
        b = f * scale * np.sqrt(weights)
        coef = np.linalg.lstsq(A, b, rcond=None)[0]
        p, q = coef[: num + 1], np.concatenate([[1.0], coef[num + 1 :]])
        P, Q = powers[:, : num + 1] @ p, powers[:, : den + 1] @ q
        err = (P / Q - f) / f * w_erf
        peak = np.abs(err).max()
        if best is None or peak < best[0]:
            best = (peak, p, q)
        q_prev = Q
        weights = weights * np.abs(err)
        weights /= weights.sum()
    peak, p, q = best
    # Back from s = t / top to t.
    p_t = [float(v) / top**k for k, v in enumerate(p)]
    q_t = [float(v) / top**k for k, v in enumerate(q)]
    return p_t, q_t[1:], peak


def rounded_error(p, q, clamp: float = CLAMP, points: int = 20001) -> float:
    """Largest relative error in erf of the float32-rounded rational (evaluated exactly, tanh
    exact) vs mpmath."""
    p32 = [mp.mpf(float(np.float32(v))) for v in p]
    q32 = [mp.mpf(1)] + [mp.mpf(float(np.float32(v))) for v in q]
    worst = mp.mpf(0)
    for i in range(points):
        x = mp.mpf(clamp) * i / (points - 1)
        if x == 0:
            continue
        t = x * x
        approx = mp.tanh(x * mp.polyval(p32[::-1], t) / mp.polyval(q32[::-1], t))
        worst = max(worst, abs(approx / mp.erf(x) - 1))
    return float(worst)


def _ulp32(y: np.ndarray) -> np.ndarray:
    """The float32 ulp at each |y| (the spacing of float32 numbers around y)."""
    y = np.abs(y.astype(np.float32))
    return np.spacing(y).astype(np.float64)


def _reference(x: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)).astype(np.float64)


def measure(n: int, seed: int = 0) -> dict:
    """Largest error of runtime_support.math.erf on float32 inputs, in ulps of the true result."""
    from runtime_support.math import erf

    rng = np.random.default_rng(seed)
    samples = {
        "every float32 in [2, 4]": np.arange(
            np.float32(2).view(np.int32), np.float32(4).view(np.int32) + 1, dtype=np.int32
        ).view(np.float32),
        "uniform [-5, 5]": rng.uniform(-5, 5, n).astype(np.float32),
        "random bit patterns": rng.integers(0, 2**32, n, dtype=np.uint32).view(np.float32),
        "specials": np.array([0.0, -0.0, np.inf, -np.inf, 3.9, 4.0, 10.0, 1e30], np.float32),
    }
    report = {}
    for name, x in samples.items():
        x = x[np.isfinite(x)] if name != "specials" else x
        y = erf(x)
        assert y.dtype == np.float32
        ref = _reference(x)
        errors = np.abs(y.astype(np.float64) - ref) / _ulp32(ref)
        above_one = int((np.abs(y) > 1).sum())
        report[name] = (x.size, float(errors.max()), float(errors.mean()), above_one)
    # math.erf as a reference, against mpmath on a subsample.
    sub = rng.uniform(-5, 5, 2000)
    libm_vs_mpmath = max(
        abs(math.erf(v) - float(mp.erf(v))) / max(abs(float(mp.erf(v))), 1e-300) for v in sub
    )
    report["math.erf vs mpmath, relative, 2000 samples"] = libm_vs_mpmath
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", type=int, default=0, metavar="N")
    parser.add_argument("--num", type=int, default=NUM)
    parser.add_argument("--den", type=int, default=DEN)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    p, q, fitted = fit(args.num, args.den)
    if args.check:
        from runtime_support import math as kernels

        same = [np.float32(v) for v in p] == list(kernels._ERF32_P) and [
            np.float32(v) for v in q
        ] == list(kernels._ERF32_Q)
        print("coefficients match the module" if same else "coefficients differ from the module")
        return 0 if same else 1
    print(
        f"# fitted relative error {fitted:.3g}; after rounding to float32 "
        f"{rounded_error(p, q):.3g}"
    )
    print("_ERF_P = (" + ", ".join(repr(float(np.float32(v))) for v in p) + ")  # t**0 .. ")
    print("_ERF_Q = (" + ", ".join(repr(float(np.float32(v))) for v in q) + ")  # t**1 .. ")
    if args.measure:
        for name, value in measure(args.measure).items():
            print(f"{name}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
