"""Signal operators: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix.
Kernels in runtime_support/signal.py.

The fast kernels are not exact (numpy's FFT and cos/log10/power give machine-dependent bits); for
STFT, the windows and MelWeightMatrix the exact variant calls the exact_ kernels of the same
arguments, which compute the same definitions with the library's own twiddles, cosines, log and
pow and exact_matmul's fixed-order product. DFT stays refused (docs/exact-variant.md says why).
Lengths, sizes and axes known at compile time are written as literals; otherwise the kernels read
them at run time.
"""

from __future__ import annotations

import numpy as np

from onemodel_compile import ir
from onemodel_compile.errors import UnsupportedError
from onemodel_compile.ops.code import dtype_expr, py
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter


def _scalar_or_expr(view: NodeView, index: int) -> str | None:
    """Input `index` as an int literal when known at compile time, else its expression (None
    when absent)."""
    operand = view.input(index)
    if operand is None:
        return None
    if operand.const is not None:
        return py(int(np.asarray(operand.const).reshape(-1)[0]))
    return str(operand)


def _dft(view: NodeView, axis: str) -> str:
    args = [str(view.inputs[0])]
    length = _scalar_or_expr(view, 1)
    if length is not None:
        args.append(length)
    keywords = f"axis={axis}, inverse={view.attr('inverse')}, onesided={view.attr('onesided')}"
    return f"rt.dft({', '.join(args)}, {keywords})"


@emitter("DFT", since=17, until=19, exact=False)
def dft_17(view: NodeView) -> str:
    return _dft(view, py(view.attr("axis")))


@emitter("DFT", since=20, exact=False)
def dft_20(view: NodeView) -> str:
    """From opset 20 the axis is an input (default -2, the last signal axis)."""
    return _dft(view, _scalar_or_expr(view, 2) or "-2")


def _stft(view: NodeView, kernel: str) -> str:
    args = [str(view.inputs[0]), _scalar_or_expr(view, 1)]
    window, length = view.input(2), _scalar_or_expr(view, 3)
    if window is not None:
        args.append(str(window))
    if length is not None:
        args.append(f"frame_length={length}")
    return f"{kernel}({', '.join(args)}, onesided={view.attr('onesided')})"


@emitter("STFT", since=17, exact=False)
def stft(view: NodeView) -> str:
    return _stft(view, "rt.stft")


@emitter("STFT", since=17, variant="exact", exact=True)
def stft_exact(view: NodeView) -> str:
    return _stft(view, "rt.exact_stft")


def _window(kernel: str):
    def emit(view: NodeView) -> str:
        target = ir.element_dtype(view.attr("output_datatype"), view.node.label)
        return (
            f"rt.{kernel}({_scalar_or_expr(view, 0)}, periodic={view.attr('periodic')}, "
            f"output_datatype={dtype_expr(target)})"
        )

    return emit


emitter("HannWindow", since=17, exact=False)(_window("hann_window"))
emitter("HammingWindow", since=17, exact=False)(_window("hamming_window"))
emitter("BlackmanWindow", since=17, exact=False)(_window("blackman_window"))
emitter("HannWindow", since=17, variant="exact", exact=True)(_window("exact_hann_window"))
emitter("HammingWindow", since=17, variant="exact", exact=True)(_window("exact_hamming_window"))
emitter("BlackmanWindow", since=17, variant="exact", exact=True)(_window("exact_blackman_window"))


@emitter("MelWeightMatrix", since=17, exact=False)
def mel_weight_matrix(view: NodeView) -> str:
    """Settled semantics (docs/contract.md): edges evenly spaced in mel, bins floor((dft_length + 1) f /
    sample_rate) in double precision, triangles of peak 1. Float and double outputs only."""
    return _mel_weight_matrix(view, "rt.mel_weight_matrix")


@emitter("MelWeightMatrix", since=17, variant="exact", exact=True)
def mel_weight_matrix_exact(view: NodeView) -> str:
    return _mel_weight_matrix(view, "rt.exact_mel_weight_matrix")


def _mel_weight_matrix(view: NodeView, kernel: str) -> str:
    target = ir.element_dtype(view.attr("output_datatype"), view.node.label)
    if target.name not in ("float32", "float64"):
        raise UnsupportedError(
            f"{view.node.label}: MelWeightMatrix output type {target.name} is not supported "
            f"(float and double only)"
        )
    args = [_scalar_or_expr(view, i) for i in range(3)] + [str(view.inputs[3]), str(view.inputs[4])]
    return f"{kernel}({', '.join(args)}, output_datatype={dtype_expr(target)})"
