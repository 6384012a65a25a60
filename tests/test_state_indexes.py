"""ClusterState's indexes, kept up to date as pods are bound and removed, answer as a state
built afresh from the same objects does: what a simulation relies on after every bind."""

from __future__ import annotations

import copy

from hypothesis import given, settings, strategies as st

from policylang.api.selectors import selector_matches
from policylang.cluster.load import CONVERTER
from policylang.api.model import LabelSelector
from policylang.cluster.state import PLACED_TERM_KINDS, ClusterState
import strategies as S


def _selector(raw: dict) -> LabelSelector:
    return CONVERTER.structure(raw, LabelSelector)


# count_by_domain's (key, keys): zones over every node, over nodes with both labels, hostnames.
DOMAIN_QUERIES = [(S.ZONE_KEY, []), (S.ZONE_KEY, [S.ZONE_KEY, S.HOSTNAME_KEY]), (S.HOSTNAME_KEY, [S.HOSTNAME_KEY])]


def _answers(state: ClusterState, queries: list) -> list:
    """What the indexes say for each (namespace, selector), pods by key (their order is the
    index's, not part of the answer)."""
    some = state.node_list[::-2]    # count_by_domain_on: every other node, backwards
    return [(state.count_matching(ns, sel), sorted(p.key for p in state.pods_matching(ns, sel)),
             [state.count_by_domain(ns, sel, key, keys) for key, keys in DOMAIN_QUERIES],
             [list(state.count_by_domain_on(ns, sel, key, some).items()) for key, _ in DOMAIN_QUERIES])
            for ns, sel in queries]


def _affinity_nodes(state: ClusterState) -> tuple:
    return ([n.metadata.name for n in state.nodes_having(state.pods_with_affinity)],
            [n.metadata.name for n in state.nodes_having(state.pods_with_required_anti_affinity)])


def _placed(state: ClusterState) -> dict:
    """placed_terms of each kind as comparable values (groups and their nodes in any order), and
    which of them placed_terms_for offers a pod with each bound pod's labels; the terms it leaves
    out select no such pod."""
    def comparable(groups):
        return sorted(repr({**g, "nodes": sorted(n.metadata.name for n in g["nodes"])}) for g in groups)

    out = {}
    for kind in PLACED_TERM_KINDS:
        every = state.placed_terms(kind)
        offered = [comparable(state.placed_terms_for(kind, p.metadata.labels)) for p in state.bound_pods]
        for p in state.bound_pods:
            kept = [id(g) for g in state.placed_terms_for(kind, p.metadata.labels)]
            assert kept == [id(g) for g in every if id(g) in kept]     # placed_terms' order
            assert not any(selector_matches(g["selector"], p.metadata.labels) for g in every if id(g) not in kept)
        out[kind] = (comparable(every), offered)
    return out


# (namespace or None, selector) pairs to ask the indexes; built once (see tests/strategies.py).
QUERIES = st.lists(st.tuples(st.sampled_from([*S.NAMESPACES, None]), S.label_selectors().map(_selector)),
                   min_size=1, max_size=3)


@settings(max_examples=120, deadline=None)
@given(cluster=S.clusters(min_nodes=1, max_nodes=4, max_pods=8), data=st.data())
def test_indexes_follow_binds_and_removals(cluster, data):
    running = [copy.deepcopy(p) for p in cluster.pods]
    for pod in running:     # some running pods are terminating: count_matching leaves them out
        if data.draw(st.booleans(), label="terminating"):
            pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    state = cluster.evolve(pods=running).state()
    queries = data.draw(QUERIES, label="queries")
    _answers(state, queries)    # asked before the changes, so that the answers are kept and updated
    # Asked first after the changes: answered from the per-label counts kept as pods come and go.
    late = data.draw(QUERIES, label="late queries")

    for step in range(data.draw(st.integers(1, 6), label="changes")):
        bound = state.bound_pods
        if bound and data.draw(st.booleans(), label="remove"):
            state.remove(data.draw(st.sampled_from(bound), label="removed"))
        else:
            pod = S.structure(data.draw(S.pods(f"arriving-{step}"), label="arriving"))
            state.bind(state.with_priority(pod), data.draw(S.sampled(tuple(cluster.node_names)), label="node"))
        fresh = ClusterState.build(state.objects())
        assert _answers(state, queries) == _answers(fresh, queries)
        assert _affinity_nodes(state) == _affinity_nodes(fresh)
        assert _placed(state) == _placed(fresh)
    assert _answers(state, late) == _answers(fresh, late)


def _nonzero(requested: dict) -> dict:
    """Requests per node, zeros left out (a pod that left leaves its resources at zero)."""
    return {node: {k: v for k, v in r.items() if v.amount} for node, r in requested.items()}


@settings(max_examples=60, deadline=None)
@given(cluster=S.clusters(min_nodes=1, max_nodes=4, max_pods=6), data=st.data())
def test_indexes_follow_pods_put_and_dropped_as_a_watch_does(cluster, data):
    """put_pod / drop_pod (cluster/watch.py's pod events): pods added bound, pending or
    finished, changed in place (relabelled, moved, finished) and deleted leave the indexes
    answering as a state built afresh."""
    state = cluster.state()
    queries = data.draw(QUERIES, label="queries")
    _answers(state, queries)
    for step in range(data.draw(st.integers(1, 6), label="events")):
        known = state.pods
        if known and data.draw(st.booleans(), label="delete"):
            state.drop_pod(data.draw(st.sampled_from(known), label="deleted").key)
            continue
        name = data.draw(S.sampled((*(p.metadata.name for p in known), f"new-{step}")), label="name")
        raw = data.draw(S.pods(name, tuple(cluster.node_names), bound=data.draw(st.booleans(), label="bound")),
                        label="pod")
        state.put_pod(S.structure(raw))
        fresh = ClusterState.build(state.objects())
        assert _answers(state, queries) == _answers(fresh, queries)
        assert _affinity_nodes(state) == _affinity_nodes(fresh)
        assert _placed(state) == _placed(fresh)
        assert _nonzero(state.requested) == _nonzero(fresh.requested) and state.claim_users == fresh.claim_users
        assert sorted(state.nominated) == sorted(fresh.nominated)


def test_count_matching_counts_what_a_selector_selects_as_pods_come_and_go():
    """Terminating pods are left out, a null selector counts none, and answers kept or first
    asked after pods came and went count the pods every requirement selects."""
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"p{i}", "namespace": "default", "labels": {"app": "web"},
                          **({"deletionTimestamp": "2026-01-01T00:00:00Z"} if i == 2 else {})},
             "spec": {"nodeName": f"node-{i % 2}", "containers": [{"name": "c"}]},
             "status": {"phase": "Running"}} for i in range(4)]
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}"}} for i in range(2)]
    state = ClusterState.build([S.structure(o) for o in nodes + pods])
    web = _selector({"matchLabels": {"app": "web"}})
    assert state.count_matching("default", web) == {"node-0": 1, "node-1": 2}
    assert state.count_matching("other", web) == {}
    assert state.count_matching("default", None) == {}
    assert len(state.pods_matching(None, web)) == 4
    # Selectors first asked after pods left and came: counted from what is there then.
    state.remove(state.bound_pods[0])
    state.bind(S.structure({**pods[0], "metadata": {**pods[0]["metadata"], "name": "again"}}), "node-1")
    assert state.count_matching("default", _selector({"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["web"]}]})) == {"node-1": 3}
    assert state.count_matching(None, _selector({"matchLabels": {"app": "web"}})) == {"node-1": 3}
    # The same by node position, first asked now: from the per-label counts kept by position.
    assert state.count_matching_by_position("default", web).tolist() == [0, 3]
    assert state.count_matching_by_position(None, web).tolist() == [0, 3]
    # Kept answers follow the pods that come: only those every requirement selects.
    two_labels = _selector({"matchLabels": {"app": "web", "tier": "db"}})
    not_canary = _selector({"matchLabels": {"app": "web"},
                            "matchExpressions": [{"key": "track", "operator": "NotIn", "values": ["canary"]}]})
    assert (state.count_matching("default", two_labels), state.count_matching("default", not_canary)) \
        == ({}, {"node-1": 3})
    canary = {**pods[0], "metadata": {**pods[0]["metadata"], "name": "canary",
                                      "labels": {"app": "web", "track": "canary"}}}
    state.bind(S.structure(canary), "node-0")
    assert (state.count_matching("default", two_labels), state.count_matching("default", not_canary)) \
        == ({}, {"node-1": 3})


def test_count_by_domain_sums_nodes_by_label_and_lists_empty_domains():
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"p{i}", "namespace": "default", "labels": {"app": "web"}},
             "spec": {"nodeName": f"node-{i % 3}", "containers": [{"name": "c"}]},
             "status": {"phase": "Running"}} for i in range(5)]
    zones = {"node-0": {S.ZONE_KEY: "a"}, "node-1": {S.ZONE_KEY: "a"}, "node-2": {}, "node-3": {S.ZONE_KEY: "b"}}
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
             for name, labels in zones.items()]
    state = ClusterState.build([S.structure(o) for o in nodes + pods])
    web = _selector({"matchLabels": {"app": "web"}})
    # node-0 holds p0 and p3, node-1 p1 and p4, node-2 (no zone label) p2.
    assert state.count_by_domain("default", web, S.ZONE_KEY, [S.ZONE_KEY]) == {"a": 4, "b": 0}
    assert state.count_by_domain("default", web, S.ZONE_KEY, []) == {"a": 4, "": 1, "b": 0}
    assert state.count_by_domain("default", None, S.ZONE_KEY, [S.ZONE_KEY]) == {"a": 0, "b": 0}
    # Over some nodes: their domains in the order the nodes first have them, nodes from elsewhere
    # (equal copies) counted alike.
    some = [state.nodes[name] for name in ("node-3", "node-2", "node-0")]
    assert list(state.count_by_domain_on("default", web, S.ZONE_KEY, some).items()) == [("b", 0), ("", 1), ("a", 2)]
    copies = [copy.deepcopy(n) for n in some]
    assert list(state.count_by_domain_on("default", web, S.ZONE_KEY, copies).items()) == [("b", 0), ("", 1), ("a", 2)]
    assert state.count_by_domain_on("default", None, S.ZONE_KEY, some) == {"b": 0, "": 0, "a": 0}
    assert state.domains_of(S.ZONE_KEY, some) == state.domains_of(S.ZONE_KEY, copies) == ["b", "", "a"]
    state.bind(S.structure({**pods[0], "metadata": {**pods[0]["metadata"], "name": "more"}}), "node-3")
    assert state.count_by_domain_on("default", web, S.ZONE_KEY, some) == {"b": 1, "": 1, "a": 2}


def test_a_list_with_a_term_that_does_not_parse_is_left_out_whole():
    """As the scheduler's cache parses an existing pod (NewPodInfo): one bad selector drops its
    whole list, not the pod's other lists. The index keeps a term's namespaces as it lists them,
    with its pods' namespace beside them: what an empty list means is InterPodAffinity's to say
    (inter_pod_affinity.sched's term_namespaces)."""
    good = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": S.HOSTNAME_KEY}
    bad = {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]},
           "topologyKey": S.HOSTNAME_KEY}
    by_selector = {**good, "namespaceSelector": {}}
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "node-0", "labels": {S.HOSTNAME_KEY: "node-0"}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"},
           "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "nginx"}],
                    "affinity": {"podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [good, bad],
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 7, "podAffinityTerm": good},
                            {"weight": 7, "podAffinityTerm": by_selector}]}}},
           "status": {"phase": "Running"}}
    state = S.Cluster((node,), (pod,)).state()
    assert state.placed_terms("requiredAntiAffinity") == []
    placed = state.placed_terms("preferredAntiAffinity")
    assert [(g["namespaces"], g["namespaceSelector"] is not None, g["ownNamespace"], g["weight"], len(g["nodes"]))
            for g in placed] == [([], False, "team", 7, 1), ([], True, "team", 7, 1)]


def test_placed_terms_for_a_pod_are_those_whose_selectors_may_select_its_labels():
    """placed_terms_for offers, in placed_terms' order, the terms whose matchLabels and one-value
    In requirements a pod's labels satisfy: any other term selects no such pod; a term that
    requires nothing is offered to every pod, a null selector to none."""
    selectors = [{"matchLabels": {"app": "web"}},
                 {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]},
                 {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]},
                 {"matchLabels": {"app": "web", "tier": "front"}},
                 {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]},
                 None]
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0", "labels": {S.HOSTNAME_KEY: "node-0"}}}
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
             "spec": {"nodeName": "node-0", "containers": [{"name": "c"}],
                      "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                          {"labelSelector": selector, "topologyKey": S.HOSTNAME_KEY}]}}},
             "status": {"phase": "Running"}} for i, selector in enumerate(selectors)]
    state = S.Cluster((node,), tuple(pods)).state()
    every = state.placed_terms("requiredAntiAffinity")

    def offered(labels):
        return [every.index(g) for g in state.placed_terms_for("requiredAntiAffinity", labels)]
    assert offered({"app": "web"}) == [0, 2, 4]
    assert offered({"app": "web", "tier": "front"}) == [0, 2, 3, 4]
    assert offered({"app": "db"}) == [1, 2, 4]
    assert offered({}) == [2, 4]
    state.remove(state.bound_pods[0])       # its group goes, the others stay in order
    assert [g["selector"] for g in state.placed_terms_for("requiredAntiAffinity", {"app": "web"})] \
        == [every[2]["selector"], every[4]["selector"]]


def test_a_node_holds_an_image_by_any_of_its_names():
    """has_image answers from the node's own images (any name an image is known by); the
    vector executor reads the same from the state's holders, per node position."""
    from policylang.builtins import REGISTRY

    images = {"node-0": [{"names": ["web:v1", "registry/web@sha256:1"], "sizeBytes": 1}],
              "node-1": [{"names": ["db:v2"], "sizeBytes": 2}], "node-2": []}
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"images": imgs}}
             for name, imgs in images.items()]
    state = ClusterState.build([S.structure(o) for o in nodes])
    has_image = REGISTRY["has_image"].impl
    for name in ("web:v1", "registry/web@sha256:1", "db:v2", "db:v1"):
        assert [has_image(state, n, name) for n in state.node_list] == state.image_holder_mask(name).tolist()
    assert state.image_holder_mask("registry/web@sha256:1").tolist() == [True, False, False]
