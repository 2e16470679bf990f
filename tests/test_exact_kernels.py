"""The exact kernels (runtime_support.exact): accuracy against an exact reference within each
kernel's stated bound, special values as IEEE gives them, and the same bits whatever the memory
layout, the BLAS kernel and thread count, and the SIMD level (subprocesses under an environment
matrix, comparing SHA-256 digests).

The matrix also runs plain np.matmul / np.sum / np.exp and reports (does not assert) whether they
change bits there, which shows that the switches take effect on this machine."""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from runtime_support import exact
from runtime_support.exact import (
    exact_conv,
    exact_cumprod,
    exact_cumsum,
    exact_det,
    exact_einsum,
    exact_gemm,
    exact_log_softmax,
    exact_matmul,
    exact_mean,
    exact_reduce_l1,
    exact_reduce_l2,
    exact_reduce_mean,
    exact_reduce_prod,
    exact_reduce_sum,
    exact_reduce_sum_square,
    exact_softmax,
    exact_standardize,
    exact_sum,
    exact_var,
)
from runtime_support.exact_math import exact_exp, exact_log
from tests.harness.bit_identity import NO_AVX2, NO_AVX512, other_numpy_python, run_json_script

ROOT = Path(__file__).resolve().parents[1]
U = 2.0**-53


def rng(seed=0):
    return np.random.default_rng(seed)


def ulp(values, dtype):
    """The spacing of `dtype` at each of `values` (its smallest subnormal at zero)."""
    values = np.abs(np.asarray(values, dtype=np.float64)).astype(dtype)
    return np.spacing(values).astype(np.float64)


# --- matrix products: accuracy -------------------------------------------------------------------


def reference_product(A, B) -> np.ndarray:
    """The exact product, correctly rounded to float64: each entry's products summed exactly
    (math.fsum of exact float64 products for float32 and narrower, Fractions for float64)."""
    a, b = A.astype(np.float64), B.astype(np.float64)
    out = np.empty((a.shape[0], b.shape[1]))
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            if A.dtype == np.float64:
                total = sum((Fraction(x) * Fraction(y) for x, y in zip(a[i], b[:, j])), Fraction())
                out[i, j] = float(total)
            else:
                out[i, j] = math.fsum(a[i] * b[:, j])
    return out


def product_bound(A, B, dtype) -> np.ndarray:
    """exact_matmul's stated bound, without the final half ulp."""
    a, b = A.astype(np.float64), B.astype(np.float64)
    inner = a.shape[1]
    e = np.frexp(np.max(np.abs(a), axis=1, initial=0.0))[1][:, None]
    f = np.frexp(np.max(np.abs(b), axis=0, initial=0.0))[1][None, :]
    width = exact._slice_width(min(inner, exact.MATMUL_BLOCK))
    blocks = max(-(-inner // exact.MATMUL_BLOCK), 1)
    slices = 3 if np.dtype(dtype) == np.float64 else 2  # truncated slices per operand
    c = 3 if slices == 2 else 5  # truncating each operand, then the dropped slice products
    return inner * np.ldexp(1.0, e + f) * (c * 2.0 ** (-slices * width) + (blocks + 2) * U)


def check_product(A, B):
    C = exact_matmul(A, B)
    assert C.dtype == A.dtype and C.shape == (A.shape[0], B.shape[1])
    reference = reference_product(A, B)
    error = np.abs(C.astype(np.float64) - reference)
    allowed = product_bound(A, B, A.dtype) + 0.5 * ulp(C, A.dtype) + 0.5 * ulp(reference, A.dtype)
    assert np.all(error <= allowed), float(np.max(error / allowed))
    return C, reference


@pytest.mark.parametrize(
    "shape", [(1, 1, 1), (5, 7, 3), (33, 64, 17), (4, 3000, 5), (3, 4100, 2), (2, 0, 3)]
)
def test_matmul_float32_within_bound(shape):
    M, K, N = shape
    A = rng(1).standard_normal((M, K)).astype(np.float32)
    B = rng(2).standard_normal((K, N)).astype(np.float32)
    C, reference = check_product(A, B)
    # Without cancellation the result is the correctly rounded exact product almost always.
    if C.size:
        assert np.mean(C == reference.astype(np.float32)) > 0.99


def test_matmul_float32_wide_range_and_subnormals():
    generator = rng(3)
    A = generator.standard_normal((9, 40)) * np.exp2(generator.integers(-140, 120, (9, 40)))
    B = generator.standard_normal((40, 6)) * np.exp2(generator.integers(-140, 0, (40, 6)))
    A, B = A.astype(np.float32), B.astype(np.float32)
    A[0, :] = np.float32(1e-45) * generator.integers(1, 100, 40)  # a row of subnormals
    B[:, 1] = 0  # a zero column
    C, _ = check_product(A, B)
    assert np.all(C[:, 1] == 0) and not np.signbit(C[:, 1]).any()
    with np.errstate(over="ignore"):
        big = exact_matmul(np.full((1, 4), 3e38, np.float32), np.full((4, 1), 3e38, np.float32))
    assert big[0, 0] == np.inf


def test_matmul_float64_and_float16_within_bound():
    generator = rng(4)
    check_product(generator.standard_normal((6, 50)), generator.standard_normal((50, 5)))
    A = generator.standard_normal((7, 30)).astype(np.float16)
    B = generator.standard_normal((30, 4)).astype(np.float16)
    check_product(A, B)


def test_matmul_bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    A = rng(5).standard_normal((4, 20)).astype(ml_dtypes.bfloat16)
    B = rng(6).standard_normal((20, 3)).astype(ml_dtypes.bfloat16)
    C = exact_matmul(A, B)
    reference = reference_product(A.astype(np.float32), B.astype(np.float32))
    assert C.dtype == A.dtype
    assert np.all(np.abs(C.astype(np.float64) - reference) <= ulp(reference, np.float32) * 2**16)


def test_matmul_shapes_follow_numpy():
    generator = rng(7)
    cases = [
        ((5,), (5,)),
        ((5,), (5, 3)),
        ((4, 5), (5,)),
        ((2, 3, 4, 5), (5, 6)),
        ((1, 4, 5), (3, 5, 2)),
        ((3, 1, 4, 5), (2, 5, 6)),
        ((2, 5), (3, 5, 2)),
    ]
    for a_shape, b_shape in cases:
        A = generator.standard_normal(a_shape).astype(np.float32)
        B = generator.standard_normal(b_shape).astype(np.float32)
        C = exact_matmul(A, B)
        expected = np.matmul(A.astype(np.float64), B.astype(np.float64))
        assert C.shape == expected.shape and C.dtype == np.float32
        np.testing.assert_allclose(C, expected, rtol=1e-6, atol=1e-6)
    integers = generator.integers(-50, 50, (3, 4)).astype(np.int32)
    assert np.array_equal(exact_matmul(integers, integers.T), integers @ integers.T)


def ieee_product(A, B) -> np.ndarray:
    """The product by sequential IEEE float64 arithmetic (special values and small numbers only)."""
    out = np.empty((A.shape[0], B.shape[1]))
    with np.errstate(invalid="ignore"):
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                total = 0.0
                for x, y in zip(A[i].astype(float), B[:, j].astype(float)):
                    total += x * y
                out[i, j] = total
    return out


def test_matmul_special_values_as_ieee():
    values = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan], dtype=np.float32)
    generator = rng(8)
    for _ in range(30):
        A = generator.choice(values, (4, 3), p=[0.2, 0.1, 0.25, 0.25, 0.08, 0.08, 0.04])
        B = generator.choice(values, (3, 5), p=[0.2, 0.1, 0.25, 0.25, 0.08, 0.08, 0.04])
        C, expected = exact_matmul(A, B), ieee_product(A, B)
        assert np.array_equal(np.isnan(C), np.isnan(expected))
        finite = ~np.isnan(expected)
        assert np.array_equal(C[finite], expected[finite].astype(np.float32))
        assert not np.signbit(C[np.isnan(C)]).any()  # NaNs are np.nan


def test_gemm_order_and_options():
    generator = rng(9)
    A = generator.standard_normal((6, 4)).astype(np.float32)
    B = generator.standard_normal((5, 6)).astype(np.float32)
    C = generator.standard_normal((5,)).astype(np.float32)
    Y = exact_gemm(A, B, C, alpha=0.1, beta=-2.0, transA=1, transB=1)
    product = exact._matmul64(A.T, B.T)
    expected = (product * float(np.float32(0.1)) + C.astype(np.float64) * -2.0).astype(np.float32)
    assert np.array_equal(Y, expected)
    assert np.array_equal(exact_gemm(A.T, B.T), exact_matmul(A.T, B.T))


def test_conv_matches_a_direct_reference():
    generator = rng(10)
    X = generator.standard_normal((2, 4, 7, 6)).astype(np.float32)
    W = generator.standard_normal((6, 2, 3, 2)).astype(np.float32)
    B = generator.standard_normal(6).astype(np.float32)
    Y = exact_conv(X, W, B, pads=(1, 0, 1, 1), strides=(2, 1), dilations=(1, 2), group=2)
    # Direct reference in float64: every output element as an exact-enough float64 dot product.
    x = np.pad(X.astype(np.float64), ((0, 0), (0, 0), (1, 1), (0, 1)))
    out_h, out_w = (x.shape[2] - 3) // 2 + 1, x.shape[3] - 2 - 1 + 1
    expected = np.zeros((2, 6, out_h, out_w))
    for m in range(6):
        g = m // 3
        for oh in range(out_h):
            for ow in range(out_w):
                patch = x[:, 2 * g : 2 * g + 2, oh * 2 : oh * 2 + 3, ow : ow + 3 : 2]
                expected[:, m, oh, ow] = (patch * W[m].astype(np.float64)).sum(axis=(1, 2, 3))
    expected += B.astype(np.float64)[:, None, None]
    assert Y.shape == expected.shape and Y.dtype == np.float32
    np.testing.assert_allclose(Y, expected, rtol=2e-6, atol=2e-6)


def direct_conv_reference(X, W, B, pads, strides, dilations, group):
    """exact_conv's direct sum written out element by element with Python floats (IEEE doubles):
    per output, s = p_0, s = s + p_1, ... over (input channel of the group, kernel tap) in C
    order, then + bias; also the exact value (Fraction) and sum |p| for the accuracy bound."""
    rank = X.ndim - 2
    x = np.pad(
        X.astype(np.float64), [(0, 0), (0, 0)] + [(pads[i], pads[i + rank]) for i in range(rank)]
    )
    maps, per_group, *kernel = W.shape
    out = [
        (x.shape[2 + i] - (kernel[i] - 1) * dilations[i] - 1) // strides[i] + 1 for i in range(rank)
    ]
    shape = (X.shape[0], maps, *out)
    ieee, exact_value, magnitude = np.empty(shape), np.empty(shape, object), np.empty(shape)
    for index in np.ndindex(*shape):
        n, m, o = index[0], index[1], index[2:]
        g = m // (maps // group)
        s = None
        fraction, total = Fraction(0), 0.0
        for c in range(per_group):
            for tap in np.ndindex(*kernel):
                where = tuple(o[i] * strides[i] + tap[i] * dilations[i] for i in range(rank))
                product = float(W[(m, c) + tap]) * float(x[(n, g * per_group + c) + where])
                s = product if s is None else s + product
                fraction += Fraction(product) if math.isfinite(product) else 0
                total += abs(product)
        if B is not None:
            s += float(B[m])
            fraction += Fraction(float(B[m]))
        ieee[index], exact_value[index], magnitude[index] = s, fraction, total
    return ieee, exact_value, magnitude


DIRECT_CONVS = [  # (X shape, W shape, pads, strides, dilations, group)
    ((2, 6, 9, 8), (6, 1, 3, 3), (1, 1, 1, 1), (2, 2), (1, 1), 6),  # depthwise 3x3, stride 2
    ((1, 3, 7, 7), (6, 1, 3, 3), (1, 0, 2, 1), (1, 2), (2, 1), 3),  # multiplier 2, dilation
    ((2, 4, 7, 6), (6, 2, 3, 2), (1, 0, 1, 1), (2, 1), (1, 2), 2),  # 3 maps of 2 channels
    ((1, 5, 11), (2, 5, 4), (2, 1), (3,), (1,), 1),  # 1-D, 2 maps over 20 terms
    ((1, 2, 4, 5, 4), (2, 1, 2, 3, 2), (0, 1, 0, 1, 0, 1), (1, 1, 2), (1, 1, 1), 2),  # 3-D
]


@pytest.mark.parametrize("case", range(len(DIRECT_CONVS)))
def test_direct_conv_is_its_fixed_order_sum(case):
    """Small-reduction convolutions are the float64 sum of exact products in the stated order:
    bit for bit an element-by-element reference, and within the stated bound of the exact sum."""
    x_shape, w_shape, pads, strides, dilations, group = DIRECT_CONVS[case]
    generator = rng(40 + case)
    # Spread exponents so that float64 sums of the products do round.
    X = generator.standard_normal(x_shape) * np.exp2(generator.integers(-30, 30, x_shape))
    X = X.astype(np.float32)
    W = generator.standard_normal(w_shape).astype(np.float32)
    B = generator.standard_normal(w_shape[0]).astype(np.float32)
    Y = exact_conv(X, W, B, pads=pads, strides=strides, dilations=dilations, group=group)
    ieee, exact_value, magnitude = direct_conv_reference(X, W, B, pads, strides, dilations, group)
    assert Y.dtype == np.float32 and Y.shape == ieee.shape
    assert Y.tobytes() == ieee.astype(np.float32).tobytes()
    terms = w_shape[1] * math.prod(w_shape[2:])
    for y, value, size in zip(ieee.reshape(-1), exact_value.reshape(-1), magnitude.reshape(-1)):
        assert abs(Fraction(y) - value) <= Fraction((terms - 1) * U * size) + Fraction(U * abs(y))
    # float16 takes the same path: its products are exact in float64 too.
    X16 = (generator.standard_normal(x_shape) * 8).astype(np.float16)
    W16 = W.astype(np.float16)
    Y16 = exact_conv(X16, W16, None, pads=pads, strides=strides, dilations=dilations, group=group)
    ieee16 = direct_conv_reference(X16, W16, None, pads, strides, dilations, group)[0]
    assert Y16.dtype == np.float16 and Y16.tobytes() == ieee16.astype(np.float16).tobytes()


def test_direct_conv_special_values_as_ieee():
    X = np.ones((1, 2, 4, 4), np.float32)
    W = np.ones((2, 1, 3, 3), np.float32)
    X[0, 0, 0, 0], X[0, 1, 2, 2] = np.inf, np.nan
    W[0, 0, 1, 1] = 0.0  # the centre tap meets the infinity at output (0, 0): 0 * inf = NaN
    Y = exact_conv(X, W, pads=(1, 1, 1, 1), strides=(1, 1), dilations=(1, 1), group=2)
    ieee = direct_conv_reference(X, W, None, (1, 1, 1, 1), (1, 1), (1, 1), 2)[0]
    with np.errstate(invalid="ignore"):
        assert np.array_equal(np.isnan(Y), np.isnan(ieee))
    assert np.isnan(Y[0, 0, 0, 0]) and Y[0, 0, 0, 1] == np.inf
    assert np.isnan(Y[0, 1, 1:4, 1:4]).all() and not np.isnan(Y[0, 1, 0, 0])
    assert not np.signbit(Y[np.isnan(Y)]).any()  # NaNs are np.nan
    finite = ~np.isnan(ieee)
    assert np.array_equal(Y[finite], ieee[finite].astype(np.float32))


def test_conv_filters_are_cached_and_give_the_same_bits():
    """Read-only filters over immutable memory (weights) have their slices computed once in the
    im2col method, as a constant right-hand operand's are; the bits are those of a copy."""
    generator = rng(47)
    X = generator.standard_normal((1, 8, 9, 9)).astype(np.float32)
    W = generator.standard_normal((16, 8, 3, 3)).astype(np.float32)
    weights = np.frombuffer(W.tobytes(), dtype=np.float32).reshape(W.shape)
    geometry = dict(pads=(1, 1, 1, 1), strides=(1, 1), dilations=(1, 1))
    expected = exact_conv(X, W.copy(), **geometry).tobytes()
    assert exact_conv(X, weights, **geometry).tobytes() == expected
    assert any(entry[0]() is weights.base for entry in exact._PREPARED.values())
    assert exact_conv(X, weights, **geometry).tobytes() == expected  # from the cache
    # The cached left-hand slices are those exact_matmul computes for a writeable copy.
    filters = weights.reshape(16, 72)
    columns = np.ascontiguousarray(generator.standard_normal((72, 30)).astype(np.float32))
    assert (
        exact_matmul(filters, columns).tobytes()
        == exact_matmul(W.reshape(16, 72).copy(), columns).tobytes()
    )


EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->ji", [(2, 3)]),
    ("i,i", [(5,), (5,)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (1, 4, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij->", [(3, 4)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]),
    ("...i,...i->...", [(2, 3), (3,)]),
    ("ij,ij->ij", [(3, 4), (1, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,kj->ik", [(0, 3), (2, 3)]),
    ("iij->ji", [(3, 3, 2)]),
    (",->", [(), ()]),
    ("ab...,b->...a", [(2, 3, 4, 5), (3,)]),
]


@pytest.mark.parametrize("equation, shapes", EINSUMS)
def test_einsum_follows_numpy(equation, shapes):
    generator = rng(16)
    operands = [generator.standard_normal(shape).astype(np.float32) for shape in shapes]
    result = exact_einsum(equation, *operands)
    expected = np.einsum(equation, *(x.astype(np.float64) for x in operands))
    assert result.dtype == np.float32 and result.shape == expected.shape
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)


def test_det():
    generator = rng(17)
    for shape in [(3, 3), (2, 4, 4), (1, 1), (0, 2, 2), (6, 6), (2, 0, 0)]:
        x = generator.standard_normal(shape)
        np.testing.assert_allclose(exact_det(x), np.linalg.det(x), rtol=1e-12)
        assert exact_det(x.astype(np.float32)).dtype == np.float32
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert exact_det(singular) == 0 and exact_det(np.zeros((3, 3))) == 0
    assert exact_det(np.array([[0.0, 1.0], [1.0, 0.0]])) == -1
    assert np.isnan(exact_det(np.array([[np.nan, 1.0], [1.0, 0.0]])))


# --- reductions: accuracy and order ------------------------------------------------------------


def sum_bound(values, count):
    """exact_sum's stated bound before the final rounding."""
    return max(math.ceil(math.log2(max(count, 1))), 0) * U * values


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_sum_mean_within_bound(dtype):
    x = (rng(11).standard_normal((37, 1001)) * 100).astype(dtype)
    total = exact_sum(x, axis=1)
    a = x.astype(np.float64)
    reference = np.array([math.fsum(row) for row in a])
    magnitude = np.abs(a).sum(axis=1)
    allowed = sum_bound(magnitude, 1001) + 0.5 * ulp(reference, dtype) + 0.5 * ulp(total, dtype)
    assert total.dtype == dtype and np.all(np.abs(total - reference) <= allowed)
    mean = exact_mean(x, axis=1)
    allowed = (sum_bound(magnitude, 1001) + 2 * U * np.abs(reference)) / 1001
    allowed += 0.5 * ulp(mean, dtype) + 0.5 * ulp(reference / 1001, dtype)
    assert np.all(np.abs(mean - reference / 1001) <= allowed)


def test_reductions_follow_onnx():
    x = rng(12).standard_normal((3, 4, 5)).astype(np.float32)
    d = x.astype(np.float64)
    cases = [
        (exact_reduce_sum, d.sum(axis=(0, 2), keepdims=True)),
        (exact_reduce_sum_square, (d * d).sum(axis=(0, 2), keepdims=True)),
        (exact_reduce_l1, np.abs(d).sum(axis=(0, 2), keepdims=True)),
        (exact_reduce_l2, np.sqrt((d * d).sum(axis=(0, 2), keepdims=True))),
        (exact_reduce_mean, d.mean(axis=(0, 2), keepdims=True)),
        (exact_reduce_prod, d.prod(axis=(0, 2), keepdims=True)),
    ]
    for kernel, expected in cases:
        result = kernel(x, np.array([0, -1]))
        assert result.dtype == np.float32 and result.shape == (1, 4, 1)
        np.testing.assert_allclose(result, expected, rtol=1e-6)
    assert exact_reduce_sum(x, keepdims=0).shape == ()
    assert exact_reduce_sum(x, [1], keepdims=0).shape == (3, 5)
    assert np.array_equal(exact_reduce_sum_square(x, [], noop_with_empty_axes=1), x * x)
    assert np.array_equal(exact_reduce_sum(x, [], noop_with_empty_axes=1), x)
    empty = np.zeros((2, 0, 3), np.float32)
    assert np.array_equal(exact_reduce_sum(empty, [1]), np.zeros((2, 1, 3), np.float32))
    assert np.array_equal(exact_reduce_mean(empty, [1]), np.zeros((2, 1, 3), np.float32))
    assert np.array_equal(exact_reduce_prod(empty, [1]), np.ones((2, 1, 3), np.float32))
    nan = exact_reduce_sum(np.array([1.0, np.nan, -np.inf], np.float32), keepdims=0)
    assert np.isnan(nan) and not np.signbit(nan)


def test_sum_order_is_the_documented_tree():
    """Values chosen so that every order gives a different float64 result: the kernel must
    follow the documented tree exactly."""
    x = np.array([2.0**53, 1.0, 1.0, -(2.0**53), 1.0, 3.0, 1.0])
    # n=7: [x0+x3, x1+x4, x2+x5, x6] -> [(x0+x3)+x2+x5... ] following _pairwise's rule
    level1 = [x[0] + x[3], x[1] + x[4], x[2] + x[5], x[6]]
    level2 = [level1[0] + level1[2], level1[1] + level1[3]]
    assert exact_sum(x) == level2[0] + level2[1]


def test_cumsum_within_bound_and_options():
    x = (rng(13).standard_normal((3, 300)) * 10).astype(np.float32)
    result = exact_cumsum(x, 1)
    reference = np.array([[math.fsum(row[: i + 1]) for i in range(300)] for row in x.astype(float)])
    magnitude = np.cumsum(np.abs(x.astype(np.float64)), axis=1)
    allowed = 9 * U * magnitude + ulp(reference, np.float32)
    assert np.all(np.abs(result - reference) <= allowed)
    small = np.arange(1, 6, dtype=np.float32).reshape(1, 5)
    assert np.array_equal(exact_cumsum(small, np.array([1]), exclusive=1), [[0, 1, 3, 6, 10]])
    assert np.array_equal(exact_cumsum(small, -1, reverse=1), [[15, 14, 12, 9, 5]])
    assert np.array_equal(exact_cumsum(small, 1, exclusive=1, reverse=1), [[14, 12, 9, 5, 0]])


def sequential_products(row) -> list[float]:
    """Running products of `row` with Python floats: one IEEE double multiplication per step."""
    products, running = [], 1.0
    for i, value in enumerate(row):
        running = float(value) if i == 0 else running * float(value)
        products.append(running)
    return products


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, "bfloat16"])
def test_cumprod_is_the_sequential_float64_product(dtype):
    dtype = (
        np.dtype(dtype)
        if dtype != "bfloat16"
        else np.dtype(pytest.importorskip("ml_dtypes").bfloat16)
    )
    x = (1 + rng(16).standard_normal((5, 60)) * 0.3).astype(dtype)
    x[0, 3], x[1, 10], x[2, 20], x[3, 7] = 0, np.inf, np.nan, -np.inf
    result = exact_cumprod(x, 1)
    with np.errstate(all="ignore"):
        reference = np.array([sequential_products(row) for row in x.astype(np.float64)])
        expected = reference.astype(np.float32).astype(dtype)  # float64 -> dtype, as _rounded
        if dtype in (np.float16, np.float64):
            expected = reference.astype(dtype)
    assert result.dtype == dtype
    same = (result.astype(np.float64) == expected.astype(np.float64)) | (
        np.isnan(result.astype(np.float64)) & np.isnan(expected.astype(np.float64))
    )
    assert same.all()
    # Every NaN is numpy's default NaN (0 * inf and the NaN input alike).
    nan_bits = np.array([np.nan], dtype=dtype).tobytes()
    assert all(v.tobytes() == nan_bits for v in result[np.isnan(result.astype(np.float64))])


def test_cumprod_options_and_layout():
    small = np.arange(1, 6, dtype=np.float32).reshape(1, 5)
    assert np.array_equal(exact_cumprod(small, np.array([1])), [[1, 2, 6, 24, 120]])
    assert np.array_equal(exact_cumprod(small, 1, exclusive=1), [[1, 1, 2, 6, 24]])
    assert np.array_equal(exact_cumprod(small, -1, reverse=1), [[120, 120, 60, 20, 5]])
    assert np.array_equal(exact_cumprod(small, 1, exclusive=1, reverse=1), [[120, 60, 20, 5, 1]])
    assert exact_cumprod(np.zeros((2, 0), np.float32), 1, exclusive=1).shape == (2, 0)
    x = (1 + rng(17).standard_normal((20, 30, 40)) * 0.1).astype(np.float32)
    for axis in range(3):
        reference = exact_cumprod(x, axis)
        assert exact_cumprod(np.asfortranarray(x), axis).tobytes() == reference.tobytes()
        column = np.moveaxis(x, axis, 0)[:, 3, 4].astype(np.float64)
        expected = np.array(sequential_products(column)).astype(np.float32)
        assert np.moveaxis(reference, axis, 0)[:, 3, 4].tobytes() == expected.tobytes()


def test_var_standardize_softmax():
    x = rng(14).standard_normal((4, 6, 7)).astype(np.float32) + 3
    d = x.astype(np.float64)
    np.testing.assert_allclose(exact_var(x, (1, 2)), d.var(axis=(1, 2)), rtol=1e-6)
    normalized, mean, inv_std = exact_standardize(x, (2,), 1e-5)
    expected = (d - d.mean(2, keepdims=True)) / np.sqrt(d.var(2, keepdims=True) + 1e-5)
    assert normalized.dtype == mean.dtype == inv_std.dtype == np.float32
    np.testing.assert_allclose(normalized, expected, rtol=1e-5, atol=1e-5)
    softmax = np.exp(d - d.max(1, keepdims=True))
    softmax /= softmax.sum(1, keepdims=True)
    np.testing.assert_allclose(exact_softmax(x, 1), softmax, rtol=1e-6)
    np.testing.assert_allclose(exact_log_softmax(x, 1), np.log(softmax), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exact_softmax(x, (1, 2)).sum(axis=(1, 2)), 1, rtol=1e-6)
    assert exact_softmax(np.zeros((2, 0), np.float32)).shape == (2, 0)
    half = exact_softmax(x.astype(np.float16), -1)
    assert half.dtype == np.float16


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_half_softmax_rounds_every_step_to_the_type(dtype):
    """The ONNX reference's Softmax (onnx.reference.ops.op_softmax) computes x - max, exp, the sum
    and the quotient each in x's type; numpy sums float16 in float32 (here exact: 16 terms within
    2**-9..1), ml_dtypes sums bfloat16 one bfloat16 addition at a time. With the library's exp and
    log in those steps, the exact kernel gives the reference's bits."""
    if dtype == "bfloat16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16
    x = rng(18).uniform(-6, 0, (50, 16)).astype(dtype)
    shifted = x - x.max(axis=1, keepdims=True)
    powers = exact_exp(shifted)
    reference = powers / powers.sum(axis=1, keepdims=True)
    result = exact_softmax(x, 1)
    assert result.dtype == reference.dtype == x.dtype
    assert result.tobytes() == reference.tobytes()
    log_reference = shifted - exact_log(powers.sum(axis=1, keepdims=True))
    assert exact_log_softmax(x, 1).tobytes() == log_reference.tobytes()
    # The 2-D coercion's tuple of axes sums in C order of the axes, as one axis would.
    as_3d = exact_softmax(x.reshape(50, 4, 4), (1, 2))
    assert as_3d.reshape(50, 16).tobytes() == reference.tobytes()


def test_float64_softmax_is_double_length_within_half_an_ulp():
    """float64 softmax and log-softmax carry x - max, exp, the sum and the quotient (logarithm)
    as double-length values: against mpmath (40 digits) every softmax result is within 0.51 ulp
    (a float64 x - max alone costs up to |x - max| / 2 ulps) and every log-softmax result within
    0.51 ulp of max(|result|, 1); NaN and +inf rows give NaN, -inf entries 0 (log: -inf)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    g = rng(31)
    worst_softmax = worst_log = 0.0
    for row in range(24):
        x = g.standard_normal(int(g.integers(1, 200))) * (1.0, 30.0, 300.0)[row % 3]
        softmax, log_softmax = exact_softmax(x[None, :], 1)[0], exact_log_softmax(x[None, :], 1)[0]
        values = [mp.mpf(float(v)) for v in x]
        top = max(values)
        powers = [mp.exp(v - top) for v in values]
        total = mp.fsum(powers)
        for got, got_log, power, value in zip(softmax, log_softmax, powers, values):
            want, want_log = power / total, value - top - mp.log(total)
            if want > mp.mpf(2) ** -1000:
                ulp = mp.mpf(float(np.spacing(float(want))))
                worst_softmax = max(worst_softmax, float(abs(mp.mpf(float(got)) - want) / ulp))
            ulp = mp.mpf(float(np.spacing(max(abs(float(want_log)), 1.0))))
            worst_log = max(worst_log, float(abs(mp.mpf(float(got_log)) - want_log) / ulp))
    assert worst_softmax <= 0.51, worst_softmax
    assert worst_log <= 0.51, worst_log
    special = np.array([[1.0, np.inf], [np.nan, 1.0], [-np.inf, 0.0]])
    assert np.isnan(exact_softmax(special, 1)[:2]).all()
    assert exact_softmax(special, 1)[2].tolist() == [0.0, 1.0]
    assert exact_log_softmax(special, 1)[2].tolist() == [-np.inf, 0.0]
    # The 2-D coercion's tuple of axes reduces in C order of the axes, as one axis does.
    y = g.standard_normal((5, 4, 6)) * 50
    flat = exact_softmax(y.reshape(5, 24), 1).reshape(5, 4, 6)
    assert exact_softmax(y, (1, 2)).tobytes() == flat.tobytes()


def test_constant_operand_slices_are_cached_and_give_the_same_bits():
    """A read-only operand over immutable memory (as the weights file's arrays are) has its
    column slices computed once; the bits are those of a writeable copy, and the cache entry
    goes with the array that owns the memory."""
    generator = rng(19)
    A = generator.standard_normal((6, 300)).astype(np.float32)
    B = generator.standard_normal((300, 40)).astype(np.float32)
    B[3, 4] = np.inf
    weights = np.frombuffer(B.tobytes(), dtype=np.float32).reshape(B.shape)
    expected = exact_matmul(A, B).tobytes()
    assert not any(id(weights.base) == key for key in exact._PREPARED)
    assert exact_matmul(A, weights).tobytes() == expected
    (root,) = [key for key in exact._PREPARED if exact._PREPARED[key][0]() is weights.base]
    assert exact_matmul(A, weights).tobytes() == expected  # from the cache
    assert (
        exact_gemm(A, np.ascontiguousarray(B.T), transB=1).tobytes()
        == exact_gemm(A, weights.T.copy(), transB=1).tobytes()
    )
    del weights
    assert root not in exact._PREPARED
    writeable = B.copy()
    exact_matmul(A, writeable)
    assert all(entry[0]() is not writeable for entry in exact._PREPARED.values())


# --- the same bits whatever the layout ---------------------------------------------------------


def test_same_bits_whatever_the_layout():
    generator = rng(15)
    A = generator.standard_normal((70, 90)).astype(np.float32)
    B = generator.standard_normal((90, 50)).astype(np.float32)
    C = exact_matmul(A, B)
    for a, b in [
        (np.asfortranarray(A), B),
        (A, np.asfortranarray(B)),
        (np.ascontiguousarray(A.T).T, np.ascontiguousarray(B.T).T),
        (np.repeat(A, 2, axis=1)[:, ::2], B),
    ]:
        assert exact_matmul(a, b).tobytes() == C.tobytes()
    assert exact_matmul(B.T, A.T).tobytes() == np.ascontiguousarray(C.T).tobytes()
    x = generator.standard_normal((30, 40, 50)).astype(np.float32)
    for axes in [(0,), (1,), (2,), (0, 2), None]:
        reference = exact_reduce_sum(x, axes)
        assert exact_reduce_sum(np.asfortranarray(x), axes).tobytes() == reference.tobytes()
        reference = exact_cumsum(x, 2 if axes is None else axes[0])
        layout = exact_cumsum(np.asfortranarray(x), 2 if axes is None else axes[0])
        assert layout.tobytes() == reference.tobytes()
    # Reported, not asserted: numpy's own sum depends on the layout.
    plain = [np.sum(v, axis=(0, 2)).tobytes() for v in (x, np.asfortranarray(x))]
    print(
        f"\nnp.sum over axes (0, 2) changes bits between C and Fortran order: {plain[0] != plain[1]}"
    )


# --- the same bits under every environment -----------------------------------------------------

# Computes every kernel on fixed seeded inputs (special values included) and prints the SHA-256
# digest of each output, with the digests of plain numpy computations for comparison.
DIGEST_SCRIPT = r"""
import hashlib, json, sys
import numpy as np
import runtime_support as rt

def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()

g = np.random.default_rng(2024)
A = (g.standard_normal((300, 500)) * np.exp2(g.integers(-20, 20, (300, 500)))).astype(np.float32)
B = g.standard_normal((500, 260)).astype(np.float32)
A[3, 7], A[5, 9], B[11, 2] = np.inf, np.nan, -np.inf
A[8] = g.integers(-99, 99, 500) * np.float32(1e-45)  # a row of subnormals
B[:, 5] *= np.float32(1e-40)  # a column of mostly subnormals
A64, B64 = g.standard_normal((120, 300)), g.standard_normal((300, 90))
x = g.standard_normal((64, 3000)).astype(np.float32) * 1000
X, W = g.standard_normal((2, 8, 20, 20)).astype(np.float32), g.standard_normal((16, 4, 3, 3)).astype(np.float32)
kernels = {
    "matmul32": rt.exact_matmul(A, B),
    "matmul32_batched": rt.exact_matmul(A[:200].reshape(2, 100, 500), B),
    "matmul64": rt.exact_matmul(A64, B64),
    "matmul16": rt.exact_matmul(A64[:30, :40].astype(np.float16), B64[:40, :20].astype(np.float16)),
    "matmul_long": rt.exact_matmul(x[:4], x[4:8].T),
    "gemm": rt.exact_gemm(A, B[:, :100], B[0, :100], alpha=0.5, beta=0.25),
    "sum": rt.exact_reduce_sum(x, [1]),
    "sum_all": rt.exact_reduce_sum(x, keepdims=0),
    "mean": rt.exact_reduce_mean(x, [0]),
    "l2": rt.exact_reduce_l2(x, [1]),
    "sum64": rt.exact_reduce_sum(x.astype(np.float64) / 3, [1]),
    "prod": rt.exact_reduce_prod(x[:, :40] / 1000, [1]),
    "cumsum": rt.exact_cumsum(x, 1),
    "cumprod": rt.exact_cumprod(1 + x[:, :500] / 4000, 1, reverse=1),
    "softmax": rt.exact_softmax(x[:, :100] / 1000, axis=1),
    "softmax_half": rt.exact_softmax((x[:, :100] / 1000).astype(np.float16), axis=1),
    "log_softmax": rt.exact_log_softmax(x[:, :100] / 1000, axis=1),
    "l1": rt.exact_reduce_l1(x, [0]),
    "sum_square": rt.exact_reduce_sum_square(x, [0]),
    "exact_sum": rt.exact_sum(x.reshape(64, 30, 100), axis=(0, 2)),
    "exact_mean": rt.exact_mean(x, axis=1, dtype=np.float64),
    "exact_var": rt.exact_var(x, axis=0),
    "standardize": rt.exact_standardize(x, (1,), 1e-5)[0],
    "einsum": rt.exact_einsum("bij,bkj->bik", x[:8].reshape(2, 4, 3000), x[8:20].reshape(2, 6, 3000)),
    "det": rt.exact_det(A64[:90, :9].reshape(10, 9, 9)),
    "conv": rt.exact_conv(X, W, pads=(1, 1, 1, 1), strides=(1, 1), dilations=(1, 1), group=2),
    "conv_depthwise": rt.exact_conv(X * np.float32(1e20), W[:8, :1], W[:8, 0, 0, 0], pads=(1, 1, 1, 1),
                                    strides=(2, 2), dilations=(1, 1), group=8),
}
with np.errstate(all="ignore"):
    plain = {
        "np.matmul": A[:, :] @ B,
        "np.matmul64": A64 @ B64,
        "np.sum": np.sum(x, axis=1),
        "np.sum_all": np.sum(x),
        "np.exp32": np.exp(x / 1000),
        "np.exp64": np.exp(x.astype(np.float64) / 1000),
    }
json.dump({"exact": {k: digest(v) for k, v in kernels.items()},
           "plain": {k: digest(v) for k, v in plain.items()},
           "numpy": np.__version__}, sys.stdout)
"""

ENVIRONMENTS = {
    "default": {},
    "AVX-512 off": {"NPY_DISABLE_CPU_FEATURES": NO_AVX512},
    "AVX2 and AVX-512 off": {"NPY_DISABLE_CPU_FEATURES": NO_AVX2},
    "OPENBLAS_CORETYPE=Haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "OPENBLAS_CORETYPE=Prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "OPENBLAS_NUM_THREADS=1": {"OPENBLAS_NUM_THREADS": "1"},
    "OPENBLAS_NUM_THREADS=2": {"OPENBLAS_NUM_THREADS": "2"},
}


def run_digests(python: str, settings: dict) -> dict:
    return run_json_script(DIGEST_SCRIPT, settings, python)


def test_same_bits_in_every_environment():
    results = {
        name: run_digests(sys.executable, settings) for name, settings in ENVIRONMENTS.items()
    }
    # Another numpy major version (the bit-identity matrix's numpy-1.26 environment by default).
    other = other_numpy_python()
    for name, settings in ENVIRONMENTS.items():
        results[f"other numpy, {name}"] = run_digests(other, settings)
    baseline = results["default"]
    differing = {}
    for name, result in results.items():
        assert result["exact"] == baseline["exact"], (name, result["numpy"])
        changed = sorted(k for k, v in result["plain"].items() if v != baseline["plain"][k])
        differing[f"{name} (numpy {result['numpy']})"] = changed
    # Reported, not asserted: which plain numpy computations changed bits on this machine.
    print("\nplain numpy computations whose bits differ from the default environment:")
    for name, changed in differing.items():
        print(f"  {name}: {', '.join(changed) or 'none'}")


def test_digest_script_covers_every_kernel():
    assert all(f"rt.{name}(" in DIGEST_SCRIPT for name in exact.__all__)


# --- float64 LRN and LpPool (through exact_pow's double-length logarithm) ------------------------


def _float64_node_model(op_type: str, shape, out_shape, **attributes):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node(op_type, ["x"], ["y"], **attributes)],
        "float64_node",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, shape)],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, out_shape)],
    )
    return helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18)])


def test_float64_lrn_is_exact_and_accurate():
    """Float64 LRN compiles in the exact variant (no longer refused) and agrees with the formula
    evaluated in numpy longdouble to a few float64 ulps."""
    from onemodel_compile import load_compiled

    x = rng(3).standard_normal((2, 5, 3, 3))
    size, alpha, beta, bias = 3, float(np.float32(1e-2)), 0.75, 1.5  # attributes are float32
    module = load_compiled(
        _float64_node_model("LRN", x.shape, x.shape, size=size, alpha=alpha, beta=beta, bias=bias),
        variant="exact",
    )
    y = module.run(x)[0]
    wide = x.astype(np.longdouble)
    squares = np.pad(wide * wide, [(0, 0), (1, 1), (0, 0), (0, 0)])
    window = squares[:, 0:5] + squares[:, 1:6] + squares[:, 2:7]
    expected = wide / (np.longdouble(bias) + np.longdouble(alpha) / size * window) ** np.longdouble(
        beta
    )
    assert np.all(np.abs(y - expected) <= 4 * ulp(expected, np.float64))


@pytest.mark.parametrize("op_type", ["Exp", "Log", "Softmax", "LogSoftmax"])
def test_float64_exp_log_softmax_compile_in_both_variants(op_type):
    """float64 Exp, Log, Softmax and LogSoftmax compile in the fast and the exact variant and
    agree with onnxruntime; the exact results are within 0.6 ulp (LogSoftmax: of max(|y|, 1))
    of the function evaluated in numpy longdouble (64-bit significand)."""
    ort = pytest.importorskip("onnxruntime")
    from onemodel_compile import load_compiled

    x = rng(41).standard_normal((3, 40)) * 200
    if op_type == "Log":
        x = np.abs(x) + 1e-300
    if op_type == "Exp":
        x = x / 2
    model = _float64_node_model(op_type, x.shape, x.shape)
    model.ir_version = 9  # what onnxruntime reads (opset 18 needs no more)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"x": x})
    wide = x.astype(np.longdouble)
    shifted = wide - wide.max(axis=-1, keepdims=True)
    total = np.exp(shifted).sum(axis=-1, keepdims=True)
    reference = {
        "Exp": lambda: np.exp(wide),
        "Log": lambda: np.log(wide),
        "Softmax": lambda: np.exp(shifted) / total,
        "LogSoftmax": lambda: shifted - np.log(total),
    }[op_type]()
    for variant in ("fast", "exact"):
        (got,) = load_compiled(model, variant=variant).run(x)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-300, err_msg=variant)
    scale = np.maximum(np.abs(reference), 1) if op_type == "LogSoftmax" else reference
    error = np.abs(got - reference) / ulp(scale, np.float64)
    assert float(error.max()) <= 0.6, float(error.max())


def test_float64_lp_pool_with_p3_is_exact_and_accurate():
    from onemodel_compile import load_compiled

    x = rng(4).standard_normal((1, 2, 4, 4))
    module = load_compiled(
        _float64_node_model("LpPool", x.shape, (1, 2, 3, 3), kernel_shape=[2, 2], p=3),
        variant="exact",
    )
    y = module.run(x)[0]
    wide = np.abs(x.astype(np.longdouble)) ** 3
    sums = wide[:, :, :-1, :-1] + wide[:, :, :-1, 1:] + wide[:, :, 1:, :-1] + wide[:, :, 1:, 1:]
    expected = sums ** (np.longdouble(1) / 3)
    assert y.shape == expected.shape
    assert np.all(np.abs(y - expected) <= 4 * ulp(expected, np.float64))


def test_matmul_float32_banded_product_of_wide_range_spectra():
    """A log-mel front end's product: power spectra whose frames fall over five decades from their
    low bins (as after DC removal and pre-emphasis) times triangular mel filters, each nonzero on
    a few bins. Each entry's error is judged against its own sum |a| |b|, not against the frame's
    largest power times the filter's largest weight: with operands rounded once to w bits of their
    line's scale, onnx-asr's kaldi, nemo and wespeaker front ends lost their low-power mel bins
    (errors of 2**-6 of the entry here, 100% in the models); float32 BLAS is near 2**-22."""
    generator = rng(7)
    bins, mels, frames = 257, 40, 24
    spectra = (np.logspace(0, -5, bins) * generator.random((frames, bins)) ** 2).astype(np.float32)
    filters = np.zeros((bins, mels), np.float32)
    edges = np.linspace(0, bins - 1, mels + 2).astype(int)
    for j in range(mels):
        low, mid, high = edges[j], edges[j + 1], edges[j + 2] + 1
        filters[low:high, j] = np.interp(np.arange(low, high), [low, mid, high - 1], [0, 1, 0])
    a, b = spectra.astype(np.longdouble), filters.astype(np.longdouble)
    error = np.abs(exact.exact_matmul(spectra, filters) - a @ b) / (np.abs(a) @ np.abs(b))
    assert error.max() <= 2.0**-22
