"""The ONNX backend node tests, every in-scope case, per variant.

A case in the variant's expected-pass list (tests/conformance/expected_pass_<variant>.txt) must
pass. In the exact variant every other case must be refused for an operator of the refusal list.
In the fast variant any other case runs as a non-strict xfail: a newly passing one shows up as XPASS
in the summary (`-rX`), a sign to grow the list with `python -m tools.conformance --update-expected`.
Every case the exact variant passes is also run in both variants and the two compared. The rule
and the refusal list live in tests/acceptance.py (tests/test_unknown_rank.py holds the cases to it
with their shapes hidden).
"""

from __future__ import annotations

import pytest

from tests.acceptance import EXPECTED, REFUSAL_LIST, VARIANTS, assert_accepted
from tests.harness import backend_cases, conformance
from tests.harness.compare import compare

__all__ = ["REFUSAL_LIST"]  # still importable from here (test_onnx_model_tests, test_real_models)


def _params():
    for variant in VARIANTS:
        expected = EXPECTED[variant]
        for name in backend_cases.in_scope_names():
            marks = [pytest.mark.slow]
            if name not in expected and variant == "fast":
                marks.append(
                    pytest.mark.xfail(reason="not in the expected-pass list", strict=False)
                )
            yield pytest.param(name, variant, id=f"{variant}-{name}", marks=marks)


@pytest.mark.parametrize("name,variant", list(_params()))
def test_backend_case(name: str, variant: str) -> None:
    """A listed case passes. In the exact variant an unlisted case must be refused, and only for
    an operator of the refusal list (issue #6's acceptance), the message naming it."""
    assert_accepted(conformance.run_case(name, variant))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED["exact"]))
def test_fast_and_exact_agree(name: str) -> None:
    """Where the exact variant compiles and passes, the fast variant's outputs agree with its
    outputs at the case's backend tolerance (issue #6's acceptance)."""
    outcome = conformance.run_agreement(name)
    assert outcome.status == "pass", f"{outcome.status}: {outcome.detail}"


def test_expected_lists_name_in_scope_cases() -> None:
    in_scope = set(backend_cases.in_scope_names())
    for variant in VARIANTS:
        expected = EXPECTED[variant]
        assert expected, f"the {variant} expected-pass list is empty"
        assert expected <= in_scope, sorted(expected - in_scope)[:10]


def test_scope_copy_counts_1614_in_scope_cases() -> None:
    assert len(backend_cases.in_scope_names()) == 1614
    assert set(backend_cases.scope()) == set(backend_cases.all_cases())


def test_comparison_detects_differences() -> None:
    import numpy as np

    same = np.array([1.0, np.nan], dtype=np.float32)
    assert compare(same, same.copy(), 1e-3, 1e-7, "x") is None
    assert compare(same, np.array([1.1, np.nan], dtype=np.float32), 1e-3, 1e-7, "x")
    assert compare(same, np.array([1.0, 0.0], dtype=np.float32), 1e-3, 1e-7, "x")
    assert compare(same, same.astype(np.float64), 1e-3, 1e-7, "x")
    assert compare(same, same[:1], 1e-3, 1e-7, "x")
    assert compare(np.array([1, 2]), np.array([1, 3]), 1e-3, 1e-7, "x")
