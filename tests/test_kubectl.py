"""kubectl policylang (policylang/kubectl.py): kubectl's arguments mean the `policylang explain`
command they are turned into (the plugin against a real API server is in test_live.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from policylang import kubectl
from policylang.diagnostics import InputError


def _args(argv):
    return kubectl._parser().parse_args(["why", *argv])


@pytest.mark.parametrize("arg, name", [("pod/web", "web"), ("pods/web", "web"), ("po/web", "web"), ("web", "web"),
                                       ("Pod/web", "web")])
def test_a_pod_is_named_as_kubectl_names_it(arg, name):
    assert kubectl.pod_name(arg) == name


@pytest.mark.parametrize("arg", ["deployment/web", "pod/", "pod/a/b"])
def test_anything_but_a_pod_is_refused(arg):
    with pytest.raises(InputError, match="expected pod/NAME"):
        kubectl.pod_name(arg)


def test_the_namespace_is_the_contexts_unless_given(tmp_path, monkeypatch):
    config = tmp_path / "config"
    config.write_text("apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
                      "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                      "users: [{name: u, user: {token: t}}]\n"
                      "contexts: [{name: dev, context: {cluster: c, user: u, namespace: shop}},\n"
                      "           {name: prod, context: {cluster: c, user: u}}]\n")
    monkeypatch.setenv("KUBECONFIG", str(config))
    assert kubectl.explain_argv(_args(["pod/web"])) == ["explain", "--context", "", "-n", "shop", "--pod", "web"]
    assert kubectl.explain_argv(_args(["web", "--context", "prod"])) == \
        ["explain", "--context", "prod", "-n", "default", "--pod", "web"]
    assert kubectl.explain_argv(_args(["-n", "batch", "-o", "yaml"])) == \
        ["explain", "--context", "", "-n", "batch", "-o", "yaml"]
    assert kubectl.explain_argv(_args(["-A", "--kubeconfig", str(config)])) == \
        ["explain", "--kubeconfig", str(config)]
    with pytest.raises(InputError, match="-A"):
        kubectl.explain_argv(_args(["-A", "pod/web"]))


def test_without_a_command_it_prints_help(capsys):
    assert kubectl.main([]) == 2
    assert "why" in capsys.readouterr().out
