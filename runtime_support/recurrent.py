"""Recurrent layer kernels: RNN, GRU and LSTM, as ONNX defines them, in a fast and an exact variant.

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

float16 and bfloat16 run in float32 and are rounded once at the end (the working type T: float32,
or float64 for float64 inputs).

How the kernels compute (both variants). The input projection of all time steps is one matrix
product, XW = X2 @ W^T with X2 the [seq_length * batch, input_size] view of X, and the biases are
added to it once: XW + (Wb + Rb) (GRU with linear_before_reset: Rb's h part is left out, the reset
gate scales it). The recurrence keeps its states transposed, [hidden, batch], so that each step's
product R @ H reads R in the layout ONNX stores it (no transposed copy of the weights). The
elementwise arithmetic of a step is IEEE arithmetic in T in the order each kernel's docstring
writes (parentheses are the order; `a + b * c` is a + (b * c)).

The exact variant (exact_rnn, exact_gru, exact_lstm) differs only in its matrix products, which
are runtime_support.exact.exact_matmul's (rounded once to T; the recurrence's as exact_matmul(H^T,
R^T)^T, so that the weights are the right-hand operand, whose slices exact_matmul splits once and
caches when they are read-only, as the weights file's are), and in the transcendental functions,
which are runtime_support.exact_math's (exact_sigmoid, exact_tanh, exact_expm1, exact_softplus, each
rounded once to T); every other operation is an IEEE + - * / in T, a comparison, min or max, or data
movement, so its bits depend on nothing but the inputs. Every NaN in its outputs is numpy's np.nan.
"""

from __future__ import annotations

import numpy as np

from runtime_support._kernels import kernel
from runtime_support.exact import exact_matmul
from runtime_support.exact_math import exact_expm1, exact_sigmoid, exact_softplus, exact_tanh

__all__ = ["exact_gru", "exact_lstm", "exact_rnn", "gru", "lstm", "rnn"]


# --- arithmetic of the two variants ----------------------------------------------------------------
# sigmoid and tanh write their result into `out` (which may be `x` itself) and return it.


class _Fast:
    exact = False
    matmul = staticmethod(np.matmul)

    @staticmethod
    def recurrence(R, h):
        """R @ h, R [gates * hidden, hidden] as stored, h [hidden, batch]."""
        return np.matmul(R, h)

    @staticmethod
    def sigmoid(x, out):
        """1 / (1 + exp(-x)); exp overflows to inf for very negative x, which gives 0."""
        np.negative(x, out=out)
        with np.errstate(over="ignore"):
            np.exp(out, out=out)
        out += out.dtype.type(1)
        return np.reciprocal(out, out=out)

    @staticmethod
    def tanh(x, out):
        return np.tanh(x, out=out)

    @staticmethod
    def expm1(x):
        return np.expm1(x)

    @staticmethod
    def softplus(x):
        return np.logaddexp(x, x.dtype.type(0))  # log(exp(x) + exp(0)) without overflow


class _Exact:
    exact = True
    matmul = staticmethod(exact_matmul)

    @staticmethod
    def recurrence(R, h):
        """R @ h as (h^T @ R^T)^T: with the weights as exact_matmul's right-hand operand, their
        slices are split once and cached (exact_matmul caches read-only weights' slices)."""
        return exact_matmul(h.T, R.T).T

    @staticmethod
    def sigmoid(x, out):
        out[...] = exact_sigmoid(x)
        return out

    @staticmethod
    def tanh(x, out):
        out[...] = exact_tanh(x)
        return out

    expm1 = staticmethod(exact_expm1)
    softplus = staticmethod(exact_softplus)


# --- activation functions: f(x, out, alpha, beta, arithmetic) -> out ------------------------------


def _relu(x, out, alpha, beta, m):
    return np.maximum(x, x.dtype.type(0), out=out)


def _tanh(x, out, alpha, beta, m):
    return m.tanh(x, out)


def _sigmoid(x, out, alpha, beta, m):
    return m.sigmoid(x, out)


def _affine(x, out, alpha, beta, m):
    """(alpha * x) + beta."""
    np.multiply(x, alpha, out=out)
    out += beta
    return out


def _leaky_relu(x, out, alpha, beta, m):
    out[...] = np.where(x >= 0, x, alpha * x)
    return out


def _thresholded_relu(x, out, alpha, beta, m):
    out[...] = np.where(x > alpha, x, x.dtype.type(0))
    return out


def _scaled_tanh(x, out, alpha, beta, m):
    """alpha * tanh(beta * x)."""
    np.multiply(x, beta, out=out)
    m.tanh(out, out)
    out *= alpha
    return out


def _hard_sigmoid(x, out, alpha, beta, m):
    """min(max((alpha * x) + beta, 0), 1)."""
    _affine(x, out, alpha, beta, m)
    np.maximum(out, out.dtype.type(0), out=out)
    return np.minimum(out, out.dtype.type(1), out=out)


def _elu(x, out, alpha, beta, m):
    """x where x >= 0, else alpha * expm1(x)."""
    out[...] = np.where(x >= 0, x, alpha * m.expm1(np.minimum(x, x.dtype.type(0))))
    return out


def _softsign(x, out, alpha, beta, m):
    """x / (1 + |x|)."""
    out[...] = x / (x.dtype.type(1) + np.abs(x))
    return out


def _softplus(x, out, alpha, beta, m):
    out[...] = m.softplus(x)
    return out


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


def _activations(names, alphas, betas, clips, directions, dtype, m):
    """One list of functions g(x, out) -> out per direction (`out` may be `x`), with their
    parameters bound and their clip bound, applied to x first: `clips` holds one per function of
    a direction (None: not clipped)."""
    per_direction = len(clips)
    alphas, betas = list(alphas or ()), list(betas or ())
    bound = []
    for position, name in enumerate(names):
        function, alpha, beta = _BY_LOWER_NAME[name.lower()]
        clip = clips[position % per_direction]
        if alpha is not None and alphas:
            alpha = alphas.pop(0)
        if beta is not None and betas:
            beta = betas.pop(0)
        bound.append(_bind(function, dtype.type(alpha or 0), dtype.type(beta or 0), clip, m))
    if len(bound) == per_direction:
        bound = bound * directions
    if len(bound) != per_direction * directions:
        raise ValueError(
            f"activations: expected {per_direction} functions per direction, got {len(names)} "
            f"for {directions} direction(s)"
        )
    return [bound[d * per_direction : (d + 1) * per_direction] for d in range(directions)]


def _bind(function, alpha, beta, clip, m):
    """function(x, out, alpha, beta, m) as g(x, out), x first bounded to [-clip, clip]."""
    if clip is None:
        return lambda x, out: function(x, out, alpha, beta, m)
    bound = alpha.dtype.type(clip)

    def clipped(x, out):
        np.maximum(x, -bound, out=out)
        np.minimum(out, bound, out=out)
        return function(out, out, alpha, beta, m)

    return clipped


class _Layer:
    """What the three operators share: layouts, directions, lengths, initial states, the input
    projection, the time loop and the outputs."""

    def __init__(self, X, W, R, B, sequence_lens, gates, direction, layout, m):
        self.m = m
        self.input_dtype = X.dtype
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
        self.full_lengths = sequence_lens is None or bool((self.lengths == self.steps).all())
        self.Y = np.zeros((self.steps, self.directions, self.batch, self.hidden), self.dtype)

    def state(self, initial):
        """An initial state per direction, transposed: [num_directions, hidden, batch] (zeros when
        absent)."""
        if initial is None:
            return np.zeros((self.directions, self.hidden, self.batch), self.dtype)
        initial = initial if self.layout == 0 else np.swapaxes(initial, 0, 1)
        return np.swapaxes(initial.astype(self.dtype, copy=False), 1, 2)

    def projection(self, direction, bias):
        """X_t W^T + bias for every step, as one matrix product: [seq_length, batch, gates *
        hidden] (each step's slice is read transposed)."""
        x2 = self.x.reshape(self.steps * self.batch, self.x.shape[2])
        product = self.m.matmul(x2, self.W[direction].T)
        product += bias
        return product.reshape(self.steps, self.batch, product.shape[1])

    def run(self, d, xw, step, states):
        """Runs `step(xw_t, *states) -> states` (states transposed, [hidden, batch]; `xw_t`
        [gates * hidden, batch]) over the sequence in direction `d`; writes Y[:, d] (the first
        state of each step) and returns the final states."""
        Y, lengths = self.Y[:, d], self.lengths
        reverse = self.reverse[d]
        if self.full_lengths:
            for t in range(self.steps - 1, -1, -1) if reverse else range(self.steps):
                states = step(xw[t].T, *states)
                Y[t] = states[0].T
        else:
            rows = np.arange(self.batch)
            for s in range(int(lengths.max(initial=0))):
                active = s < lengths
                t = np.where(active, lengths - 1 - s if reverse else s, 0)
                new = step(xw[t, rows].T, *states)
                states = tuple(np.where(active, n, o) for n, o in zip(new, states))
                Y[t[active], rows[active]] = new[0].T[active]
        started = lengths > 0
        return tuple(np.where(started, s, self.dtype.type(0)) for s in states)

    def outputs(self, *finals):
        """Y [seq_length, num_directions, batch, hidden] and the final states (given per
        direction, transposed), in the layout and the input's type."""
        Y = self.Y
        # one direction's state as a view (np.stack costs microseconds a small layer notices)
        finals = [(f[0][None] if len(f) == 1 else np.stack(f)).transpose(0, 2, 1) for f in finals]
        if self.layout == 1:
            Y = Y.transpose(2, 0, 1, 3)
            finals = [np.swapaxes(f, 0, 1) for f in finals]
        results = [
            np.ascontiguousarray(a).astype(self.input_dtype, copy=False) for a in (Y, *finals)
        ]
        if self.m.exact:
            results = [_default_nans(a) for a in results]
        return tuple(results)


def _default_nans(a):
    """`a` with every NaN numpy's np.nan (payloads and signs differ between machines)."""
    nan = np.isnan(a)
    return np.where(nan, np.nan, a).astype(a.dtype, copy=False) if nan.any() else a


# --- the fast variant's common case: every direction in one step ---------------------------------
# The layers exporters write (torch's LSTM and GRU: default activations, no clip, no peepholes,
# full lengths) run all directions in the same time loop, as one batched product per step, with
# sigmoid as 0.5 * tanh(x / 2) + 0.5 so that one tanh covers every gate: about a third of the
# numpy calls per step of the general loop below, and half the steps when bidirectional.
# The states are kept transposed ([directions, hidden, batch]) so that each step's product is
# R @ h with the weights as BLAS's left operand, as ONNX stores them: OpenBLAS runs that product
# at a small batch about 1.4x faster than h @ R^T (53 against 73 us for LSTM 256 at batch 8).
# x / 2 is exact in binary floating point, so halving the weights' sigmoid rows once gives the
# bits of halving each step's sums; a short sequence (fewer step columns than weight columns)
# halves the sums instead, cheaper than a scaled copy of R.

_DEFAULTS = {
    4: ("sigmoid", "tanh", "tanh"),  # LSTM
    3: ("sigmoid", "tanh"),  # GRU
}


def _common_case(m, layer, activations, alpha, beta, clip, gates, extra=False) -> bool:
    names = tuple(a.lower() for a in activations)
    per_direction = _DEFAULTS[gates]
    return (
        m is _Fast
        and not extra
        and clip is None
        and not alpha
        and not beta
        and names in (per_direction, per_direction * layer.directions)
        and layer.steps > 0
        and layer.full_lengths
    )


class _Together:
    """The inputs of the time loop: X W^T + bias of every direction in processing order,
    transposed, [steps, directions, gates * hidden, batch] (a reverse direction's steps reversed),
    the recurrence weights R [directions, gates * hidden, hidden], and whether each step halves
    its first `halved` rows itself (`half_per_step`) or the weights came halved."""

    def __init__(self, layer, bias, halved: int):
        rows = layer.W.shape[1]
        dtype = layer.dtype
        self.half_per_step = layer.steps * layer.batch < layer.hidden
        scale = np.ones((rows, 1), dtype=dtype)
        if not self.half_per_step:
            scale[:halved] = dtype.type(0.5)
        self.XW = np.empty((layer.steps, layer.directions, rows, layer.batch), dtype=dtype)
        for d in range(layer.directions):
            xw = layer.projection(d, bias[d])
            xw = xw[::-1] if layer.reverse[d] else xw
            np.multiply(xw.transpose(0, 2, 1), scale, out=self.XW[:, d])
        self.R = layer.R if self.half_per_step else layer.R * scale


def _finish(layer, H):
    """Y from the states of every step (processing order, [steps, directions, hidden, batch]),
    and each direction's final state as the layer keeps it ([hidden, batch])."""
    for d in range(layer.directions):
        layer.Y[:, d] = (H[::-1, d] if layer.reverse[d] else H[:, d]).transpose(0, 2, 1)
    return [H[-1, d] for d in range(layer.directions)]


def _direction_index(layer):
    """The index that drops the direction axis when there is one direction (numpy's stacked
    matmul costs about 1.5 us a step more than a 2-D one), else keeps it."""
    return 0 if layer.directions == 1 else slice(None)


def _lstm_together(layer, H0, C0):
    n = layer.hidden
    inputs = _Together(layer, [b[: 4 * n] + b[4 * n :] for b in layer.B], 3 * n)
    d = _direction_index(layer)
    XW, R = inputs.XW[:, d], inputs.R[d]
    half = layer.dtype.type(0.5)
    H = np.empty((layer.steps, layer.directions, n, layer.batch), dtype=layer.dtype)
    Hd, h, c = H[:, d], H0[d], C0[d].copy()
    cell = np.empty_like(c)
    # one buffer for every step's gates and its views made once: a small layer's step costs
    # about a microsecond per numpy call or view
    gates = np.empty(R.shape[:-1] + (layer.batch,), dtype=layer.dtype)
    sigmoids, i, o, f, g = (
        gates[..., a:b, :]
        for a, b in ((0, 3 * n), (0, n), (n, 2 * n), (2 * n, 3 * n), (3 * n, 4 * n))
    )
    for t in range(layer.steps):
        np.matmul(R, h, out=gates)
        gates += XW[t]
        if inputs.half_per_step:
            sigmoids *= half
        np.tanh(gates, out=gates)
        sigmoids *= half
        sigmoids += half
        c *= f
        np.multiply(i, g, out=cell)
        c += cell
        h = Hd[t]
        np.tanh(c, out=h)
        h *= o
    return _finish(layer, H), [c] if layer.directions == 1 else list(c)


def _gru_together(layer, H0, lbr):
    n = layer.hidden
    bias = []
    for b in layer.B:
        joined = b[: 3 * n] + b[3 * n :]
        if lbr:
            joined[2 * n :] = b[2 * n : 3 * n]  # the reset gate scales Rbh
        bias.append(joined)
    inputs = _Together(layer, bias, 2 * n)
    d = _direction_index(layer)
    XW, R = inputs.XW[:, d], inputs.R[d]
    XWzr, XWh = XW[..., : 2 * n, :], XW[..., 2 * n :, :]
    Rzr, Rh = R[..., : 2 * n, :], R[..., 2 * n :, :]
    Rbh = layer.B[d, 5 * n :, None]  # [(directions,) hidden, 1]
    half = layer.dtype.type(0.5)
    H = np.empty((layer.steps, layer.directions, n, layer.batch), dtype=layer.dtype)
    Hd, h = H[:, d], H0[d]
    # the step's buffers and their views made once (see _lstm_together)
    gates = np.empty(Rh.shape[:-2] + ((3 if lbr else 2) * n, layer.batch), dtype=layer.dtype)
    zr, z, r, linear = (
        gates[..., a:b, :] for a, b in ((0, 2 * n), (0, n), (n, 2 * n), (2 * n, None))
    )
    for t in range(layer.steps):
        if lbr:
            np.matmul(R, h, out=gates)
        else:
            np.matmul(Rzr, h, out=zr)
        zr += XWzr[t]
        if inputs.half_per_step:
            zr *= half
        np.tanh(zr, out=zr)
        zr *= half
        zr += half
        if lbr:
            candidate = linear
            candidate += Rbh
            candidate *= r
        else:
            candidate = np.matmul(Rh, r * h)
        candidate += XWh[t]
        np.tanh(candidate, out=candidate)
        new = Hd[t]
        np.subtract(h, candidate, out=new)  # H_t = candidate + z * (H - candidate)
        new *= z
        new += candidate
        h = new
    return _finish(layer, H)


# --- the layers ------------------------------------------------------------------------------------


def _rnn(
    m, X, W, R, B, sequence_lens, initial_h, activations, alpha, beta, clip, direction, layout
):
    layer = _Layer(X, W, R, B, sequence_lens, 1, direction, layout, m)
    functions = _activations(activations, alpha, beta, (clip,), layer.directions, layer.dtype, m)
    H0 = layer.state(initial_h)
    Y_h = []
    for d in range(layer.directions):
        (f,) = functions[d]
        Wb, Rb = np.split(layer.B[d], 2)
        Rd = layer.R[d]

        def step(xw_t, h, f=f, Rd=Rd):
            a = m.recurrence(Rd, h)
            a += xw_t
            return (f(a, a),)

        (h,) = layer.run(d, layer.projection(d, Wb + Rb), step, (H0[d],))
        Y_h.append(h)
    return layer.outputs(Y_h)


def _gru(
    m, X, W, R, B, sequence_lens, initial_h, activations, alpha, beta, clip, direction, layout, lbr
):
    layer = _Layer(X, W, R, B, sequence_lens, 3, direction, layout, m)
    if _common_case(m, layer, activations, alpha, beta, clip, 3):
        return layer.outputs(_gru_together(layer, layer.state(initial_h), lbr))
    functions = _activations(
        activations, alpha, beta, (clip, clip), layer.directions, layer.dtype, m
    )
    H0 = layer.state(initial_h)
    n = layer.hidden
    one = layer.dtype.type(1)
    Y_h = []
    for d in range(layer.directions):
        f, g = functions[d]
        Wb, Rb = np.split(layer.B[d], 2)
        Rzr, Rh = layer.R[d, : 2 * n], layer.R[d, 2 * n :]
        Rbh = Rb[2 * n :, None]
        bias = Wb + Rb
        if lbr:
            bias[2 * n :] = Wb[2 * n :]  # the reset gate scales Rbh

        def step(xw_t, h, f=f, g=g, Rzr=Rzr, Rh=Rh, Rbh=Rbh):
            zr = m.recurrence(Rzr, h)
            zr += xw_t[: 2 * n]
            f(zr, zr)
            z, r = zr[:n], zr[n:]
            if lbr:
                candidate = m.recurrence(Rh, h)
                candidate += Rbh
                candidate *= r
            else:
                candidate = m.recurrence(Rh, r * h)
            candidate += xw_t[2 * n :]
            g(candidate, candidate)
            candidate *= one - z
            candidate += z * h
            return (candidate,)

        (h,) = layer.run(d, layer.projection(d, bias), step, (H0[d],))
        Y_h.append(h)
    return layer.outputs(Y_h)


def _lstm(
    m,
    X,
    W,
    R,
    B,
    sequence_lens,
    initial_h,
    initial_c,
    P,
    activations,
    alpha,
    beta,
    clip,
    direction,
    layout,
    input_forget,
):
    layer = _Layer(X, W, R, B, sequence_lens, 4, direction, layout, m)
    peepholes_used = P is not None and bool(P.any())
    if _common_case(m, layer, activations, alpha, beta, clip, 4, peepholes_used or input_forget):
        H0, C0 = layer.state(initial_h), layer.state(initial_c)
        return layer.outputs(*_lstm_together(layer, H0, C0))
    # clip bounds the gates' inputs, not the cell state that h takes (as onnxruntime)
    functions = _activations(
        activations, alpha, beta, (clip, clip, None), layer.directions, layer.dtype, m
    )
    H0, C0 = layer.state(initial_h), layer.state(initial_c)
    peepholes = None if P is None or not P.any() else P.astype(layer.dtype, copy=False)
    n = layer.hidden
    one = layer.dtype.type(1)
    Y_h, Y_c = [], []
    for d in range(layer.directions):
        f, g, h_ = functions[d]
        Wb, Rb = np.split(layer.B[d], 2)
        Rd = layer.R[d]
        if peepholes is None:
            Pi = Po = Pf = None
        else:
            Pi, Po, Pf = (p[:, None] for p in np.split(peepholes[d], 3))

        def step(xw_t, h, c, f=f, g=g, h_=h_, Rd=Rd, Pi=Pi, Po=Po, Pf=Pf):
            gates = m.recurrence(Rd, h)
            gates += xw_t
            i, o, forget, cell = gates[:n], gates[n : 2 * n], gates[2 * n : 3 * n], gates[3 * n :]
            separate = Pi is not None or input_forget  # else i, o and f take f at once
            if separate:
                if Pi is not None:
                    i += Pi * c
                f(i, i)
                if input_forget:
                    np.subtract(one, i, out=forget)
                else:
                    if Pi is not None:
                        forget += Pf * c
                    f(forget, forget)
            else:
                f(gates[: 3 * n], gates[: 3 * n])
            cell = g(cell, cell)
            cell *= i
            c = forget * c
            c += cell
            if separate:
                if Pi is not None:
                    o += Po * c
                f(o, o)
            h = h_(c, np.empty_like(c))
            h *= o
            return h, c

        h, c = layer.run(d, layer.projection(d, Wb + Rb), step, (H0[d], C0[d]))
        Y_h.append(h)
        Y_c.append(c)
    return layer.outputs(Y_h, Y_c)


# --- entry points ----------------------------------------------------------------------------------


@kernel(exact=False, exact_twin="rt.exact_rnn")
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
    _arithmetic=_Fast,
):
    """H_t = f(clip((XW_t + (Wb + Rb)) + R @ H_{t-1})); returns (Y, Y_h)."""
    return _rnn(
        _arithmetic,
        X,
        W,
        R,
        B,
        sequence_lens,
        initial_h,
        activations,
        activation_alpha,
        activation_beta,
        clip,
        direction,
        layout,
    )


@kernel(exact=False, exact_twin="rt.exact_gru")
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
    _arithmetic=_Fast,
):
    """z, r = f(clip((XW_t + (Wb + Rb)) + R_zr @ H)) (z and r at once) and
    h = g(clip((XW_t + (Wbh + Rbh)) + Rh @ (r * H))), or with linear_before_reset
    h = g(clip((XW_t + Wbh) + ((Rh @ H + Rbh) * r))); H_t = (h * (1 - z)) + (z * H).
    Returns (Y, Y_h)."""
    return _gru(
        _arithmetic,
        X,
        W,
        R,
        B,
        sequence_lens,
        initial_h,
        activations,
        activation_alpha,
        activation_beta,
        clip,
        direction,
        layout,
        linear_before_reset,
    )


@kernel(exact=False, exact_twin="rt.exact_lstm")
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
    _arithmetic=_Fast,
):
    """Gates a = (XW_t + (Wb + Rb)) + R @ H (order i, o, f, c), peepholes P (i, o, f; all-zero
    ones are skipped): i = f(clip(a_i + (Pi * C))), f = f(clip(a_f + (Pf * C))) (or 1 - i with
    input_forget), c = g(clip(a_c)), C_t = (f * C) + (c * i), o = f(clip(a_o + (Po * C_t))),
    H_t = h(C_t) * o. Returns (Y, Y_h, Y_c)."""
    return _lstm(
        _arithmetic,
        X,
        W,
        R,
        B,
        sequence_lens,
        initial_h,
        initial_c,
        P,
        activations,
        activation_alpha,
        activation_beta,
        clip,
        direction,
        layout,
        input_forget,
    )


# The exact twins: the same arguments, the same arithmetic in the same order, with _Exact's
# products and functions (see the module docstring).


@kernel(exact=True)
def exact_rnn(*args, **kwargs):
    """rnn's arithmetic in the same order, exactly."""
    return rnn(*args, _arithmetic=_Exact, **kwargs)


@kernel(exact=True)
def exact_gru(*args, **kwargs):
    """gru's arithmetic in the same order, exactly."""
    return gru(*args, _arithmetic=_Exact, **kwargs)


@kernel(exact=True)
def exact_lstm(*args, **kwargs):
    """lstm's arithmetic in the same order, exactly."""
    return lstm(*args, _arithmetic=_Exact, **kwargs)
