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

import functools

import numpy as np

from runtime_support._constants import cached as _cached
from runtime_support._kernels import kernel
from runtime_support._threads import (
    SMALL_BLAS_WORK,
    _one_blas_thread,
    blas_threads_for,
    get_num_threads,
    run_parts,
)
from runtime_support.exact import exact_matmul
from runtime_support.exact_math import exact_expm1, exact_sigmoid, exact_softplus, exact_tanh

__all__ = ["exact_gru", "exact_lstm", "exact_rnn", "gru", "lstm", "lstm_step", "rnn"]


# --- arithmetic of the two variants ----------------------------------------------------------------
# sigmoid and tanh write their result into `out` (which may be `x` itself) and return it.


class _Fast:
    exact = False
    # the common case's loop (_lstm_together, _gru_together) applies, with the directions' R as
    # one block-diagonal product when small (a quantized LSTM quantizes each direction's state
    # by itself, so its directions never share one product)
    together = True
    shared_directions = True
    matmul = staticmethod(np.matmul)

    @staticmethod
    def recurrence(R, h):
        """R @ h, R [gates * hidden, hidden] as stored, h [hidden, batch]."""
        return np.matmul(R, h)

    @staticmethod
    def step_product(R, h, out):
        """The common case's step product R @ h into `out` (leading axes: the directions)."""
        return np.matmul(R, h, out=out)

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
    together = False
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
# full lengths) run all directions in the same time loop, with sigmoid as 0.5 * tanh(x / 2) + 0.5
# so that one tanh covers every gate: a step is one product and ten numpy calls (a GRU without
# linear_before_reset: two products), whatever the number of directions.
# The states are kept transposed ([hidden, batch]) so that each step's product is R @ h with the
# weights as BLAS's left operand, as ONNX stores them: OpenBLAS runs that product at a small
# batch about 1.4x faster than h @ R^T (53 against 73 us for LSTM 256 at batch 8).
# The loop's weights are made once per set of weights (_loop_weights, cached while the arrays are
# read-only, as the weights file's are): the sigmoid gates' rows of W, R and the bias are halved
# (x / 2 is exact in binary floating point, so these are the bits of halving each step's sums),
# the two biases are summed, and a GRU with linear_before_reset gets Rbh as a last column of R
# against a row of ones kept under the state, so that the step's product adds it.
# Two directions: numpy's stacked matmul of two small products costs about 1.5 us a step more
# than one 2-D product, so up to _BLOCK_DIAGONAL_MACS multiply-adds a step the directions' R
# form one block-diagonal matrix, its rows in (gate, direction, unit) order: each gate's rows of
# both directions are contiguous, and the step is that of one direction of twice the hidden size.
# A larger layer keeps the stacked product ([directions, ...] arrays), where the zero blocks would
# double the arithmetic.

_DEFAULTS = {
    4: ("sigmoid", "tanh", "tanh"),  # LSTM
    3: ("sigmoid", "tanh"),  # GRU
}
_SIGMOID_GATES = {4: 3, 3: 2}  # the leading gates that take the sigmoid: LSTM i, o, f; GRU z, r
_BLOCK_DIAGONAL_MACS = 65536
_COLUMN_COPIES = 8


def _common_case(m, layer, activations, alpha, beta, clip, gates, extra=False) -> bool:
    names = tuple(a.lower() for a in activations)
    per_direction = _DEFAULTS[gates]
    return (
        m.together
        and not extra
        and clip is None
        and not alpha
        and not beta
        and names in (per_direction, per_direction * layer.directions)
        and layer.steps > 0
        and layer.full_lengths
    )


def _loop_weights(W, R, B, gates, lbr, block):
    """(W^T [input, rows], bias [rows], R) of the time loop (see above): rows in (direction, gate,
    unit) order and R [directions, gates * hidden, hidden (+ 1)], or with `block` rows in (gate,
    direction, unit) order and R block-diagonal, [rows, directions * hidden (+ 1)]."""
    directions, rows, n = R.shape
    scale = np.ones((rows, 1), dtype=R.dtype)
    scale[: _SIGMOID_GATES[gates] * n] = R.dtype.type(0.5)
    bias = B[:, :rows] + B[:, rows:]
    if lbr:
        bias[:, 2 * n :] = B[:, 2 * n : rows]  # the reset gate scales Rbh
    W, bias, R = W * scale, bias * scale[:, 0], R * scale
    if lbr:  # a last column: Rbh in the h rows (not a sigmoid's), zeros in the z and r rows
        column = np.zeros((directions, rows, 1), dtype=R.dtype)
        column[:, 2 * n :, 0] = B[:, rows + 2 * n :]
        R = np.concatenate([R, column], axis=2)
    if not block:
        return _columns(W.reshape(directions * rows, -1)), bias.reshape(-1), R
    width = directions * n + lbr
    square = np.zeros((gates, directions, n, width), dtype=R.dtype)
    for d in range(directions):
        square[:, d, :, d * n : (d + 1) * n] = R[d, :, :n].reshape(gates, n, n)
        if lbr:
            square[:, d, :, -1] = R[d, :, n].reshape(gates, n)
    by_gate = lambda a: a.reshape(directions, gates, n, -1).swapaxes(0, 1)  # noqa: E731
    return (
        _columns(by_gate(W).reshape(gates * directions * n, -1)),
        by_gate(bias).reshape(-1),
        square.reshape(gates * directions * n, width),
    )


def _columns(W):
    """W [rows, input] as the projection X @ W^T reads it best: W^T stored (input, rows), which
    OpenBLAS multiplies by the few rows of X (steps x batch) up to about 1.2x faster than by the
    transposed view (23 x 512 by 512 x 2048: 1.06 -> 0.87 ms)."""
    return np.ascontiguousarray(W.T)


class _Loop:
    """What the common case's time loop reads and writes, every direction at once. Each gate has
    `m` rows: the hidden size, with the directions on a leading axis (`lead` (directions,)), or
    with a block-diagonal R the directions' units one after the other (`m` directions * hidden,
    `lead` ()). XW [steps, *lead, gates * m, batch]: X W^T + bias of each step, each direction's
    steps in its processing order; H [steps, *lead, m (+ 1: the row of ones), batch]: the state
    after each step."""

    def __init__(self, layer, gates, lbr=False):
        D, n, T, b = layer.directions, layer.hidden, layer.steps, layer.batch
        shared = layer.m.shared_directions and D * gates * n * n * b <= _BLOCK_DIAGONAL_MACS
        block = D == 1 or shared
        arrays = (layer.W, layer.R, layer.B)
        columns, bias, self.R = _cached(
            arrays, (gates, lbr, block), lambda: _loop_weights(*arrays, gates, lbr, block)
        )
        self.layer, self.lbr = layer, lbr
        self.lead, self.m = ((), D * n) if block else ((D,), n)
        groups, width = (gates, n) if block else (1, gates * n)  # the projection's column groups
        projection = layer.m.matmul(layer.x.reshape(T * b, layer.x.shape[2]), columns)
        projection += bias
        projection = projection.reshape(T, b, groups, D, width)
        if b == 1 and D == 1:  # [steps, 1, rows] is [steps, rows, 1] already
            steps = projection[::-1] if layer.reverse[0] else projection
            self.XW = steps.reshape(T, gates * self.m, 1)
        else:
            self.XW = self._transposed(projection, gates)
        self.H = np.empty((T, *self.lead, self.m + lbr, b), dtype=layer.dtype)
        if lbr:
            self.H[..., self.m, :] = 1

    def _transposed(self, projection, gates):
        """XW from the projection [steps, batch, groups, directions, width]."""
        layer = self.layer
        T, b, groups, D, width = projection.shape
        XW = np.empty((T, groups, D, width, b), dtype=layer.dtype)
        for d in range(D):
            steps = projection[::-1, :, :, d] if layer.reverse[d] else projection[:, :, :, d]
            # numpy's copy of a transposed view loops over the batch innermost, slow for a
            # small batch: one copy per batch column (32 steps of 384 rows at batch 4: 37 ->
            # 16 us) up to _COLUMN_COPIES columns, where one copy becomes the faster
            if b <= _COLUMN_COPIES:
                for j in range(b):
                    XW[:, :, d, :, j] = steps[:, j]
            else:
                XW[:, :, d] = steps.transpose(0, 2, 3, 1)
        return XW.reshape(T, *self.lead, gates * self.m, b)

    def initial(self, state, written=False):
        """A state given as [directions, hidden, batch], in the loop's layout: a new array if the
        loop writes it or needs the row of ones, else possibly a view of `state`."""
        shaped = state.reshape(*self.lead, self.m, self.layer.batch)
        if not (written or self.lbr):
            return shaped
        h = np.empty(self.H.shape[1:], dtype=self.H.dtype)
        h[..., : self.m, :] = shaped
        if self.lbr:
            h[..., self.m, :] = 1
        return h

    def per_direction(self, state):
        """A state in the loop's layout as one [hidden, batch] view per direction."""
        layer = self.layer
        return list(state[..., : self.m, :].reshape(layer.directions, layer.hidden, layer.batch))

    def finish(self):
        """Writes the layer's Y from H; returns each direction's final state [hidden, batch]."""
        layer = self.layer
        shape = (layer.steps, layer.directions, layer.hidden, layer.batch)
        H = self.H[..., : self.m, :].reshape(shape)
        for d in range(layer.directions):
            layer.Y[:, d] = (H[::-1, d] if layer.reverse[d] else H[:, d]).transpose(0, 2, 1)
        return self.per_direction(self.H[-1])


def _lstm_together(layer, H0, C0):
    loop = _Loop(layer, 4)
    m, R = loop.m, loop.R
    half = layer.dtype.type(0.5)
    h, c = loop.initial(H0), loop.initial(C0, written=True)
    cell = np.empty_like(c)
    # one buffer for every step's gates and its views made once: a small layer's step costs
    # about a microsecond per numpy call or view
    gates = np.empty((*loop.lead, 4 * m, layer.batch), dtype=layer.dtype)
    sigmoids, i, o, f, g = (
        gates[..., a:b, :]
        for a, b in ((0, 3 * m), (0, m), (m, 2 * m), (2 * m, 3 * m), (3 * m, 4 * m))
    )
    step_product = layer.m.step_product
    for xw, new in zip(loop.XW, loop.H):
        step_product(R, h, gates)
        gates += xw
        np.tanh(gates, out=gates)
        sigmoids *= half
        sigmoids += half
        c *= f
        np.multiply(i, g, out=cell)
        c += cell
        np.tanh(c, out=new)
        new *= o
        h = new
    return loop.finish(), loop.per_direction(c)


def _gru_together(layer, H0, lbr):
    loop = _Loop(layer, 3, lbr)
    m, R = loop.m, loop.R
    Rzr, Rh = R[..., : 2 * m, :], R[..., 2 * m :, :]
    XWzr, XWh = loop.XW[..., : 2 * m, :], loop.XW[..., 2 * m :, :]
    half = layer.dtype.type(0.5)
    h = loop.initial(H0)  # with linear_before_reset, its last row is ones (R's column Rbh)
    # the step's buffers and their views made once (see _lstm_together)
    gates = np.empty((*loop.lead, (3 if lbr else 2) * m, layer.batch), dtype=layer.dtype)
    zr, z, r, linear = (
        gates[..., a:b, :] for a, b in ((0, 2 * m), (0, m), (m, 2 * m), (2 * m, None))
    )
    state = h[..., :m, :]
    for xzr, xh, full, new in zip(XWzr, XWh, loop.H, loop.H[..., :m, :]):
        if lbr:
            np.matmul(R, h, out=gates)  # with Rbh in the h rows
        else:
            np.matmul(Rzr, h, out=zr)
        zr += xzr
        np.tanh(zr, out=zr)
        zr *= half
        zr += half
        if lbr:
            candidate = linear
            candidate *= r
        else:
            candidate = np.matmul(Rh, r * h)
        candidate += xh
        np.tanh(candidate, out=candidate)
        np.subtract(state, candidate, out=new)  # H_t = candidate + z * (H - candidate)
        new *= z
        new += candidate
        h, state = full, new
    return loop.finish()


# --- the layers ------------------------------------------------------------------------------------


def _layer(states: int, layout_at: int):
    """Decorator of the three layer functions `f(m, X, W, R, B, sequence_lens, <`states` initial
    states>, ..., layout (at `layout_at` from the end), ...)`, for every caller (com.microsoft's
    DynamicQuantizeLSTM too): when the call is large enough to split (_batch_parts), the batch
    in parts over the threads, each part's products at one BLAS thread; else the products at one
    BLAS thread unless one of them (the projection, a step) has ONE_BLAS_THREAD_PRODUCT
    multiply-adds or more. The rule went by the whole call's work against
    _threads.SMALL_BLAS_WORK, and since that is 4 M the taggers' 3-4 M projections split over
    OpenBLAS's two threads: under load 40-50 ms a run for 0.4 ms of work, where the split gained
    about 20 us on a quiet machine (session 6)."""

    def wrap(layer_function):
        @functools.wraps(layer_function)
        def run(m, X, W, R, *rest):
            work = _multiply_adds(X, W, R)
            layout = rest[len(rest) - layout_at]
            parts = _batch_parts(m, X, R, layout, work)
            if parts > 1:
                return _by_batch(layer_function, parts, states, layout, (m, X, W, R, *rest))
            small = _largest_product(X, W, R, layout) < ONE_BLAS_THREAD_PRODUCT
            with blas_threads_for(0 if small else work):  # 0: one BLAS thread at 2+ threads
                return layer_function(m, X, W, R, *rest)

        return run

    return wrap


# A recurrent layer that does not split its batch runs its products at one BLAS thread unless
# one product has this many multiply-adds (about half a millisecond of one thread's work): the
# recurrent rule of session 6, kept when _threads.SMALL_BLAS_WORK went to 4 M for the CNNs.
ONE_BLAS_THREAD_PRODUCT = 32_000_000

# Each step's product of a part must have this many multiply-adds for the batch to be split over
# the threads: numpy holds the GIL for each call's setup (about 1 us), so two threads of small
# steps (the taggers' 0.2 M) take turns. None (the default): no split. Measured on the quiet
# machine (2 threads, 2026-12-02), the split took 1.15-1.4x the unsplit layer at every size tried
# (seq x batch x input x hidden 64x8x256x256, 32x16x512x512, 32x32x1024x1024; the lstm bench
# model 7.3-9.2 against 6.0-6.4 ms); it wins only under load, against OpenBLAS splitting each
# step of 32 M multiply-adds or more. 500_000 turns it on for steps of that size.
BATCH_SPLIT_STEP: int | None = None


def _batch_parts(m, X, R, layout, work) -> int:
    """How many batch parts a fast call runs in: one per thread, as many as the batch and
    BATCH_SPLIT_STEP allow (1: no split; always 1 while BATCH_SPLIT_STEP is None).
    The batch's columns are independent through the whole recurrence, so a part is the same
    layer on fewer columns: one hand-off to a worker per call, where OpenBLAS's own split of
    each step's product waits for its second thread at every step (a scheduler slice each when
    the other core is busy)."""
    threads = get_num_threads()
    if BATCH_SPLIT_STEP is None or m is not _Fast or threads == 1 or X.ndim != 3:
        return 1
    if work < SMALL_BLAS_WORK:  # the whole call is small: one BLAS thread, no hand-off
        return 1
    batch = X.shape[1 if layout == 0 else 0]
    step = R.shape[0] * R.shape[1] * R.shape[2] * batch  # a whole step's multiply-adds
    return max(1, min(threads, batch, step // BATCH_SPLIT_STEP))


def _by_batch(layer_function, parts, states, layout, arguments):
    """layer_function's outputs with the batch cut into `parts` runs, spread over the threads
    (_threads.run_parts) with BLAS at one thread, and joined: one call's values to float32
    rounding (the arithmetic of each column is the same but OpenBLAS's products of fewer
    columns may round their last bit differently; OpenBLAS's own split does the same)."""
    m, X, W, R, B, sequence_lens, *rest = arguments
    batch_axis = 1 if layout == 0 else 0  # of X and of the initial states
    batch = X.shape[batch_axis]
    bounds = [batch * k // parts for k in range(parts + 1)]
    results: list = [None] * parts

    def cut(a, axis, k):
        return None if a is None else a[(slice(None),) * axis + (slice(bounds[k], bounds[k + 1]),)]

    def part(k):
        initial = [cut(s, batch_axis, k) for s in rest[:states]]
        results[k] = layer_function(
            m, cut(X, batch_axis, k), W, R, B, cut(sequence_lens, 0, k), *initial, *rest[states:]
        )

    with _one_blas_thread():
        run_parts(part, parts)
    # Y [steps, directions, batch, hidden] and the states [directions, batch, hidden]; layout 1:
    # the batch first in each
    axes = (2, 1) if layout == 0 else (0, 0)
    return tuple(
        np.concatenate([r[i] for r in results], axis=axes[min(i, 1)])
        for i in range(len(results[0]))
    )


@_layer(states=1, layout_at=1)
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


@_layer(states=1, layout_at=2)
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


@_layer(states=2, layout_at=2)
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


def _multiply_adds(X, W, R) -> int:
    """The layer's products' multiply-adds: the input projection's and every step's."""
    steps_by_batch = X.shape[0] * X.shape[1] if X.ndim == 3 else 0
    return steps_by_batch * W.shape[0] * W.shape[1] * (W.shape[2] + R.shape[2])


def _largest_product(X, W, R, layout) -> int:
    """The multiply-adds of the layer's largest single product: the input projection (every
    step at once) or one step's."""
    if X.ndim != 3:
        return 0
    steps, batch = X.shape[:2] if layout == 0 else X.shape[1::-1]
    return W.shape[0] * W.shape[1] * batch * max(steps * W.shape[2], R.shape[2])


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


# --- one step ----------------------------------------------------------------------------------
# A streaming model calls its LSTM once per chunk with one time step (silero-vad: hidden 128,
# batch 1), where the layer's generic machinery (_layer's thread rule, _Layer, _Loop's projection
# and buffers, the outputs' transposes: about 30 us) is most of the call. lstm_step runs such a
# call as one product and seven ufuncs: gates = [W | R] @ [x; h] + bias, with the sigmoid gates'
# rows halved as in the time loop (sigmoid(a) = 0.5 * tanh(a / 2) + 0.5, one tanh for all four
# gates) and the bias a last row of the weights against a 1 after [x; h] (in rows: [batch, gates]),
# the concatenated weights made once per set of read-only weights (_cached). Whatever is
# not that case (more steps, two directions, layout 1, sequence lengths or peepholes in use,
# float16) is lstm's call. The fast variant emits it for an LSTM with the default activations,
# no clip and no input_forget whose sequence length is 1 or unknown at compile time.


def _step_weights(W, R, B):
    """[W | R | bias]^T [input + hidden + 1, 4 * hidden], the bias the sum of B's two, the sigmoid
    gates' (i, o, f) columns halved: the product of [x | h | 1] with it adds the bias."""
    n = R.shape[-1]
    rows = 4 * n
    scale = np.ones(rows, dtype=R.dtype)
    scale[: 3 * n] = R.dtype.type(0.5)
    bias = np.zeros(rows, dtype=R.dtype) if B is None else B[0, :rows] + B[0, rows:]
    WR = np.concatenate([W[0], R[0], bias[:, None]], axis=1).T * scale
    return np.ascontiguousarray(WR)


def _one_step(X, W, R, B, initial_h, initial_c):
    """The step of lstm_step's common case, in rows ([batch, gates]): (Y, Y_h, Y_c), fresh."""
    dtype = X.dtype
    batch, n = X.shape[1], R.shape[-1]
    arrays = (W, R) if B is None else (W, R, B)
    WR = _cached(arrays, ("step", B is None), lambda: _step_weights(W, R, B))
    h0 = np.zeros((batch, n), dtype) if initial_h is None else initial_h[0]
    gates = np.matmul(np.concatenate((X[0], h0, np.ones((batch, 1), dtype)), axis=1), WR)
    np.tanh(gates, out=gates)
    sigmoids = gates[:, : 3 * n]
    sigmoids *= dtype.type(0.5)
    sigmoids += dtype.type(0.5)
    i, o, f, g = gates[:, :n], gates[:, n : 2 * n], gates[:, 2 * n : 3 * n], gates[:, 3 * n :]
    g *= i
    if initial_c is None:
        c = np.ascontiguousarray(g)
    else:
        c = np.multiply(f, initial_c[0])
        c += g
    h = np.tanh(c)
    h *= o
    return h[None, None].copy(), h[None], c[None]


@kernel(exact=False, exact_twin="rt.exact_lstm")
def lstm_step(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    initial_c=None,
    P=None,
    *,
    direction="forward",
    layout=0,
):
    """lstm(...) with the default activations, no clip and no input_forget, for a call that is
    most likely one time step: that step as one product (see above), else lstm's own call."""
    if (
        layout == 0
        and X.ndim == 3
        and X.shape[0] == 1
        and W.shape[0] == 1
        and X.dtype in _STEP_DTYPES
        and W.dtype == X.dtype
        and R.dtype == X.dtype
        and (B is None or B.dtype == X.dtype)
        and (initial_h is None or initial_h.dtype == X.dtype)
        and (initial_c is None or initial_c.dtype == X.dtype)
        and (sequence_lens is None or bool((sequence_lens == 1).all()))
        and (P is None or not P.any())
    ):
        if get_num_threads() == 1:
            return _one_step(X, W, R, B, initial_h, initial_c)
        if _largest_product(X, W, R, 0) < ONE_BLAS_THREAD_PRODUCT:  # lstm's thread rule
            with _one_blas_thread():
                return _one_step(X, W, R, B, initial_h, initial_c)
    return lstm(
        X, W, R, B, sequence_lens, initial_h, initial_c, P, direction=direction, layout=layout
    )


_STEP_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


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
