"""The exact kernels' short paths for small calls (docs/exact-kernels.md "Cost", session 8): each
gives the bits of the general path, which the other tests and the golden digests pin."""

from __future__ import annotations

import gc
from fractions import Fraction

import numpy as np
import pytest

from runtime_support import exact
from runtime_support.exact import exact_gemm, exact_softmax
from runtime_support.exact_math import exact_exp


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def immutable(array: np.ndarray) -> np.ndarray:
    """A read-only copy over bytes, as the weights file's arrays are."""
    return np.frombuffer(array.tobytes(), dtype=array.dtype).reshape(array.shape)


def correctly_rounded_quotient(a: np.float32, b: np.float32) -> np.float32:
    """a / b rounded to nearest even float32, from the exact rational quotient (subnormals
    included): the independent reference."""
    q = Fraction(float(a)) / Fraction(float(b))
    if q == 0:
        return np.float32(0.0)
    candidate = np.float32(float(q))  # within an ulp of the answer: check its neighbours
    best = None
    for c in (
        np.nextafter(candidate, np.float32(-np.inf)),
        candidate,
        np.nextafter(candidate, np.float32(np.inf)),
    ):
        error = abs(Fraction(float(c)) - q)
        odd = int(np.asarray(c).view(np.uint32)) & 1
        key = (error, odd)
        if best is None or key < best[0]:
            best = (key, c)
    return best[1]


def test_float32_softmax_quotient_is_correctly_rounded():
    """The float32 quotient e / s (one float32 division) is the correctly rounded quotient of
    the exponential and the sum, subnormal results included: what the float64 division rounded
    once gave before."""
    x = np.concatenate(
        [
            rng(1).standard_normal((40, 7)).astype(np.float32) * 30,
            np.array([[0.0, -87.0, -95.0, -100.0, -103.5, -104.0, -110.0]], np.float32),
        ]
    )
    result = exact_softmax(x, axis=1)
    powers = exact_exp(x - x.max(axis=1, keepdims=True))
    totals = exact.exact_sum(powers, axis=1, keepdims=True)
    subnormal = 0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            expected = correctly_rounded_quotient(powers[i, j], totals[i, 0])
            assert result[i, j].tobytes() == expected.tobytes(), (i, j)
            subnormal += 0 < expected < np.finfo(np.float32).tiny
    assert subnormal >= 3  # the last row's quotients below 2**-126 took part


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_one_block_elementwise_equals_the_blocked_loop(dtype, monkeypatch):
    """The one-block path of the elementwise functions gives the loop's bits (the loop forced
    by a block size of 1000 over the same 5000 values, NaN and infinities among them)."""
    x = (rng(2).standard_normal(5000) * 40).astype(dtype)
    x[:4] = [np.nan, np.inf, -np.inf, -0.0]
    one_block = exact_exp(x)
    monkeypatch.setattr("runtime_support.exact_math._BLOCK", 1000)
    assert exact_exp(x).tobytes() == one_block.tobytes()
    assert np.isnan(one_block[0]) and one_block[1] == np.inf and one_block[2] == 0


def test_weights_found_by_their_object_give_the_same_bits_and_die_with_it():
    """A weight's prepared slices are found again under the array object (a Gemm's
    transposed view is new at every call); a shape reassigned on the same object is not
    mistaken for the old one; the entry goes when the array goes."""
    generator = rng(3)
    A = generator.standard_normal((1, 96)).astype(np.float32)
    W = generator.standard_normal((24, 96)).astype(np.float32)
    C = generator.standard_normal(24).astype(np.float32)
    weights = immutable(W)
    expected = exact_gemm(A, W.copy(), C, transB=1).tobytes()
    assert exact_gemm(A, weights, C, transB=1).tobytes() == expected
    keys = [key for key in exact._BY_OWNER if key[0] == id(weights)]
    assert keys, "no entry under the weight's object"
    assert exact_gemm(A, weights, C, transB=1).tobytes() == expected  # from the entry
    weights.shape = (48, 48)  # the same object and memory, another matrix
    A2 = generator.standard_normal((1, 48)).astype(np.float32)
    assert (
        exact_gemm(A2, weights, None, transB=1).tobytes()
        == exact_gemm(A2, W.reshape(48, 48).copy(), None, transB=1).tobytes()
    )
    del weights
    gc.collect()
    assert not any(key in exact._BY_OWNER for key in keys)
    writeable = W.copy()  # writeable memory is never kept
    exact_gemm(A, writeable, C, transB=1)
    assert not any(key[0] == id(writeable) for key in exact._BY_OWNER)


GEOMETRIES = [
    # (N, C, H, maps, kernel, group, pads, stride)
    (1, 3, 32, 8, 3, 1, 1, 1),
    (2, 4, 9, 10, 3, 2, 0, 2),  # 5 maps per group: im2col, not the direct sum
    (1, 8, 16, 16, 3, 1, 1, 1),
    (2, 3, 11, 8, 5, 1, 2, 2),
]


def windows_matrix(X, kernel, group, pads, stride, dilation):
    """im2col's matrix built tap by tap (the independent reference): row (c, kh, kw), column
    (n, oh, ow) holds the zero-padded input at (n, c, oh * stride + kh * dilation, ...)."""
    n, c, h, w = X.shape
    padded = np.zeros((n, c, h + 2 * pads, w + 2 * pads), X.dtype)
    padded[:, :, pads : pads + h, pads : pads + w] = X
    reach = (kernel - 1) * dilation + 1
    out_h = (h + 2 * pads - reach) // stride + 1
    out_w = (w + 2 * pads - reach) // stride + 1
    rows = []
    for channel in range(c):
        for kh in range(kernel):
            for kw in range(kernel):
                top, left = kh * dilation, kw * dilation
                window = padded[:, channel, top : top + stride * out_h : stride]
                rows.append(window[:, :, left : left + stride * out_w : stride].reshape(-1))
    return np.stack(rows).reshape(group, c // group * kernel * kernel, n * out_h * out_w)


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dilation", [1, 2])
def test_conv_columns_are_the_windows_in_order(geometry, dtype, dilation):
    """exact_conv's im2col matrix (one copy of a strided view of the padded input) holds every
    window in the order the product's definition reads it, special values moved as they are."""
    n, c, h, maps, k, group, pads, stride = geometry
    generator = rng(4)
    X = generator.standard_normal((n, c, h, h)).astype(dtype)
    X[0, 0, 1, 1], X[-1, -1, -1, -1] = np.nan, np.inf
    expected = windows_matrix(X, k, group, pads, stride, dilation)
    geometry = exact._conv_geometry(
        X.shape,
        (maps, c // group, k, k),
        X.itemsize,
        (pads,) * 4,
        (stride,) * 2,
        (dilation,) * 2,
        "NOTSET",
    )
    columns = exact._columns(X, geometry[-1], group, k * k)
    assert columns.shape == expected.shape
    assert columns.tobytes() == expected.tobytes()
