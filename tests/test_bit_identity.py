"""Proof of bit-identity (docs/contract.md "Exactness"): every exact module gives the same output bits in
every environment of tests.harness.bit_identity.ENVIRONMENTS, and those bits are the golden ones committed in
tests/bit_identity/golden_exact.json.

The harness compiles every exact-compilable backend case and the example models, runs them in one
subprocess per environment (SIMD levels, OpenBLAS kernels and thread counts, numpy 1.26 in a virtual
environment under .cache/, created from PyPI on first use) and compares SHA-256 digests of all outputs.
Slow: a few minutes on 2 cores; `make test` runs it. docs/bit-identity.md tells the method.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.harness import bit_identity

JOBS = 2


@pytest.mark.slow
def test_exact_bits_identical_in_every_environment_and_golden(tmp_path) -> None:
    timings = {}
    start = time.perf_counter()
    try:
        numpy126_python = bit_identity.ensure_numpy126_python()
    except bit_identity.SetupError as exc:
        pytest.fail(f"the numpy-1.26 environment of the matrix is missing: {exc}")
    timings["numpy-1.26 venv"] = time.perf_counter() - start

    start = time.perf_counter()
    manifest = bit_identity.compile_cases(tmp_path / "exact", "exact", jobs=JOBS)
    timings["compile"] = time.perf_counter() - start
    assert not manifest["not compiled"], (
        "cases that neither compile nor are refused by the exact variant: "
        f"{sorted(manifest['not compiled'].items())[:5]}"
    )

    start = time.perf_counter()
    results = bit_identity.run_matrix(
        tmp_path / "exact", bit_identity.ENVIRONMENTS, JOBS, numpy126_python
    )
    timings["run matrix"] = time.perf_counter() - start
    golden = bit_identity.load_golden()
    verdict = bit_identity.judge(results, golden)
    print(
        f"\n{len(manifest['cases'])} exact cases, {len(manifest['refused'])} refused; "
        + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items())
    )
    print("\n".join(bit_identity.describe_run(results, verdict)))

    assert (
        golden is not None
    ), f"{bit_identity.GOLDEN_FILE} is missing: write it with `{bit_identity.REGENERATE}`"
    if verdict.problems:
        pytest.fail(
            f"{len(verdict.problems)} bit-identity problems"
            + (" (the case set changed: see the first)" if verdict.case_set_changed else "")
            + ":\n"
            + "\n".join(verdict.problems),
            pytrace=False,
        )

    numpy126 = results[bit_identity.NUMPY126]
    assert numpy126["numpy"] == "1.26.4", numpy126["numpy"]
    assert results[bit_identity.DEFAULT]["numpy"].split(".")[0] != "1"

    # The digests above are already checked; only this check of the switch itself may be skipped.
    if "exp float32" not in verdict.probe_changes[bit_identity.AVX2_OFF]:
        pytest.skip(
            "all exact digests are equal in every environment and to the golden file; not "
            "checked: whether NPY_DISABLE_CPU_FEATURES took effect, since numpy's float32 exp "
            "gives the same bits with AVX2 off on this machine (SIMD dispatch targets in effect: "
            f"{results[bit_identity.AVX2_OFF]['cpu'] or 'baseline only'})"
        )
    assert not {"X86_V3", "AVX2", "X86_V4", "AVX512F"} & set(results[bit_identity.AVX2_OFF]["cpu"])


def test_digest_marks_dtype_shape_sequences_and_none() -> None:
    x = np.arange(1, 7, dtype=np.float32)
    digest = bit_identity.digest_outputs
    base = digest([[x]])
    assert base == digest([[x.copy()]])
    assert base == digest([[np.asfortranarray(x.reshape(2, 3)).reshape(6)]])
    different = [
        [[x.reshape(2, 3)]],
        [[x.view(np.int32)]],
        [[x], []],
        [[[x]]],
        [[x, None]],
        [[np.float32(0)]],
        [[x[:1].reshape(())]],
        [[np.array([-0.0], np.float32)]],
    ]
    digests = [digest(d) for d in different] + [base, digest([[np.array([0.0], np.float32)]])]
    assert len(set(digests)) == len(digests)
    assert digest([[np.float32(0)]]) == digest([[np.zeros((), np.float32)]])


def _result(digests, probes=None, numpy="2.4.6"):
    return {"digests": digests, "errors": {}, "probes": probes or {"p": "0"}, "numpy": numpy}


def test_compare_names_cases_and_environments() -> None:
    golden = {"digests": {"a": "1", "b": "2"}}
    same = {bit_identity.DEFAULT: _result({"a": "1", "b": "2"}), "x": _result({"a": "1", "b": "2"})}
    verdict = bit_identity.judge(same, golden)
    assert not verdict.problems and not verdict.case_set_changed

    off = {bit_identity.DEFAULT: _result({"a": "1", "b": "2"}), "x": _result({"a": "1", "b": "9"})}
    verdict = bit_identity.judge(off, golden)
    assert not verdict.case_set_changed
    assert verdict.differing["x"] == ["b"]
    assert any("case b" in p and "'x'" not in p and "under x" in p for p in verdict.problems)

    grown = {bit_identity.DEFAULT: _result({"a": "1", "b": "2", "c": "3"})}
    verdict = bit_identity.judge(grown, golden)
    assert verdict.case_set_changed
    assert "1 new: c" in verdict.problems[0] and "--update-golden" in verdict.problems[0]
