"""`policylang mcp`, driven through the protocol as an agent's client drives it: the server is a
subprocess, and the MCP SDK's own stdio client does the handshake and the tool calls."""

import json
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("mcp.server.mcpserver", reason="the MCP SDK is not installed (pip install 'policylang[mcp]')")

import anyio  # noqa: E402  (a dependency of the SDK)
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from policylang import Engine  # noqa: E402
from policylang.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = "examples/cluster.yaml"


def pod(name: str) -> dict:
    return yaml.safe_load((ROOT / "examples" / "pods" / name).read_text())


def session(calls):
    """Start the server on the examples' cluster, run ``calls(client)`` over the protocol, and
    return what it returns."""
    server = StdioServerParameters(command=sys.executable, args=["-m", "policylang.cli", "mcp", "--cluster", CLUSTER],
                                   cwd=str(ROOT))

    async def drive():
        with anyio.fail_after(60):
            async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                return await calls(client)
    return anyio.run(drive)


def test_the_four_tools_are_listed_with_descriptions_for_an_agent():
    async def calls(client):
        return (await client.list_tools()).tools
    tools = {t.name: t for t in session(calls)}
    assert set(tools) == {"eval", "explain", "whatif", "capacity"}
    assert "Pending" in tools["explain"].description
    assert tools["eval"].input_schema["required"] == ["pod"]
    assert tools["whatif"].input_schema["properties"]["events"]["type"] == "array"


def test_eval_explain_whatif_capacity_answer_as_the_engine_does():
    web, too_big = pod("web.yaml"), pod("too-big.yaml")

    async def calls(client):
        return [await client.call_tool(name, args) for name, args in (
            ("eval", {"pod": web}), ("explain", {"pod": too_big}), ("whatif", {"events": ["drain worker-a1"]}),
            ("capacity", {"pod": web}), ("eval", {"pod": "shop/web-7d4b9-abcde"}))]
    evaluated, explained, whatif, capacity, bound = session(calls)
    for result in (evaluated, explained, whatif, capacity, bound):
        assert not result.is_error, result.content[0].text
        assert json.loads(result.content[0].text) == result.structured_content

    engine = Engine(cluster=CLUSTER)
    assert evaluated.structured_content == engine.evaluate(web).to_json()
    assert explained.structured_content["selected"] is None
    assert "Insufficient cpu" in explained.structured_content["message"]
    assert explained.structured_content["causes"]
    assert whatif.structured_content["schema"] == "policylang/whatif/v1"
    assert whatif.structured_content["events"][0]["event"] == "drain worker-a1"
    assert capacity.structured_content["schema"] == "policylang/capacity/v1"
    assert capacity.structured_content["fits"] == engine.capacity(web).fits > 0
    assert bound.structured_content["bound_to"] == "worker-a1"      # a pod of the cluster, by NAMESPACE/NAME


def test_bad_input_is_a_tool_error_with_the_clis_message_and_the_server_goes_on():
    async def calls(client):
        return [await client.call_tool(name, args) for name, args in (
            ("eval", {"pod": {"kind": "Deployment"}}),
            ("explain", {"pod": "shop/no-such-pod"}),
            ("capacity", {"pod": "-"}),                    # never standard input, which is the protocol's
            ("whatif", {"events": ["explode worker-a1"]}),
            ("eval", {"pod": pod("web.yaml")}))]
    *errors, after = session(calls)
    texts = [e.content[0].text for e in errors]
    assert all(e.is_error for e in errors), texts
    assert texts[0] == "expected a Pod, got kind 'Deployment'"
    assert texts[1].startswith(f"{CLUSTER}: no pod shop/no-such-pod in the dump")
    assert texts[2] == "pod '-': expected a Pod object, or NAMESPACE/NAME of a pod in the cluster"
    assert texts[3].startswith("cannot read event 'explode worker-a1'; expected one of: cordon NODE")
    assert not any("Traceback" in t for t in texts)
    assert not after.is_error and after.structured_content["selected"]


def test_bad_input_at_start_is_exit_2_in_one_line(capsys):
    assert main(["mcp", "--cluster", "examples/no-such-dump.yaml"]) == 2
    assert capsys.readouterr().err == "error: examples/no-such-dump.yaml: no such file or directory\n"


def test_without_the_extra_it_says_how_to_install_it(monkeypatch, capsys):
    import policylang

    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")]:
        monkeypatch.setitem(sys.modules, name, None)    # as if never installed (this module imported it)
    monkeypatch.setitem(sys.modules, "mcp", None)
    monkeypatch.delitem(sys.modules, "policylang.mcp", raising=False)
    monkeypatch.delattr(policylang, "mcp", raising=False)
    assert main(["mcp", "--cluster", CLUSTER]) == 2
    err = capsys.readouterr().err
    assert "pip install 'policylang[mcp]'" in err and err.count("\n") == 1
