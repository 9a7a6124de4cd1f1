"""`toolgate_gate.contextforge.ToolgatePlugin` inside IBM's ContextForge gateway
(`mcp-contextforge-gateway`, pinned by run.sh in a Python 3.12 virtual environment of its own),
offline: SQLite, no Redis, no UI. The official MCP SDK is the client; the upstream is
scripted_http_server.py, registered as a gateway. Each result the client receives is compared with
what `toolgate mcp-proxy` gives for the same answer.
"""

import json
import os
import secrets
import shutil
import subprocess
import sys
import urllib.request

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

PLUGINS = guide_blocks("test_contextforge.py")[0]


def environment(tmp_path, plugins):
    password = "Tg-" + secrets.token_urlsafe(18)
    return {
        **os.environ,
        "HOST": "127.0.0.1",
        "JWT_SECRET_KEY": secrets.token_urlsafe(48),
        "AUTH_ENCRYPTION_SECRET": secrets.token_urlsafe(48),
        "PLATFORM_ADMIN_EMAIL": "admin@example.com",
        "PLATFORM_ADMIN_PASSWORD": password,
        "DEFAULT_USER_PASSWORD": password,
        "BASIC_AUTH_PASSWORD": password,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'mcp.db'}",
        "SSRF_ALLOW_LOCALHOST": "true",
        "SSRF_ALLOW_PRIVATE_NETWORKS": "true",
        "MCPGATEWAY_UI_ENABLED": "false",
        "MCPGATEWAY_ADMIN_API_ENABLED": "true",
        "PLUGINS_ENABLED": "true",
        "PLUGINS_CONFIG_FILE": str(plugins),
        # Without it ContextForge skips a plugin that cannot start and serves results unguarded.
        "PLUGINS_FAIL_ON_PLUGIN_ERROR": "true",
        "CACHE_TYPE": "database",
        "OTEL_ENABLE_OBSERVABILITY": "false",
        "NO_PROXY": "*",
    }


def start(tmp_path, contracts=None, context=None, audit=None):
    """ContextForge, with the plugin where `contracts` are given: its process, URL, log and
    environment."""
    plugins = tmp_path / "plugins.yaml"
    plugins.write_text(with_paths(PLUGINS, contracts, context, audit) if contracts
                       else "plugins: []\n")
    env = environment(tmp_path, plugins)
    if not contracts:
        env["PLUGINS_ENABLED"] = "false"
    port = free_port()
    log = tmp_path / "contextforge.log"
    gateway = shutil.which("mcpgateway", path=os.path.dirname(sys.executable))
    process = subprocess.Popen([gateway, "--host", "127.0.0.1", "--port", str(port)], cwd=tmp_path,
                               stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
    return process, f"http://127.0.0.1:{port}", log, env


def token(env):
    made = subprocess.run([sys.executable, "-m", "mcpgateway.utils.create_jwt_token", "-u", "admin@example.com",
                           "--admin", "--exp", "60", "-s", env["JWT_SECRET_KEY"]],
                          capture_output=True, text=True, env=env, check=True)
    return made.stdout.strip().splitlines()[-1]


def post(url, bearer, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Authorization": f"Bearer {bearer}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)


@pytest.fixture(scope="module")
def contextforge(repo, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("contextforge")
    audit = tmp_path / "audit.jsonl"
    advertised = tmp_path / "advertised"
    advertised.mkdir()
    with scripted_upstream(tmp_path) as (upstream, calls), \
            scripted_upstream(advertised, output_schema=True) as (advertising, _):
        process, url, log, env = start(tmp_path, repo, repo / "context.json", audit)
        try:
            assert wait_for(url + "/health", process, log), log.read_text()[-4000:]
            bearer = token(env)
            post(url + "/gateways", bearer, {"name": "weather", "url": upstream, "transport": "STREAMABLEHTTP"})
            post(url + "/gateways", bearer, {"name": "advertised", "url": advertising, "transport": "STREAMABLEHTTP"})
            yield {"url": url + "/mcp/", "headers": {"Authorization": f"Bearer {bearer}"},
                   "calls": calls, "audit": audit, "log": log}
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_an_admitted_result_is_the_gates_result(contextforge, repo, tmp_path):
    _, result = call_tool(contextforge["url"], contextforge["headers"], "weather-weather", {"city": "Oslo"})
    reference, reference_audit = through_mcp_proxy(repo, tmp_path, "Oslo")
    assert result["isError"] is False
    assert without_request_id(result) == without_request_id(reference), contextforge["log"].read_text()[-3000:]
    assert CANARY not in json.dumps(result)
    assert audit_lines(contextforge["audit"], result)[-1] == reference_audit[-1]


def test_a_refused_result_is_the_fixed_failure(contextforge, repo, tmp_path):
    _, result = call_tool(contextforge["url"], contextforge["headers"], "weather-weather", {"city": "Lisbon"})
    reference, reference_audit = through_mcp_proxy(repo, tmp_path, "Lisbon")
    assert result["isError"] is True
    assert without_request_id(result) == without_request_id(reference)
    assert CANARY not in json.dumps(result)
    assert audit_lines(contextforge["audit"], result)[-1] == reference_audit[-1]


def test_refused_arguments_never_reach_the_tool(contextforge):
    before = len(received(contextforge["calls"]))
    _, result = call_tool(contextforge["url"], contextforge["headers"], "weather-weather", {"city": "Paris"})
    text = json.dumps(result)
    assert '\\"outcome\\":\\"failure\\"' in text or '"outcome": "failure"' in text, text
    assert CANARY not in text
    assert len(received(contextforge["calls"])) == before
    assert audit_lines(contextforge["audit"])[-1]["tool"] == "weather.arguments"


def test_rebuilt_arguments_are_what_the_tool_receives(contextforge):
    call_tool(contextforge["url"], contextforge["headers"], "weather-weather", {"city": "Oslo", "units": "CANARY"})
    assert received(contextforge["calls"])[-1]["params"]["arguments"] == {"city": "Oslo"}


def test_a_tool_without_a_contract_is_refused(contextforge):
    before = len(received(contextforge["calls"]))
    # ContextForge lists it (no plugin hook reaches tools/list); its calls are refused.
    tools, result = call_tool(contextforge["url"], contextforge["headers"], "weather-raw-lookup", {"city": "Oslo"})
    assert "weather-raw-lookup" in [tool["name"] for tool in tools]
    text = result["content"][0]["text"]
    assert result["isError"] is True
    assert json.loads(text[text.index("{"):text.rindex("}") + 1])["outcome"] == "failure", text
    assert CANARY not in json.dumps(result)
    assert len(received(contextforge["calls"])) == before


def test_a_broken_contract_stops_the_gateway_from_starting(repo, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(repo, broken)
    (broken / "contracts/weather/v1/contract.yaml").write_text("tool: weather\nversion: 1\nshape: [\n")
    process, url, log, _ = start(tmp_path, broken, broken / "context.json", tmp_path / "audit.jsonl")
    try:
        assert not wait_for(url + "/health", process, log), "ContextForge started with a contract that does not compile"
        assert "contract.yaml" in log.read_text()
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=30)


def test_an_upstream_output_schema_fails_closed_through_the_plugin(contextforge):
    """ContextForge lists a tool's outputSchema as its upstream advertised it, and no plugin hook
    reaches tools/list: the official SDK checks the gate's result against the upstream's schema
    and refuses it. Nothing leaks; the guide's setting (below) is what serves such a tool."""
    tools, result = call_tool(contextforge["url"], contextforge["headers"], "advertised-weather", {"city": "Oslo"})
    advertised = next(tool for tool in tools if tool["name"] == "advertised-weather")
    assert "station_id" in advertised["outputSchema"]["properties"]
    assert "raised" in result, result
    assert CANARY not in json.dumps(result)


def test_an_upstream_output_schema_is_rewritten_by_mcp_proxy_behind_contextforge(repo, tmp_path):
    """The guide's setting: the gateway registered is `toolgate mcp-proxy --listen`, which offers
    the schema the agent's results meet and builds each result; ContextForge passes both on."""
    with scripted_upstream(tmp_path, output_schema=True) as (upstream, _), \
            mcp_proxy_listening(repo, tmp_path, upstream) as gated:
        process, url, log, env = start(tmp_path)
        try:
            assert wait_for(url + "/health", process, log), log.read_text()[-4000:]
            bearer = token(env)
            post(url + "/gateways", bearer, {"name": "weather", "url": gated, "transport": "STREAMABLEHTTP"})
            tools, result = call_tool(url + "/mcp/", {"Authorization": f"Bearer {bearer}"}, "weather-weather",
                                      {"city": "Oslo"})
        finally:
            process.terminate()
            process.wait(timeout=30)
    reference, _ = through_mcp_proxy(repo, tmp_path, "Oslo")
    offered = next(tool for tool in tools if tool["name"] == "weather-weather")
    assert "station_id" not in json.dumps(offered["outputSchema"])
    assert without_request_id(result) == without_request_id(reference), result
