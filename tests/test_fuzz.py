"""Fuzzed loading and compiling (issue #17, docs/robustness.md), at the suite's small size: a fixed
campaign of tools/fuzz.py's mutants (protobuf-level and byte-level mutations of valid models,
planted payloads, resource bombs), each compiled, imported and run in a child process of its own.
Every mutant must end cleanly: a one-line CompileError, or a module that imports and runs or raises
a clean error at run time; never another exception, a crash, a hang, an unbounded allocation,
model content executed or a file written outside the output folder. `make fuzz` runs the large
campaign.
"""

from __future__ import annotations

from tools import fuzz

COUNT = 120  # mutants of the campaign below
BUDGET = 240  # seconds after which no new mutant starts (the machine may be loaded)
SEED = 17


def test_fuzzed_models_end_cleanly():
    figures = fuzz.run_campaign(COUNT, SEED, jobs=2, timeout=60, budget=BUDGET)
    outcomes = figures["outcomes"]
    assert not figures["findings"], fuzz.report(figures)
    assert figures["tried"] >= 40, f"only {figures['tried']} mutants ran in {BUDGET} s"
    assert sum(outcomes.values()) == figures["tried"]
    # the campaign reaches every stage: refusals at load, modules that run, errors at run time
    assert outcomes.get("refused", 0) and outcomes.get("compiled", 0), outcomes


def test_a_mutant_is_reproducible_from_its_number(tmp_path):
    """`--seed S --only N` rebuilds exactly the mutant the campaign ran as number N."""
    seed_list = fuzz.seeds()
    for index in (0, 7, 33):
        a = fuzz.make_mutant(index, SEED, seed_list, tmp_path / "m")
        b = fuzz.make_mutant(index, SEED, seed_list, tmp_path / "m")
        assert (a.data, a.description, a.variant, a.files) == (
            b.data,
            b.description,
            b.variant,
            b.files,
        )


def test_the_harness_sees_each_kind_of_finding(tmp_path):
    """The checks can fail: a payload that ran, a crash, a hang and a file written outside the
    output folder are each reported as findings (the children are told to misbehave)."""
    import os
    import signal
    import time

    def misbehave(kind):
        def compile_and_run(mutant, model_path, out_dir, stage):
            root = out_dir.parent
            if kind == "canary":
                (root / fuzz.CANARY).touch()
            elif kind == "crash":
                os.kill(os.getpid(), signal.SIGSEGV)
            elif kind == "hang":
                time.sleep(60)
            elif kind == "escape":
                (root / "stray.py").write_text("")
            return {"kind": "compiled", "detail": "", "compile_seconds": 0.0}

        return compile_and_run

    original = fuzz.compile_and_run
    try:
        for kind in ("canary", "crash", "hang", "escape"):
            fuzz.compile_and_run = misbehave(kind)
            figures = fuzz.run_campaign(1, SEED, jobs=1, timeout=3)
            (finding,) = figures["findings"]
            assert finding["kind"] == kind, (kind, finding)
    finally:
        fuzz.compile_and_run = original
