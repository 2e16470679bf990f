"""Recurrent layer kernels: RNN, GRU and LSTM, as ONNX defines them.

Shapes (layout 0; layout 1 swaps the first two axes of X, initial_h, initial_c, Y_h and Y_c, and
puts Y's batch axis first, [batch, seq_length, num_directions, hidden_size]):
X [seq_length, batch, input_size], W [num_directions, gates * hidden, input_size],
R [num_directions, gates * hidden, hidden], B [num_directions, 2 * gates * hidden] (W's biases, then
R's), sequence_lens [batch], initial_h / initial_c [num_directions, batch, hidden], P
[num_directions, 3 * hidden] (LSTM peepholes i, o, f). Gates: RNN 1, GRU 3 (z, r, h), LSTM 4
(i, o, f, c). Y [seq_length, num_directions, batch, hidden], Y_h and Y_c [num_directions, batch,
hidden].

- `direction` "reverse" runs each sequence from its last valid step back to its first; "bidirectional"
  runs both and stacks them (forward first).
- `sequence_lens`: the steps past a sequence's length are zeros in Y, and its final states are those of
  its own last step (reverse: of its first position). A sequence of length 0 has zero final states
  (as onnxruntime).
- `activations` lists the functions of one direction (RNN f; GRU f, g; LSTM f, g, h), or of both
  (forward's then reverse's); names are case-insensitive. `activation_alpha` and `activation_beta`
  are consumed in the order of the functions, each function taking values only for the parameters
  it has (as onnxruntime reads them); a function left without a value takes its default: the ONNX
  operator's (LeakyRelu alpha 0.01, ThresholdedRelu alpha 1.0, HardSigmoid alpha 0.2 beta 0.5, Elu
  alpha 1.0), and for the two with no ONNX operator the neutral values (Affine alpha 1.0 beta 0.0,
  ScaledTanh alpha 1.0 beta 1.0).
- `clip` bounds the input of every gate activation to [-clip, clip] (not the LSTM cell state that
  goes into h, as onnxruntime).
- GRU `linear_before_reset` applies the reset gate after the recurrence's product and bias;
  LSTM `input_forget` couples the forget gate to the input gate: f = 1 - i.

float16 and bfloat16 run in float32 and are rounded once at the end.
"""

from __future__ import annotations

import numpy as np

from runtime_support.math import sigmoid

__all__ = ["gru", "lstm", "rnn"]


def _relu(x, alpha, beta):
    return np.maximum(x, x.dtype.type(0))


def _tanh(x, alpha, beta):
    return np.tanh(x)


def _sigmoid(x, alpha, beta):
    return sigmoid(x)


def _affine(x, alpha, beta):
    return alpha * x + beta


def _leaky_relu(x, alpha, beta):
    return np.where(x >= 0, x, alpha * x)


def _thresholded_relu(x, alpha, beta):
    return np.where(x > alpha, x, x.dtype.type(0))


def _scaled_tanh(x, alpha, beta):
    return alpha * np.tanh(beta * x)


def _hard_sigmoid(x, alpha, beta):
    return np.minimum(np.maximum(alpha * x + beta, x.dtype.type(0)), x.dtype.type(1))


def _elu(x, alpha, beta):
    return np.where(x >= 0, x, alpha * np.expm1(np.minimum(x, x.dtype.type(0))))


def _softsign(x, alpha, beta):
    return x / (x.dtype.type(1) + np.abs(x))


def _softplus(x, alpha, beta):
    return np.logaddexp(x, x.dtype.type(0))


# name: (function, default alpha, default beta); None: the function has no such parameter and
# takes no value from activation_alpha / activation_beta.
ACTIVATIONS = {
    "Relu": (_relu, None, None),
    "Tanh": (_tanh, None, None),
    "Sigmoid": (_sigmoid, None, None),
    "Affine": (_affine, 1.0, 0.0),
    "LeakyRelu": (_leaky_relu, 0.01, None),
    "ThresholdedRelu": (_thresholded_relu, 1.0, None),
    "ScaledTanh": (_scaled_tanh, 1.0, 1.0),
    "HardSigmoid": (_hard_sigmoid, 0.2, 0.5),
    "Elu": (_elu, 1.0, None),
    "Softsign": (_softsign, None, None),
    "Softplus": (_softplus, None, None),
}
_BY_LOWER_NAME = {name.lower(): entry for name, entry in ACTIVATIONS.items()}


def _activations(names, alphas, betas, per_direction, directions, dtype):
    """One list of `per_direction` functions of x per direction, parameters bound."""
    alphas, betas = list(alphas or ()), list(betas or ())
    bound = []
    for name in names:
        function, alpha, beta = _BY_LOWER_NAME[name.lower()]
        if alpha is not None and alphas:
            alpha = alphas.pop(0)
        if beta is not None and betas:
            beta = betas.pop(0)
        bound.append(
            lambda x, f=function, a=dtype.type(alpha or 0), b=dtype.type(beta or 0): f(x, a, b)
        )
    if len(bound) == per_direction:
        bound = bound * directions
    if len(bound) != per_direction * directions:
        raise ValueError(
            f"activations: expected {per_direction} functions per direction, got {len(names)} "
            f"for {directions} direction(s)"
        )
    return [bound[d * per_direction : (d + 1) * per_direction] for d in range(directions)]


def _clipper(clip, dtype):
    if clip is None:
        return lambda x: x
    bound = dtype.type(clip)
    return lambda x: np.minimum(np.maximum(x, -bound), bound)


class _Layer:
    """What the three operators share: layouts, directions, lengths, initial states, outputs."""

    def __init__(self, X, W, R, B, sequence_lens, gates, direction, layout):
        self.dtype = np.dtype(np.float32) if X.dtype.itemsize < 4 else X.dtype
        x = X if layout == 0 else np.swapaxes(X, 0, 1)
        self.x = x.astype(self.dtype, copy=False)
        self.layout = layout
        self.steps, self.batch = x.shape[:2]
        self.hidden = R.shape[-1]
        self.directions = W.shape[0]
        expected = 2 if direction == "bidirectional" else 1
        if self.directions != expected:
            raise ValueError(f"direction {direction!r} needs {expected} direction(s) in W")
        self.reverse = [False, True] if direction == "bidirectional" else [direction == "reverse"]
        self.W = W.astype(self.dtype, copy=False)
        self.R = R.astype(self.dtype, copy=False)
        self.B = (
            np.zeros((self.directions, 2 * gates * self.hidden), self.dtype)
            if B is None
            else B.astype(self.dtype, copy=False)
        )
        if sequence_lens is None:
            self.lengths = np.full(self.batch, self.steps, dtype=np.int64)
        else:
            self.lengths = sequence_lens.astype(np.int64)
            if self.lengths.size and (self.lengths.min() < 0 or self.lengths.max() > self.steps):
                raise ValueError(
                    f"sequence_lens must lie in [0, {self.steps}], got {sequence_lens.tolist()}"
                )

    def state(self, initial):
        """An initial state [num_directions, batch, hidden] in layout 0 (zeros when absent)."""
        if initial is None:
            return np.zeros((self.directions, self.batch, self.hidden), self.dtype)
        initial = initial if self.layout == 0 else np.swapaxes(initial, 0, 1)
        return initial.astype(self.dtype, copy=False)

    def projection(self, direction, bias):
        """X times the direction's input weights, plus `bias`: [seq_length, batch, gates * hidden]."""
        return self.x @ self.W[direction].T + bias

    def run(self, xw, reverse, step, states):
        """Runs `step(xw_t, *states) -> states` over the sequence; returns Y [seq_length, batch,
        hidden] (the first state of each step) and the final states."""
        Y = np.zeros((self.steps, self.batch, self.hidden), self.dtype)
        lengths = self.lengths
        if (lengths == self.steps).all():
            for t in range(self.steps - 1, -1, -1) if reverse else range(self.steps):
                states = step(xw[t], *states)
                Y[t] = states[0]
        else:
            rows = np.arange(self.batch)
            for s in range(int(lengths.max(initial=0))):
                active = s < lengths
                t = np.where(active, lengths - 1 - s if reverse else s, 0)
                new = step(xw[t, rows], *states)
                states = tuple(np.where(active[:, None], n, o) for n, o in zip(new, states))
                Y[t[active], rows[active]] = new[0][active]
        started = (lengths > 0)[:, None]
        return Y, tuple(np.where(started, s, self.dtype.type(0)) for s in states)

    def outputs(self, dtype, Y, *finals):
        """Y [seq_length, num_directions, batch, hidden] and the final states, in the layout."""
        Y = np.stack(Y, axis=1)
        finals = [np.stack(f) for f in finals]
        if self.layout == 1:
            Y = Y.transpose(2, 0, 1, 3)
            finals = [np.swapaxes(f, 0, 1) for f in finals]
        return tuple(a.astype(dtype, copy=False) for a in (Y, *finals))


def rnn(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    *,
    activations=("Tanh",),
    activation_alpha=None,
    activation_beta=None,
    clip=None,
    direction="forward",
    layout=0,
):
    """H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb); returns (Y, Y_h)."""
    layer = _Layer(X, W, R, B, sequence_lens, 1, direction, layout)
    functions = _activations(
        activations, activation_alpha, activation_beta, 1, layer.directions, layer.dtype
    )
    clipped = _clipper(clip, layer.dtype)
    H0 = layer.state(initial_h)
    Y, Y_h = [], []
    for d, reverse in enumerate(layer.reverse):
        (f,) = functions[d]
        Wb, Rb = np.split(layer.B[d], 2)
        Rt = layer.R[d].T

        def step(xw_t, h, f=f, Rt=Rt):
            return (f(clipped(xw_t + h @ Rt)),)

        y, (h,) = layer.run(layer.projection(d, Wb + Rb), reverse, step, (H0[d],))
        Y.append(y)
        Y_h.append(h)
    return layer.outputs(X.dtype, Y, Y_h)


def gru(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    *,
    activations=("Sigmoid", "Tanh"),
    activation_alpha=None,
    activation_beta=None,
    clip=None,
    direction="forward",
    layout=0,
    linear_before_reset=0,
):
    """z = f(X_t Wz^T + H Rz^T + Wbz + Rbz), r likewise, and
    h = g(X_t Wh^T + (r * H) Rh^T + Rbh + Wbh), or with linear_before_reset
    h = g(X_t Wh^T + r * (H Rh^T + Rbh) + Wbh); H_t = (1 - z) * h + z * H. Returns (Y, Y_h)."""
    layer = _Layer(X, W, R, B, sequence_lens, 3, direction, layout)
    functions = _activations(
        activations, activation_alpha, activation_beta, 2, layer.directions, layer.dtype
    )
    clipped = _clipper(clip, layer.dtype)
    H0 = layer.state(initial_h)
    n = layer.hidden
    one = layer.dtype.type(1)
    Y, Y_h = [], []
    for d, reverse in enumerate(layer.reverse):
        f, g = functions[d]
        Wb, Rb = np.split(layer.B[d], 2)
        Rzr, Rh = layer.R[d, : 2 * n].T, layer.R[d, 2 * n :].T
        Rbh = Rb[2 * n :]
        bias = Wb + Rb  # into the input projection, but for linear_before_reset's Rbh:
        if linear_before_reset:
            bias[2 * n :] = Wb[2 * n :]  # the reset gate scales it

        def step(xw_t, h, f=f, g=g, Rzr=Rzr, Rh=Rh, Rbh=Rbh):
            zr = xw_t[:, : 2 * n] + h @ Rzr
            z, r = f(clipped(zr[:, :n])), f(clipped(zr[:, n:]))
            if linear_before_reset:
                candidate = xw_t[:, 2 * n :] + r * (h @ Rh + Rbh)
            else:
                candidate = xw_t[:, 2 * n :] + (r * h) @ Rh
            return ((one - z) * g(clipped(candidate)) + z * h,)

        y, (h,) = layer.run(layer.projection(d, bias), reverse, step, (H0[d],))
        Y.append(y)
        Y_h.append(h)
    return layer.outputs(X.dtype, Y, Y_h)


def lstm(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    initial_c=None,
    P=None,
    *,
    activations=("Sigmoid", "Tanh", "Tanh"),
    activation_alpha=None,
    activation_beta=None,
    clip=None,
    direction="forward",
    layout=0,
    input_forget=0,
):
    """Gates from X_t W^T + H R^T + Wb + Rb (order i, o, f, c), peepholes P (i, o, f):
    i = f(.. + Pi * C), f = f(.. + Pf * C) (or 1 - i with input_forget), c = g(..),
    C_t = f * C + i * c, o = f(.. + Po * C_t), H_t = o * h(C_t). Returns (Y, Y_h, Y_c)."""
    layer = _Layer(X, W, R, B, sequence_lens, 4, direction, layout)
    functions = _activations(
        activations, activation_alpha, activation_beta, 3, layer.directions, layer.dtype
    )
    clipped = _clipper(clip, layer.dtype)
    H0, C0 = layer.state(initial_h), layer.state(initial_c)
    peepholes = (
        np.zeros((layer.directions, 3 * layer.hidden), layer.dtype)
        if P is None
        else P.astype(layer.dtype, copy=False)
    )
    n = layer.hidden
    one = layer.dtype.type(1)
    Y, Y_h, Y_c = [], [], []
    for d, reverse in enumerate(layer.reverse):
        f, g, h_ = functions[d]
        Wb, Rb = np.split(layer.B[d], 2)
        Pi, Po, Pf = np.split(peepholes[d], 3)
        Rt = layer.R[d].T

        def step(xw_t, h, c, f=f, g=g, h_=h_, Rt=Rt, Pi=Pi, Po=Po, Pf=Pf):
            gates = xw_t + h @ Rt
            i = f(clipped(gates[:, :n] + Pi * c))
            forget = one - i if input_forget else f(clipped(gates[:, 2 * n : 3 * n] + Pf * c))
            c = forget * c + i * g(clipped(gates[:, 3 * n :]))
            o = f(clipped(gates[:, n : 2 * n] + Po * c))
            return o * h_(c), c

        y, (h, c) = layer.run(layer.projection(d, Wb + Rb), reverse, step, (H0[d], C0[d]))
        Y.append(y)
        Y_h.append(h)
        Y_c.append(c)
    return layer.outputs(X.dtype, Y, Y_h, Y_c)
