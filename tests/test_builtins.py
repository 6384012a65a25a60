"""Each builtin's declared traits (policylang/builtins/: what it reads, whether it is cheap,
its vector form) agree with what the builtin does: an executor keeps a builtin's value per node
on the strength of its declaration, so a declaration that says less than the builtin reads
would leave stale values, and one that says more would make it slow."""

from __future__ import annotations

import inspect

import pytest

import strategies as S
from policylang import builtins as bi
from policylang.api.quantity import parse_quantity
from policylang.cluster.state import ClusterState
from policylang.run.vector import builtin_forms

# Of the cluster state, what no bind or removal of a pod changes: a builtin declared to read
# "node" may look up its node there, and only there.
NODE_STATIC = frozenset({"nodes", "csi_nodes", "image_holder_mask", "nodes_with_image"})
# Arguments the builtin needs to read anything at all (a kind it knows).
# Arguments where a sample of each parameter's type would not do (a function: of the state).
ARGUMENTS = {"placed_terms_for": ("requiredAffinity", {"app": "web"}),
             "allocate_claims": lambda state: (state.nodes["node-0"], [], "1.35")}


def _state() -> ClusterState:
    nodes = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": f"node-{i}", "labels": {"zone": f"z{i}"}},
              "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                         "images": [{"names": ["web:1"], "sizeBytes": 1000}]}} for i in range(2)]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default",
                                                           "labels": {"app": "web"}},
           "spec": {"nodeName": "node-0", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                    "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}}}}
    return ClusterState.build([S.structure(x) for x in nodes + [pod]])


class _Log(list):
    """What a builtin read of the state: ("key", path, key) for a look-up of one key in a map,
    ("whole", path) for anything else."""


class _Map:
    def __init__(self, d: dict, log: _Log, path: tuple):
        self._d, self._log, self._path = d, log, path

    def get(self, key, default=None):
        self._log.append(("key", self._path, key))
        return self._d.get(key, default)

    def __getitem__(self, key):
        self._log.append(("key", self._path, key))
        return self._d[key]

    def __contains__(self, key):
        self._log.append(("key", self._path, key))
        return key in self._d

    def __getattr__(self, name):      # items(), keys(), values(), …: the whole map
        self._log.append(("whole", self._path))
        return getattr(self._d, name)

    def __iter__(self):
        self._log.append(("whole", self._path))
        return iter(self._d)

    def __len__(self):
        self._log.append(("whole", self._path))
        return len(self._d)


class _RecordingState:
    def __init__(self, state: ClusterState, log: _Log):
        self._state, self._log = state, log

    def __getattr__(self, name):
        value = getattr(self._state, name)
        if callable(value):
            return lambda *args, **kw: self._wrap(value(*args, **kw), (name, "()"))
        return self._wrap(value, (name,))

    def _wrap(self, value, path):
        if isinstance(value, dict):
            return _Map(value, self._log, path)
        self._log.append(("whole", path))
        return value


def _sample(t, state: ClusterState):
    if t.kind == "record":
        return {"Node": state.nodes["node-0"], "Pod": state.pods_by_node["node-0"][0],
                "LabelSelector": bi.REGISTRY["label_selector"].impl({"app": "web"})}.get(t.name)
    return {"string": "default", "int": 1, "float": 1.0, "bool": True, "quantity": parse_quantity("1"),
            "list": [], "map": {}}.get(t.kind)


def _reads(b: bi.Builtin) -> "tuple[_Log, str | None]":
    """What the builtin reads of a small state, called with sample arguments; and the name of
    the node it is given, if any."""
    state = _state()
    args = ARGUMENTS.get(b.name) or tuple(_sample(t, state) for t in b.params)
    if callable(args):
        args = args(state)
    if b.counting:      # the target's Counting, which the compiler passes (api/requests.py)
        args = (*args, "status,pod_level_status,summed")
    node = next((a.metadata.name for a, t in zip(args, b.params) if t.kind == "record" and t.name == "Node"), None)
    log = _Log()
    try:
        out = b.impl(_RecordingState(state, log), *args)
    except bi.POLICY_ERRORS:
        out = None
    if isinstance(out, _Map):      # a map of the state's, handed to the policy whole
        log.append(("whole", out._path))
    return log, node


STATEFUL = sorted(name for name, b in bi.REGISTRY.items() if b.reads != "nothing")


def test_every_builtin_declares_what_it_reads_and_takes_the_state_only_then():
    for name, b in bi.REGISTRY.items():
        assert b.reads in bi.READS, name
        params = inspect.signature(b.impl).parameters
        takes = len(params) - (1 if b.needs_state else 0) - (1 if b.counting else 0)
        if any(p.kind is p.VAR_POSITIONAL for p in params.values()):
            assert b.variadic, name
        else:
            assert takes == len(b.params), f"{name}: impl takes {len(params)} arguments ({b.reads=})"


@pytest.mark.parametrize("name", STATEFUL)
def test_a_builtin_reads_no_more_of_the_state_than_it_declares(name):
    """"node" and "pods": every look-up is of the node it is given, by its name ("node": only
    where no bind changes anything); "pods" reads something a bind changes (else it is "node");
    "cluster" reads more than its node's entries (else it is "pods" or "node", which executors
    keep per node)."""
    b = bi.REGISTRY[name]
    log, node = _reads(b)
    own = [r for r in log if r[0] == "key" and node is not None and r[2] == node]
    if b.reads in ("node", "pods"):
        assert node is not None, f"{name} reads {b.reads!r} but is given no node"
        assert own == log, f"{name} is declared to read {b.reads!r} but reads {[r for r in log if r not in own]}"
        static = all(r[1][0] in NODE_STATIC for r in log)
        if b.reads == "node":
            assert static, f"{name} is declared to read 'node' but reads what binds change: {log}"
        else:
            assert log and not static, f"{name} is declared to read 'pods' but reads nothing binds change: {log}"
    else:
        assert log, f"{name} is declared to read 'cluster' but read nothing of it"
        assert own != log, f"{name} is declared to read 'cluster' but reads only its node's entries: {log}"


def test_cheap_builtins_read_nothing_and_have_a_vector_form():
    for name, b in bi.REGISTRY.items():
        if b.cheap:
            assert b.reads == "nothing" and b.vector is not None, name


def test_every_vector_form_is_a_builtins_and_every_named_one_exists():
    named = {b.vector for b in bi.REGISTRY.values() if b.vector is not None}
    for form in named:
        assert callable(getattr(builtin_forms, form, None)), f"no vector form {form!r} in builtin_forms"
    defined = {name for name, v in vars(builtin_forms).items()
               if callable(v) and not name.startswith("_") and getattr(v, "__module__", None) == builtin_forms.__name__}
    assert defined <= named, f"vector forms no builtin names: {sorted(defined - named)}"
