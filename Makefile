# The two commands a newcomer runs: `make demo` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin

.PHONY: demo test install install-test bench clean oracle kube docs

$(BIN)/policylang: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,lsp,serve,mcp,docs]'
	touch $@

install: $(BIN)/policylang

# Exit code 1 means "some pod is unschedulable", which the examples show on purpose.
demo: install
	$(BIN)/policylang eval --cluster examples/cluster.yaml --pod examples/pods/; [ $$? -le 1 ]

# kube-scheduler's own framework as the differential tests' oracle (oracle/), once per Kubernetes
# version (1.35: go.mod; 1.34, 1.36, 1.37: k8s-1.3X.mod), each built once into
# ${XDG_CACHE_HOME:-~/.cache}/policylang/oracle/<key of the version's module files, sources, Go version>.
# Without Go it is not built and tests/test_oracle*.py skip (CI sets POLICYLANG_REQUIRE_ORACLE=1).
oracle:
	@if command -v go >/dev/null 2>&1; then oracle/build.sh all >/dev/null; \
	else echo "go is not on PATH: the oracle is not built, its differential tests will skip"; fi

# etcd, kube-apiserver and kube-scheduler (kube/, the pinned k8s.io/kubernetes v1.37.2) for the
# tests against a real API server (tests/test_live.py), built once into
# ${XDG_CACHE_HOME:-~/.cache}/policylang/kube/<key>; without Go those tests skip
# (CI sets POLICYLANG_REQUIRE_APISERVER=1).
kube:
	@if command -v go >/dev/null 2>&1; then kube/build.sh >/dev/null; \
	else echo "go is not on PATH: kube-apiserver and etcd are not built, the live-cluster tests will skip"; fi

test: install oracle kube
	$(BIN)/python -m pytest -n auto --dist loadgroup

bench: install
	$(BIN)/python bench/run.py
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/suite.py
	$(BIN)/python bench/dra.py
	$(BIN)/python bench/dra_eval.py

# The documentation site on http://127.0.0.1:8000, rebuilt as pages change (mkdocs.yml).
docs: install
	$(BIN)/mkdocs serve

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis
