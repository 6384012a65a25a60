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

demo: install
	$(BIN)/policylang eval --cluster examples/cluster.yaml --pod examples/pods/

test: install
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis
