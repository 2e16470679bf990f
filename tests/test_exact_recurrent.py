"""RNN, GRU and LSTM kernels (runtime_support/recurrent.py), both variants.

Expected values come from an independent float64 reference written here from the ONNX operator
definitions (one batch element and one time step at a time); the exact kernels are also checked
for properties that only order-fixed, machine-independent arithmetic has: a sequence's result does
not depend on the other sequences of the batch, and the bits are the same under other SIMD levels,
BLAS kernels and thread counts.
"""

from __future__ import annotations

import inspect
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import runtime_support as rt
from onemodel_compile.compiler import generate, load_compiled
from tests.harness.bit_identity import NO_AVX2, run_json_script

# --- the reference -------------------------------------------------------------------------------


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# name: f(x, alpha, beta), with the defaults ONNX's operators give (see recurrent.py's docstring)
REFERENCE_ACTIVATIONS = {
    "Relu": (lambda x, a, b: np.maximum(x, 0.0), None, None),
    "Tanh": (lambda x, a, b: np.tanh(x), None, None),
    "Sigmoid": (lambda x, a, b: _sigmoid(x), None, None),
    "Affine": (lambda x, a, b: a * x + b, 1.0, 0.0),
    "LeakyRelu": (lambda x, a, b: np.where(x >= 0, x, a * x), 0.01, None),
    "ThresholdedRelu": (lambda x, a, b: np.where(x > a, x, 0.0), 1.0, None),
    "ScaledTanh": (lambda x, a, b: a * np.tanh(b * x), 1.0, 1.0),
    "HardSigmoid": (lambda x, a, b: np.clip(a * x + b, 0.0, 1.0), 0.2, 0.5),
    "Elu": (lambda x, a, b: np.where(x >= 0, x, a * (np.exp(np.minimum(x, 0.0)) - 1)), 1.0, None),
    "Softsign": (lambda x, a, b: x / (1 + np.abs(x)), None, None),
    "Softplus": (lambda x, a, b: np.logaddexp(0.0, x), None, None),
}


def _reference_functions(names, alphas, betas):
    alphas, betas = list(alphas or ()), list(betas or ())
    functions = []
    for name in names:
        f, alpha, beta = REFERENCE_ACTIVATIONS[name]
        if alpha is not None and alphas:
            alpha = alphas.pop(0)
        if beta is not None and betas:
            beta = betas.pop(0)
        functions.append(
            lambda x, f=f, a=float(np.float32(alpha or 0)), b=float(np.float32(beta or 0)): f(
                x, a, b
            )
        )
    return functions


def reference(
    op,
    X,
    W,
    R,
    B,
    lengths,
    H0,
    C0,
    P,
    *,
    activations,
    alpha=None,
    beta=None,
    clip=None,
    direction="forward",
    linear_before_reset=0,
    input_forget=0,
):
    """Y, Y_h (and Y_c for LSTM) in float64, layout 0."""
    X, W, R, B = (np.asarray(a, np.float64) for a in (X, W, R, B))
    steps, batch, _ = X.shape
    dirs, n = W.shape[0], R.shape[-1]
    per = {"RNN": 1, "GRU": 2, "LSTM": 3}[op]
    functions = _reference_functions(activations, alpha, beta)
    if len(functions) == per:
        functions = functions * dirs
    bound = (lambda x: np.clip(x, -clip, clip)) if clip is not None else (lambda x: x)
    Y = np.zeros((steps, dirs, batch, n))
    finals = [np.zeros((dirs, batch, n)) for _ in range(3 if op == "LSTM" else 1)]
    for d in range(dirs):
        fs = functions[d * per : (d + 1) * per]
        Wb, Rb = np.split(B[d], 2)
        reverse = direction == "reverse" or d == 1
        for j in range(batch):
            h = np.asarray(H0[d, j], np.float64) if H0 is not None else np.zeros(n)
            c = np.asarray(C0[d, j], np.float64) if C0 is not None else np.zeros(n)
            length = int(lengths[j])
            for t in (range(length - 1, -1, -1) if reverse else range(length)):
                x = X[t, j]
                if op == "RNN":
                    h = fs[0](bound(W[d] @ x + R[d] @ h + Wb + Rb))
                elif op == "GRU":
                    Wz, Wr, Wh = np.split(W[d], 3)
                    Rz, Rr, Rh = np.split(R[d], 3)
                    wz, wr, wh = np.split(Wb, 3)
                    rz, rr, rh = np.split(Rb, 3)
                    z = fs[0](bound(Wz @ x + Rz @ h + wz + rz))
                    r = fs[0](bound(Wr @ x + Rr @ h + wr + rr))
                    if linear_before_reset:
                        candidate = fs[1](bound(Wh @ x + r * (Rh @ h + rh) + wh))
                    else:
                        candidate = fs[1](bound(Wh @ x + Rh @ (r * h) + rh + wh))
                    h = (1 - z) * candidate + z * h
                else:
                    a = W[d] @ x + R[d] @ h + Wb + Rb
                    ai, ao, af, ac = np.split(a, 4)
                    pi, po, pf = (
                        np.split(np.asarray(P[d], np.float64), 3) if P is not None else (0, 0, 0)
                    )
                    i = fs[0](bound(ai + pi * c))
                    forget = 1 - i if input_forget else fs[0](bound(af + pf * c))
                    c = forget * c + i * fs[1](bound(ac))
                    o = fs[0](bound(ao + po * c))
                    h = o * fs[2](c)
                Y[t, d, j] = h
            if length > 0:
                finals[0][d, j] = h
                if op == "LSTM":
                    finals[1][d, j] = c
    return (Y, *finals[: 2 if op == "LSTM" else 1])


# --- the cases -----------------------------------------------------------------------------------

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTIVATIONS = {
    "RNN": ["Tanh"],
    "GRU": ["Sigmoid", "Tanh"],
    "LSTM": ["Sigmoid", "Tanh", "Tanh"],
}
KERNELS = {
    "RNN": (rt.rnn, rt.exact_rnn),
    "GRU": (rt.gru, rt.exact_gru),
    "LSTM": (rt.lstm, rt.exact_lstm),
}

# (id, op, options): options are kernel keywords plus "lengths", "initial" and "peepholes"
CASES = [
    ("rnn_defaults", "RNN", {}),
    (
        "rnn_bidirectional_lengths",
        "RNN",
        {"direction": "bidirectional", "lengths": [5, 2, 0], "initial": True},
    ),
    (
        "rnn_affine_clip",
        "RNN",
        {
            "activations": ["Affine"],
            "activation_alpha": [0.7],
            "activation_beta": [-0.2],
            "clip": 1.5,
        },
    ),
    ("rnn_reverse_softplus", "RNN", {"direction": "reverse", "activations": ["Softplus"]}),
    ("gru_defaults", "GRU", {"initial": True}),
    (
        "gru_linear_before_reset_reverse",
        "GRU",
        {"direction": "reverse", "linear_before_reset": 1, "lengths": [3, 5, 1]},
    ),
    (
        "gru_hardsigmoid_elu_clip",
        "GRU",
        {
            "activations": ["HardSigmoid", "Elu"],
            "activation_alpha": [0.3, 0.8],
            "activation_beta": [0.4],
            "clip": 2.0,
        },
    ),
    (
        "gru_leakyrelu_softsign_bidirectional",
        "GRU",
        {
            "direction": "bidirectional",
            "activations": ["LeakyRelu", "Softsign"],
            "activation_alpha": [0.2],
        },
    ),
    ("lstm_defaults", "LSTM", {}),
    (
        "lstm_peepholes_initial_lengths",
        "LSTM",
        {"peepholes": True, "initial": True, "lengths": [4, 5, 2]},
    ),
    (
        "lstm_input_forget_clip_bidirectional",
        "LSTM",
        {"direction": "bidirectional", "input_forget": 1, "clip": 1.0, "peepholes": True},
    ),
    (
        "lstm_scaledtanh_thresholdedrelu_relu",
        "LSTM",
        {
            "activations": ["ScaledTanh", "ThresholdedRelu", "Relu"],
            "activation_alpha": [0.9, 0.1],
            "activation_beta": [1.2],
        },
    ),
]


def _inputs(op, options, dtype=np.float32, seed=0, steps=5, batch=3, inputs=4, hidden=6):
    g = np.random.default_rng(seed)
    dirs = 2 if options.get("direction") == "bidirectional" else 1
    gates = GATES[op]

    def array(*shape, scale=0.5):
        return (g.standard_normal(shape) * scale).astype(dtype)

    X = array(steps, batch, inputs, scale=1.0)
    W, R, B = (
        array(dirs, gates * hidden, inputs),
        array(dirs, gates * hidden, hidden),
        array(dirs, 2 * gates * hidden),
    )
    lengths = np.array(options["lengths"], np.int32) if "lengths" in options else None
    H0 = array(dirs, batch, hidden) if options.get("initial") else None
    C0 = array(dirs, batch, hidden) if options.get("initial") and op == "LSTM" else None
    P = array(dirs, 3 * hidden) if options.get("peepholes") else None
    return X, W, R, B, lengths, H0, C0, P


def _call(kernel, op, arrays, options):
    X, W, R, B, lengths, H0, C0, P = arrays
    keywords = {k: v for k, v in options.items() if k not in ("lengths", "initial", "peepholes")}
    if op == "LSTM":
        return kernel(X, W, R, B, lengths, H0, C0, P, **keywords)
    return kernel(X, W, R, B, lengths, H0, **keywords)


@pytest.mark.parametrize("variant", ["fast", "exact"])
@pytest.mark.parametrize("name, op, options", CASES, ids=[case[0] for case in CASES])
def test_matches_reference(name, op, options, variant):
    arrays = _inputs(op, options)
    X, W, R, B, lengths, H0, C0, P = arrays
    got = _call(KERNELS[op][variant == "exact"], op, arrays, options)
    expected = reference(
        op,
        X,
        W,
        R,
        B,
        lengths if lengths is not None else [X.shape[0]] * X.shape[1],
        H0,
        C0,
        P,
        activations=options.get("activations", DEFAULT_ACTIVATIONS[op]),
        alpha=options.get("activation_alpha"),
        beta=options.get("activation_beta"),
        clip=options.get("clip"),
        direction=options.get("direction", "forward"),
        linear_before_reset=options.get("linear_before_reset", 0),
        input_forget=options.get("input_forget", 0),
    )
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == np.float32 and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name, op, options", CASES, ids=[case[0] for case in CASES])
def test_exact_sequence_does_not_depend_on_the_batch(name, op, options):
    """Each batch element's bits are those it gets when run alone (no batch-wide rounding)."""
    arrays = _inputs(op, options, seed=1)
    X, W, R, B, lengths, H0, C0, P = arrays
    together = _call(KERNELS[op][1], op, arrays, options)
    for j in range(X.shape[1]):
        alone = (
            X[:, j : j + 1],
            W,
            R,
            B,
            None if lengths is None else lengths[j : j + 1],
            None if H0 is None else H0[:, j : j + 1],
            None if C0 is None else C0[:, j : j + 1],
            P,
        )
        single = _call(KERNELS[op][1], op, alone, options)
        assert single[0].tobytes() == together[0][:, :, j : j + 1].tobytes()
        for s, t in zip(single[1:], together[1:]):
            assert s.tobytes() == t[:, j : j + 1].tobytes()


def test_exact_layout_1_is_layout_0_transposed():
    options = {
        "direction": "bidirectional",
        "lengths": [4, 5, 2],
        "initial": True,
        "peepholes": True,
    }
    X, W, R, B, lengths, H0, C0, P = _inputs("LSTM", options, seed=2)
    Y, Y_h, Y_c = rt.exact_lstm(X, W, R, B, lengths, H0, C0, P, direction="bidirectional")
    swap = lambda a: np.ascontiguousarray(np.swapaxes(a, 0, 1))  # noqa: E731
    Y1, Y_h1, Y_c1 = rt.exact_lstm(
        swap(X), W, R, B, lengths, swap(H0), swap(C0), P, direction="bidirectional", layout=1
    )
    assert Y1.tobytes() == np.ascontiguousarray(Y.transpose(2, 0, 1, 3)).tobytes()
    assert Y_h1.tobytes() == swap(Y_h).tobytes() and Y_c1.tobytes() == swap(Y_c).tobytes()


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_float_types(dtype):
    options = {"lengths": [5, 3, 1], "initial": True}
    arrays = _inputs("GRU", options, dtype=dtype, seed=3)
    X, W, R, B, lengths, H0, _, _ = arrays
    expected = reference(
        "GRU", X, W, R, B, lengths, H0, None, None, activations=["Sigmoid", "Tanh"]
    )
    for kernel in KERNELS["GRU"]:
        got = _call(kernel, "GRU", arrays, options)
        tolerance = 2e-3 if dtype == np.float16 else 1e-12
        for g, e in zip(got, expected):
            assert g.dtype == dtype
            np.testing.assert_allclose(g.astype(np.float64), e, rtol=tolerance, atol=tolerance)


def test_exact_variant_compiles_to_the_exact_kernel():
    hidden, inputs = 3, 2
    g = np.random.default_rng(4)
    weights = [
        helper.make_tensor(
            name, TensorProto.FLOAT, shape, g.standard_normal(shape).astype(np.float32).ravel()
        )
        for name, shape in (("W", (1, 4 * hidden, inputs)), ("R", (1, 4 * hidden, hidden)))
    ]
    graph = helper.make_graph(
        [helper.make_node("LSTM", ["X", "W", "R"], ["Y", "Y_h"], hidden_size=hidden)],
        "lstm",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 2, inputs])],
        [
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, 1, 2, hidden]),
            helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, 2, hidden]),
        ],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    assert "rt.exact_lstm(" in generate(model, variant="exact").source
    X = g.standard_normal((4, 2, inputs)).astype(np.float32)
    Y, Y_h = load_compiled(model, variant="exact").run(X)
    W, R = (onnx.numpy_helper.to_array(w) for w in weights)
    expected = rt.exact_lstm(X, W, R)
    assert Y.tobytes() == expected[0].tobytes() and Y_h.tobytes() == expected[1].tobytes()


# --- the same bits under other SIMD levels, BLAS kernels and thread counts ------------------------

# Self-contained (numpy and runtime_support only), so that another numpy's Python can run it too.
DIGEST_SCRIPT = "\n".join(
    [
        "import hashlib, json, sys",
        "import numpy as np",
        "import runtime_support as rt",
        f"GATES = {GATES!r}",
        f"CASES = {CASES!r}",
        inspect.getsource(_inputs),
        inspect.getsource(_call),
        """
digests = {}
for name, op, options in CASES:
    for dtype in (np.float32, np.float64):
        arrays = _inputs(op, options, dtype=dtype, seed=5, steps=6, batch=3, inputs=40, hidden=24)
        result = _call(getattr(rt, "exact_" + op.lower()), op, arrays, options)
        digests[f"{name} {np.dtype(dtype).name}"] = hashlib.sha256(
            b"".join(a.tobytes() for a in result)
        ).hexdigest()
json.dump(digests, sys.stdout)
""",
    ]
)

ENVIRONMENTS = {
    "AVX2 and AVX-512 off": {"NPY_DISABLE_CPU_FEATURES": NO_AVX2},
    "OPENBLAS_CORETYPE=Haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "OPENBLAS_CORETYPE=Prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "OPENBLAS_NUM_THREADS=2": {"OPENBLAS_NUM_THREADS": "2"},
}


def test_exact_same_bits_in_every_environment():
    baseline = run_json_script(DIGEST_SCRIPT, {}, sys.executable)
    assert len(baseline) == 2 * len(CASES)
    for name, settings in ENVIRONMENTS.items():
        assert run_json_script(DIGEST_SCRIPT, settings, sys.executable) == baseline, name
    # Another numpy major version, when a Python with it is named (as tests/test_exact_kernels.py).
    other = os.environ.get("ONEMODEL_OTHER_NUMPY_PYTHON")
    if other:
        assert run_json_script(DIGEST_SCRIPT, {}, other) == baseline, other


@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_exact_read_only_weights_same_bits(op):
    """Weights as the weights file gives them (read-only views of bytes, whose slices
    exact_matmul caches) give the bits of writeable copies, at the first call and the next."""
    options = {"direction": "bidirectional", "lengths": [4, 5, 2]}
    arrays = _inputs(op, options, seed=6)
    X, W, R, B = arrays[:4]
    frozen = [np.frombuffer(a.tobytes(), a.dtype).reshape(a.shape) for a in (W, R, B)]
    expected = _call(KERNELS[op][1], op, arrays, options)
    for _ in range(2):
        got = _call(KERNELS[op][1], op, (X, *frozen, *arrays[4:]), options)
        assert [g.tobytes() for g in got] == [e.tobytes() for e in expected]
