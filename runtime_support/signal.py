"""Signal kernels: DFT, STFT, the cosine-sum windows and the mel filter bank.

Complex values are ONNX's pairs: a last axis of 2 (real, imaginary), or of 1 for a real signal.
Transforms run through numpy's FFT in complex128 for float64 signals, in complex64 for the others
(from numpy 2 the FFT keeps single precision; numpy 1.26 computes in double), rounded to the
input's type at the end.
Sizes and lengths may arrive as scalars or one-element tensors at run time. Not exact: numpy's
FFT, cos, log10 and power give machine-dependent bits.

The exact variant's kernels (exact_dft, exact_stft, the exact windows, exact_mel_weight_matrix)
compute the same definitions with the library's own functions: every transform is one product of
the signal (real and imaginary parts side by side) with a matrix of twiddles cos and sin(2 pi m/L)
from runtime_support.exact_trig.cos_sin_of_turns (m = n k mod L exactly), through exact_matmul's
float64 product whose order of summation is fixed, then rounded once to the signal's type; the
windows take their cosines from the same function and the mel filter bank exact_log and exact_pow.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from runtime_support.exact import _matmul64, _rounded
from runtime_support.exact_math import exact_log, exact_pow
from runtime_support.exact_trig import cos_sin_of_turns

__all__ = [
    "blackman_window",
    "dft",
    "exact_blackman_window",
    "exact_dft",
    "exact_hamming_window",
    "exact_hann_window",
    "exact_mel_weight_matrix",
    "exact_stft",
    "hamming_window",
    "hann_window",
    "mel_weight_matrix",
    "stft",
]


def _int(value) -> int:
    return int(np.asarray(value).reshape(-1)[0])


def _signal_axis(axis, rank: int) -> int:
    """DFT's axis as a non-negative index; never the last (complex) axis."""
    axis = _int(axis)
    if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        raise ValueError(f"DFT: axis {axis} is out of range for an input of rank {rank}")
    return axis % rank


def _complex(x: np.ndarray) -> np.ndarray:
    """The complex values of an ONNX (..., 1) real or (..., 2) complex tensor: complex128 for
    float64, complex64 (what numpy's FFT keeps, from numpy 2) for the narrower types."""
    precision = np.complex128 if x.dtype == np.float64 else np.complex64
    signal = x[..., 0].astype(precision)
    if x.shape[-1] == 2:
        signal.imag = x[..., 1]
    return signal


def _pairs(values: np.ndarray, dtype) -> np.ndarray:
    return np.stack([values.real, values.imag], axis=-1).astype(dtype)


def dft(input, dft_length=None, *, axis=1, inverse=0, onesided=0):
    """ONNX DFT along `axis` (never the last, complex axis) of a real or complex signal, zero-padded
    or truncated to `dft_length`. onesided: the forward transform keeps the first
    dft_length // 2 + 1 frequencies; the inverse one takes those and returns a real signal of
    dft_length (by default 2 * (n - 1)). The inverse is normalized by 1 / dft_length."""
    axis = _signal_axis(axis, input.ndim)
    signal = _complex(input)
    size = signal.shape[axis]
    if inverse and onesided:
        length = 2 * (size - 1) if dft_length is None else _int(dft_length)
        return np.fft.irfft(signal, n=length, axis=axis)[..., None].astype(input.dtype)
    length = size if dft_length is None else _int(dft_length)
    if inverse:
        return _pairs(np.fft.ifft(signal, n=length, axis=axis), input.dtype)
    spectrum = np.fft.fft(signal, n=length, axis=axis)
    if onesided:
        spectrum = spectrum.take(np.arange(length // 2 + 1), axis=axis)
    return _pairs(spectrum, input.dtype)


def stft(signal, frame_step, window=None, frame_length=None, *, onesided=1):
    """ONNX STFT of a (batch, length, 1 or 2) signal: frames of frame_length samples every
    frame_step samples (floor((length - frame_length) / frame_step) + 1 of them), each times the
    window (by default all ones) and transformed; onesided keeps frame_length // 2 + 1 bins.
    Returns (batch, frames, bins, 2)."""
    frames, length = _frames(_complex(signal), frame_step, window, frame_length)
    if window is not None:
        frames = frames * window.astype(frames.real.dtype)
    spectrum = np.fft.fft(frames, axis=-1)
    if onesided:
        spectrum = spectrum[..., : length // 2 + 1]
    return _pairs(spectrum, signal.dtype)


def _frames(signal: np.ndarray, frame_step, window, frame_length):
    """STFT's frames of `signal` (batch, length, ...): (batch, frames, ..., frame_length), a view,
    and the frame length."""
    step = _int(frame_step)
    if frame_length is not None:
        length = _int(frame_length)
    else:
        length = signal.shape[1] if window is None else window.shape[0]
    if window is not None and window.shape[0] != length:
        raise ValueError(f"STFT: a window of {window.shape[0]} for frames of {length}")
    return sliding_window_view(signal, length, axis=1)[:, ::step], length


def _cosine_sum(size, periodic: int, coefficients, output_datatype) -> np.ndarray:
    """sum_k (-1)^k a_k cos(2 pi k n / N) for n < size, N = size (periodic) or size - 1."""
    count = _int(size)
    with np.errstate(invalid="ignore", divide="ignore"):  # size 1, symmetric: 0 / 0, as ONNX
        phase = 2 * np.pi * np.arange(count, dtype=np.float64) / (count if periodic else count - 1)
    window = np.zeros(count, dtype=np.float64)
    for k, a in enumerate(coefficients):
        window += (-1) ** k * a * np.cos(k * phase)
    return window.astype(output_datatype)


def hann_window(size, *, periodic=1, output_datatype=np.float32):
    """ONNX HannWindow: 0.5 - 0.5 cos(2 pi n / N)."""
    return _cosine_sum(size, periodic, (0.5, 0.5), output_datatype)


def hamming_window(size, *, periodic=1, output_datatype=np.float32):
    """ONNX HammingWindow: 25/46 - 21/46 cos(2 pi n / N)."""
    return _cosine_sum(size, periodic, (25 / 46, 21 / 46), output_datatype)


def blackman_window(size, *, periodic=1, output_datatype=np.float32):
    """ONNX BlackmanWindow: 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""
    return _cosine_sum(size, periodic, (0.42, 0.5, 0.08), output_datatype)


def mel_weight_matrix(
    num_mel_bins,
    dft_length,
    sample_rate,
    lower_edge_hertz,
    upper_edge_hertz,
    *,
    output_datatype=np.float32,
):
    """ONNX MelWeightMatrix, (dft_length // 2 + 1, num_mel_bins), in double precision.

    num_mel_bins + 2 edge points start at the lower edge and step by (upper - lower) / (num_mel_bins
    + 2) in mel (mel(f) = 2595 log10(1 + f / 700)), as the backend data and onnxruntime place them;
    each goes back to hertz and to the bin floor((dft_length + 1) f / sample_rate). Filter i rises
    linearly from edge i to its peak 1 at edge i + 1 and falls to edge i + 2 (0 there)."""
    return _mel_weights(
        num_mel_bins,
        dft_length,
        sample_rate,
        lower_edge_hertz,
        upper_edge_hertz,
        output_datatype,
        np.log10,
        lambda exponent: np.power(10.0, exponent),
    )


def _mel_weights(
    num_mel_bins, dft_length, sample_rate, lower, upper, output_datatype, log10, power_of_ten
):
    """mel_weight_matrix with the given log10 and 10**x (numpy's, or the library's own)."""
    bins, length, rate = _int(num_mel_bins), _int(dft_length), _int(sample_rate)
    low, high = (
        2595 * log10(np.float64(1 + float(np.asarray(f).reshape(-1)[0]) / 700))
        for f in (lower, upper)
    )
    mel = np.arange(bins + 2, dtype=np.float64) * ((high - low) / (bins + 2)) + low
    hertz = 700 * (power_of_ten(mel / 2595) - 1)
    edges = np.floor((length + 1) * hertz / rate).astype(np.int64)
    left, center, right = edges[:-2], edges[1:-1], edges[2:]
    j = np.arange(length // 2 + 1, dtype=np.int64)[:, None]
    rising = (j - left) / np.maximum(center - left, 1)
    falling = (right - j) / np.maximum(right - center, 1)
    weights = np.where((left <= j) & (j < center), rising, 0.0)
    weights = np.where((center < j) & (j < right), falling, weights)
    return np.where(j == center, 1.0, weights).astype(output_datatype)


# --- the exact variant ----------------------------------------------------------------------------

# Twiddle matrices by (rows, columns, length, kind, complex input): they depend on nothing else.
# Kept read-only over bytes, so that exact_matmul also keeps their integer slices (see
# runtime_support.exact._immutable_root) and a model's transforms split them once.
_TWIDDLES: dict[tuple, np.ndarray] = {}
_TWIDDLES_KEPT = 64  # different transforms in one process, at most (then the oldest goes)


def _twiddles(rows: int, columns: int, length: int, kind: str, complex_input: bool) -> np.ndarray:
    """The right-hand matrix of one transform as a real product, signal @ matrix.

    With c = cos(2 pi n k / L) and s = sin(2 pi n k / L) (cos_sin_of_turns, n k mod L exact) for
    signal index n < rows and frequency k < columns:
    - "forward": X_re = x_re c + x_im s, X_im = x_im c - x_re s, so the matrix is [[c, -s], [s, c]]
      (rows [x_re; x_im], columns [X_re, X_im]), or [c, -s] for a real signal;
    - "inverse": X_re = x_re c - x_im s, X_im = x_re s + x_im c: [[c, s], [-s, c]] (the 1/L after);
    - "real inverse" (rows: frequencies k, columns: samples n): x = sum_k w_k (X_re c - X_im s)
      with w_k = 2 but for k = 0 and k = L/2 (1), numpy's irfft, which drops the imaginary parts
      of those two: their sines are 0 here anyway.
    """
    key = (rows, columns, length, kind, complex_input)
    matrix = _TWIDDLES.get(key)
    if matrix is not None:
        return matrix
    n, k = np.arange(rows, dtype=np.int64)[:, None], np.arange(columns, dtype=np.int64)[None, :]
    c, s = cos_sin_of_turns(n * k % max(length, 1), max(length, 1))
    if kind == "real inverse":
        weight = np.where((n == 0) | (2 * n == length), 1.0, 2.0)
        matrix = np.concatenate([weight * c, -(weight * s)])
    elif kind == "inverse":
        matrix = np.block([[c, s], [-s, c]]) if complex_input else np.concatenate([c, s], axis=1)
    else:
        matrix = np.block([[c, -s], [s, c]]) if complex_input else np.concatenate([c, -s], axis=1)
    matrix = np.frombuffer(np.ascontiguousarray(matrix).tobytes(), dtype=np.float64)
    matrix = matrix.reshape(-1, columns if kind == "real inverse" else 2 * columns)
    if len(_TWIDDLES) >= _TWIDDLES_KEPT:
        _TWIDDLES.pop(next(iter(_TWIDDLES)))
    _TWIDDLES[key] = matrix
    return matrix


def _real_parts(x: np.ndarray, axis: int, count: int) -> np.ndarray:
    """The first `count` values along `axis` of an ONNX (..., 1) or (..., 2) signal, moved to
    the last axis, real parts then imaginary parts side by side: (..., count) or (..., 2 count)."""
    parts = [np.moveaxis(x[..., j], axis, -1)[..., :count] for j in range(x.shape[-1])]
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=-1)


def _as_pairs(product: np.ndarray, columns: int) -> np.ndarray:
    """(..., 2 columns) real parts then imaginary parts as ONNX pairs (..., columns, 2)."""
    return np.stack([product[..., :columns], product[..., columns:]], axis=-1)


def exact_dft(input, dft_length=None, *, axis=1, inverse=0, onesided=0):
    """dft's definition, exactly: one product of the signal's values along `axis` (the first
    min(size, dft_length) of them: the rest would be zero padding or is cut off; for the real
    inverse, the first dft_length // 2 + 1 frequencies) with the twiddle matrix of _twiddles,
    by exact_matmul's float64 product (a fixed order of summation, exact slice products), the
    inverse divided by dft_length in float64, rounded once to the input's type."""
    x = np.asarray(input)
    axis = _signal_axis(axis, x.ndim)
    size = x.shape[axis]
    complex_input = x.shape[-1] == 2
    if inverse and onesided:
        length = 2 * (size - 1) if dft_length is None else _int(dft_length)
        count = min(size, length // 2 + 1)
        matrix = _twiddles(count, length, length, "real inverse", complex_input)
        if not complex_input:
            matrix = matrix[:count]
        samples = _matmul64(_real_parts(x, axis, count), matrix) / length
        return _rounded(np.moveaxis(samples[..., None], -2, axis), x.dtype)
    length = size if dft_length is None else _int(dft_length)
    columns = length // 2 + 1 if onesided and not inverse else length
    count = min(size, length)
    kind = "inverse" if inverse else "forward"
    product = _matmul64(
        _real_parts(x, axis, count), _twiddles(count, columns, length, kind, complex_input)
    )
    if inverse:
        product /= length
    return _rounded(np.moveaxis(_as_pairs(product, columns), -2, axis), x.dtype)


def exact_stft(signal, frame_step, window=None, frame_length=None, *, onesided=1):
    """stft's definition, exactly: the frames times the window (float64 products), then each
    frame's transform as exact_dft computes it (one exact_matmul product with the twiddles),
    rounded once to the signal's type."""
    signal = np.asarray(signal)
    frames, length = _frames(signal, frame_step, window, frame_length)  # (batch, F, parts, L)
    frames = np.moveaxis(frames, -2, -1).astype(np.float64)  # (batch, F, L, parts)
    if window is not None:
        frames *= np.asarray(window).astype(np.float64)[:, None]
    columns = length // 2 + 1 if onesided else length
    complex_input = signal.shape[-1] == 2
    matrix = _twiddles(length, columns, length, "forward", complex_input)
    product = _matmul64(_real_parts(frames, 2, length), matrix)
    return _rounded(_as_pairs(product, columns), signal.dtype)


def _exact_cosine_sum(size, periodic: int, coefficients, output_datatype) -> np.ndarray:
    """_cosine_sum with cos(2 pi k n / N) from cos_sin_of_turns (k n mod N exact), the terms
    added in float64 in the order of the coefficients, rounded once to output_datatype (float
    types; integer types truncate, as the fast kernel's cast). A symmetric window of one point has
    N = 0: NaN, as 0/0 gives in the fast kernel."""
    count = _int(size)
    period = count if periodic else count - 1
    n = np.arange(count, dtype=np.int64)
    window = np.zeros(count, dtype=np.float64)
    for k, a in enumerate(coefficients):
        if period > 0:
            cosine = cos_sin_of_turns(k * n, period)[0]
        else:
            cosine = np.full(count, np.nan)
        window += (-1) ** k * a * cosine
    return _rounded(window, output_datatype)


def exact_hann_window(size, *, periodic=1, output_datatype=np.float32):
    """hann_window exactly: 0.5 - 0.5 cos(2 pi n / N) (see _exact_cosine_sum)."""
    return _exact_cosine_sum(size, periodic, (0.5, 0.5), output_datatype)


def exact_hamming_window(size, *, periodic=1, output_datatype=np.float32):
    """hamming_window exactly: 25/46 - 21/46 cos(2 pi n / N) (see _exact_cosine_sum)."""
    return _exact_cosine_sum(size, periodic, (25 / 46, 21 / 46), output_datatype)


def exact_blackman_window(size, *, periodic=1, output_datatype=np.float32):
    """blackman_window exactly: 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""
    return _exact_cosine_sum(size, periodic, (0.42, 0.5, 0.08), output_datatype)


_LN10 = float(exact_log(np.float64(10.0)))  # the library's log, not libm's: the same everywhere


def exact_mel_weight_matrix(
    num_mel_bins,
    dft_length,
    sample_rate,
    lower_edge_hertz,
    upper_edge_hertz,
    *,
    output_datatype=np.float32,
):
    """mel_weight_matrix with log10(v) = exact_log(v) / ln 10 and 10**x = exact_pow(10, x); every
    other step there is IEEE arithmetic, floor and comparisons, so the matrix is exact."""
    return _mel_weights(
        num_mel_bins,
        dft_length,
        sample_rate,
        lower_edge_hertz,
        upper_edge_hertz,
        output_datatype,
        lambda v: exact_log(v) / _LN10,
        lambda exponent: exact_pow(np.float64(10.0), exponent),
    )
