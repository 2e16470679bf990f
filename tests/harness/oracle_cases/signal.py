"""Oracle cases of the signal family (onemodel_compile/ops/signal.py): DFT, STFT, the windows and
MelWeightMatrix. The exact variant refuses all of them.

Not covered here, with the reason:
- bfloat16: onnxruntime's Python binding takes and returns no bfloat16 arrays;
- MelWeightMatrix with float64 or float16 edge frequencies: onnxruntime 1.31.1 has no kernel.
"""

from __future__ import annotations

import onnx

from tests.harness.oracle import TRANSCENDENTAL, Case, c, v, w, x

OPERATORS = (
    "DFT",
    "STFT",
    "HannWindow",
    "HammingWindow",
    "BlackmanWindow",
    "MelWeightMatrix",
)

T = onnx.TensorProto
_B = {"n": (1, 3)}
FFT = (
    "float32 FFTs: onnxruntime's and numpy's sum in different orders, so a value near zero can "
    "differ by a few ulps of the signal's magnitude"
)

CASES = [
    # DFT, opset 17: axis attribute
    Case("dft17_real", "DFT", 17, (x("n", 8, 1),), dims=_B, atol=1e-4, note=FFT),
    Case(
        "dft17_complex_axis2",
        "DFT",
        17,
        (x(2, 3, "k", 2),),
        attrs={"axis": 2},
        dims={"k": (3, 9)},
        atol=1e-4,
        note=FFT,
    ),
    Case(
        "dft17_inverse_negative_axis",
        "DFT",
        17,
        (x(2, 6, 4, 2),),
        attrs={"axis": -3, "inverse": 1},
        atol=1e-5,
        note=FFT,
    ),
    Case(
        "dft17_onesided_padded",
        "DFT",
        17,
        (x("n", 7, 1), c(12)),
        attrs={"onesided": 1},
        dims=_B,
        atol=1e-4,
        note=FFT,
    ),
    # DFT, opset 20: axis input
    Case(
        "dft20_default_axis", "DFT", 20, (x(3, "k", 2),), dims={"k": (2, 10)}, atol=1e-4, note=FFT
    ),
    Case(
        "dft20_runtime_axis_truncated", "DFT", 20, (x(2, 9, 5, 1), v(6), v(1)), atol=1e-4, note=FFT
    ),
    Case(
        "dft20_negative_axis_padded",
        "DFT",
        20,
        (x(2, 5, 3, 2), c(8, "int32"), c(-3)),
        atol=1e-4,
        note=FFT,
    ),
    Case(
        "dft20_irfft",
        "DFT",
        20,
        (x(2, 5, 2), None, c(1)),
        attrs={"inverse": 1, "onesided": 1},
        atol=1e-5,
        note=FFT,
    ),
    Case(
        "dft20_irfft_odd_length",
        "DFT",
        20,
        (x(3, 6, 2), c(9), c(-2)),
        attrs={"inverse": 1, "onesided": 1},
        atol=1e-5,
        note=FFT,
        divergence="IRFFT of 6 bins to an odd length 9: onnxruntime takes bin 5 as given; the "
        "compiler follows the ONNX reference (numpy's irfft), which uses the first "
        "9 // 2 + 1 = 5 bins and sets bin 5 to the conjugate of bin 4 (the backend "
        "data, even lengths only, agree with both)",
    ),
    Case("dft20_empty_batch", "DFT", 20, (x(0, 8, 1),)),
    Case(
        "dft20_float64_inverse",
        "DFT",
        20,
        (x(3, 7, 2, dtype="float64"), None, c(-2)),
        attrs={"inverse": 1},
        rtol=1e-6,
        atol=1e-7,
        note="onnxruntime's float64 DFT is good to float32 precision only (a 40-digit sum "
        "agrees with numpy's to the last bit)",
    ),
    # STFT
    Case(
        "stft_hann_window",
        "STFT",
        17,
        (x("n", 64, 1), c(8), w(16, gen="uniform", low=0, high=1)),
        dims=_B,
        atol=1e-4,
        note=FFT,
    ),
    Case(
        "stft_complex_twosided",
        "STFT",
        17,
        (x(2, 40, 2), c(5), None, c(10)),
        attrs={"onesided": 0},
        atol=1e-4,
        note=FFT,
    ),
    Case(
        "stft_runtime_step_and_length",
        "STFT",
        17,
        (x(1, 50, 1), v(7), None, v(12)),
        atol=1e-4,
        note=FFT,
    ),
    Case(
        "stft_float64_window",
        "STFT",
        17,
        (x(2, 33, 1, dtype="float64"), c(3, "int32"), x(9, dtype="float64")),
    ),
    # windows
    Case("hann_periodic", "HannWindow", 17, (c(16),), rtol=1e-5, atol=1e-6, note=TRANSCENDENTAL),
    Case(
        "hann_symmetric_double_runtime",
        "HannWindow",
        17,
        (v(11, "int32"),),
        attrs={"periodic": 0, "output_datatype": T.DOUBLE},
        rtol=1e-6,
        atol=1e-7,
        note="onnxruntime computes the window in float",
    ),
    Case("hann_symmetric_size_one", "HannWindow", 17, (c(1),), attrs={"periodic": 0}),  # 0/0: NaN
    Case(
        "hamming_periodic_runtime",
        "HammingWindow",
        17,
        (v(25),),
        rtol=1e-5,
        atol=1e-6,
        note=TRANSCENDENTAL,
    ),
    Case(
        "hamming_symmetric_float16",
        "HammingWindow",
        17,
        (c(7, "int32"),),
        attrs={"periodic": 0, "output_datatype": T.FLOAT16},
    ),
    Case(
        "blackman_periodic",
        "BlackmanWindow",
        17,
        (c(32),),
        rtol=1e-5,
        atol=1e-6,
        note=TRANSCENDENTAL,
    ),
    Case(
        "blackman_symmetric_double_runtime",
        "BlackmanWindow",
        17,
        (v(9),),
        attrs={"periodic": 0, "output_datatype": T.DOUBLE},
        rtol=1e-6,
        atol=1e-7,
        note="onnxruntime computes the window in float",
    ),
    # MelWeightMatrix
    Case(
        "mel_weight_matrix_speech",
        "MelWeightMatrix",
        17,
        (c(20), c(512), c(16000), c(125.0, "float32"), c(7600.0, "float32")),
    ),
    Case(
        "mel_weight_matrix_runtime_double",
        "MelWeightMatrix",
        17,
        (
            v(10, "int32"),
            v(256, "int32"),
            v(8000, "int32"),
            v(0.0, "float32"),
            v(4000.0, "float32"),
        ),
        attrs={"output_datatype": T.DOUBLE},
    ),
]
