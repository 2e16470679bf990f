"""Derive every constant of runtime_support/exact_math.py and exact_trig.py with mpmath, so that
they can be checked.

    python -m tools.derive_exact_coefficients                       # exact_math's constants block
    python -m tools.derive_exact_coefficients --module exact_trig   # exact_trig's
    python -m tools.derive_exact_coefficients --check               # compare both modules with them

Nothing here runs at import or test time of the library: the module holds the numbers as literals
(float.hex text and integer bit patterns), so its results never depend on the platform's libm.

What is derived (docs/exact-transcendentals.md explains how each is used):
- exp: the 128-entry table of 2**(j/128) (the double nearest to it, and the relative remainder
  (2**(j/128) - T[j]) / T[j] rounded to double), 128/ln2, ln2/128 split in a 35-bit head and a tail,
  and minimax polynomials for g(r) = (exp(r) - 1 - r) / r**2 on |r| <= ln2/256 (plus a margin).
- log: ln2 split in a 42-bit head and a tail, and minimax polynomials for
  h(z) = (2 atanh(sqrt z) / sqrt z - 2) / z on 0 <= z <= ((sqrt2 - 1)/(sqrt2 + 1))**2.
- erf: minimax polynomials of erf(c + t) on 23 intervals of width 1/4 covering [1/4, 6) (t the
  offset from the interval's centre), and of erf(x)/x on [0, 1/4).
- erfc for Gelu's negative half: minimax polynomials of the scaled R(z) = erfc(z) exp(z**2) in
  the offset from each interval's centre, on [1/2, 28) in 42 intervals (width 1/4 below 4, 1/2
  below 8, 1 beyond), so that erfc(z) = exp(-z**2) R(z) keeps its relative accuracy where
  1 - erf(z) cancels.
- sin, cos, tan (exact_trig): pi/2 in four parts for Cody-Waite (three of 33 bits, so that k times
  each is exact for k < 2**20, and the rest), 2/pi rounded, pi/2 and pi as head + tail, the first
  1280 bits of 2/pi as an integer (Payne-Hanek), and minimax polynomials for
  S(z) = (sin(sqrt z)/sqrt z - 1)/z and C(z) = (cos(sqrt z) - 1 + z/2)/z**2 on 0 <= z <= (pi/4)**2.
- atan: atan(j/64) and pi/2 - atan(j/64) as head + tail for j = 0..64, and a minimax polynomial for
  P(w) = (atan(sqrt w)/sqrt w - 1)/w on 0 <= w <= (1/128)**2.
- asin, acos: minimax polynomials for Q(z) = (asin(sqrt z)/sqrt z - 1)/z on 0 <= z <= 1/4.

The minimax polynomials come from the Remez exchange algorithm below (absolute error, polynomial
basis, reference moved to the extrema of the error on a dense Chebyshev grid until the levelled
error is stable to 1e-9), run in 40-digit arithmetic; the coefficients are then rounded to double
and
the error of the rounded polynomial is measured again on a denser grid: that is the bound reported.
"""

from __future__ import annotations

import argparse
import struct
import sys

import mpmath as mp

mp.mp.dps = 40

EXP_TABLE_BITS = 7
EXP_N = 1 << EXP_TABLE_BITS
EXP_R_MAX = mp.log(2) / (2 * EXP_N) * (1 + mp.mpf(2) ** -20)  # |r| bound: ln2/256 and a margin
LOG_Z_MAX = ((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)) ** 2 * (1 + mp.mpf(2) ** -20)
ERF_WIDTH = mp.mpf(1) / 4
ERF_INTERVALS = 24  # [0, 1/4), [1/4, 1/2), ..., [23/4, 6); a 25th, constant 1, holds |x| >= 6
ERF_DEGREE = 11
# erfc's intervals: (start, end, width); R(z) = erfc(z) exp(z^2) varies more slowly as z grows.
ERFC_PIECES = ((mp.mpf(1) / 2, 4, mp.mpf(1) / 4), (4, 8, mp.mpf(1) / 2), (8, 28, 1))
ERFC_DEGREE = 11

# Polynomial degrees: (name, degree of the polynomial in the reduced argument, used for).
EXP_DEGREES = {"EXP_POLY_64": 3, "EXP_POLY_32": 2}  # g ~ C2 + C3 r + ...: exp = 1 + r + r^2 g
LOG_DEGREES = {"LOG_POLY_64": 6, "LOG_POLY_32": 5}  # h ~ L1 + L2 z + ...: log = 2s + s z h


def to_double(v: mp.mpf) -> float:
    """The double nearest to v (mpmath rounds to nearest even)."""
    return float(mp.mpf(v))


def double_bits(v: float) -> int:
    return int.from_bytes(struct.pack("<d", v), "little")


def truncated(v: mp.mpf, bits: int) -> float:
    """v rounded to `bits` significant bits (so that products with small integers are exact)."""
    e = int(mp.floor(mp.log(abs(v), 2)))
    scale = mp.mpf(2) ** (bits - 1 - e)
    return to_double(mp.nint(v * scale) / scale)


def chebyshev_grid(a: mp.mpf, b: mp.mpf, n: int) -> list[mp.mpf]:
    return [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (n - 1 - i) / (n - 1)) for i in range(n)]


def horner(coeffs, t):
    p = mp.mpf(0)
    for c in reversed(coeffs):
        p = p * t + c
    return p


def remez(f, a, b, degree: int, grid_size: int = 1500) -> list[mp.mpf]:
    """Minimax polynomial of `degree` for f on [a, b] (absolute error), ascending coefficients."""
    n = degree + 1
    grid = chebyshev_grid(a, b, grid_size)
    fvals = [f(x) for x in grid]
    reference = [grid[round(i * (grid_size - 1) / n)] for i in range(n + 1)]
    level = None
    for _ in range(60):
        rows = [[x**k for k in range(n)] + [(-1) ** j] for j, x in enumerate(reference)]
        sol = mp.lu_solve(mp.matrix(rows), mp.matrix([f(x) for x in reference]))
        coeffs = [sol[k] for k in range(n)]
        errors = [fv - horner(coeffs, x) for x, fv in zip(grid, fvals)]
        # Local extrema of the error (endpoints included), then alternate signs keeping the largest.
        extrema = []
        for i, e in enumerate(errors):
            left = errors[i - 1] if i > 0 else None
            right = errors[i + 1] if i + 1 < len(errors) else None
            if (left is None or abs(e) >= abs(left)) and (right is None or abs(e) >= abs(right)):
                if e != 0:
                    extrema.append((grid[i], e))
        alternating = []
        for x, e in extrema:
            if alternating and (alternating[-1][1] > 0) == (e > 0):
                if abs(e) > abs(alternating[-1][1]):
                    alternating[-1] = (x, e)
            else:
                alternating.append((x, e))
        while len(alternating) > n + 1:
            if abs(alternating[0][1]) < abs(alternating[-1][1]):
                alternating.pop(0)
            else:
                alternating.pop()
        if len(alternating) < n + 1:
            break  # the error is already at rounding level: the reference cannot improve
        reference = [x for x, _ in alternating]
        worst = max(abs(e) for e in errors)
        level = abs(sol[n])
        if worst <= level * (1 + mp.mpf(10) ** -9):
            break
    return coeffs


def rounded_error(f, coeffs_double, a, b, points: int = 6000) -> mp.mpf:
    """Largest |f - p| on [a, b] for the polynomial with double coefficients (exact arithmetic)."""
    return max(
        abs(f(x) - horner([mp.mpf(c) for c in coeffs_double], x))
        for x in chebyshev_grid(a, b, points)
    )


# -- the functions approximated, as fast-converging series (no cancellation near 0) ---------------


def exp_remainder(r: mp.mpf) -> mp.mpf:
    """g(r) = (exp(r) - 1 - r) / r**2 = sum r**(i-2) / i!, i >= 2."""
    total, term = mp.mpf(0), mp.mpf(1) / 2
    for i in range(2, 60):
        total += term
        term = term * r / (i + 1)
    return total


def log_remainder(z: mp.mpf) -> mp.mpf:
    """h(z) = (2 atanh(sqrt z)/sqrt z - 2) / z = sum 2 z**(i-1) / (2i + 1), i >= 1."""
    return mp.fsum(2 * z ** (i - 1) / (2 * i + 1) for i in range(1, 80))


def erf_over_x(x: mp.mpf) -> mp.mpf:
    return mp.erf(x) / x if x != 0 else 2 / mp.sqrt(mp.pi)


def erfc_scaled(z: mp.mpf) -> mp.mpf:
    """R(z) = erfc(z) exp(z**2) (mpmath's erfc has no underflow: its exponent range is unbounded)."""
    return mp.erfc(z) * mp.exp(z * z)


# -- derivations ---------------------------------------------------------------------------------


def derive() -> tuple[dict, list[str]]:
    constants: dict = {}
    report: list[str] = []
    ln2 = mp.log(2)

    # exp
    table, tails = [], []
    for j in range(EXP_N):
        exact = mp.mpf(2) ** (mp.mpf(j) / EXP_N)
        t = to_double(exact)
        table.append((double_bits(t) - (j << (52 - EXP_TABLE_BITS))) % (1 << 64))
        tails.append(to_double((exact - mp.mpf(t)) / mp.mpf(t)))
    constants["EXP_TABLE_BITS"] = table
    constants["EXP_TABLE_TAIL"] = tails
    constants["EXP_INV_LN2_N"] = to_double(EXP_N / ln2)
    head = truncated(ln2 / EXP_N, 35)
    constants["EXP_LN2_N_HI"] = head
    constants["EXP_LN2_N_LO"] = to_double(ln2 / EXP_N - mp.mpf(head))
    for name, degree in EXP_DEGREES.items():
        coeffs = [to_double(c) for c in remez(exp_remainder, -EXP_R_MAX, EXP_R_MAX, degree)]
        constants[name] = coeffs
        bound = rounded_error(exp_remainder, coeffs, -EXP_R_MAX, EXP_R_MAX) * EXP_R_MAX**2
        report.append(
            f"{name}: degree {degree + 2} in r, |exp(r) - (1 + r + r^2 p(r))| <= "
            f"2^{float(mp.log(bound, 2)):.1f} on |r| <= ln2/{2 * EXP_N}"
        )

    # log
    constants["LOG_LN2_HI"] = truncated(ln2, 42)
    constants["LOG_LN2_LO"] = to_double(ln2 - mp.mpf(constants["LOG_LN2_HI"]))
    for name, degree in LOG_DEGREES.items():
        coeffs = [to_double(c) for c in remez(log_remainder, mp.mpf(0), LOG_Z_MAX, degree)]
        constants[name] = coeffs
        # log(m) = 2s + s*z*h(z) and |log(m)| >= 2|s|: the relative error is z*|h - p|/2 at most.
        bound = rounded_error(log_remainder, coeffs, mp.mpf(0), LOG_Z_MAX) * LOG_Z_MAX / 2
        report.append(
            f"{name}: {degree + 1} coefficients in z = s^2, relative error of log(m) <= "
            f"2^{float(mp.log(bound, 2)):.1f}"
        )

    # erf: column k holds coefficient k of every interval (interval 0 fits erf(x)/x: the column-0
    # entry is 0 and the others are shifted by one, so the polynomial is x * q(x) with q(0) > 0).
    columns = [[0.0] * (ERF_INTERVALS + 1) for _ in range(ERF_DEGREE + 1)]
    centres = [0.0]
    q = remez(erf_over_x, mp.mpf(0), ERF_WIDTH, ERF_DEGREE - 1)
    for k, c in enumerate(q):
        columns[k + 1][0] = to_double(c)
    first = rounded_error(erf_over_x, [columns[k + 1][0] for k in range(ERF_DEGREE)], 0, ERF_WIDTH)
    report.append(
        f"ERF interval [0, 1/4): erf(x)/x, relative error <= 2^{float(mp.log(first, 2)):.1f}"
    )
    worst = mp.mpf(0)
    for i in range(1, ERF_INTERVALS):
        centre = (i + mp.mpf(1) / 2) * ERF_WIDTH
        centres.append(to_double(centre))

        def piece(t, centre=centre):
            return mp.erf(centre + t)

        coeffs = [to_double(c) for c in remez(piece, -ERF_WIDTH / 2, ERF_WIDTH / 2, ERF_DEGREE)]
        for k, c in enumerate(coeffs):
            columns[k][i] = c
        worst = max(worst, rounded_error(piece, coeffs, -ERF_WIDTH / 2, ERF_WIDTH / 2, 4000))
    report.append(f"ERF intervals [1/4, 6): absolute error <= 2^{float(mp.log(worst, 2)):.1f}")
    columns[0][ERF_INTERVALS] = 1.0  # |x| >= 6: erf rounds to 1 in double
    centres.append(6.0)
    constants["ERF_CENTRES"] = centres
    constants["ERF_COEFFS"] = columns

    # erfc: column 0 the centres, column 1 + k coefficient k of every interval (rows as the
    # library gathers them); the error is relative to R, which is at least 0.02 on [1/2, 28).
    rows, worst = [], mp.mpf(0)
    for start, end, width in ERFC_PIECES:
        for i in range(int((end - start) / width)):
            centre = start + (i + mp.mpf(1) / 2) * width

            def scaled(t, centre=centre):
                return erfc_scaled(centre + t)

            coeffs = [to_double(c) for c in remez(scaled, -width / 2, width / 2, ERFC_DEGREE)]
            rows.append([to_double(centre)] + coeffs)
            error = rounded_error(scaled, coeffs, -width / 2, width / 2, 2000)
            worst = max(worst, error / erfc_scaled(centre + width / 2))
    report.append(
        f"ERFC intervals [1/2, 28): R(z) = erfc(z) exp(z^2), relative error <= "
        f"2^{float(mp.log(worst, 2)):.1f}"
    )
    constants["ERFC_TABLE"] = [list(column) for column in zip(*rows)]
    inv_sqrt2 = 1 / mp.sqrt(2)  # z = |x| / sqrt(2) double-length: head and tail
    constants["INV_SQRT2"] = [
        to_double(inv_sqrt2),
        to_double(inv_sqrt2 - mp.mpf(to_double(inv_sqrt2))),
    ]
    return constants, report


# -- exact_trig -----------------------------------------------------------------------------------

TRIG_Z_MAX = (mp.pi / 4) ** 2 * (1 + mp.mpf(2) ** -20)  # |r| <= pi/4 and a margin
ATAN_STEPS = 64  # table points j/64: |u| <= 1/128 after atan(y) = atan(j/64) + atan(u)
ATAN_W_MAX = (mp.mpf(1) / (2 * ATAN_STEPS)) ** 2 * (1 + mp.mpf(2) ** -20)
ASIN_Z_MAX = mp.mpf(1) / 4 * (1 + mp.mpf(2) ** -20)  # |x| <= 1/2, or s = sqrt((1 - |x|)/2) <= 1/2
TWO_OVER_PI_BITS = (
    1280  # Payne-Hanek: bits of 2/pi up to 2**-1161 are needed for float64 x < 2**1024
)
PIO2_PART_BITS = 33  # k * part exact in float64 for k < 2**20

# Polynomial degrees in z = r**2 (sin: r + r*z*S(z); cos: 1 - z/2 + z*z*C(z); atan:
# u + u*w*P(w); asin: v + v*z*Q(z)). One polynomial serves every type: each is at the level where
# rounding its coefficients to double dominates, and one degree less costs float32 results their
# correct rounding (cos: 2**-50 instead of 2**-60) for one multiply-add saved.
TRIG_DEGREES = {"SIN_POLY": 6, "COS_POLY": 5, "ATAN_POLY": 2, "ASIN_POLY": 12}


def sin_remainder(z: mp.mpf) -> mp.mpf:
    """S(z) = (sin(sqrt z)/sqrt z - 1)/z = sum (-1)**n z**(n-1) / (2n + 1)!, n >= 1."""
    total, term = mp.mpf(0), -mp.mpf(1) / 6
    for n in range(1, 40):
        total += term
        term = -term * z / ((2 * n + 2) * (2 * n + 3))
    return total


def cos_remainder(z: mp.mpf) -> mp.mpf:
    """C(z) = (cos(sqrt z) - 1 + z/2)/z**2 = sum (-1)**n z**(n-2) / (2n)!, n >= 2."""
    total, term = mp.mpf(0), mp.mpf(1) / 24
    for n in range(2, 40):
        total += term
        term = -term * z / ((2 * n + 1) * (2 * n + 2))
    return total


def atan_remainder(w: mp.mpf) -> mp.mpf:
    """P(w) = (atan(sqrt w)/sqrt w - 1)/w = sum (-1)**n w**(n-1) / (2n + 1), n >= 1 (w tiny)."""
    return mp.fsum((-1) ** n * w ** (n - 1) / (2 * n + 1) for n in range(1, 40))


def asin_remainder(z: mp.mpf) -> mp.mpf:
    """Q(z) = (asin(sqrt z)/sqrt z - 1)/z = sum binomial(2n, n) / 4**n z**(n-1) / (2n + 1),
    n >= 1 (z <= 1/4: 200 terms leave less than 4**-200)."""
    total, c = mp.mpf(0), mp.mpf(1)
    for n in range(1, 200):
        c = c * (2 * n - 1) / (2 * n)
        total += c * z ** (n - 1) / (2 * n + 1)
    return total


def head_tail(v: mp.mpf) -> list[float]:
    """v as the double nearest to it and the double nearest to the rest."""
    head = to_double(v)
    return [head, to_double(v - mp.mpf(head))]


def derive_trig() -> tuple[dict, list[str]]:
    constants: dict = {}
    report: list[str] = []
    pio2 = mp.pi / 2
    with mp.workdps(100):  # the fourth part lies near 2**-104: pi/2 to 330 bits
        parts, rest = [], mp.pi / 2
        for _ in range(3):
            parts.append(truncated(rest, PIO2_PART_BITS))
            rest -= mp.mpf(parts[-1])
        parts.append(to_double(rest))
        left = abs(rest - mp.mpf(parts[-1]))
    constants["PIO2_PARTS"] = parts
    report.append(f"PIO2_PARTS: pi/2 - the sum of the four parts = 2^{float(mp.log(left, 2)):.1f}")
    constants["INV_PIO2"] = to_double(2 / mp.pi)
    constants["PIO2"] = head_tail(pio2)
    constants["PI"] = head_tail(mp.pi)
    with mp.workdps(TWO_OVER_PI_BITS // 3 + 40):
        constants["TWO_OVER_PI"] = int(mp.floor(2 / mp.pi * mp.mpf(2) ** TWO_OVER_PI_BITS))
    polys = {
        "SIN": (sin_remainder, TRIG_Z_MAX, "sin(r) = r + r z S(z), relative error"),
        "COS": (cos_remainder, TRIG_Z_MAX, "cos(r) = 1 - z/2 + z^2 C(z), absolute error"),
        "ATAN": (atan_remainder, ATAN_W_MAX, "atan(u) = u + u w P(w), relative error"),
        "ASIN": (asin_remainder, ASIN_Z_MAX, "asin(v) = v + v z Q(z), relative error"),
    }
    for name, degree in TRIG_DEGREES.items():
        f, top, what = polys[name.split("_")[0]]
        coeffs = [to_double(c) for c in remez(f, mp.mpf(0), top, degree)]
        constants[name] = coeffs
        # Relative error of the function (absolute for cos, which lies in [0.7, 1]): the
        # polynomial's error times z (times z**2 for cos), largest at the top of the interval.
        scale = top**2 if name.startswith("COS") else top
        bound = rounded_error(f, coeffs, mp.mpf(0), top) * scale
        report.append(
            f"{name}: {degree + 1} coefficients, {what} <= 2^{float(mp.log(bound, 2)):.1f}"
        )
    table, complement = [], []
    for j in range(ATAN_STEPS + 1):
        a = mp.atan(mp.mpf(j) / ATAN_STEPS)
        table += head_tail(a)
        complement += head_tail(pio2 - a)
    constants["ATAN_TABLE"] = table  # head, tail of atan(j/64), j = 0..64, interleaved
    constants["ATAN_COMPLEMENT"] = complement  # head, tail of pi/2 - atan(j/64)
    return constants, report


MODULES = {"exact_math": derive, "exact_trig": derive_trig}


def render(constants: dict) -> str:
    """The constants block as it stands in runtime_support/exact_math.py (or exact_trig.py)."""

    def floats(values, indent="    ", per_line=3):
        items = [f'"{float.hex(v)}"' for v in values]
        lines = [", ".join(items[i : i + per_line]) + "," for i in range(0, len(items), per_line)]
        return "\n".join(indent + line for line in lines)

    out = []
    for name, value in constants.items():
        if name == "EXP_TABLE_BITS":
            items = [f"0x{v:016X}" for v in value]
            body = "\n".join(
                "    " + ", ".join(items[i : i + 4]) + "," for i in range(0, len(items), 4)
            )
            out.append(f"_{name} = (\n{body}\n)")
        elif name in ("ERF_COEFFS", "ERFC_TABLE"):
            rows = "\n".join(f"    _hex(\n{floats(col, ' ' * 8)}\n    )," for col in value)
            out.append(f"_{name} = (\n{rows}\n)")
        elif isinstance(value, int):  # a long integer (the bits of 2/pi), 64 hex digits a line
            digits = f"{value:X}"
            lines = "\n".join(f'    "{digits[i : i + 64]}"' for i in range(0, len(digits), 64))
            out.append(f"_{name} = int(\n{lines},\n    16,\n)")
        elif isinstance(value, list):
            out.append(f"_{name} = _hex(\n{floats(value)}\n)")
        else:
            out.append(f'_{name} = float.fromhex("{float.hex(value)}")')
    return "\n".join(out) + "\n"


def check(constants: dict, module: str = "exact_math") -> list[str]:
    """Names whose values in runtime_support.<module> differ from the derived ones."""
    import importlib

    import numpy as np

    library = importlib.import_module(f"runtime_support.{module}")
    differing = []
    for name, value in constants.items():
        have = getattr(library, "_" + name, None)
        if have is None:
            differing.append(name)
            continue
        if isinstance(value, int):
            if have != value:
                differing.append(name)
            continue
        want = np.asarray(value)
        have = np.asarray(have)
        if have.shape != want.shape or not np.array_equal(
            have.view(np.uint64) if have.dtype == np.float64 else have,
            want.view(np.uint64) if want.dtype == np.float64 else want.astype(have.dtype),
        ):
            differing.append(name)
    return differing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the modules' constants")
    parser.add_argument(
        "--module",
        choices=sorted(MODULES),
        default=None,
        help="the module whose constants to derive (printing: exact_math by default; --check: both)",
    )
    args = parser.parse_args(argv)
    if args.check:
        differing = []
        for module in [args.module] if args.module else sorted(MODULES):
            constants, report = MODULES[module]()
            for line in report:
                print("#", line, file=sys.stderr)
            differing += [f"{module}._{name}" for name in check(constants, module)]
        print("differ: " + ", ".join(differing) if differing else "all constants match")
        return 1 if differing else 0
    constants, report = MODULES[args.module or "exact_math"]()
    for line in report:
        print("#", line, file=sys.stderr)
    print(render(constants), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
