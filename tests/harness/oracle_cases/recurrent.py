"""Oracle cases of the recurrent family (onemodel_compile/ops/recurrent.py): RNN, GRU, LSTM.

Each operator forward, reverse and bidirectional; every activation function with its alpha and
beta; sequence_lens (shorter sequences, reverse within a sequence's length, a sequence of length
0); initial states; LSTM peepholes; clip; GRU linear_before_reset; LSTM input_forget; optional
outputs left out; opsets 7, 14 and 22.

Not covered here, with the reason:
- float16 and float64: onnxruntime 1.31.1 has float32 CPU kernels only;
- layout 1 (batch first): onnxruntime refuses it ("Batchwise recurrent operations are not
  supported"); the backend cases test_*_batchwise cover it;
- opsets above 26: onnxruntime 1.31.1 loads the default domain up to opset 26 only;
- default alpha of ThresholdedRelu, Affine and ScaledTanh: onnxruntime takes 0 where the ONNX
  operators' defaults apply (ThresholdedRelu alpha 1.0); the case below marks the difference.
"""

from __future__ import annotations

from tests.harness.oracle import TRANSCENDENTAL, Case, c, v, w, x

OPERATORS = ("RNN", "GRU", "LSTM")

_NOTE = (
    TRANSCENDENTAL
    + "; "
    + ("float32 dot products of the recurrence, summed in another order by MLAS")
)
_TOL = {"rtol": 1e-4, "atol": 1e-5, "note": _NOTE}


def _weights(gates: int, directions: int, hidden: int, inputs: int, *, bias=True, scale=0.5):
    """W, R and (optionally) B specs as initializers."""
    specs = (
        w(directions, gates * hidden, inputs, scale=scale),
        w(directions, gates * hidden, hidden, scale=scale),
    )
    if bias:
        specs += (w(directions, 2 * gates * hidden, scale=scale),)
    return specs


def _state(directions, batch, hidden):
    return x(directions, batch, hidden)


CASES = [
    # RNN (gates 1)
    Case(
        "rnn7_forward_defaults",
        "RNN",
        7,
        (x(5, "n", 3), *_weights(1, 1, 4, 3, bias=False)),
        attrs={"hidden_size": 4},
        dims={"n": (1, 3)},
        outputs=2,
        **_TOL,
    ),
    Case(
        "rnn14_reverse_bias_initial_state",
        "RNN",
        14,
        (x(4, 2, 3), *_weights(1, 1, 5, 3), None, _state(1, 2, 5)),
        attrs={"hidden_size": 5, "direction": "reverse"},
        outputs=2,
        **_TOL,
    ),
    Case(
        "rnn22_bidirectional_relu_tanh",
        "RNN",
        22,
        (x(3, 2, 4), *_weights(1, 2, 3, 4)),
        attrs={"hidden_size": 3, "direction": "bidirectional", "activations": ["Relu", "Tanh"]},
        outputs=2,
        **_TOL,
    ),
    Case(
        "rnn14_bidirectional_sequence_lens",
        "RNN",
        14,
        (x(5, 3, 2), *_weights(1, 2, 4, 2), v([5, 2, 0], "int32"), _state(2, 3, 4)),
        attrs={"hidden_size": 4, "direction": "bidirectional"},
        outputs=2,
        **_TOL,
    ),
    Case(
        "rnn22_affine_clip",
        "RNN",
        22,
        (x(4, 2, 3, scale=3.0), *_weights(1, 1, 3, 3, scale=1.5)),
        attrs={
            "hidden_size": 3,
            "activations": ["Affine"],
            "activation_alpha": [0.7],
            "activation_beta": [-0.2],
            "clip": 1.5,
        },
        outputs=2,
        **_TOL,
    ),
    Case(
        "rnn14_leakyrelu_softsign_y_h_only",
        "RNN",
        14,
        (x(3, 2, 2), *_weights(1, 2, 3, 2)),
        attrs={
            "hidden_size": 3,
            "direction": "bidirectional",
            "activations": ["LeakyRelu", "Softsign"],
            "activation_alpha": [0.2],
        },
        outputs=2,
        skip_outputs=(0,),
        **_TOL,
    ),
    Case(
        "rnn22_thresholdedrelu_default_alpha",
        "RNN",
        22,
        (x(3, 2, 2, scale=2.0), *_weights(1, 1, 4, 2, scale=1.0)),
        attrs={"hidden_size": 4, "activations": ["ThresholdedRelu"]},
        outputs=2,
        divergence="ThresholdedRelu without activation_alpha: the ONNX operator's default alpha "
        "1.0 applies; onnxruntime takes 0",
        **_TOL,
    ),
    # GRU (gates z, r, h)
    Case(
        "gru7_forward_bias",
        "GRU",
        7,
        (x(4, "n", 3), *_weights(3, 1, 5, 3)),
        attrs={"hidden_size": 5},
        dims={"n": (1, 3)},
        outputs=2,
        **_TOL,
    ),
    Case(
        "gru14_linear_before_reset_bidirectional",
        "GRU",
        14,
        (x(3, 2, 4), *_weights(3, 2, 3, 4), None, _state(2, 2, 3)),
        attrs={"hidden_size": 3, "direction": "bidirectional", "linear_before_reset": 1},
        outputs=2,
        **_TOL,
    ),
    Case(
        "gru22_reverse_sequence_lens",
        "GRU",
        22,
        (x(4, 3, 2), *_weights(3, 1, 4, 2), v([2, 4, 1], "int32"), _state(1, 3, 4)),
        attrs={"hidden_size": 4, "direction": "reverse"},
        outputs=2,
        **_TOL,
    ),
    Case(
        "gru14_hardsigmoid_elu_clip",
        "GRU",
        14,
        (x(4, 2, 3, scale=2.0), *_weights(3, 1, 3, 3, scale=1.0)),
        attrs={
            "hidden_size": 3,
            "activations": ["HardSigmoid", "Elu"],
            "activation_alpha": [0.3, 0.8],
            "activation_beta": [0.4],
            "clip": 2.0,
        },
        outputs=2,
        **_TOL,
    ),
    Case(
        "gru22_bidirectional_two_sets_sequence_lens",
        "GRU",
        22,
        (x(5, 3, 2), *_weights(3, 2, 2, 2), c([5, 3, 0], "int32")),
        attrs={
            "hidden_size": 2,
            "direction": "bidirectional",
            "activations": ["Sigmoid", "Softplus", "sigmoid", "ScaledTanh"],
            "activation_alpha": [1.5],
            "activation_beta": [0.5],
        },
        outputs=2,
        **_TOL,
    ),
    Case(
        "gru14_linear_before_reset_y_only",
        "GRU",
        14,
        (x(3, 1, 3), *_weights(3, 1, 2, 3)),
        attrs={"hidden_size": 2, "linear_before_reset": 1},
        **_TOL,
    ),
    # LSTM (gates i, o, f, c; peepholes i, o, f)
    Case(
        "lstm7_peepholes_all_inputs",
        "LSTM",
        7,
        (
            x(4, 2, 3),
            *_weights(4, 1, 3, 3),
            v([4, 4], "int32"),
            _state(1, 2, 3),
            _state(1, 2, 3),
            w(1, 9, scale=0.5),
        ),
        attrs={"hidden_size": 3},
        outputs=3,
        **_TOL,
    ),
    Case(
        "lstm14_bidirectional_sequence_lens_peepholes",
        "LSTM",
        14,
        (
            x(4, 3, 2),
            *_weights(4, 2, 3, 2),
            v([4, 1, 3], "int32"),
            _state(2, 3, 3),
            _state(2, 3, 3),
            w(2, 9, scale=0.5),
        ),
        attrs={"hidden_size": 3, "direction": "bidirectional"},
        outputs=3,
        **_TOL,
    ),
    Case(
        "lstm22_reverse_input_forget_clip",
        "LSTM",
        22,
        (x(5, 2, 3, scale=2.0), *_weights(4, 1, 4, 3, scale=1.0)),
        attrs={"hidden_size": 4, "direction": "reverse", "input_forget": 1, "clip": 0.8},
        outputs=3,
        **_TOL,
    ),
    Case(
        "lstm14_activations_alpha_beta",
        "LSTM",
        14,
        (x(4, 2, 2), *_weights(4, 2, 3, 2)),
        attrs={
            "hidden_size": 3,
            "direction": "bidirectional",
            "activations": [
                "HardSigmoid",
                "LeakyRelu",
                "ScaledTanh",
                "Sigmoid",
                "Relu",
                "Softplus",
            ],
            "activation_alpha": [0.25, 0.1, 0.9],
            "activation_beta": [0.45, 1.2],
        },
        outputs=3,
        **_TOL,
    ),
    Case(
        "lstm22_zero_length_sequence_y_c_only",
        "LSTM",
        22,
        (
            x(3, 3, 2),
            *_weights(4, 1, 2, 2),
            c([0, 3, 2], "int32"),
            _state(1, 3, 2),
            _state(1, 3, 2),
        ),
        attrs={"hidden_size": 2},
        outputs=3,
        skip_outputs=(0, 1),
        **_TOL,
    ),
    Case(
        "lstm7_affine_thresholdedrelu_elu_clip",
        "LSTM",
        7,
        (x(3, 2, 3, scale=2.0), *_weights(4, 1, 3, 3, scale=1.0)),
        attrs={
            "hidden_size": 3,
            "activations": ["Affine", "ThresholdedRelu", "Elu"],
            "activation_alpha": [0.3, 0.2, 0.6],
            "activation_beta": [0.5],
            "clip": 3.0,
        },
        outputs=3,
        **_TOL,
    ),
]
