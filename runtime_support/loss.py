"""Loss kernels: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

The per-element losses are -input[n, target[n, d...], d...] times the target's weight: a lookup,
a negation and one correctly rounded product. The sum and mean reductions add them with
`math.fsum` (the correctly rounded sum, whatever the order or the machine) and divide once in
float64, so NegativeLogLikelihoodLoss gives the same bits everywhere. A target equal to
`ignore_index` contributes a zero loss and a zero weight: the mean divides by the sum of the
weights of the targets that are not ignored (their count without weights).

SoftmaxCrossEntropyLoss's fast kernel takes its log-softmax with numpy's exp and log (not exact);
its exact twin takes it with exact_log_softmax (the library's exp and log, a fixed-order sum) and
then the same exact NegativeLogLikelihoodLoss.
"""

from __future__ import annotations

import math

import numpy as np

from runtime_support._kernels import kernel
from runtime_support.exact import exact_log_softmax

__all__ = [
    "negative_log_likelihood_loss",
    "softmax_cross_entropy_loss",
    "exact_softmax_cross_entropy_loss",
]


def _sum(values: np.ndarray) -> float:
    """The correctly rounded float64 sum of `values` (inf and NaN as IEEE addition gives them)."""
    flat = values.astype(np.float64).ravel()
    if not np.isfinite(flat).all():
        infinities = set(flat[np.isinf(flat)].tolist())
        return math.nan if np.isnan(flat).any() or len(infinities) > 1 else infinities.pop()
    try:
        return math.fsum(flat.tolist())
    except OverflowError:  # a partial sum beyond float64: add the halves, then double
        return 2.0 * math.fsum((flat / 2.0).tolist())


def _scalar(value: float, dtype: np.dtype) -> np.ndarray:
    """A 0-d array of `dtype`; a NaN as `math.nan`, whatever the machine made of it."""
    return np.array(math.nan if math.isnan(value) else value, dtype=dtype)


@kernel(exact=True)
def negative_log_likelihood_loss(
    input, target, weight=None, *, ignore_index=None, reduction="mean"
):
    """ONNX NegativeLogLikelihoodLoss. input is (N, C, d1...) of log-probabilities, target
    (N, d1...) of class indices in [0, C) or `ignore_index`, weight (C,) per class (default 1).
    reduction "none" gives the (N, d1...) losses, "sum" their sum, "mean" their sum divided by the
    sum of the targets' weights."""
    dtype = input.dtype
    classes = input.shape[1]
    if target.shape != input.shape[:1] + input.shape[2:]:
        raise ValueError(
            f"NegativeLogLikelihoodLoss: target of shape {target.shape} does not match input of "
            f"shape {input.shape} (N, C, d1...)"
        )
    ignored = (
        np.zeros(target.shape, dtype=np.bool_) if ignore_index is None else target == ignore_index
    )
    index = np.where(ignored, 0, target).astype(np.intp)
    if index.size and not (0 <= index.min() and index.max() < classes):
        raise ValueError(
            f"NegativeLogLikelihoodLoss: a target is outside [0, {classes}) and is not "
            f"ignore_index ({ignore_index})"
        )
    picked = np.take_along_axis(input, index[:, np.newaxis], axis=1)[:, 0]
    zero = dtype.type(0)
    if weight is None:
        weights = np.where(ignored, zero, dtype.type(1))
        losses = np.where(ignored, zero, -picked)
    else:
        weights = np.where(ignored, zero, weight.astype(dtype, copy=False)[index])
        losses = np.where(ignored, zero, weights * -picked)
    if reduction == "none":  # every NaN as np.nan: NaN signs and payloads differ between machines
        return np.where(np.isnan(losses), dtype.type(np.nan), losses)
    if reduction == "sum":
        return _scalar(_sum(losses), dtype)
    if reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):  # every target ignored: 0 / 0
            return _scalar(float(np.float64(_sum(losses)) / np.float64(_sum(weights))), dtype)
    raise ValueError(f"NegativeLogLikelihoodLoss: unknown reduction {reduction!r}")


@kernel(exact=False, exact_twin="rt.exact_softmax_cross_entropy_loss")
def softmax_cross_entropy_loss(
    scores, labels, weights=None, *, ignore_index=None, reduction="mean"
):
    """ONNX SoftmaxCrossEntropyLoss: (loss, log_prob), log_prob being the log-softmax of `scores`
    over the classes (axis 1) and loss NegativeLogLikelihoodLoss of log_prob. Half-precision
    scores run the log-softmax in float32, rounded once at the end."""
    x = scores.astype(np.float32) if scores.dtype.itemsize < 4 else scores
    shifted = x - x.max(axis=1, keepdims=True)
    log_prob = (shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))).astype(
        scores.dtype, copy=False
    )
    loss = negative_log_likelihood_loss(
        log_prob, labels, weights, ignore_index=ignore_index, reduction=reduction
    )
    return loss, log_prob


@kernel(exact=True)
def exact_softmax_cross_entropy_loss(
    scores, labels, weights=None, *, ignore_index=None, reduction="mean"
):
    """softmax_cross_entropy_loss exactly: log_prob is exact_log_softmax over the classes (axis 1;
    half-precision scores in float32, rounded once to their type, as the fast kernel does), the
    loss NegativeLogLikelihoodLoss of log_prob (exact: a lookup, one product, math.fsum)."""
    x = scores.astype(np.float32) if scores.dtype.itemsize < 4 else scores
    log_prob = exact_log_softmax(x, axis=1).astype(scores.dtype, copy=False)
    loss = negative_log_likelihood_loss(
        log_prob, labels, weights, ignore_index=ignore_index, reduction=reduction
    )
    return loss, log_prob
