"""`toolgate_gate.litellm.ToolgateGuardrail` inside LiteLLM's real proxy (`litellm[proxy]`, pinned
by run.sh in a virtual environment of its own), offline: no database, no model, its price list not
fetched. The official MCP SDK is the client; the upstream is scripted_http_server.py. Each result
the client receives is compared with what `toolgate mcp-proxy` gives for the same answer.
"""

import json
import os
import subprocess
import sys

import pytest

from gateways import (
    CANARY,
    audit_lines,
    call_tool,
    free_port,
    guide_blocks,
    mcp_proxy_listening,
    received,
    scripted_upstream,
    through_mcp_proxy,
    wait_for,
    with_paths,
    without_request_id,
)

KEY = "sk-toolgate-test"
HEADERS = {"x-litellm-api-key": f"Bearer {KEY}"}
GUARDED, PROXIED = guide_blocks("test_litellm.py")


def start(tmp_path, servers, contracts=None, context=None, audit=None):
    """LiteLLM's proxy before `servers` (name to MCP URL), with the guardrail where `contracts`
    are given: its process, URL and log."""
    # The guide's configuration: the guardrail before the servers, or (no contracts) a server
    # behind `toolgate mcp-proxy --listen`.
    if contracts:
        text, guide_url = with_paths(GUARDED, contracts, context, audit), "http://weather-mcp.internal:8000/mcp"
    else:
        text, guide_url = "model_list: []\n" + PROXIED, "http://127.0.0.1:8081/mcp"
    (_, first), *others = servers.items()
    assert guide_url in text
    text = text.replace(guide_url, first).replace("mcp_servers:\n", "mcp_servers:\n" + "".join(
        f"  {name}:\n    url: {url}\n    transport: http\n" for name, url in others), 1)
    config = tmp_path / "config.yaml"
    config.write_text(text)
    port = free_port()
    log = tmp_path / "litellm.log"
    env = {**os.environ, "LITELLM_MASTER_KEY": KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "LITELLM_TELEMETRY": "False", "NO_PROXY": "*"}
    process = subprocess.Popen([sys.executable, "-m", "litellm.proxy.proxy_cli", "--config", str(config),
                                "--host", "127.0.0.1", "--port", str(port)],
                               stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
    return process, f"http://127.0.0.1:{port}", log


@pytest.fixture(scope="module")
def litellm(repo, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("litellm")
    audit = tmp_path / "audit.jsonl"
    advertised = tmp_path / "advertised"
    advertised.mkdir()
    with scripted_upstream(tmp_path) as (upstream, calls), \
            scripted_upstream(advertised, output_schema=True) as (advertising, _):
        servers = {"weather": upstream, "advertised": advertising}
        process, url, log = start(tmp_path, servers, repo, repo / "context.json", audit)
        try:
            assert wait_for(url + "/health/liveliness", process, log), log.read_text()[-4000:]
            yield {"url": url + "/mcp/", "calls": calls, "audit": audit, "log": log}
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_an_admitted_result_is_the_gates_result(litellm, repo, tmp_path):
    tools, result = call_tool(litellm["url"], HEADERS, "weather-weather", {"city": "Oslo"})
    reference, reference_audit = through_mcp_proxy(repo, tmp_path, "Oslo")
    assert result["isError"] is False
    assert without_request_id(result) == without_request_id(reference)
    assert CANARY not in json.dumps(result)
    assert audit_lines(litellm["audit"], result)[-1] == reference_audit[-1]


def test_a_refused_result_is_the_fixed_failure(litellm, repo, tmp_path):
    _, result = call_tool(litellm["url"], HEADERS, "weather-weather", {"city": "Lisbon"})
    reference, reference_audit = through_mcp_proxy(repo, tmp_path, "Lisbon")
    assert result["isError"] is True
    assert without_request_id(result) == without_request_id(reference)
    assert CANARY not in json.dumps(result)
    assert audit_lines(litellm["audit"], result)[-1] == reference_audit[-1]


def test_refused_arguments_never_reach_the_tool(litellm):
    before = len(received(litellm["calls"]))
    _, result = call_tool(litellm["url"], HEADERS, "weather-weather", {"city": "Paris"})
    assert result["isError"] is True
    text = result["content"][0]["text"]
    # LiteLLM writes a guardrail's refusal as `Error: <message>`: the message is the fixed failure.
    failure = json.loads(text[text.index("{"):])
    assert failure["outcome"] == "failure" and failure["tool"] == "weather", text
    assert len(received(litellm["calls"])) == before
    assert audit_lines(litellm["audit"])[-1]["tool"] == "weather.arguments"


def test_rebuilt_arguments_are_what_the_tool_receives(litellm):
    call_tool(litellm["url"], HEADERS, "weather-weather", {"city": "Oslo", "units": "CANARY"})
    assert received(litellm["calls"])[-1]["params"]["arguments"] == {"city": "Oslo"}


def test_a_tool_without_a_contract_is_neither_offered_nor_called(litellm):
    before = len(received(litellm["calls"]))
    tools, result = call_tool(litellm["url"], HEADERS, "weather-raw_lookup", {"city": "Oslo"})
    assert "weather-raw_lookup" not in [tool["name"] for tool in tools]
    assert "weather-weather" in [tool["name"] for tool in tools]
    assert result.get("isError") is True or "raised" in result
    assert CANARY not in json.dumps(result)
    assert len(received(litellm["calls"])) == before


def test_a_broken_contract_stops_the_proxy_from_starting(repo, tmp_path):
    broken = tmp_path / "broken"
    subprocess.run(["cp", "-r", str(repo), str(broken)], check=True)
    (broken / "contracts/weather/v1/contract.yaml").write_text("tool: weather\nversion: 1\nshape: [\n")
    with scripted_upstream(tmp_path) as (upstream, _):
        process, url, log = start(tmp_path, {"weather": upstream}, broken, broken / "context.json",
                                  tmp_path / "audit.jsonl")
        try:
            up = wait_for(url + "/health/liveliness", process, log)
            assert not up, "LiteLLM started with a contract that does not compile"
            assert "contract.yaml" in log.read_text()
        finally:
            if process.poll() is None:
                process.terminate()
            process.wait(timeout=30)


def test_an_upstream_output_schema_fails_closed_through_the_guardrail(litellm):
    """LiteLLM lists a tool's outputSchema as its upstream advertised it, and no hook reaches
    tools/list: the official SDK checks the gate's result against the upstream's schema and
    refuses it. Nothing leaks; the guide's setting (below) is what serves such a tool."""
    tools, result = call_tool(litellm["url"], HEADERS, "advertised-weather", {"city": "Oslo"})
    advertised = next(tool for tool in tools if tool["name"] == "advertised-weather")
    assert "station_id" in advertised["outputSchema"]["properties"]
    assert "raised" in result, result
    assert CANARY not in json.dumps(result)


def test_an_upstream_output_schema_is_rewritten_by_mcp_proxy_behind_litellm(repo, tmp_path):
    """The guide's setting: the server's `url` is `toolgate mcp-proxy --listen`, which offers the
    schema the agent's results meet and builds each result; LiteLLM passes both on."""
    with scripted_upstream(tmp_path, output_schema=True) as (upstream, _), \
            mcp_proxy_listening(repo, tmp_path, upstream) as gated:
        process, url, log = start(tmp_path, {"weather": gated})
        try:
            assert wait_for(url + "/health/liveliness", process, log), log.read_text()[-4000:]
            tools, result = call_tool(url + "/mcp/", HEADERS, "weather-weather", {"city": "Oslo"})
        finally:
            process.terminate()
            process.wait(timeout=30)
    reference, _ = through_mcp_proxy(repo, tmp_path, "Oslo")
    offered = next(tool for tool in tools if tool["name"] == "weather-weather")
    assert "station_id" not in json.dumps(offered["outputSchema"])
    assert without_request_id(result) == without_request_id(reference), result
