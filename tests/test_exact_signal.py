"""The exact variant's signal kernels (runtime_support/signal.py: exact_dft, exact_stft, the exact
windows, exact_mel_weight_matrix) against independent references: numpy's FFT in complex128 (good
to a few 2**-53 of the signal's magnitude) and the windows' formulas in mpmath; the twiddles of
runtime_support.exact_trig.cos_sin_of_turns against mpmath; and the same bits with numpy's SIMD
code switched off and under another numpy (subprocess digests)."""

from __future__ import annotations

import ml_dtypes
import mpmath as mp
import numpy as np
import pytest

import runtime_support as rt
from runtime_support.exact_trig import cos_sin_of_turns
from tests.harness.bit_identity import NO_AVX2, other_numpy_python, run_json_script


def complex_of(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0] + 0j


def pairs(values: np.ndarray) -> np.ndarray:
    return np.stack([values.real, values.imag], axis=-1)


def assert_close(got: np.ndarray, want: np.ndarray, scale: float, dtype) -> None:
    """Within a few units of the type's rounding at the signal's magnitude, plus one rounding of
    each value to the type."""
    eps = np.finfo(dtype).eps if dtype != ml_dtypes.bfloat16 else 2.0**-7
    assert got.dtype == dtype and got.shape == want.shape
    error = np.abs(got.astype(np.float64) - want)
    assert np.all(error <= eps * (np.abs(want) + 8 * scale)), float(np.max(error / scale))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 10, 12, 100, 257, 400, 512, 1000003])
def test_twiddles_against_mpmath(n):
    r = np.random.default_rng(n)
    m = np.arange(-2 * n, 2 * n) if n < 1000 else r.integers(-(10**9), 10**9, 3000)
    c, s = cos_sin_of_turns(m, n)
    mp.mp.dps = 40
    for k, ci, si in zip(m.tolist(), c.tolist(), s.tolist()):
        angle = 2 * mp.pi * mp.mpf(k % n) / n
        assert abs(mp.mpf(ci) - mp.cos(angle)) <= 2.0**-53, (k, n)
        assert abs(mp.mpf(si) - mp.sin(angle)) <= 2.0**-53, (k, n)
    if n % 4 == 0:  # multiples of pi/2: exact, and never -0
        quarter = np.arange(0, 4 * n, n // 4)
        c, s = cos_sin_of_turns(quarter, n)
        assert c.tolist()[:4] == [1.0, 0.0, -1.0, 0.0] and s.tolist()[:4] == [0.0, 1.0, 0.0, -1.0]
        assert not np.signbit(c[c == 0]).any() and not np.signbit(s[s == 0]).any()


CASES = [  # (shape, axis, dft_length, inverse, onesided)
    ((3, 16, 2), 1, None, 0, 0),
    ((3, 16, 1), 1, None, 0, 0),
    ((2, 10, 4, 2), 1, None, 1, 0),
    ((2, 4, 10, 1), 2, None, 0, 1),
    ((2, 12, 2), 1, 20, 0, 0),  # zero padding
    ((2, 12, 2), 1, 7, 1, 0),  # truncation
    ((2, 6, 3, 2), 1, None, 1, 1),  # real inverse, length 2 (6 - 1) = 10
    ((2, 6, 3, 2), 1, 11, 1, 1),  # odd length
    ((2, 9, 3, 1), 1, 8, 1, 1),  # more frequencies than 8 // 2 + 1: the rest dropped
    ((2, 5, 7, 2), -2, None, 0, 0),  # a negative axis
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("shape,axis,length,inverse,onesided", CASES)
def test_dft_against_complex128_fft(shape, axis, length, inverse, onesided, dtype):
    r = np.random.default_rng(len(shape) + shape[1])
    x = r.uniform(-4, 4, shape).astype(dtype)
    signal = complex_of(x)
    along = axis % x.ndim
    if inverse and onesided:
        n = 2 * (shape[along] - 1) if length is None else length
        want = np.fft.irfft(signal, n=n, axis=along)[..., None]
    elif inverse:
        want = pairs(np.fft.ifft(signal, n=length, axis=along))
    else:
        want = np.fft.fft(signal, n=length, axis=along)
        if onesided:
            n = shape[along] if length is None else length
            want = want.take(np.arange(n // 2 + 1), axis=along)
        want = pairs(want)
    got = rt.exact_dft(x, length, axis=axis, inverse=inverse, onesided=onesided)
    assert_close(got, want, 4.0 * shape[along], dtype)


# Lengths through every pass of the mixed-radix FFT: the fixed butterflies (2, 3, 4, 5, 7, 8, 11),
# the general one (13, 17, 19, ...), several passes with twiddles, and Bluestein's algorithm.
MIXED_RADIX_LENGTHS = list(range(1, 41)) + [48, 64, 77, 89, 96, 121, 128, 169, 202, 256, 1009, 1024]


@pytest.mark.skipif(
    np.lib.NumpyVersion(np.__version__) < "2.0.0",
    reason="numpy 1.x computes complex64 transforms in double precision",
)
@pytest.mark.parametrize("n", MIXED_RADIX_LENGTHS)
def test_mixed_radix_fft_is_numpy2s_fft(n):
    """runtime_support.mixed_radix follows the operation order of the FFT numpy 2 runs (pocketfft):
    its float32 inverse with the scale 1/n gives np.fft.ifft's complex64 bits, and its float64
    forward transform rounded to float32 np.fft.fft's complex64 bits (numpy 2 computes that one
    in double precision)."""
    from runtime_support import mixed_radix

    r = np.random.default_rng(n)
    x = (r.standard_normal((4, n)) + 1j * r.standard_normal((4, n))).astype(np.complex64)
    want = np.fft.ifft(x, axis=-1)
    scale = np.float32(1) / np.float32(n)
    re, im = mixed_radix.transform(x.real.copy(), x.imag.copy(), False, scale)
    assert (
        re.dtype == np.float32 and np.array_equal(re, want.real) and np.array_equal(im, want.imag)
    )
    want = np.fft.fft(x, axis=-1)
    re, im = mixed_radix.transform(x.real.astype(np.float64), x.imag.astype(np.float64), True)
    assert np.array_equal(re.astype(np.float32), want.real)
    assert np.array_equal(im.astype(np.float32), want.imag)


def test_mixed_radix_lengths_cover_every_pass():
    from runtime_support import mixed_radix

    factors = {f for n in MIXED_RADIX_LENGTHS for f in mixed_radix._factors(n)}
    assert {2, 3, 4, 5, 7, 8, 11, 13} <= factors
    assert any(mixed_radix._uses_bluestein(n) for n in MIXED_RADIX_LENGTHS)


DFT_CASES_BIT_FOR_BIT = [
    "test_dft",
    "test_dft_axis",
    "test_dft_axis_opset19",
    "test_dft_inverse",
    "test_dft_inverse_opset19",
    "test_dft_irfft",
    "test_dft_irfft_opset19",
    "test_dft_opset19",
]


@pytest.mark.parametrize("name", DFT_CASES_BIT_FOR_BIT)
def test_dft_backend_data_bit_for_bit(name):
    """The backend data of the complex DFT cases (numpy 2's FFT of complex64 arrays, the inverse
    in single precision) are exact_dft's bits, not only within the cases' tolerance. (The two
    one-sided forward cases come from numpy's real FFT, another order: within 1e-14 there.)"""
    import onnx

    from tests.harness import backend_cases

    case = backend_cases.case(name)
    (x, *rest), (expected,) = case.data_sets[0]
    attributes = {
        a.name: onnx.helper.get_attribute_value(a) for a in case.model.graph.node[-1].attribute
    }
    axis = int(rest[0]) if rest else attributes.get("axis", 1)
    got = rt.exact_dft(
        x, axis=axis, inverse=attributes.get("inverse", 0), onesided=attributes.get("onesided", 0)
    )
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("complex_signal", [False, True])
@pytest.mark.parametrize("windowed", [False, True])
def test_stft_against_complex128_fft(dtype, complex_signal, windowed):
    r = np.random.default_rng(9)
    signal = r.uniform(-1, 1, (2, 200, 2 if complex_signal else 1)).astype(dtype)
    window = rt.hann_window(32, output_datatype=dtype) if windowed else None
    got = rt.exact_stft(signal, 10, window, 32, onesided=0 if complex_signal else 1)
    frames = np.lib.stride_tricks.sliding_window_view(complex_of(signal), 32, axis=1)[:, ::10]
    if windowed:
        frames = frames * window.astype(np.float64)
    spectrum = np.fft.fft(frames, axis=-1)
    if not complex_signal:
        spectrum = spectrum[..., :17]
    assert_close(got, pairs(spectrum), 32.0, dtype)
    assert got.shape == rt.stft(signal, 10, window, 32, onesided=0 if complex_signal else 1).shape


WINDOWS = {
    "exact_hann_window": (0.5, 0.5),
    "exact_hamming_window": (25 / 46, 21 / 46),
    "exact_blackman_window": (0.42, 0.5, 0.08),
}


@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_windows_against_mpmath(name, periodic):
    mp.mp.dps = 40
    for size in (2, 3, 10, 64, 401):
        got = getattr(rt, name)(size, periodic=periodic, output_datatype=np.float64)
        period = size if periodic else size - 1
        for n, value in enumerate(got.tolist()):
            want = mp.fsum(
                (-1) ** k * mp.mpf(a) * mp.cos(2 * mp.pi * k * n / period)
                for k, a in enumerate(WINDOWS[name])
            )
            assert abs(mp.mpf(value) - want) <= 2.0**-51, (name, size, n)
        single = getattr(rt, name)(size, periodic=periodic, output_datatype=np.float32)
        assert np.array_equal(single, got.astype(np.float32))
    # One point: N = 0 for a symmetric window (NaN, as the fast kernel's 0/0), cos 0 = 1 else.
    one = getattr(rt, name)(1, periodic=periodic, output_datatype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        fast = getattr(rt, name.removeprefix("exact_"))(
            1, periodic=periodic, output_datatype=np.float64
        )
    assert np.array_equal(one, fast, equal_nan=True)


def test_mel_weight_matrix_matches_the_fast_kernel():
    """Only log10 and 10**x differ from the fast kernel (the library's instead of numpy's): the
    bins, placed by floor, come out the same here, and the weights within float rounding."""
    for args in (
        (8, 16, 8192, 0.0, 8192 / 2),
        (40, 512, 16000, 20.0, 7600.0),
        (20, 256, 22050, 300.0, 5000.0),
    ):
        exact = rt.exact_mel_weight_matrix(*args, output_datatype=np.float64)
        fast = rt.mel_weight_matrix(*args, output_datatype=np.float64)
        assert np.array_equal(exact > 0, fast > 0)
        assert np.allclose(exact, fast, rtol=1e-12, atol=1e-15)


DIGEST_SCRIPT = r"""
import hashlib, json, sys
import numpy as np
import runtime_support as rt

def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()

k = np.arange(4 * 96 * 2, dtype=np.uint64)
x = ((k * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)).astype(np.float64) / 2.0**24 - 0.5
x = x.reshape(4, 96, 2)
out = {}
for dtype in (np.float32, np.float64):
    signal = x.astype(dtype)
    out[f"dft {dtype.__name__}"] = digest(rt.exact_dft(signal, axis=1))
    out[f"idft {dtype.__name__}"] = digest(rt.exact_dft(signal, 50, axis=1, inverse=1))
    out[f"irfft {dtype.__name__}"] = digest(rt.exact_dft(signal, axis=1, inverse=1, onesided=1))
    window = rt.exact_hann_window(32, output_datatype=dtype)
    out[f"stft {dtype.__name__}"] = digest(rt.exact_stft(signal[..., :1], 8, window, 32))
    out[f"windows {dtype.__name__}"] = digest(np.concatenate([
        rt.exact_hamming_window(101, periodic=0, output_datatype=dtype),
        rt.exact_blackman_window(64, output_datatype=dtype)]))
out["mel"] = digest(rt.exact_mel_weight_matrix(40, 512, 16000, 20.0, 7600.0))
json.dump(out, sys.stdout)
"""


def test_same_bits_without_simd_and_with_another_numpy():
    default = run_json_script(DIGEST_SCRIPT, {})
    assert run_json_script(DIGEST_SCRIPT, {"NPY_DISABLE_CPU_FEATURES": NO_AVX2}) == default
    assert run_json_script(DIGEST_SCRIPT, {}, other_numpy_python()) == default
