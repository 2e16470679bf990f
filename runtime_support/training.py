"""Training kernels: BatchNormalization in training mode and the optimizers of the
ai.onnx.preview.training domain (Adagrad, Adam, Momentum).

All exact: the batch statistics are exact_mean and exact_var (float64 sums in a fixed order,
rounded once), everything else elementwise IEEE operations (sqrt included, correctly rounded) in
a fixed order in the tensors' type, and the step powers of Adam by repeated squaring in float64
(the same multiplications on every machine, no libm pow).
"""

from __future__ import annotations

import numpy as np

from runtime_support._kernels import kernel
from runtime_support.exact import exact_mean, exact_var
from runtime_support.normalization import batch_normalization

__all__ = ["adagrad", "adam", "batch_normalization_training", "momentum"]


@kernel(exact=True)
def batch_normalization_training(
    X, scale, B, input_mean, input_var, *, epsilon, momentum, outputs=3
):
    """(Y, running_mean, running_var)[:outputs]: X normalized with its own per-channel mean and
    population variance (over every axis but 1); the running statistics move towards them,
    input * momentum + batch * (1 - momentum)."""
    axes = (0,) + tuple(range(2, X.ndim))
    mean, var = exact_mean(X, axes), exact_var(X, axes)
    Y = batch_normalization(X, scale, B, mean, var, epsilon=epsilon)
    keep = X.dtype.type(momentum)
    move = X.dtype.type(1) - keep
    running_mean = (input_mean.astype(X.dtype) * keep + mean * move).astype(X.dtype)
    running_var = (input_var.astype(X.dtype) * keep + var * move).astype(X.dtype)
    results = (Y, running_mean, running_var)[:outputs]
    return results[0] if outputs == 1 else results


def _power(base: float, exponent: int) -> float:
    """base ** exponent (exponent >= 0) by repeated squaring in float64."""
    result, factor = 1.0, float(base)
    while exponent > 0:
        if exponent & 1:
            result *= factor
        factor *= factor
        exponent >>= 1
    return result


def _split(tensors, groups: int, name: str) -> list[tuple]:
    if len(tensors) % groups:
        raise ValueError(f"{name}: {len(tensors)} tensors do not split into {groups} groups")
    n = len(tensors) // groups
    return [tensors[i * n : (i + 1) * n] for i in range(groups)]


def _regularized(X, G, norm_coefficient):
    return X.dtype.type(norm_coefficient) * X + G


@kernel(exact=True)
def adagrad(R, T, *tensors, decay_factor=0.0, epsilon=0.0, norm_coefficient=0.0):
    """ONNX Adagrad over groups (X..., G..., H...): r = R / (1 + T * decay_factor); per tensor
    G' = norm_coefficient * X + G, H_new = H + G' * G', X_new = X - r * G' / (sqrt(H_new) +
    epsilon). Returns (X_new..., H_new...)."""
    Xs, Gs, Hs = _split(tensors, 3, "Adagrad")
    new_x, new_h = [], []
    for X, G, H in zip(Xs, Gs, Hs):
        dtype = X.dtype.type
        r = dtype(R) / (dtype(1) + dtype(T) * dtype(decay_factor))
        G_reg = _regularized(X, G, norm_coefficient)
        H_new = H + G_reg * G_reg
        new_x.append(X - r * G_reg / (np.sqrt(H_new) + dtype(epsilon)))
        new_h.append(H_new)
    return tuple(new_x + new_h)


@kernel(exact=True)
def momentum(R, T, *tensors, alpha, beta, mode, norm_coefficient):
    """ONNX Momentum over groups (X..., G..., V...): G' = norm_coefficient * X + G, V_new =
    alpha * V + beta' * G' (beta' = beta once T > 0, else 1); X_new = X - R * V_new ("standard")
    or X - R * (G' + alpha * V_new) ("nesterov"). Returns (X_new..., V_new...)."""
    if mode not in ("standard", "nesterov"):
        raise ValueError(f"Momentum: mode {mode!r} is neither 'standard' nor 'nesterov'")
    Xs, Gs, Vs = _split(tensors, 3, "Momentum")
    new_x, new_v = [], []
    for X, G, V in zip(Xs, Gs, Vs):
        dtype = X.dtype.type
        G_reg = _regularized(X, G, norm_coefficient)
        beta_adjusted = dtype(beta) if int(T) > 0 else dtype(1)
        V_new = dtype(alpha) * V + beta_adjusted * G_reg
        step = V_new if mode == "standard" else G_reg + dtype(alpha) * V_new
        new_x.append(X - dtype(R) * step)
        new_v.append(V_new)
    return tuple(new_x + new_v)


@kernel(exact=True)
def adam(
    R,
    T,
    *tensors,
    alpha=0.9,
    beta=0.999,
    epsilon=0.0,
    norm_coefficient=0.0,
    norm_coefficient_post=0.0,
):
    """ONNX Adam over groups (X..., G..., V..., H...): G' = norm_coefficient * X + G, V_new =
    alpha * V + (1 - alpha) * G', H_new = beta * H + (1 - beta) * G' * G', R' = R * sqrt(1 -
    beta**T) / (1 - alpha**T) once T > 0 (else R), X_new = (1 - norm_coefficient_post) * (X - R' *
    V_new / (sqrt(H_new) + epsilon)). Returns (X_new..., V_new..., H_new...)."""
    Xs, Gs, Vs, Hs = _split(tensors, 4, "Adam")
    step = int(T)
    new_x, new_v, new_h = [], [], []
    for X, G, V, H in zip(Xs, Gs, Vs, Hs):
        dtype = X.dtype.type
        one = dtype(1)
        G_reg = _regularized(X, G, norm_coefficient)
        V_new = dtype(alpha) * V + (one - dtype(alpha)) * G_reg
        H_new = dtype(beta) * H + (one - dtype(beta)) * G_reg * G_reg
        rate = dtype(R)
        if step > 0:
            correction = np.sqrt(dtype(1.0 - _power(beta, step))) / dtype(1.0 - _power(alpha, step))
            rate = rate * correction
        X_new = X - rate * V_new / (np.sqrt(H_new) + dtype(epsilon))
        new_x.append((one - dtype(norm_coefficient_post)) * X_new)
        new_v.append(V_new)
        new_h.append(H_new)
    return tuple(new_x + new_v + new_h)
