"""Oracle cases of the activation family (onemodel_compile/ops/activation.py).

SwiGLU (opset 28) has no case: onnxruntime 1.31.1 loads the default domain up to opset 26 only.
"""

from __future__ import annotations

import numpy as np

from tools.ops_coverage_oracle import TRANSCENDENTAL, Case, c, v, w, x

OPERATORS = (
    "Celu",
    "Elu",
    "HardSigmoid",
    "HardSwish",
    "Hardmax",
    "Mish",
    "PRelu",
    "Selu",
    "Shrink",
    "Softplus",
    "Softsign",
    "Swish",
    "ThresholdedRelu",
)

_B = {"n": (1, 3)}
_NCHW = {"n": (1, 2), "c": (1, 4), "h": (2, 5), "w": (2, 5)}

CASES = [
    # exponential linear units
    Case("celu_special", "Celu", 12, (x("n", 7, scale=3.0, special=True),), dims=_B,
         rtol=1e-5, note=TRANSCENDENTAL),
    Case("celu_alpha", "Celu", 12, (x(3, 4, 5, gen="uniform", low=-20, high=20),),
         attrs={"alpha": 2.5}, rtol=1e-5, note=TRANSCENDENTAL),
    Case("celu_small_alpha_overflow", "Celu", 12, (x(4, 6, gen="uniform", low=-5, high=5),),
         attrs={"alpha": 0.05}, rtol=1e-5, note=TRANSCENDENTAL + "; exp(x / alpha) overflows"),
    Case("elu_special", "Elu", 7, (x("n", 8, scale=3.0, special=True),), dims=_B,
         rtol=1e-5, note=TRANSCENDENTAL),
    Case("elu_alpha", "Elu", 22, (x(3, 5, scale=4.0),), attrs={"alpha": 0.3},
         rtol=1e-5, note=TRANSCENDENTAL),
    Case("elu_empty", "Elu", 7, (x(0, 4),)),
    Case("elu_wide", "Elu", 22, (x(4, 8, gen="uniform", low=-120, high=120),), attrs={"alpha": 2.0},
         rtol=1e-5, note=TRANSCENDENTAL),
    Case("selu_special", "Selu", 7, (x("n", 3, 4, scale=3.0, special=True),), dims=_B,
         rtol=1e-5, note=TRANSCENDENTAL),
    Case("selu_attributes", "Selu", 22, (x(2, 3, 4, gen="uniform", low=-100, high=50),),
         attrs={"alpha": 1.5, "gamma": 0.75}, rtol=1e-5, note=TRANSCENDENTAL),
    # hard activations (exact)
    Case("hardsigmoid_default", "HardSigmoid", 7, (x("n", 9, scale=5.0, special=True),), dims=_B),
    Case("hardsigmoid_attributes", "HardSigmoid", 22, (x(3, 4, 5, scale=3.0),),
         attrs={"alpha": 0.3, "beta": 0.4}),
    Case("hardsigmoid_negative_alpha", "HardSigmoid", 7, (x(4, 6),),
         attrs={"alpha": -0.7, "beta": 0.25}),
    Case("hardswish_special", "HardSwish", 14, (x("n", 10, scale=4.0, special=True),), dims=_B),
    Case("hardswish_wide", "HardSwish", 22, (x(3, 7, gen="uniform", low=-8, high=8),)),
    Case("hardswish_empty", "HardSwish", 14, (x(2, 0),)),
    Case("thresholdedrelu_default", "ThresholdedRelu", 10, (x("n", 9, scale=2.0, special=True),),
         dims=_B),
    Case("thresholdedrelu_negative_alpha", "ThresholdedRelu", 22, (x(3, 4, 5),),
         attrs={"alpha": -0.5}),
    Case("thresholdedrelu_empty", "ThresholdedRelu", 10, (x(4, 0),), attrs={"alpha": 0.25}),
    Case("softsign_special", "Softsign", 7, (x("n", 8, scale=10.0, special=True),), dims=_B),
    Case("softsign_wide", "Softsign", 22, (x(3, 6, scale=1e20),)),
    Case("shrink_default", "Shrink", 9, (x("n", 10, special=True),), dims=_B),
    Case("shrink_attributes", "Shrink", 9, (x(3, 4, 5, scale=3.0),),
         attrs={"bias": 0.75, "lambd": 1.25}),
    Case("shrink_int32", "Shrink", 9, (x(4, 6, dtype="int32", gen="int", low=-10, high=10),),
         attrs={"bias": 2.0, "lambd": 3.0}),
    Case("shrink_int8_fractional", "Shrink", 9, (x(5, 5, dtype="int8", gen="int", low=-9, high=9),),
         attrs={"bias": 1.5, "lambd": 2.5}),
    Case("shrink_float64", "Shrink", 9, (x(6, dtype="float64", scale=2.0),),
         attrs={"bias": -0.5, "lambd": 0.25},
         divergence="onnxruntime rounds float64 input through float32 before shifting it; the "
                    "onnx reference and the compiler keep float64"),
    # PRelu: the slope broadcasts unidirectionally to X
    Case("prelu_channel_slope", "PRelu", 7,
         (x("n", "c", "h", "w", special=True), w("c", 1, 1)), dims=_NCHW),
    Case("prelu_scalar_slope", "PRelu", 9, (x(3, 4), c([0.25], "float32"))),
    Case("prelu_last_axis_runtime", "PRelu", 16, (x(2, 3, 5), x(5))),
    Case("prelu_same_shape_float64", "PRelu", 16, (x(3, 4, dtype="float64"), x(3, 4, dtype="float64"))),
    Case("prelu_empty", "PRelu", 16, (x(0, 3), w(3))),
    # transcendental
    Case("softplus_special", "Softplus", 7, (x("n", 9, scale=5.0, special=True),), dims=_B,
         rtol=1e-5, note=TRANSCENDENTAL),
    Case("softplus_wide", "Softplus", 22, (x(4, 8, gen="uniform", low=-120, high=120),),
         rtol=1e-5, note=TRANSCENDENTAL + "; exp(x) overflows for the naive formula"),
    Case("mish_special", "Mish", 18, (x("n", 8, scale=4.0, special=True),), dims=_B,
         rtol=1e-5, note=TRANSCENDENTAL),
    Case("mish_wide", "Mish", 22, (x(3, 4, 5, gen="uniform", low=-100, high=100),),
         rtol=1e-5, note=TRANSCENDENTAL),
    Case("swish_special", "Swish", 24, (x("n", 8, scale=4.0, special=True),), dims=_B,
         rtol=1e-5, note=TRANSCENDENTAL),
    Case("swish_alpha", "Swish", 24, (x(3, 4, 5, gen="uniform", low=-100, high=100),),
         attrs={"alpha": 0.4}, rtol=1e-5, note=TRANSCENDENTAL),
    # Hardmax: opset 11 coerces X to 2-D at `axis` (default 1), 13 works along `axis` (default -1)
    Case("hardmax11_default_axis", "Hardmax", 11, (x("n", 3, 4),), dims=_B),
    Case("hardmax11_axis0_ties", "Hardmax", 11,
         (x(3, 2, 2, dtype="float32", gen="int", low=0, high=2),), attrs={"axis": 0}),
    Case("hardmax11_negative_axis", "Hardmax", 11, (x(2, 3, 4, 2),), attrs={"axis": -2}),
    Case("hardmax11_dynamic", "Hardmax", 11, (x("n", 3, 2, dynamic=True),), attrs={"axis": 2},
         dims=_B),
    Case("hardmax13_default_axis_ties", "Hardmax", 13,
         (x("n", 4, 5, gen="int", low=0, high=3),), dims=_B),
    Case("hardmax13_axis1", "Hardmax", 13, (x(2, 5, 3, special="inf"),), attrs={"axis": 1}),
    Case("hardmax13_axis0_dynamic", "Hardmax", 13, (x("n", 4, dynamic=True),), attrs={"axis": 0},
         dims={"n": (2, 5)}),
    Case("hardmax13_empty", "Hardmax", 13, (x(0, 4),)),
    Case("hardmax13_nan", "Hardmax", 13,
         (v([[1.0, np.nan, 3.0], [np.nan, 0.0, -1.0], [2.0, 5.0, np.nan]], "float32"),),
         divergence="NaN: onnxruntime skips it after the first element and gives an all-zero row "
                    "when it comes first; the onnx reference (np.argmax) and the compiler mark the "
                    "first NaN as the maximum. Backend data have no NaN."),
]
