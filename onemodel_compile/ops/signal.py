"""Signal operators: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix.
Kernels in runtime_support/signal.py.

The fast kernels are not exact (numpy's FFT and cos/log10/power give machine-dependent bits); DFT,
STFT, the windows and MelWeightMatrix are exact through their kernels' exact twins, which compute
the same definitions with the library's own FFT (its order of operations part of its definition),
twiddles, cosines, log and pow. Lengths, sizes and axes known at compile time are written as
literals; otherwise the kernels read them at run time.
"""

from __future__ import annotations

import numpy as np

from onemodel_compile import ir
from onemodel_compile.errors import UnsupportedError
from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import call
from onemodel_compile.ops.registry import emitter


def _scalar_or_operand(view: NodeView, index: int):
    """Input `index` as an int when known at compile time, else the operand (None when
    absent)."""
    operand = view.input(index)
    if operand is None:
        return None
    if operand.const is not None:
        return int(np.asarray(operand.const).reshape(-1)[0])
    return operand


def _dft(view: NodeView, axis) -> pyir.Expr:
    args = [view.inputs[0]]
    length = _scalar_or_operand(view, 1)
    if length is not None:
        args.append(length)
    inverse, onesided = view.attr("inverse"), view.attr("onesided")
    return call("rt.dft", *args, axis=axis, inverse=inverse, onesided=onesided)


# Exact through the kernel's twin rt.exact_dft (a fixed-order FFT: docs/exact-variant.md).
@emitter("DFT", since=17, until=19, exact=True)
def dft_17(view: NodeView) -> pyir.Expr:
    return _dft(view, view.attr("axis"))


@emitter("DFT", since=20, exact=True)
def dft_20(view: NodeView) -> pyir.Expr:
    """From opset 20 the axis is an input (default -2, the last signal axis)."""
    axis = _scalar_or_operand(view, 2)
    return _dft(view, -2 if axis is None else axis)


@emitter("STFT", since=17, exact=True)
def stft(view: NodeView) -> pyir.Expr:
    args = [view.inputs[0], _scalar_or_operand(view, 1)]
    window, length = view.input(2), _scalar_or_operand(view, 3)
    if window is not None:
        args.append(window)
    keywords = {} if length is None else {"frame_length": length}
    return call("rt.stft", *args, **keywords, onesided=view.attr("onesided"))


def _window(kernel: str):
    def emit(view: NodeView) -> pyir.Expr:
        target = ir.element_dtype(view.attr("output_datatype"), view.node.label)
        size = _scalar_or_operand(view, 0)
        return call(f"rt.{kernel}", size, periodic=view.attr("periodic"), output_datatype=target)

    return emit


emitter("HannWindow", since=17, exact=True)(_window("hann_window"))
emitter("HammingWindow", since=17, exact=True)(_window("hamming_window"))
emitter("BlackmanWindow", since=17, exact=True)(_window("blackman_window"))


@emitter("MelWeightMatrix", since=17, exact=True)
def mel_weight_matrix(view: NodeView) -> pyir.Expr:
    """Settled semantics (docs/contract.md): edges evenly spaced in mel, bins floor((dft_length + 1) f /
    sample_rate) in double precision, triangles of peak 1. Float and double outputs only."""
    target = ir.element_dtype(view.attr("output_datatype"), view.node.label)
    if target.name not in ("float32", "float64"):
        raise UnsupportedError(
            f"{view.node.label}: MelWeightMatrix output type {target.name} is not supported "
            f"(float and double only)"
        )
    args = [_scalar_or_operand(view, i) for i in range(3)] + [view.inputs[3], view.inputs[4]]
    return call("rt.mel_weight_matrix", *args, output_datatype=target)
