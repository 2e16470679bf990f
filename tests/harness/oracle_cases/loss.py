"""Oracle cases of the loss family (onemodel_compile/ops/loss.py: NegativeLogLikelihoodLoss and
SoftmaxCrossEntropyLoss).

Targets are drawn in [0, C) or equal to ignore_index; a target outside both is an error (the
compiled module raises, onnxruntime too). bfloat16 is not covered: onnxruntime's Python binding takes
and returns no bfloat16 arrays.
"""

from __future__ import annotations

import numpy as np

from tests.harness.oracle import Case, c, v, w, x

OPERATORS = ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss")

NLL = "NegativeLogLikelihoodLoss"
SCE = "SoftmaxCrossEntropyLoss"

_rng = np.random.default_rng(5150)

# Every target ignored: the mean divides 0 by a zero weight sum.
_ALL_IGNORED = np.full((2, 3), 4, dtype=np.int64)


def _targets(*shape, classes=5, low=0, dtype="int64", **options):
    """Class indices in [low, classes - 1] (low below 0 draws ignore_index candidates)."""
    return x(*shape, dtype=dtype, gen="int", low=low, high=classes - 1, **options)


def _log_probs(*shape, dtype="float32", **options):
    """Log-probabilities (non-positive)."""
    return x(*shape, dtype=dtype, gen="uniform", low=-6, high=0, **options)


_ND = {"n": (1, 4), "d": (1, 5)}

CASES = [
    # --- NegativeLogLikelihoodLoss: reductions, weights, ignore_index, N-D inputs
    Case("nll_nc_mean", NLL, 13, (_log_probs("n", 5), _targets("n")), dims=_ND),
    Case(
        "nll_nc_none_opset12",
        NLL,
        12,
        (_log_probs(4, 6), _targets(4, classes=6)),
        attrs={"reduction": "none"},
    ),
    Case(
        "nll_ncd_sum_weight",
        NLL,
        22,
        (_log_probs("n", 5, "d"), _targets("n", "d"), w(5, gen="uniform", low=0, high=2)),
        attrs={"reduction": "sum"},
        dims=_ND,
    ),
    Case(
        "nll_ncd_mean_weight_ignore_negative",
        NLL,
        22,
        (
            _log_probs("n", 5, "d", 3),
            _targets("n", "d", 3, low=-1),
            x(5, gen="uniform", low=0.1, high=3),
        ),
        attrs={"reduction": "mean", "ignore_index": -1},
        dims=_ND,
    ),
    Case(
        "nll_ncd_mean_ignore_no_weight",
        NLL,
        13,
        (_log_probs(3, 4, 2, 5), _targets(3, 2, 5, classes=4)),
        attrs={"ignore_index": 2},
    ),
    Case(
        "nll_none_weight_ignore_int32_targets",
        NLL,
        13,
        (_log_probs(3, 5, 4), _targets(3, 4, dtype="int32"), w(5, gen="uniform", low=0, high=2)),
        attrs={"reduction": "none", "ignore_index": 0},
    ),
    Case(
        "nll_sum_ignore_out_of_range",
        NLL,
        22,
        (_log_probs(6, 3), v([0, 9, 2, 1, 9, 2]), w(3, gen="uniform", low=0, high=2)),
        attrs={"reduction": "sum", "ignore_index": 9},
    ),
    Case(
        "nll_mean_every_target_ignored",
        NLL,
        22,
        (_log_probs(2, 5, 3), v(_ALL_IGNORED), w(5, gen="uniform", low=0.5, high=1)),
        attrs={"ignore_index": 4},
    ),
    Case(
        "nll_special_values",
        NLL,
        22,
        (x(4, 3, 5, special=True), _targets(4, 5, classes=3)),
        attrs={"reduction": "none"},
    ),
    Case(
        "nll_special_values_sum",
        NLL,
        22,
        (x(3, 4, special="inf"), _targets(3, classes=4)),
        attrs={"reduction": "sum"},
    ),
    Case(
        "nll_float16_mean_weight",
        NLL,
        13,
        (
            _log_probs(5, 4, 3, dtype="float16"),
            _targets(5, 3, classes=4),
            w(4, dtype="float16", gen="uniform", low=0, high=2),
        ),
    ),
    Case(
        "nll_float64_sum",
        NLL,
        22,
        (_log_probs("n", 7, dtype="float64"), _targets("n", classes=7)),
        attrs={"reduction": "sum"},
        dims=_ND,
    ),
    Case(
        "nll_empty_batch_none",
        NLL,
        22,
        (_log_probs(0, 3), _targets(0, classes=3)),
        attrs={"reduction": "none"},
    ),
    Case(
        "nll_initializer_inputs_folded",
        NLL,
        13,
        (c(_rng.uniform(-3, 0, (3, 4)).astype(np.float32), "float32"), c([3, 0, 2])),
    ),
    # --- SoftmaxCrossEntropyLoss: the same, from scores, with the optional log_prob output
    Case("sce_nc_mean", SCE, 13, (x("n", 5, scale=3.0), _targets("n")), dims=_ND),
    Case(
        "sce_nc_none_log_prob_opset12",
        SCE,
        12,
        (x(4, 6, scale=2.0), _targets(4, classes=6)),
        attrs={"reduction": "none"},
        outputs=2,
    ),
    Case(
        "sce_ncd_mean_weight_ignore_log_prob",
        SCE,
        13,
        (
            x("n", 5, "d", scale=4.0),
            _targets("n", "d", low=-1),
            w(5, gen="uniform", low=0.1, high=2),
        ),
        attrs={"ignore_index": -1},
        outputs=2,
        dims=_ND,
    ),
    Case(
        "sce_ncdd_sum_ignore",
        SCE,
        13,
        (x(2, 3, 4, 5, scale=10.0), _targets(2, 4, 5, classes=3)),
        attrs={"reduction": "sum", "ignore_index": 1},
    ),
    Case(
        "sce_large_scores",
        SCE,
        13,
        (x(3, 4, gen="uniform", low=-1e4, high=1e4), _targets(3, classes=4)),
        attrs={"reduction": "none"},
        outputs=2,
    ),
    Case(
        "sce_special_values",
        SCE,
        13,
        (x(3, 5, 2, special="inf"), _targets(3, 2)),
        attrs={"reduction": "none"},
        outputs=2,
    ),
    Case(
        "sce_float64_mean_weight",
        SCE,
        13,
        (
            x(4, 3, dtype="float64", scale=2.0),
            _targets(4, classes=3),
            w(3, dtype="float64", gen="uniform", low=0, high=1),
        ),
    ),
]
