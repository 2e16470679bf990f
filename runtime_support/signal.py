"""Signal kernels: DFT, STFT, the cosine-sum windows and the mel filter bank.

Complex values are ONNX's pairs: a last axis of 2 (real, imaginary), or of 1 for a real signal.
Transforms run through numpy's FFT in complex128 for float64 signals, in complex64 for the others
(from numpy 2 the FFT keeps single precision; numpy 1.26 computes in double), rounded to the
input's type at the end.
Sizes and lengths may arrive as scalars or one-element tensors at run time. Not exact: numpy's
FFT, cos, log10 and power give machine-dependent bits.

The exact variant's kernels (exact_dft, exact_stft, the exact windows, exact_mel_weight_matrix)
compute the same definitions with the library's own functions: the transforms by
runtime_support.mixed_radix's FFT, whose every rounding is part of its definition (forward in
float64 rounded once to the signal's type, inverse in float32 or float64, as numpy 2 computes
complex64 and complex128 data); the windows take their cosines from
runtime_support.exact_trig.cos_sin_of_turns and the mel filter bank exact_log and exact_pow.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from runtime_support import mixed_radix
from runtime_support._kernels import kernel
from runtime_support._limits import check_allocation
from runtime_support.exact import _rounded
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


def _stft_signal(signal) -> np.ndarray:
    """STFT's signal as (batch, length, 1 or 2): a (batch, length) signal is real, as onnxruntime
    reads it (torch.onnx exports torch.stft of a 2-D input so)."""
    signal = np.asarray(signal)
    return signal[..., None] if signal.ndim == 2 else signal


def _pairs(values: np.ndarray, dtype) -> np.ndarray:
    return np.stack([values.real, values.imag], axis=-1).astype(dtype)


@kernel(exact=False, exact_twin="rt.exact_dft")
def dft(input, dft_length=None, *, axis=1, inverse=0, onesided=0):
    """ONNX DFT along `axis` (never the last, complex axis) of a real or complex signal, zero-padded
    or truncated to `dft_length`. onesided: the forward transform keeps the first
    dft_length // 2 + 1 frequencies; the inverse one takes those and returns a real signal of
    dft_length (by default 2 * (n - 1)). The inverse is normalized by 1 / dft_length."""
    axis = _signal_axis(axis, input.ndim)
    signal = _complex(input)
    size = signal.shape[axis]
    if dft_length is not None:  # the model's value: checked before numpy pads to it
        padded = list(signal.shape)
        padded[axis] = max(_int(dft_length), 0)
        check_allocation(padded, np.complex128)
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


@kernel(exact=False, exact_twin="rt.exact_stft")
def stft(signal, frame_step, window=None, frame_length=None, *, onesided=1):
    """ONNX STFT of a (batch, length, 1 or 2) signal: frames of frame_length samples every
    frame_step samples (floor((length - frame_length) / frame_step) + 1 of them), each times the
    window (by default all ones) and transformed; onesided keeps frame_length // 2 + 1 bins.
    Returns (batch, frames, bins, 2). A (batch, length) signal is real."""
    signal = _stft_signal(signal)
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
    check_allocation([max(count, 0)], np.float64)  # the model's size
    with np.errstate(invalid="ignore", divide="ignore"):  # size 1, symmetric: 0 / 0, as ONNX
        phase = 2 * np.pi * np.arange(count, dtype=np.float64) / (count if periodic else count - 1)
    window = np.zeros(count, dtype=np.float64)
    for k, a in enumerate(coefficients):
        window += (-1) ** k * a * np.cos(k * phase)
    return window.astype(output_datatype)


@kernel(exact=False, exact_twin="rt.exact_hann_window")
def hann_window(size, *, periodic=1, output_datatype=np.float32):
    """ONNX HannWindow: 0.5 - 0.5 cos(2 pi n / N)."""
    return _cosine_sum(size, periodic, (0.5, 0.5), output_datatype)


@kernel(exact=False, exact_twin="rt.exact_hamming_window")
def hamming_window(size, *, periodic=1, output_datatype=np.float32):
    """ONNX HammingWindow: 25/46 - 21/46 cos(2 pi n / N)."""
    return _cosine_sum(size, periodic, (25 / 46, 21 / 46), output_datatype)


@kernel(exact=False, exact_twin="rt.exact_blackman_window")
def blackman_window(size, *, periodic=1, output_datatype=np.float32):
    """ONNX BlackmanWindow: 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""
    return _cosine_sum(size, periodic, (0.42, 0.5, 0.08), output_datatype)


@kernel(exact=False, exact_twin="rt.exact_mel_weight_matrix")
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
    check_allocation([max(length // 2 + 1, 0), max(bins + 2, 0)], np.float64)
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
#
# The transforms are runtime_support.mixed_radix's FFT, whose every rounding is part of its
# definition. Which precision each form runs in follows numpy 2's FFT of a complex64 array (the
# ONNX backend data's generator): the forward transform in float64, rounded once to the signal's
# type; the inverse in the working type (float32 for float32 and the 16-bit types, float64 for
# float64) with the scale 1/L multiplied in at the end, as numpy 2's ifft does.

_FORWARD_TYPE = np.float64


def _working_type(dtype) -> type:
    return np.float64 if dtype == np.float64 else np.float32


def _fft(re: np.ndarray, im: np.ndarray, forward: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The DFT along the last axis (empty when the length is 0); the inverse divided by the
    length (a value of the arrays' type, multiplied in)."""
    length = re.shape[-1]
    if length == 0:
        return re, im
    dtype = re.dtype.type
    scale = dtype(1) if forward else dtype(1) / dtype(length)
    return mixed_radix.transform(re, im, forward, scale)


def _signal_parts(
    x: np.ndarray, axis: int, length: int, dtype=_FORWARD_TYPE
) -> tuple[np.ndarray, np.ndarray]:
    """Real and imaginary parts (in `dtype`) of an ONNX (..., 1) or (..., 2) signal with `axis`
    moved last, cut or zero-padded to `length` values."""
    parts = [np.moveaxis(x[..., j], axis, -1).astype(dtype) for j in range(x.shape[-1])]
    if len(parts) == 1:
        parts.append(np.zeros_like(parts[0]))
    size = parts[0].shape[-1]
    if size >= length:
        return parts[0][..., :length], parts[1][..., :length]
    pad = [(0, 0)] * (parts[0].ndim - 1) + [(0, length - size)]
    return np.pad(parts[0], pad), np.pad(parts[1], pad)


@kernel(exact=True)
def exact_dft(input, dft_length=None, *, axis=1, inverse=0, onesided=0):
    """dft's definition by mixed_radix's FFT: the forward transform in float64, rounded once to
    the input's type; the inverse in the working type, times 1/dft_length at the end. The real
    inverse builds the whole spectrum of length L from its first L // 2 + 1 frequencies
    (X[L - k] = conj(X[k]), the imaginary parts of X[0] and X[L / 2] dropped, as numpy's irfft
    does) and keeps the real part."""
    x = np.asarray(input)
    axis = _signal_axis(axis, x.ndim)
    size = x.shape[axis]
    if dft_length is not None:  # the model's value: checked before the signal is padded to it
        padded = list(x.shape)
        padded[axis] = max(_int(dft_length), 0)
        check_allocation(padded, np.complex128)
    working = _FORWARD_TYPE if not inverse else _working_type(x.dtype)
    if inverse and onesided:
        length = 2 * (size - 1) if dft_length is None else _int(dft_length)
        re, im = _signal_parts(x, axis, length // 2 + 1, working)
        im[..., 0] = 0
        if length % 2 == 0:
            im[..., length // 2] = 0
        mirror = slice((length - 1) // 2, 0, -1)  # frequencies L - k for k = (L - 1) // 2 .. 1
        re = np.concatenate([re, re[..., mirror]], axis=-1)[..., :length]
        im = np.concatenate([im, np.negative(im[..., mirror])], axis=-1)[..., :length]
        samples = _fft(re, im, forward=False)[0]
        return _rounded(np.moveaxis(samples[..., None], -2, axis), x.dtype)
    length = size if dft_length is None else _int(dft_length)
    re, im = _fft(*_signal_parts(x, axis, length, working), forward=not inverse)
    if onesided and not inverse:
        re, im = re[..., : length // 2 + 1], im[..., : length // 2 + 1]
    return _rounded(np.moveaxis(np.stack([re, im], axis=-1), -2, axis), x.dtype)


@kernel(exact=True)
def exact_stft(signal, frame_step, window=None, frame_length=None, *, onesided=1):
    """stft's definition: the frames times the window (float64 products), each frame transformed
    forward by mixed_radix's FFT in float64, rounded once to the signal's type."""
    signal = _stft_signal(signal)
    frames, length = _frames(signal, frame_step, window, frame_length)  # (batch, F, parts, L)
    re, im = _signal_parts(np.moveaxis(frames, -2, -1), 2, length)
    if window is not None:
        w = np.asarray(window).astype(np.float64)
        re *= w
        im *= w
    re, im = _fft(re, im)
    if onesided:
        re, im = re[..., : length // 2 + 1], im[..., : length // 2 + 1]
    return _rounded(np.stack([re, im], axis=-1), signal.dtype)


def _exact_cosine_sum(size, periodic: int, coefficients, output_datatype) -> np.ndarray:
    """_cosine_sum with cos(2 pi k n / N) from cos_sin_of_turns (k n mod N exact), the terms
    added in float64 in the order of the coefficients, rounded once to output_datatype (float
    types; integer types truncate, as the fast kernel's cast). A symmetric window of one point has
    N = 0: NaN, as 0/0 gives in the fast kernel."""
    count = _int(size)
    check_allocation([max(count, 0)], np.float64)  # the model's size
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


@kernel(exact=True)
def exact_hann_window(size, *, periodic=1, output_datatype=np.float32):
    """hann_window exactly: 0.5 - 0.5 cos(2 pi n / N) (see _exact_cosine_sum)."""
    return _exact_cosine_sum(size, periodic, (0.5, 0.5), output_datatype)


@kernel(exact=True)
def exact_hamming_window(size, *, periodic=1, output_datatype=np.float32):
    """hamming_window exactly: 25/46 - 21/46 cos(2 pi n / N) (see _exact_cosine_sum)."""
    return _exact_cosine_sum(size, periodic, (25 / 46, 21 / 46), output_datatype)


@kernel(exact=True)
def exact_blackman_window(size, *, periodic=1, output_datatype=np.float32):
    """blackman_window exactly: 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""
    return _exact_cosine_sum(size, periodic, (0.42, 0.5, 0.08), output_datatype)


_LN10 = float(exact_log(np.float64(10.0)))  # the library's log, not libm's: the same everywhere


@kernel(exact=True)
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
