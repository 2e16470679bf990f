"""Random generators: RandomUniform, RandomUniformLike, RandomNormal, RandomNormalLike, Bernoulli,
Multinomial.

Values come from numpy's PCG64 generator. A node with a `seed` gives the same values on every
call (a generator made from the seed each time: a compiled module keeps no state between calls);
without one, fresh entropy on every call. The seed's float32 bits seed PCG64, so every seed value
names its own stream.

Exactness, for seeded nodes (unseeded ones differ from call to call by definition): a uniform
value is PCG64's 53 random bits times 2**-53, scaled by two float64 operations and rounded once
to the output type: the same bits on every machine. Normal values are Box-Muller over two
uniform values, sqrt(-2 log u1) * cos(2 pi u2): numpy's log and cos in the fast variant, the
library's correctly rounded twins in the exact one (exact_random_normal).
"""

from __future__ import annotations

import numpy as np

from runtime_support._kernels import kernel
from runtime_support.exact_math import exact_log
from runtime_support.exact_trig import exact_cos

__all__ = [
    "bernoulli",
    "exact_random_normal",
    "random_normal",
    "random_uniform",
]


def _generator(seed) -> np.random.Generator:
    if seed is None:
        return np.random.default_rng()
    return np.random.Generator(np.random.PCG64(int(np.float32(seed).view(np.uint32))))


def _shape(shape) -> tuple[int, ...]:
    shape = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if any(d < 0 for d in shape):
        raise ValueError(f"random generator: negative dimension in shape {shape}")
    return shape


@kernel(exact=True)
def random_uniform(shape, *, low=0.0, high=1.0, dtype=np.float32, seed=None):
    """Values drawn uniformly from [low, high), of `dtype` and `shape`."""
    unit = _generator(seed).random(_shape(shape))
    return (np.float64(low) + (np.float64(high) - np.float64(low)) * unit).astype(dtype)


def _normal(shape, mean, scale, dtype, seed, log, cos) -> np.ndarray:
    shape = _shape(shape)
    draws = _generator(seed).random((2,) + shape)
    radius = np.sqrt(-2.0 * log(1.0 - draws[0]))  # 1 - u is in (0, 1]: log is finite
    values = radius * cos((2.0 * np.pi) * draws[1])
    return (np.float64(mean) + np.float64(scale) * values).astype(dtype)


@kernel(exact=False, exact_twin="rt.exact_random_normal")
def random_normal(shape, *, mean=0.0, scale=1.0, dtype=np.float32, seed=None):
    """Values drawn from the normal distribution N(mean, scale**2), of `dtype` and `shape`."""
    return _normal(shape, mean, scale, dtype, seed, np.log, np.cos)


@kernel(exact=True)
def exact_random_normal(shape, *, mean=0.0, scale=1.0, dtype=np.float32, seed=None):
    """random_normal with the library's log and cos: the same bits on every machine."""
    return _normal(shape, mean, scale, dtype, seed, exact_log, exact_cos)


@kernel(exact=True)
def bernoulli(X, *, dtype=None, seed=None):
    """1 with probability X (each element), else 0, of `dtype` (default X's)."""
    unit = _generator(seed).random(X.shape)
    return (unit < X.astype(np.float64)).astype(X.dtype if dtype is None else dtype)


# --- Multinomial -----------------------------------------------------------------------------------

__all__ += ["exact_multinomial", "multinomial"]


def _multinomial(X, sample_size, dtype, seed, exp):
    """(batch, sample_size) class indices, each drawn from the row's distribution softmax(X[b]):
    w = exp(x - max(x)) in float64, its running sum c in class order (np.cumsum: one rounded
    addition per class, in order), then per draw u (PCG64's uniform in [0, 1)) the first class
    with c > u * c[-1]."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"Multinomial: input of shape {X.shape} is not (batch, classes)")
    if sample_size < 0:
        raise ValueError(f"Multinomial: sample_size {sample_size} is negative")
    batch, classes = X.shape
    if classes == 0:
        raise ValueError("Multinomial: no classes to draw from")
    x = X.astype(np.float64)
    weights = exp(x - x.max(axis=1, keepdims=True))
    running = np.cumsum(weights, axis=1)
    targets = _generator(seed).random((batch, sample_size)) * running[:, -1:]
    drawn = np.empty((batch, sample_size), np.int64)
    for row in range(batch):  # the first class whose running sum passes the target
        drawn[row] = np.searchsorted(running[row], targets[row], side="right")
    return np.minimum(drawn, classes - 1).astype(dtype)


@kernel(exact=False, exact_twin="rt.exact_multinomial")
def multinomial(X, *, sample_size=1, dtype=np.int32, seed=None):
    """ONNX Multinomial: X (batch, classes) of unnormalized log-probabilities; numpy's exp."""
    return _multinomial(X, sample_size, dtype, seed, np.exp)


@kernel(exact=True)
def exact_multinomial(X, *, sample_size=1, dtype=np.int32, seed=None):
    """multinomial with the library's correctly rounded exp: the same draws on every machine
    for a seeded node."""
    from runtime_support.exact_math import exact_exp

    return _multinomial(X, sample_size, dtype, seed, exact_exp)
