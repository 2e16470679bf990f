"""The complex FFT of the exact DFT: a mixed-radix transform whose every rounding is part of its
definition, in the working type (float32 or float64) with numpy's elementwise + - * only.

The definition is the operation order of pocketfft's complex transform (the FFTPACK-style
algorithm numpy 2's FFT runs, which also produced the ONNX backend data for DFT), written here as
whole-array numpy steps:

- the length factorised into 8s, then 4s, then one 2 moved to the front, then odd primes in
  increasing order; a pass per factor, with fixed butterflies for 2, 3, 4, 5, 7, 8 and 11 and a
  general butterfly for larger primes, then the twiddle of each output j > 0 at i > 0;
- lengths of at least 50 whose largest prime factor p has p**2 > length, and for which the cost
  estimate prefers it, by Bluestein's algorithm over a 2-3-5-7-11-smooth length;
- twiddles exp(∓2 pi i k / n) computed in float64 by the same octant split and two-table product
  (cos and sin from runtime_support.exact_trig), rounded once to the working type; the butterfly
  constants are the decimal constants of the definition rounded to 64 bits, then to the type;
- a scale factor multiplied in at the end when it is not 1.

Every step is an IEEE operation on whole arrays in a fixed order, so the bits do not depend on
the machine, its SIMD level, BLAS or the numpy version.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import numpy as np

from runtime_support.exact_trig import exact_cos, exact_sin

Pair = tuple[np.ndarray, np.ndarray]

# --- constants: decimal, rounded to 64 bits (the definition's long double), then to the type ----

_PI = "3.141592653589793238462643383279502884197"


def _round_bits(q: Fraction, bits: int) -> Fraction:
    """q rounded to `bits` significant bits, ties to even (no constant here is subnormal)."""
    if q == 0:
        return q
    sign, q = (-1 if q < 0 else 1), abs(q)
    exponent = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** exponent > q:
        exponent -= 1
    scale = Fraction(2) ** (bits - 1 - exponent)
    scaled = q * scale
    whole, rest = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * rest
    if twice > scaled.denominator or (twice == scaled.denominator and whole & 1):
        whole += 1
    return sign * Fraction(whole) / scale


def _constant(decimal: str, dtype) -> np.generic:
    """A constant of the definition in `dtype`: the decimal rounded to the 64-bit significand
    of the long double it is written as, then to the type's significand."""
    bits = 24 if dtype == np.float32 else 53
    return dtype(float(_round_bits(_round_bits(Fraction(decimal), 64), bits)))


# (cos, sin) of 2 pi k / p, k = 1 .. (p - 1) / 2, for the fixed odd butterflies
_ROOTS = {
    3: [("-0.5", "0.8660254037844386467637231707529362")],
    5: [
        ("0.3090169943749474241022934171828191", "0.9510565162951535721164393333793821"),
        ("-0.8090169943749474241022934171828191", "0.5877852522924731291687059546390728"),
    ],
    7: [
        ("0.6234898018587335305250048840042398", "0.7818314824680298087084445266740578"),
        ("-0.2225209339563144042889025644967948", "0.9749279121818236070181316829939312"),
        ("-0.9009688679024191262361023195074451", "0.433883739117558120475768332848359"),
    ],
    11: [
        ("0.8412535328311811688618116489193677", "0.5406408174555975821076359543186917"),
        ("0.4154150130018864255292741492296232", "0.9096319953545183714117153830790285"),
        ("-0.1423148382732851404437926686163697", "0.9898214418809327323760920377767188"),
        ("-0.6548607339452850640569250724662936", "0.7557495743542582837740358439723444"),
        ("-0.9594929736144973898903680570663277", "0.2817325568414296977114179153466169"),
    ],
}
_HALF_SQRT2 = "0.707106781186547524400844362104849"


@lru_cache(maxsize=8)
def _roots(p: int, dtype, forward: bool) -> list[tuple[np.generic, np.generic]]:
    roots = [(_constant(c, dtype), _constant(s, dtype)) for c, s in _ROOTS[p]]
    return [(c, -s) for c, s in roots] if forward else roots


# --- complex steps on (real, imaginary) pairs ------------------------------------------------------


def _add(a: Pair, b: Pair) -> Pair:
    return a[0] + b[0], a[1] + b[1]


def _sub(a: Pair, b: Pair) -> Pair:
    return a[0] - b[0], a[1] - b[1]


def _times_twiddle(v: Pair, w: Pair, forward: bool) -> Pair:
    """v times w (backward) or times conj(w) (forward), each product and sum one IEEE operation
    in this order."""
    if forward:
        return v[0] * w[0] + v[1] * w[1], v[1] * w[0] - v[0] * w[1]
    return v[0] * w[0] - v[1] * w[1], v[0] * w[1] + v[1] * w[0]


def _rotate90(a: Pair, forward: bool) -> Pair:
    """a times -i (forward) or i (backward)."""
    return (a[1], -a[0]) if forward else (-a[1], a[0])


# --- butterflies: ip inputs (each (batch, l1, ido)) to ip outputs, before the twiddles -------------


def _butterfly2(x: list[Pair], forward: bool, dtype) -> list[Pair]:
    return [_add(x[0], x[1]), _sub(x[0], x[1])]


def _butterfly4(x: list[Pair], forward: bool, dtype) -> list[Pair]:
    t2, t1 = _add(x[0], x[2]), _sub(x[0], x[2])
    t3, t4 = _add(x[1], x[3]), _sub(x[1], x[3])
    t4 = _rotate90(t4, forward)
    return [_add(t2, t3), _add(t1, t4), _sub(t2, t3), _sub(t1, t4)]


def _butterfly_odd(x: list[Pair], forward: bool, dtype) -> list[Pair]:
    """The fixed butterflies for 3, 5, 7 and 11: sums and differences of the mirrored inputs,
    then per output pair (u, p - u) a real part t0 + sum_k c_(uk) s_k and an imaginary rotation
    sum_k s_(uk) d_k, added left to right."""
    p = len(x)
    half = (p - 1) // 2
    roots = _roots(p, dtype, forward)
    sums = [_add(x[k], x[p - k]) for k in range(1, half + 1)]
    diffs = [_sub(x[k], x[p - k]) for k in range(1, half + 1)]
    out: list[Pair] = [None] * p  # type: ignore[list-item]
    re0, im0 = x[0][0] + sums[0][0], x[0][1] + sums[0][1]
    for s in sums[1:]:
        re0 = re0 + s[0]
        im0 = im0 + s[1]
    out[0] = (re0, im0)
    for u in range(1, half + 1):
        cosines, sines = [], []
        for k in range(1, half + 1):
            r = u * k % p
            c, s = roots[min(r, p - r) - 1]
            cosines.append(c)
            sines.append(s if r <= half else -s)
        if p == 3:  # this butterfly writes its rotation as (-d.i s, d.r s)
            ca = _add(x[0], (sums[0][0] * cosines[0], sums[0][1] * cosines[0]))
            cb = ((-diffs[0][1]) * sines[0], diffs[0][0] * sines[0])
        else:
            ca_re, ca_im = x[0][0], x[0][1]
            for s, c in zip(sums, cosines):
                ca_re = ca_re + c * s[0]
                ca_im = ca_im + c * s[1]
            cb_im = sines[0] * diffs[0][0]
            cb_re = sines[0] * diffs[0][1]
            for d, s in zip(diffs[1:], sines[1:]):
                cb_im = cb_im + s * d[0]
                cb_re = cb_re + s * d[1]
            ca, cb = (ca_re, ca_im), (-cb_re, cb_im)
        out[u], out[p - u] = _add(ca, cb), _sub(ca, cb)
    return out


def _rotate45(a: Pair, forward: bool, h) -> Pair:
    if forward:
        return h * (a[0] + a[1]), h * (a[1] - a[0])
    return h * (a[0] - a[1]), h * (a[1] + a[0])


def _rotate135(a: Pair, forward: bool, h) -> Pair:
    if forward:
        return h * (a[1] - a[0]), h * (-a[0] - a[1])
    return h * (-a[0] - a[1]), h * (a[0] - a[1])


def _butterfly8(x: list[Pair], forward: bool, dtype) -> list[Pair]:
    h = _constant(_HALF_SQRT2, dtype)
    a1, a5 = _add(x[1], x[5]), _sub(x[1], x[5])
    a3, a7 = _add(x[3], x[7]), _sub(x[3], x[7])
    a7 = _rotate90(a7, forward)
    a1, a3 = _add(a1, a3), _sub(a1, a3)
    a3 = _rotate90(a3, forward)
    a5, a7 = _add(a5, a7), _sub(a5, a7)
    a5 = _rotate45(a5, forward, h)
    a7 = _rotate135(a7, forward, h)
    a0, a4 = _add(x[0], x[4]), _sub(x[0], x[4])
    a2, a6 = _add(x[2], x[6]), _sub(x[2], x[6])
    a0, a2 = _add(a0, a2), _sub(a0, a2)
    a6 = _rotate90(a6, forward)
    a4, a6 = _add(a4, a6), _sub(a4, a6)
    return [
        _add(a0, a1),
        _add(a4, a5),
        _add(a2, a3),
        _add(a6, a7),
        _sub(a0, a1),
        _sub(a4, a5),
        _sub(a2, a3),
        _sub(a6, a7),
    ]


def _butterfly_general(x: list[Pair], forward: bool, roots: Pair) -> list[Pair]:
    """The butterfly for primes above 11, with roots w_j = exp(±2 pi i j / p) (conjugated when
    forward): mirrored sums and differences, the zero output as their running sum, then per output
    pair (l, p - l) the terms j = 0, 1, 2 and the rest two at a time, then a last sum and
    difference."""
    p = len(x)
    half = (p + 1) // 2
    w_re = roots[0]
    w_im = -roots[1] if forward else roots[1]
    ch: list[Pair] = [x[0]] + [None] * (p - 1)  # type: ignore[list-item]
    for j in range(1, half):
        ch[j], ch[p - j] = _add(x[j], x[p - j]), _sub(x[j], x[p - j])
    total = ch[0]
    for j in range(1, half):
        total = _add(total, ch[j])
    cx: list[Pair] = [total] + [None] * (p - 1)  # type: ignore[list-item]
    for lo in range(1, half):
        lc = p - lo
        c1, c2 = w_re[lo], w_re[2 * lo]
        s1, s2 = w_im[lo], w_im[2 * lo]
        a_re = ch[0][0] + c1 * ch[1][0] + c2 * ch[2][0]
        a_im = ch[0][1] + c1 * ch[1][1] + c2 * ch[2][1]
        b_re = -s1 * ch[p - 1][1] - s2 * ch[p - 2][1]
        b_im = s1 * ch[p - 1][0] + s2 * ch[p - 2][0]
        k = 2 * lo
        j, jc = 3, p - 3
        while j < half - 1:
            k = (k + lo) % p
            c1, s1 = w_re[k], w_im[k]
            k = (k + lo) % p
            c2, s2 = w_re[k], w_im[k]
            a_re = a_re + (ch[j][0] * c1 + ch[j + 1][0] * c2)
            a_im = a_im + (ch[j][1] * c1 + ch[j + 1][1] * c2)
            b_re = b_re - (ch[jc][1] * s1 + ch[jc - 1][1] * s2)
            b_im = b_im + (ch[jc][0] * s1 + ch[jc - 1][0] * s2)
            j, jc = j + 2, jc - 2
        while j < half:
            k = (k + lo) % p
            c1, s1 = w_re[k], w_im[k]
            a_re = a_re + ch[j][0] * c1
            a_im = a_im + ch[j][1] * c1
            b_re = b_re - ch[jc][1] * s1
            b_im = b_im + ch[jc][0] * s1
            j, jc = j + 1, jc - 1
        cx[lo], cx[lc] = (a_re, a_im), (b_re, b_im)
    for j in range(1, half):
        a, b = cx[j], cx[p - j]
        cx[j], cx[p - j] = _add(a, b), _sub(a, b)
    return cx


_BUTTERFLIES = {
    2: _butterfly2,
    3: _butterfly_odd,
    4: _butterfly4,
    5: _butterfly_odd,
    7: _butterfly_odd,
    8: _butterfly8,
    11: _butterfly_odd,
}


# --- twiddles --------------------------------------------------------------------------------------


def _octant_values(x: np.ndarray, n: int, angle: float) -> tuple[np.ndarray, np.ndarray]:
    """(cos, sin) of 2 pi x / n for integers 0 <= x < n, from the octant of 8x: cos and sin of a
    multiple of angle = pi / (4 n) at most n, swapped and signed by the octant."""
    e = x * 8
    upper = e >= 4 * n
    e = np.where(upper, 8 * n - e, e)
    second = e >= 2 * n
    e = np.where(second, e - 2 * n, e)
    far = e >= n
    e = np.where(far, 2 * n - e, e)
    phi = e.astype(np.float64) * angle
    c, s = exact_cos(phi), exact_sin(phi)
    real = np.where(second, np.where(far, -c, -s), np.where(far, s, c))
    imag = np.where(second, np.where(far, s, c), np.where(far, c, s))
    return real, np.where(upper, -imag, imag)


@lru_cache(maxsize=32)
def _unit_roots(n: int, dtype) -> Pair:
    """exp(2 pi i k / n) for k < n in the working type: for k <= n/2 the product of two table
    entries (k mod 2**shift and k >> shift) in float64, rounded once; above n/2 the conjugate
    of the value at n - k."""
    angle = _round_bits(_round_bits(Fraction(_PI), 64) / 4 / n, 64)
    angle = float(_round_bits(angle, 53))
    count = (n + 2) // 2
    shift = 1
    while (1 << shift) * (1 << shift) < count:
        shift += 1
    mask = (1 << shift) - 1
    low = np.arange(mask + 1, dtype=np.int64)
    high = np.arange((count + mask) // (mask + 1), dtype=np.int64) * (mask + 1)
    v1 = _octant_values(low, n, angle)  # entry 0 is (1, 0)
    v2 = _octant_values(high, n, angle)
    k = np.arange(n, dtype=np.int64)
    mirrored = 2 * k > n
    k = np.where(mirrored, n - k, k)
    a_re, a_im = v1[0][k & mask], v1[1][k & mask]
    b_re, b_im = v2[0][k >> shift], v2[1][k >> shift]
    real = (a_re * b_re - a_im * b_im).astype(dtype)
    imag = (a_re * b_im + a_im * b_re).astype(dtype)
    return real, np.where(mirrored, -imag, imag)


# --- plans -----------------------------------------------------------------------------------------


def _factors(n: int) -> list[int]:
    factors = []
    while n % 8 == 0:
        factors.append(8)
        n //= 8
    while n % 4 == 0:
        factors.append(4)
        n //= 4
    if n % 2 == 0:
        n //= 2
        factors.append(2)
        factors[0], factors[-1] = factors[-1], factors[0]
    divisor = 3
    while divisor * divisor <= n:
        while n % divisor == 0:
            factors.append(divisor)
            n //= divisor
        divisor += 2
    if n > 1:
        factors.append(n)
    return factors


@lru_cache(maxsize=32)
def _plan(n: int, dtype) -> list[tuple[int, Pair, Pair | None]]:
    """Per pass: the factor ip, the twiddles w[j - 1, i - 1] = root(j l1 i) for the outputs
    j > 0 at i > 0 (shape (ip - 1, 1, ido - 1)), and for primes above 11 the roots
    root(j l1 ido), j < ip."""
    roots = _unit_roots(n, dtype)
    plan = []
    l1 = 1
    for ip in _factors(n):
        ido = n // (l1 * ip)
        index = np.arange(1, ip)[:, None, None] * l1 * np.arange(1, ido)
        twiddles = (roots[0][index], roots[1][index])
        general = None
        if ip not in _BUTTERFLIES:
            index = np.arange(ip) * l1 * ido
            general = (roots[0][index], roots[1][index])
        plan.append((ip, twiddles, general))
        l1 *= ip
    return plan


def _passes(re: np.ndarray, im: np.ndarray, forward: bool, scale) -> Pair:
    """The mixed-radix transform of (batch, n) arrays, times `scale` when it is not 1."""
    batch, n = re.shape
    dtype = re.dtype.type
    if n == 1:
        return re * scale, im * scale
    l1 = 1
    for ip, twiddles, general in _plan(n, dtype):
        ido = n // (l1 * ip)
        cc_re, cc_im = re.reshape(batch, l1, ip, ido), im.reshape(batch, l1, ip, ido)
        x = [(cc_re[:, :, j], cc_im[:, :, j]) for j in range(ip)]
        if general is None:
            out = _BUTTERFLIES[ip](x, forward, dtype)
        else:
            out = _butterfly_general(x, forward, general)
        re = np.empty((batch, ip, l1, ido), dtype=dtype)
        im = np.empty((batch, ip, l1, ido), dtype=dtype)
        for j, (o_re, o_im) in enumerate(out):
            re[:, j], im[:, j] = o_re, o_im
        if ido > 1:
            w = (twiddles[0], twiddles[1])
            v = (re[:, 1:, :, 1:], im[:, 1:, :, 1:])
            re[:, 1:, :, 1:], im[:, 1:, :, 1:] = _times_twiddle(v, w, forward)
        re, im = re.reshape(batch, n), im.reshape(batch, n)
        l1 *= ip
    if scale != 1:
        re, im = re * scale, im * scale
    return re, im


# --- Bluestein -------------------------------------------------------------------------------------


def _largest_prime_factor(n: int) -> int:
    result = 1
    while n % 2 == 0:
        result, n = 2, n // 2
    x = 3
    while x * x <= n:
        while n % x == 0:
            result, n = x, n // x
        x += 2
    return n if n > 1 else result


def _cost(n: int) -> float:
    """The definition's cost estimate of a mixed-radix transform of length n."""
    total, m = 0.0, n
    while m % 2 == 0:
        total += 2
        m //= 2
    x = 3
    while x * x <= m:
        while m % x == 0:
            total += x if x <= 5 else 1.1 * x
            m //= x
        x += 2
    if m > 1:
        total += m if m <= 5 else 1.1 * m
    return total * n


def _smooth_length(n: int) -> int:
    """The smallest product of 2, 3, 5, 7 and 11 at least n."""
    if n <= 12:
        return n
    best = 2 * n
    f11 = 1
    while f11 < best:
        f117 = f11
        while f117 < best:
            f1175 = f117
            while f1175 < best:
                x = f1175
                while x < n:
                    x *= 2
                while True:
                    if x < n:
                        x *= 3
                    elif x > n:
                        best = min(best, x)
                        if x & 1:
                            break
                        x >>= 1
                    else:
                        return n
                f1175 *= 5
            f117 *= 7
        f11 *= 11
    return best


def _uses_bluestein(n: int) -> bool:
    if n < 50:
        return False
    p = _largest_prime_factor(n)
    if p * p <= n:
        return False
    return 2 * _cost(_smooth_length(2 * n - 1)) * 1.5 < _cost(n)


@lru_cache(maxsize=16)
def _bluestein_plan(n: int, dtype) -> tuple[int, Pair, Pair]:
    """The padded length m, the chirp b_k = exp(i pi k**2 / n) and the transform of the
    chirp laid out for the circular convolution, scaled by 1/m (the working type's quotient)."""
    m = _smooth_length(2 * n - 1)
    roots = _unit_roots(2 * n, dtype)
    k = np.arange(n, dtype=np.int64)
    coefficient = (k * k) % (2 * n)
    chirp = (roots[0][coefficient], roots[1][coefficient])
    scale = dtype(1) / dtype(m)
    b_re, b_im = np.zeros((1, m), dtype=dtype), np.zeros((1, m), dtype=dtype)
    b_re[0, :n], b_im[0, :n] = chirp[0] * scale, chirp[1] * scale
    b_re[0, m - n + 1 :], b_im[0, m - n + 1 :] = b_re[0, n - 1 : 0 : -1], b_im[0, n - 1 : 0 : -1]
    f_re, f_im = _passes(b_re, b_im, True, 1)
    fold = np.minimum(np.arange(m), m - np.arange(m))
    return m, chirp, (f_re[0, fold], f_im[0, fold])


def _bluestein(re: np.ndarray, im: np.ndarray, forward: bool, scale) -> Pair:
    n = re.shape[1]
    dtype = re.dtype.type
    m, chirp, spectrum = _bluestein_plan(n, dtype)
    a = _times_twiddle((re, im), chirp, forward)
    a_re = np.empty((re.shape[0], m), dtype=dtype)
    a_im = np.empty((re.shape[0], m), dtype=dtype)
    a_re[:, :n], a_im[:, :n] = a
    a_re[:, n:] = a[0][:, :1] * dtype(0)
    a_im[:, n:] = a[1][:, :1] * dtype(0)
    a_re, a_im = _passes(a_re, a_im, True, 1)
    a_re, a_im = _times_twiddle((a_re, a_im), spectrum, not forward)
    a_re, a_im = _passes(a_re, a_im, False, 1)
    out = _times_twiddle((a_re[:, :n], a_im[:, :n]), chirp, forward)
    return out[0] * scale, out[1] * scale


def transform(re: np.ndarray, im: np.ndarray, forward: bool, scale=1) -> Pair:
    """The complex DFT of the last axis of real and imaginary arrays of one float type (float32
    or float64), exp(-2 pi i j k / n) when forward, exp(+2 pi i j k / n) otherwise, times
    `scale` (a value of that type)."""
    shape = re.shape
    n = shape[-1]
    dtype = re.dtype.type
    re = np.ascontiguousarray(re).reshape(-1, n)
    im = np.ascontiguousarray(im, dtype=dtype).reshape(-1, n)
    scale = dtype(scale)
    run = _bluestein if _uses_bluestein(n) else _passes
    re, im = run(re, im, forward, scale)
    return re.reshape(shape), im.reshape(shape)
