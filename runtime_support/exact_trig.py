"""The library's own trigonometric functions and their inverses: the same bits on every machine.

sin, cos, tan, asin, acos and atan with exactly the means of runtime_support/exact_math.py (whose
helpers they share): IEEE-754 float64 `+ - * /` and `sqrt`, each a separate numpy call and so one
correctly rounded operation, in the order written here; exact operations (comparisons, abs,
negation, min/max, rint, selections, multiplication by a power of two, exact conversions);
integer arithmetic in uint64 on the bit patterns; lookups in tables of constants. Every constant is
a literal derived by tools/derive_exact_coefficients.py (`--module exact_trig`; `--check` verifies
them) or, for the Payne-Hanek table, cut at import from the literal bits of 2/pi by Python's exact
integer arithmetic. Nothing here calls libm or numpy's transcendental functions.

sin, cos and tan reduce x = k*pi/2 + r, |r| <= pi/4, with r as a double-length value r_hi + r_lo:
by Cody-Waite below 2**20 (pi/2 in four parts, three of them of 33 bits so that k times each is
exact) and by Payne-Hanek above (the product of the integer significand with a 192-bit window of
2/pi's bits, in 24-bit integer chunks), so huge arguments are reduced as accurately as small ones.
atan takes atan(y) = atan(j/64) + atan(u) from a table; asin and acos are polynomials in x**2 for
|x| <= 1/2 and go through s = sqrt((1 - |x|)/2) above. docs/exact-transcendentals.md gives the
method, the constants and the measured accuracy.

float16, bfloat16 and float32 inputs are computed in float64 with errors near 2**-52 and rounded
once to their type (bfloat16 by way of a round-to-odd float32, as in exact_math); float64 inputs
carry the reduced argument, the polynomials' leading terms and tan's quotient as double-length
values and stay within an ulp. Arrays go through exact_math's blocks of 8192 elements; each
element's result depends on that element alone.
"""

from __future__ import annotations

import numpy as np

from runtime_support.exact_math import (
    _SHIFT,
    _elementwise,
    _fast_two_sum,
    _hex,
    _horner,
    _two_product,
)

__all__ = ["exact_acos", "exact_asin", "exact_atan", "exact_cos", "exact_sin", "exact_tan"]

# --- constants: the output of `python -m tools.derive_exact_coefficients --module exact_trig` -----
# CONSTANTS-BEGIN
_PIO2_PARTS = _hex(
    "0x1.921fb54400000p+0",
    "0x1.0b4611a600000p-34",
    "0x1.3198a2e000000p-69",
    "0x1.b839a252049c1p-104",
)
_INV_PIO2 = float.fromhex("0x1.45f306dc9c883p-1")
_PIO2 = _hex(
    "0x1.921fb54442d18p+0",
    "0x1.1a62633145c07p-54",
)
_PI = _hex(
    "0x1.921fb54442d18p+1",
    "0x1.1a62633145c07p-53",
)
_TWO_OVER_PI = int(
    "A2F9836E4E441529FC2757D1F534DDC0DB6295993C439041FE5163ABDEBBC561"
    "B7246E3A424DD2E006492EEA09D1921CFE1DEB1CB129A73EE88235F52EBB4484"
    "E99C7026B45F7E413991D639835339F49C845F8BBDF9283B1FF897FFDE05980F"
    "EF2F118B5A0A6D1F6D367ECF27CB09B74F463F669E5FEA2D7527BAC7EBE5F17B"
    "3D0739F78A5292EA6BFB5FB11F8D5D0856033046FC7B6BABF0CFBC209AF4361D",
    16,
)
_SIN_POLY = _hex(
    "-0x1.5555555555555p-3",
    "0x1.1111111111110p-7",
    "-0x1.a01a01a019939p-13",
    "0x1.71de3a5460ad2p-19",
    "-0x1.ae645412e9e60p-26",
    "0x1.61217f25c00f5p-33",
    "-0x1.ab17e22c086bcp-41",
)
_COS_POLY = _hex(
    "0x1.5555555555555p-5",
    "-0x1.6c16c16c16967p-10",
    "0x1.a01a019f4ec8dp-16",
    "-0x1.27e4fa17f61c1p-22",
    "0x1.1eeb69032e401p-29",
    "-0x1.907db4333add3p-37",
)
_ATAN_POLY = _hex(
    "-0x1.5555555555547p-2",
    "0x1.9999999199c45p-3",
    "-0x1.248cf3e3fe23ap-3",
)
_ASIN_POLY = _hex(
    "0x1.5555555555556p-3",
    "0x1.3333333332e3fp-4",
    "0x1.6db6db6e3eea2p-5",
    "0x1.f1c71c161843dp-6",
    "0x1.6e8bb2edf6622p-6",
    "0x1.1c4d1b9eb874fp-6",
    "0x1.c9d1fcd4a859fp-7",
    "0x1.780a2a85fe0bcp-7",
    "0x1.52f4b3d8af3a4p-7",
    "0x1.5fd0687ef59f2p-8",
    "0x1.20fb317b74aafp-6",
    "-0x1.f28668ccac7aep-7",
    "0x1.db207ab6df6bcp-6",
)
_ATAN_TABLE = _hex(
    "0x0.0p+0",
    "0x0.0p+0",
    "0x1.fff555bbb729bp-7",
    "-0x1.220c39d4dff50p-61",
    "0x1.ffd55bba97625p-6",
    "-0x1.5ec431444912cp-60",
    "0x1.7fb818430da2ap-5",
    "-0x1.86ef8f794f105p-63",
    "0x1.ff55bb72cfdeap-5",
    "-0x1.c934d86d23f1dp-60",
    "0x1.3f59f0e7c559dp-4",
    "0x1.ac4ce285df847p-58",
    "0x1.7ee182602f10fp-4",
    "-0x1.cfb654c0c3d98p-58",
    "0x1.be39ebe6f07c3p-4",
    "0x1.f7b8f29a05987p-58",
    "0x1.fd5ba9aac2f6ep-4",
    "-0x1.cd37686760c17p-59",
    "0x1.1e1fafb043727p-3",
    "-0x1.b485914dacf8cp-59",
    "0x1.3d6eee8c6626cp-3",
    "0x1.61a3b0ce9281bp-57",
    "0x1.5c9811e3ec26ap-3",
    "-0x1.054ab2c010f3dp-58",
    "0x1.7b97b4bce5b02p-3",
    "0x1.347b0b4f881cap-58",
    "0x1.9a6a8e96c8626p-3",
    "0x1.cf601e7b4348ep-59",
    "0x1.b90d7529260a2p-3",
    "0x1.17b10d2e0e5abp-61",
    "0x1.d77d5df205736p-3",
    "0x1.c648d1534597ep-57",
    "0x1.f5b75f92c80ddp-3",
    "0x1.8ab6e3cf7afbdp-57",
    "0x1.09dc597d86362p-2",
    "0x1.62e47390cb865p-56",
    "0x1.18bf5a30bf178p-2",
    "0x1.30ca4748b1bf9p-57",
    "0x1.278372057ef46p-2",
    "-0x1.077cdd36dfc81p-56",
    "0x1.362773707ebccp-2",
    "-0x1.963a544b672d8p-57",
    "0x1.44aa436c2af0ap-2",
    "-0x1.5d5e43c55b3bap-56",
    "0x1.530ad9951cd4ap-2",
    "-0x1.2566480884082p-57",
    "0x1.614840309cfe2p-2",
    "-0x1.a725715711f00p-56",
    "0x1.6f61941e4def1p-2",
    "-0x1.c63aae6f6e918p-56",
    "0x1.7d5604b63b3f7p-2",
    "0x1.69c885c2b249ap-56",
    "0x1.8b24d394a1b25p-2",
    "0x1.b6d0ba3748fa8p-56",
    "0x1.98cd5454d6b18p-2",
    "0x1.9e6c988fd0a77p-56",
    "0x1.a64eec3cc23fdp-2",
    "-0x1.24dec1b50b7ffp-56",
    "0x1.b3a911da65c6cp-2",
    "0x1.ae187b1ca5040p-56",
    "0x1.c0db4c94ec9f0p-2",
    "-0x1.cc1ce70934c34p-56",
    "0x1.cde53432c1351p-2",
    "-0x1.a2cfa4418f1adp-56",
    "0x1.dac670561bb4fp-2",
    "0x1.a2b7f222f65e2p-56",
    "0x1.e77eb7f175a34p-2",
    "0x1.0e53dc1bf3435p-56",
    "0x1.f40dd0b541418p-2",
    "-0x1.a3992dc382a23p-57",
    "0x1.0039c73c1a40cp-1",
    "-0x1.b32c949c9d593p-55",
    "0x1.0657e94db30d0p-1",
    "-0x1.d5b495f6349e6p-56",
    "0x1.0c6145b5b43dap-1",
    "0x1.974fa13b5404fp-58",
    "0x1.1255d9bfbd2a9p-1",
    "-0x1.2bdaee1c0ee35p-58",
    "0x1.1835a88be7c13p-1",
    "0x1.c621cec00c301p-55",
    "0x1.1e00babdefeb4p-1",
    "-0x1.928df287a668fp-58",
    "0x1.23b71e2cc9e6ap-1",
    "0x1.c421c9f38224ep-57",
    "0x1.2958e59308e31p-1",
    "-0x1.09e73b0c6c087p-56",
    "0x1.2ee628406cbcap-1",
    "0x1.c5d5e9ff0cf8dp-55",
    "0x1.345f01cce37bbp-1",
    "0x1.1021137c71102p-55",
    "0x1.39c391cd4171ap-1",
    "-0x1.2304331d8bf46p-55",
    "0x1.3f13fb89e96f4p-1",
    "0x1.ecf8b492644f0p-56",
    "0x1.445065b795b56p-1",
    "-0x1.f76d0163f79c8p-56",
    "0x1.4978fa3269ee1p-1",
    "0x1.2419a87f2a458p-56",
    "0x1.4e8de5bb6ec04p-1",
    "0x1.4a33dbeb3796cp-55",
    "0x1.538f57b89061fp-1",
    "-0x1.1bb74abda520cp-55",
    "0x1.587d81f732fbbp-1",
    "-0x1.5e5c9d8c5a950p-56",
    "0x1.5d58987169b18p-1",
    "0x1.0028e4bc5e7cap-57",
    "0x1.6220d115d7b8ep-1",
    "-0x1.2b785350ee8c1p-57",
    "0x1.66d663923e087p-1",
    "-0x1.6ea6febe8bbbap-56",
    "0x1.6b798920b3d99p-1",
    "-0x1.a80386188c50ep-55",
    "0x1.700a7c5784634p-1",
    "-0x1.8c34d25aadef6p-56",
    "0x1.748978fba8e0fp-1",
    "0x1.7b2a6165884a1p-59",
    "0x1.78f6bbd5d315ep-1",
    "0x1.406a089803740p-55",
    "0x1.7d528289fa093p-1",
    "0x1.560821e2f3aa9p-55",
    "0x1.819d0b7158a4dp-1",
    "-0x1.bf76229d3b917p-56",
    "0x1.85d69576cc2c5p-1",
    "0x1.6b66e7fc8b8c3p-57",
    "0x1.89ff5ff57f1f8p-1",
    "-0x1.55b9a5e177a1bp-55",
    "0x1.8e17aa99cc05ep-1",
    "-0x1.ec182ab042f61p-56",
    "0x1.921fb54442d18p-1",
    "0x1.1a62633145c07p-55",
)
_ATAN_COMPLEMENT = _hex(
    "0x1.921fb54442d18p+0",
    "0x1.1a62633145c07p-54",
    "0x1.8e1fca98cb633p+0",
    "0x1.1299ee93be016p-56",
    "0x1.8a205fd558740p+0",
    "-0x1.30228c09a91b4p-54",
    "0x1.8621f4822a647p+0",
    "-0x1.26d12837ecc05p-57",
    "0x1.82250768ac529p+0",
    "-0x1.e78c96d05afcbp-58",
    "0x1.7e2a1635c67bep+0",
    "0x1.bf9d9508e7c82p-54",
    "0x1.7a319d1e3fe07p+0",
    "0x1.775dc87d51fe0p-54",
    "0x1.763c1685d3c9cp+0",
    "0x1.d736a03d2b373p-57",
    "0x1.7249faa996a21p+0",
    "0x1.a8cc1e7480c68p-54",
    "0x1.6e5bbf4e3a633p+0",
    "0x1.a8068fbbb3283p-54",
    "0x1.6a71d772b60cbp+0",
    "-0x1.11d212e88c8fdp-54",
    "0x1.668cb307c54cbp+0",
    "0x1.55b872ea367d6p-57",
    "0x1.62acbeaca61b8p+0",
    "0x1.c6ac9f134fa91p-60",
    "0x1.5ed2637169c54p+0",
    "-0x1.f4189dc29459ep-54",
    "0x1.5afe069f1e104p+0",
    "0x1.8330116e9a3b9p-58",
    "0x1.5730098602231p+0",
    "0x1.e1994906dd0d7p-54",
    "0x1.5368c951e9cfdp+0",
    "-0x1.96f47948a99f1p-54",
    "0x1.4fa89ee4e1440p+0",
    "-0x1.3e56b9b2ed212p-54",
    "0x1.4befdeb8130bap+0",
    "0x1.e89234905f110p-55",
    "0x1.483ed8c2e3147p+0",
    "-0x1.477ccb02049b2p-55",
    "0x1.4495d86823225p+0",
    "0x1.4d29adbab2a62p-54",
    "0x1.40f5246938156p+0",
    "-0x1.1c8c17bac6e15p-55",
    "0x1.3d5cfedefb9c6p+0",
    "-0x1.81e1a79b537d2p-55",
    "0x1.39cda5381b920p+0",
    "-0x1.ef5101e3d70e5p-56",
    "0x1.3647503caf55cp+0",
    "0x1.17e21d9a42c9ap-55",
    "0x1.32ca3416b401ap+0",
    "0x1.bff041c0992e0p-54",
    "0x1.2f56805f1a64fp+0",
    "-0x1.4d472d7231f8dp-56",
    "0x1.2bec602f0d252p+0",
    "0x1.658e7a1aa32d2p-55",
    "0x1.288bfa3512419p+0",
    "0x1.8e684e7a2281bp-56",
    "0x1.253570cda95fdp+0",
    "0x1.5db888d438feep-55",
    "0x1.21e8e21f07a9cp+0",
    "0x1.8d699cf392f14p-54",
    "0x1.1ea6683792844p+0",
    "0x1.062c9883530e4p-55",
    "0x1.1b6e192ebbe44p+0",
    "0x1.b1b466a88828ep-54",
    "0x1.18400747e568bp+0",
    "0x1.ad9ad85491df3p-55",
    "0x1.151c4116f2812p+0",
    "0x1.4ed588e9b614bp-54",
    "0x1.1202d1a635b12p+0",
    "0x1.f3f8ad7f946d1p-54",
    "0x1.0ef3c09d694b0p+0",
    "0x1.8fcf88aed2e80p-54",
    "0x1.0bef126968b2bp+0",
    "0x1.00ed691d90802p-54",
    "0x1.08f4c864643c4p+0",
    "-0x1.a5bfdbd9f2a2cp-55",
    "0x1.0604e0fe4ef0fp+0",
    "-0x1.c8ae842ec057ap-54",
    "0x1.031f57e54adbep+0",
    "0x1.338b4259c0270p-54",
    "0x1.0044262dddde3p+0",
    "0x1.c3bc53e5aaf7ap-55",
    "0x1.fae684f57cc00p-1",
    "-0x1.46479c173e7afp-55",
    "0x1.f559424818e66p-1",
    "0x1.bbbb718dfa201p-57",
    "0x1.efe068bba2275p-1",
    "0x1.24a3b2e61a70bp-55",
    "0x1.ea7bd8bb44317p-1",
    "-0x1.506e0cffd1159p-56",
    "0x1.e52b6efe9c33cp-1",
    "0x1.3e486c1959596p-55",
    "0x1.dfef04d0efedbp-1",
    "-0x1.9f0971d6f161cp-56",
    "0x1.dac670561bb4fp-1",
    "0x1.a2b7f222f65e2p-55",
    "0x1.d5b184cd16e2cp-1",
    "0x1.d521d4eea7d44p-56",
    "0x1.d0b012cff5412p-1",
    "-0x1.5f07ddbf9ebccp-56",
    "0x1.cbc1e89152a76p-1",
    "-0x1.1c0cead74734ap-55",
    "0x1.c6e6d2171bf18p-1",
    "0x1.f4ba8d3373e1bp-55",
    "0x1.c21e9972adea3p-1",
    "-0x1.805d24c938dc2p-55",
    "0x1.bd6906f6479aap-1",
    "-0x1.13e7ba3e2ea15p-55",
    "0x1.b8c5e167d1c98p-1",
    "-0x1.19bd9c2741720p-58",
    "0x1.b434ee31013fdp-1",
    "-0x1.0520d0701d877p-55",
    "0x1.afb5f18cdcc22p-1",
    "-0x1.e2eddfb3cd03cp-55",
    "0x1.ab48aeb2b28d2p-1",
    "0x1.e8b57b951019bp-56",
    "0x1.a6ece7fe8b99dp-1",
    "0x1.bd7948ff2fac9p-56",
    "0x1.a2a25f172cfe4p-1",
    "-0x1.d700509dad6cep-56",
    "0x1.9e68d511b976bp-1",
    "0x1.d9eb0c63689ddp-55",
    "0x1.9a400a9306839p-1",
    "-0x1.d6064eeff375dp-57",
    "0x1.9627bfeeb99d3p-1",
    "-0x1.aa5e488aa6084p-56",
    "0x1.921fb54442d18p-1",
    "0x1.1a62633145c07p-55",
)
# CONSTANTS-END

_U = np.uint64
_PIO2_HI, _PIO2_LO = (float(v) for v in _PIO2)
_PI_HI, _PI_LO = (float(v) for v in _PI)
_P1, _P2, _P3, _P4 = (float(v) for v in _PIO2_PARTS)
_TWO_OVER_PI_SCALE = 1280  # _TWO_OVER_PI is floor(2/pi * 2**1280)
_ATAN_STEPS = 64.0  # table points j/64, j = 0..64
# atan(j/64) for |x| <= 1, then pi/2 - atan(j/64) for |x| > 1 (atan(x) = pi/2 - atan(1/x)):
# heads and tails, looked up at j + 65 * (|x| > 1).
_ATAN_HEADS = np.concatenate([_ATAN_TABLE[0::2], _ATAN_COMPLEMENT[0::2]])
_ATAN_TAILS = np.concatenate([_ATAN_TABLE[1::2], _ATAN_COMPLEMENT[1::2]])
_ATAN_ROWS = _ATAN_TABLE.size // 2
_ATAN_LARGE = 2.0**60  # beyond, atan(|x|) = pi/2 - 1/|x| rounds to pi/2's double in every type

_CODY_WAITE_LIMIT = 2.0**20  # below: k < 2**20, so k times each 33-bit part of pi/2 is exact
_CHUNK = 24  # bits per integer chunk of the Payne-Hanek product
_CHUNK_MASK = _U((1 << _CHUNK) - 1)
_WINDOW_CHUNKS = 8  # the window of 2/pi: 8 chunks, 192 bits
_POINT = 190  # binary point of the product: bits 190 and 191 are k mod 4, below them r / (pi/2)
_FRACTION_MASK = _U((1 << (_POINT - 1 - 7 * _CHUNK)) - 1)  # the top chunk's bits below 1/2
_MANTISSA_MASK = _U((1 << 52) - 1)
_IMPLICIT_BIT = _U(1 << 52)
_FIRST_FAR_EXPONENT = 1023 + 20  # the biased exponent of 2**20


def _payne_hanek_windows() -> np.ndarray:
    """The windows of 2/pi, one column per biased exponent E of float64 from that of 2**20 to the
    largest finite one: with x = m * 2**e (m the 53-bit integer significand, e = E - 1075),
    W_E = floor(2**(e + 190) * 2/pi) mod 2**192, so that x * 2/pi = m * W_E / 2**190 modulo 4
    within m * 2**-190 < 2**-137 (the bits of 2/pi above the window only add multiples of 4 and
    those below it less than that). Rows: W_E's eight 24-bit chunks, the most significant first.
    """
    columns = []
    for biased in range(_FIRST_FAR_EXPONENT, 2047):
        shift = _TWO_OVER_PI_SCALE - (biased - 1075 + _POINT)
        window = (_TWO_OVER_PI >> shift) & ((1 << (_CHUNK * _WINDOW_CHUNKS)) - 1)
        columns.append(
            [
                (window >> (_CHUNK * (_WINDOW_CHUNKS - 1 - i))) & ((1 << _CHUNK) - 1)
                for i in range(8)
            ]
        )
    return np.array(columns, dtype=np.uint64).T.copy()


_WINDOWS = _payne_hanek_windows()


# --- double-length helpers ------------------------------------------------------------------------


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's exact sum: a + b = s + e, s = a + b rounded, for any magnitudes."""
    s = a + b
    back = s - a
    e = a - (s - back)
    e += b - back
    return s, e


_SIGNS = np.array([1.0, -1.0])


def _signs(negative: np.ndarray) -> np.ndarray:
    """-1.0 where `negative` (a boolean array), else 1.0: multiplying by it negates exactly. A
    lookup, since np.where and a masked np.negative mispredict their branches on mixed masks and
    cost several times as much for the same bits."""
    return np.take(_SIGNS, negative.view(np.int8))


def _divide(
    n_hi: np.ndarray, n_lo: np.ndarray, d_hi: np.ndarray, d_lo: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(n_hi + n_lo) / (d_hi + d_lo) as q + q_lo: q = n_hi / d_hi rounded, and the remainder
    n - q*d (q*d_hi by Dekker's exact product; n_hi - its head is exact, the two being within an
    ulp) divided by d_hi."""
    q = n_hi / d_hi
    p, e = _two_product(q, d_hi)
    rest = n_hi - p
    rest -= e
    rest += n_lo - q * d_lo
    rest /= d_hi
    return q, rest


# --- argument reduction ---------------------------------------------------------------------------


def _cody_waite(a: np.ndarray, wide: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(q, r_hi, r_lo): a = k*pi/2 + r_hi + r_lo, q = k mod 4, for float64 0 <= a < 2**20.

    k = rint(a * 2/pi) by the 1.5*2**52 shift (k in the low mantissa bits); |r| <= pi/4 plus
    2**-32. pi/2 = P1 + P2 + P3 + P4 within 2**-159, P1..P3 of 33 bits so that kd*P1..kd*P3 are
    exact; a - kd*P1 is exact (the two lie within a factor of two, or k = 0), the next two
    subtractions are exact two-sums whose errors, with kd*P4, make up r_lo (then renormalised).
    Narrow (a float32 or narrower result): ((a - kd*P1) - kd*P2) - kd*P3 in plain float64, within
    2**-52 of r relatively even where r is tiny (the subtractions that cancel are exact).
    """
    kd = a * _INV_PIO2
    kd += _SHIFT
    q = kd.view(np.uint64) & _U(3)
    kd -= _SHIFT
    r = kd * _P1
    np.subtract(a, r, out=r)
    if not wide:
        r -= kd * _P2
        r -= kd * _P3
        return q, r, None
    hi, lo = _two_sum(r, -(kd * _P2))
    hi, err = _two_sum(hi, -(kd * _P3))
    lo += err
    lo -= kd * _P4
    hi, lo = _fast_two_sum(hi, lo)
    return q, hi, lo


def _payne_hanek(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, r_hi, r_lo): a = k*pi/2 + r_hi + r_lo, q = k mod 4, for finite float64 a >= 2**20.

    1. m (53 bits) and the window W of a's exponent (see _payne_hanek_windows): the product m*W in
       base 2**24, column c (weight 2**(24c), c = 0..7) = W[7-c]*m_lo + W[8-c]*m_hi with
       m = m_hi*2**24 + m_lo (each column below 2**54), then the carries from column 0 up; what
       passes column 7 is a multiple of 4 and dropped.
    2. Bits 190 and 191 are k mod 4, the 190 below them f = x*2/pi - k in [0, 1); where
       f >= 1/2 (bit 189), k + 1 and f - 1 = -(2**190 - F)/2**190, taken as the complement of the
       chunks (the missing 2**-190 is below the window's own error of 2**-137).
    3. |f| < 1/2 in three exact float64 pieces (chunks 7 and 6; 5 and 4; 3 and 2, each pair 48 bits
       or fewer), summed into f_hi + f_lo by exact sums (the first piece is 0 or larger than the
       others), then r = f * pi/2 by Dekker's product with pi/2's head and tail.
    x*2/pi is off by at most 2**-137 + 2**-142 in units of pi/2, where the smallest |f| of any
    float64 is about 2**-61: r keeps 75 bits or more.
    """
    bits = a.view(np.uint64)
    column = (bits >> _U(52)).view(np.int64) - _FIRST_FAR_EXPONENT
    m = bits & _MANTISSA_MASK
    m |= _IMPLICIT_BIT
    m_lo = m & _CHUNK_MASK
    m_hi = m >> _U(_CHUNK)
    window = [np.take(row, column) for row in _WINDOWS]  # most significant chunk first
    chunks = []
    carry = None
    for c in range(8):
        total = window[7 - c] * m_lo
        if c:
            total += window[8 - c] * m_hi
            total += carry
        carry = total >> _U(_CHUNK)
        total &= _CHUNK_MASK
        chunks.append(total)
    top = chunks[7]
    q = top >> _U(_POINT - 7 * _CHUNK)  # bits 22 and 23 of the top chunk
    upper = (top >> _U(_POINT - 1 - 7 * _CHUNK)) & _U(1)  # f >= 1/2
    q += upper
    q &= _U(3)
    flip = upper * _CHUNK_MASK  # all ones where the chunks are complemented
    pieces = []
    for high, low in ((7, 6), (5, 4), (3, 2)):
        head = chunks[high] ^ flip
        if high == 7:
            head &= _FRACTION_MASK
        scale = 2.0 ** (_CHUNK * high - _POINT)
        piece = head.astype(np.float64) * scale
        piece += (chunks[low] ^ flip).astype(np.float64) * (scale * 2.0**-_CHUNK)
        pieces.append(piece)
    f_hi, f_lo = _fast_two_sum(pieces[0], pieces[1])
    f_lo += pieces[2]
    f_hi, f_lo = _fast_two_sum(f_hi, f_lo)
    r_hi, r_lo = _two_product(f_hi, _PIO2_HI)
    r_lo += f_hi * _PIO2_LO + f_lo * _PIO2_HI
    r_hi, r_lo = _fast_two_sum(r_hi, r_lo)
    negative = upper.astype(bool)
    sign = _signs(negative)
    r_hi *= sign
    r_lo *= sign
    return q, r_hi, r_lo


def _reduce(a: np.ndarray, wide: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(q, r_hi, r_lo) for float64 a >= 0: Cody-Waite for the whole block, Payne-Hanek for the
    elements from 2**20 on (finite). Narrow: r = r_hi + r_lo rounded, r_lo None. Infinities and
    NaN give garbage, which the callers replace by NaN."""
    q, r_hi, r_lo = _cody_waite(a, wide)
    far = (a >= _CODY_WAITE_LIMIT) & (a < np.inf)
    if far.any():
        q_far, hi, lo = _payne_hanek(a[far])
        q[far] = q_far
        if wide:
            r_hi[far] = hi
            r_lo[far] = lo
        else:
            r_hi[far] = hi + lo
    return q, r_hi, r_lo


# --- sin, cos, tan of the reduced argument --------------------------------------------------------


def _sin_cos(
    r_hi: np.ndarray, r_lo: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray | None]:
    """(sin_hi, sin_lo, cos_hi, cos_lo) of r = r_hi + r_lo, |r| <= pi/4 (1 + 2**-20); the lows
    are None for a narrow result (r_lo None).

    With z = r_hi**2 rounded and w = 1 - z/2:
    sin r = r_hi + (r_hi*z*S(z) + r_lo*w)    (sin(h + l) = sin h + l cos h, to 2**-106)
    cos r = w + (z*z*C(z) + ((1 - w) - z/2 - z_lo/2 - r_hi*r_lo))
    where z_lo = r_hi**2 - z (Dekker's product); (1 - w) - z/2 is w's rounding error, exact. The
    first terms are at least 5 times the rest, so the exact sums that gather them (Fast2Sum) leave
    errors near 2**-55 of the result. Narrow: r_hi + r_hi*z*S(z) and w + z*z*C(z).
    """
    z = r_hi * r_hi
    half = z * 0.5
    w = 1.0 - half
    s = _horner(_SIN_POLY, z)
    s *= z
    s *= r_hi
    c = _horner(_COS_POLY, z)
    c *= z * z
    if r_lo is None:
        s += r_hi
        c += w
        return s, None, c, None
    s += r_lo * w
    s_hi, s_lo = _fast_two_sum(r_hi, s)
    _, z_lo = _two_product(r_hi, r_hi)
    tail = 1.0 - w
    tail -= half
    tail -= z_lo * 0.5
    tail -= r_hi * r_lo
    c += tail
    c_hi, c_lo = _fast_two_sum(w, c)
    return s_hi, s_lo, c_hi, c_lo


def _trig_parts(x: np.ndarray, wide: bool):
    """q, sin and cos of the reduced |x| (see _reduce, _sin_cos), and where the result is NaN."""
    a = np.abs(x)
    q, r_hi, r_lo = _reduce(a, wide)
    return (q, *_sin_cos(r_hi, r_lo), ~(a < np.inf))


def _finish(y: np.ndarray, x: np.ndarray, nan: np.ndarray, odd: bool) -> np.ndarray:
    """NaN for infinite and NaN x; for an odd function the sign of x (-0 included)."""
    if odd:
        y *= np.copysign(1.0, x)
    y[nan] = np.nan
    return y


def _select(
    choose: np.ndarray, negate: np.ndarray | None, first, second
) -> tuple[np.ndarray, np.ndarray | None]:
    """second where `choose`, else first (pairs hi, lo), negated where `negate` (None: nowhere)."""
    hi = np.where(choose, second[0], first[0])
    lo = None if first[1] is None else np.where(choose, second[1], first[1])
    if negate is not None:
        sign = _signs(negate)
        hi *= sign
        if lo is not None:
            lo *= sign
    return hi, lo


def _sin_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """sin|x| = sin r, cos r, -sin r, -cos r for k mod 4 = 0, 1, 2, 3; x's sign."""
    q, s_hi, s_lo, c_hi, c_lo, nan = _trig_parts(x, wide)
    hi, lo = _select((q & _U(1)) != 0, (q & _U(2)) != 0, (s_hi, s_lo), (c_hi, c_lo))
    if lo is not None:
        hi += lo
    return _finish(hi, x, nan, odd=True)


def _cos_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """cos|x| = cos r, -sin r, -cos r, sin r for k mod 4 = 0, 1, 2, 3."""
    q, s_hi, s_lo, c_hi, c_lo, nan = _trig_parts(x, wide)
    hi, lo = _select((q & _U(1)) != 0, ((q + _U(1)) & _U(2)) != 0, (c_hi, c_lo), (s_hi, s_lo))
    if lo is not None:
        hi += lo
    return _finish(hi, x, nan, odd=False)


def _tan_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """tan|x| = sin r / cos r for even k, -cos r / sin r for odd k: one division (narrow) or the
    double-length quotient of the double-length sine and cosine (see _divide), rounded once; x's
    sign. The quotient never divides by zero: r = 0 only for x = 0, where k is even."""
    q, s_hi, s_lo, c_hi, c_lo, nan = _trig_parts(x, wide)
    odd = (q & _U(1)) != 0
    n_hi, n_lo = _select(odd, odd, (s_hi, s_lo), (c_hi, c_lo))
    d_hi, d_lo = _select(odd, None, (c_hi, c_lo), (s_hi, s_lo))
    if n_lo is None:
        return _finish(n_hi / d_hi, x, nan, odd=True)
    y, y_lo = _divide(n_hi, n_lo, d_hi, d_lo)
    y += y_lo
    return _finish(y, x, nan, odd=True)


# --- the inverse functions ------------------------------------------------------------------------


def _atan_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """atan x with y = |x| (or 1/|x| where |x| > 1, for pi/2 - atan(1/|x|)) and j = rint(64 y):
    atan(y) = atan(j/64) + atan(u), u = (y - j/64) / (1 + y j/64), |u| <= 1/128, atan(u) =
    u + u*w*P(w), w = u**2; the table holds atan(j/64) and pi/2 - atan(j/64) as head + tail.

    Result T_head + (T_tail + atan(u)) with atan(u)'s sign flipped for |x| > 1; y - j/64 is exact.
    Wide: y = 1/|x| carries its remainder (1 - y|x|)/|x| (Dekker's product), 1 + y j/64 is a
    double-length sum, u the double-length quotient of the two (see _divide), and T_head + u is an
    exact sum (|T_head| > |u| or T_head = 0), so the only errors left are near 2**-60 relative.
    |x| is clamped to 2**60 (atan rounds to pi/2 beyond, infinities included); NaN stays NaN."""
    a = np.minimum(np.abs(x), _ATAN_LARGE)
    big = a > 1.0
    y = np.where(big, 1.0 / a, a)
    j = np.rint(y * _ATAN_STEPS)
    c = j * (1.0 / _ATAN_STEPS)
    index = np.where(j == j, j, 0.0).astype(np.intp)  # NaN: any row (the result stays NaN)
    index += big * _ATAN_ROWS
    head = np.take(_ATAN_HEADS, index)
    n = y - c
    if not wide:
        d = y * c
        d += 1.0
        np.divide(n, d, out=n)
        t = n * n
        t = _horner(_ATAN_POLY, t) * t
        t *= n
        t += n
        t *= _signs(big)
        t += np.take(_ATAN_TAILS, index)
        t += head
        return _finish(t, x, np.zeros_like(big), odd=True)
    p, e = _two_product(y, a)
    y_lo = 1.0 - p
    y_lo -= e
    y_lo /= a
    y_lo[~big] = 0.0
    p, e = _two_product(y, c)
    d_hi, d_lo = _fast_two_sum(np.ones_like(p), p)
    d_lo += e + y_lo * c
    u, u_lo = _divide(n, y_lo, d_hi, d_lo)
    w = u * u
    t = _horner(_ATAN_POLY, w) * w
    t *= u
    t += u_lo
    sign = _signs(big)
    u *= sign
    t *= sign
    s, err = _fast_two_sum(head, u)
    err += np.take(_ATAN_TAILS, index)
    err += t
    s += err
    return _finish(s, x, np.zeros_like(big), odd=True)


def _arcsine_parts(a: np.ndarray, wide: bool):
    """For a = |x|: (small, v, tail) with asin(a) = v + tail (a <= 1/2: v = a) or
    asin(a) = pi/2 - 2 (v + tail) (a > 1/2: v = sqrt(t), t = (1 - a)/2, exact).

    tail = v*z*Q(z) (+ v_lo), z = a**2 or t; wide, where v = sqrt(t), v_lo = (t - v**2) / (2v) is
    sqrt's rounding error (t - v**2 by Dekker's product; the subtraction of its head is exact).
    NaN for a > 1 (sqrt of a negative t)."""
    small = a <= 0.5
    t = 1.0 - a
    t *= 0.5
    root = np.sqrt(t)
    v = np.where(small, a, root)
    z = np.where(small, a * a, t)
    tail = _horner(_ASIN_POLY, z)
    tail *= z
    tail *= v
    if wide:
        p, e = _two_product(root, root)
        lo = t - p
        lo -= e
        lo /= root + root
        lo[small | (root == 0.0)] = 0.0
        tail += lo
    return small, v, tail


def _combine(base_hi, base_lo, m, m_tail) -> np.ndarray:
    """base - m - m_tail as (base_hi - m) by an exact sum (|base_hi| >= |m| or base_hi = 0), then
    the small terms: h + ((e + base_lo) - m_tail)."""
    h, e = _fast_two_sum(base_hi, -m)
    e += base_lo
    e -= m_tail
    h += e
    return h


# Per element (|x| > 1/2, |x| <= 1/2), asin|x| = base - f v - f tail: the base pi/2 or 0 as head
# and tail, the factor 2 or -1 (exact products); lookups rather than selections (see _signs).
_ASIN_BASE_HI = np.array([_PIO2_HI, 0.0])
_ASIN_BASE_LO = np.array([_PIO2_LO, 0.0])
_ASIN_FACTOR = np.array([2.0, -1.0])
# acos x likewise, by 2 * (|x| <= 1/2) + (x < 0): 2 (v + tail) for x > 1/2, pi - 2 (v + tail) for
# x < -1/2, pi/2 - x - x z Q(z) (v = |x|, f = ±1) for |x| <= 1/2.
_ACOS_BASE_HI = np.array([0.0, _PI_HI, _PIO2_HI, _PIO2_HI])
_ACOS_BASE_LO = np.array([0.0, _PI_LO, _PIO2_LO, _PIO2_LO])
_ACOS_FACTOR = np.array([-2.0, 2.0, 1.0, -1.0])


def _asin_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """asin|x| = |x| + tail for |x| <= 1/2, pi/2 - 2v - 2 tail above (see _arcsine_parts); x's
    sign. ±1 gives ±pi/2 (v = 0)."""
    small, v, tail = _arcsine_parts(np.abs(x), wide)
    row = small.view(np.int8)
    factor = np.take(_ASIN_FACTOR, row)
    v *= factor
    tail *= factor
    y = _combine(np.take(_ASIN_BASE_HI, row), np.take(_ASIN_BASE_LO, row), v, tail)
    return _finish(y, x, np.zeros_like(small), odd=True)


def _acos_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """acos x = pi/2 - x - x*z*Q(z) for |x| <= 1/2; 2 (v + tail) for x > 1/2 and
    pi - 2 (v + tail) for x < -1/2 (see _arcsine_parts). acos(1) = +0, acos(-1) = pi."""
    small, v, tail = _arcsine_parts(np.abs(x), wide)
    row = small.view(np.int8) * np.int8(2)
    row += (x < 0.0).view(np.int8)
    factor = np.take(_ACOS_FACTOR, row)
    v *= factor
    tail *= factor
    return _combine(np.take(_ACOS_BASE_HI, row), np.take(_ACOS_BASE_LO, row), v, tail)


# --- sines and cosines of rational multiples of a turn (twiddles, windows) ------------------------

_PIO4_HI, _PIO4_LO = _PIO2_HI * 0.5, _PIO2_LO * 0.5


def cos_sin_of_turns(m, n: int) -> tuple[np.ndarray, np.ndarray]:
    """cos(2 pi m/n) and sin(2 pi m/n) in float64 for integers m (any shape) and n >= 1, for the
    DFT's twiddles and the windows (runtime_support/signal.py): the angle is never rounded as a
    multiple of pi, so the results are as accurate for m near n as near 0.

    The octant o = floor(8 (m mod n) / n) and the rest 8 (m mod n) - o n by exact integer
    arithmetic; within the octant the angle is (pi/4) f with f = rest/n (o even) or (n - rest)/n
    (o odd), f rounded once and multiplied by pi/4 as a double-length value (Dekker's product with
    its head and tail); sin and cos of that by _sin_cos, each summed once; then the octant's
    symmetry (a swap and signs). Multiples of pi/2 give 0 and ±1 exactly (+0, never -0), odd
    multiples of pi/4 sqrt(1/2) rounded, all others within about an ulp."""
    m = np.asarray(m, dtype=np.int64) % n
    eighths = m * 8
    octant = eighths // n
    rest = eighths - octant * n
    odd = (octant & 1) == 1
    np.subtract(n, rest, out=rest, where=odd)
    f = rest / n
    phi, phi_lo = _two_product(f, _PIO4_HI)
    phi_lo += f * _PIO4_LO
    phi, phi_lo = _fast_two_sum(phi, phi_lo)
    s_hi, s_lo, c_hi, c_lo = _sin_cos(phi, phi_lo)
    s_hi += s_lo
    c_hi += c_lo
    swap = ((octant + 1) & 2) != 0  # octants 1, 2, 5, 6: cos and sin change places
    cosine = np.where(swap, s_hi, c_hi)
    sine = np.where(swap, c_hi, s_hi)
    cosine *= _signs(((octant + 2) & 4) != 0)  # octants 2 to 5
    sine *= _signs(octant >= 4)
    cosine += 0.0  # -0 becomes +0
    sine += 0.0
    return cosine, sine


# --- the public kernels ---------------------------------------------------------------------------


def exact_sin(x: np.ndarray) -> np.ndarray:
    """Sine: x = k*pi/2 + r (Cody-Waite below 2**20, Payne-Hanek above), r double-length for
    float64, sin or cos of r by minimax polynomials in r**2, selected and signed by k mod 4 (see
    _sin_block); in float64, rounded once. sin(±inf) = NaN, sin(-0) = -0."""
    return _elementwise(_sin_block, x, name="exact_sin")


def exact_cos(x: np.ndarray) -> np.ndarray:
    """Cosine, as exact_sin (see _cos_block). cos(±inf) = NaN."""
    return _elementwise(_cos_block, x, name="exact_cos")


def exact_tan(x: np.ndarray) -> np.ndarray:
    """Tangent: sin r / cos r or -cos r / sin r after exact_sin's reduction, the quotient
    double-length for float64 (see _tan_block); rounded once. tan(±inf) = NaN, tan(-0) = -0."""
    return _elementwise(_tan_block, x, name="exact_tan")


def exact_atan(x: np.ndarray) -> np.ndarray:
    """Inverse tangent by a 65-entry table of atan(j/64) and a short polynomial (see _atan_block);
    in float64, rounded once. atan(±inf) = ±pi/2 rounded."""
    return _elementwise(_atan_block, x, name="exact_atan")


def exact_asin(x: np.ndarray) -> np.ndarray:
    """Inverse sine by a minimax polynomial in x**2 for |x| <= 1/2 and through
    sqrt((1 - |x|)/2) above (see _asin_block); in float64, rounded once. NaN beyond ±1."""
    return _elementwise(_asin_block, x, name="exact_asin")


def exact_acos(x: np.ndarray) -> np.ndarray:
    """Inverse cosine, as exact_asin (see _acos_block). NaN beyond ±1."""
    return _elementwise(_acos_block, x, name="exact_acos")
