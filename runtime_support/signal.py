"""Signal kernels: DFT, STFT, the cosine-sum windows and the mel filter bank.

Complex values are ONNX's pairs: a last axis of 2 (real, imaginary), or of 1 for a real signal.
Transforms run through numpy's FFT in complex128 for float64 signals, in complex64 for the others
(from numpy 2 the FFT keeps single precision; numpy 1.26 computes in double), rounded to the
input's type at the end.
Sizes and lengths may arrive as scalars or one-element tensors at run time. Not exact: numpy's
FFT, cos, log10 and power give machine-dependent bits.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from runtime_support._limits import check_allocation

__all__ = [
    "blackman_window",
    "dft",
    "hamming_window",
    "hann_window",
    "mel_weight_matrix",
    "stft",
]


def _int(value) -> int:
    return int(np.asarray(value).reshape(-1)[0])


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
    rank = input.ndim
    axis = _int(axis)
    if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        raise ValueError(f"DFT: axis {axis} is out of range for an input of rank {rank}")
    axis %= rank
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


def stft(signal, frame_step, window=None, frame_length=None, *, onesided=1):
    """ONNX STFT of a (batch, length, 1 or 2) signal: frames of frame_length samples every
    frame_step samples (floor((length - frame_length) / frame_step) + 1 of them), each times the
    window (by default all ones) and transformed; onesided keeps frame_length // 2 + 1 bins.
    Returns (batch, frames, bins, 2)."""
    step = _int(frame_step)
    if frame_length is not None:
        length = _int(frame_length)
    else:
        length = signal.shape[1] if window is None else window.shape[0]
    if window is not None and window.shape[0] != length:
        raise ValueError(f"STFT: a window of {window.shape[0]} for frames of {length}")
    frames = sliding_window_view(_complex(signal), length, axis=1)[:, ::step]
    if window is not None:
        frames = frames * window.astype(frames.real.dtype)
    spectrum = np.fft.fft(frames, axis=-1)
    if onesided:
        spectrum = spectrum[..., : length // 2 + 1]
    return _pairs(spectrum, signal.dtype)


def _cosine_sum(size, periodic: int, coefficients, output_datatype) -> np.ndarray:
    """sum_k (-1)^k a_k cos(2 pi k n / N) for n < size, N = size (periodic) or size - 1."""
    (count,) = check_allocation([max(_int(size), 0)], np.float64)
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
    bins, length, rate = _int(num_mel_bins), _int(dft_length), _int(sample_rate)
    check_allocation([max(length // 2 + 1, 0), max(bins + 2, 0)], np.float64)
    low, high = (
        2595 * np.log10(1 + float(np.asarray(f).reshape(-1)[0]) / 700)
        for f in (lower_edge_hertz, upper_edge_hertz)
    )
    mel = np.arange(bins + 2, dtype=np.float64) * ((high - low) / (bins + 2)) + low
    hertz = 700 * (np.power(10.0, mel / 2595) - 1)
    edges = np.floor((length + 1) * hertz / rate).astype(np.int64)
    left, center, right = edges[:-2], edges[1:-1], edges[2:]
    j = np.arange(length // 2 + 1, dtype=np.int64)[:, None]
    rising = (j - left) / np.maximum(center - left, 1)
    falling = (right - j) / np.maximum(right - center, 1)
    weights = np.where((left <= j) & (j < center), rising, 0.0)
    weights = np.where((center < j) & (j < right), falling, weights)
    return np.where(j == center, 1.0, weights).astype(output_datatype)
