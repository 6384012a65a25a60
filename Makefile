# The two commands a newcomer runs: `make demo` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin

.PHONY: demo test install install-test bench clean

$(BIN)/policylang: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

install: $(BIN)/policylang

# Exit code 1 means "some pod is unschedulable", which the examples show on purpose.
demo: install
	$(BIN)/policylang eval --cluster examples/cluster.yaml --pod examples/pods/; [ $$? -le 1 ]

test: install
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis
