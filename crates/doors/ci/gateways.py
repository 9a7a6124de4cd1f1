"""What the gateway doors' end-to-end tests share (LiteLLM's proxy, ContextForge's gateway): the
scripted upstream over Streamable HTTP, the weather tool's answers by city, the official MCP SDK
as the client, and what `toolgate mcp-proxy` gives for the same answer: the reference every door
must match (the same agent bytes, the same audit line but for what names the door, the moment and
the gateway's id of the call).

Each gateway runs in a virtual environment of its own (run.sh), with the wheel installed."""

import asyncio
import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import time

from agents import OSLO, answer
from conftest import HERE, TOOLGATE

# The upstream's answer for each city a call asks about.
ANSWERS = {
    # Admitted: the contract's projection (the upstream's prose left out).
    "Oslo": answer(OSLO),
    # Refused: the answer is about another city than the one asked about (a binding rule).
    "Lisbon": answer(OSLO),
}
# What no door may ever let through: in the upstream's answers, never in the agent's bytes.
CANARY = "CANARY"
# What names the door, the moment and the call: never compared (the agent bytes name the call too:
# their digest is checked against what the client received instead).
DOOR_FIELDS = {"time", "call_id", "chain", "upstream", "trace_id", "span_id", "request_id", "agent_sha256"}


GUIDE = HERE.parents[2] / "doc/guide/src/agents.md"
# The guide's own paths in its configuration blocks, and what a test puts in their place.
GUIDE_CONTRACTS, GUIDE_CONTEXT, GUIDE_AUDIT = "/etc/toolgate/contracts", "/etc/toolgate/context.json", \
    "/var/log/toolgate/audit.jsonl"


def guide_blocks(test_file):
    """The guide's configuration blocks that `test_file` runs (agents.md names it in the marker
    before each), in order, as the guide writes them: the test runs the page's own snippets."""
    lines, blocks = GUIDE.read_text().splitlines(), []
    for index, line in enumerate(lines):
        if line.startswith("<!-- guide-test:") and test_file in line:
            assert lines[index + 1].startswith("```"), f"agents.md:{index + 2}: a fenced block follows the marker"
            end = lines.index("```", index + 2)
            blocks.append("\n".join(lines[index + 2:end]) + "\n")
    assert blocks, f"agents.md names no block run by {test_file}"
    return blocks


def with_paths(block, contracts, context, audit):
    """A guide block with the test's contracts, context and audit log in place of the guide's."""
    for guide, given in ((GUIDE_CONTRACTS, contracts), (GUIDE_CONTEXT, context), (GUIDE_AUDIT, audit)):
        assert guide in block, f"the guide's block no longer names {guide}"
        block = block.replace(guide, str(given))
    return block


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def scripted_upstream(tmp_path, output_schema=False):
    """scripted_http_server.py on loopback: its MCP URL, and the file each call it gets goes to."""
    answers, calls = tmp_path / "answers.json", tmp_path / "calls.jsonl"
    answers.write_text(json.dumps(ANSWERS))
    server = subprocess.Popen([sys.executable, str(HERE / "scripted_http_server.py"), str(answers), str(calls)]
                              + (["--output-schema"] if output_schema else []), stdout=subprocess.PIPE, text=True)
    try:
        port = server.stdout.readline().split()[-1]
        yield f"http://127.0.0.1:{port}/mcp", calls
    finally:
        server.terminate()
        server.wait(timeout=10)


@contextlib.contextmanager
def mcp_proxy_listening(repo, tmp_path, upstream):
    """`toolgate mcp-proxy --listen` in front of `upstream` (an MCP URL): its MCP URL. What the
    guide registers with a gateway for a server whose tools advertise an output schema."""
    port = free_port()
    log = tmp_path / "mcp-proxy.log"
    proxy = subprocess.Popen([TOOLGATE, "mcp-proxy", "--root", str(repo), "--context", str(repo / "context.json"),
                              "--listen", f"127.0.0.1:{port}", "--", upstream],
                             stdout=subprocess.DEVNULL, stderr=log.open("w"), env={**os.environ, "CI": ""})
    try:
        assert wait_for(f"http://127.0.0.1:{port}/readyz", proxy, log, seconds=30), log.read_text()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)


def received(calls):
    return [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []


def wait_for(url, process, log, seconds=180):
    """Until `url` answers (any status), or the process ends: whether it came up."""
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            urllib.request.urlopen(url, timeout=2)
            return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} did not come up within {seconds}s:\n{log.read_text()[-4000:]}")


def call_tool(url, headers, tool, arguments):
    """The official MCP SDK's client: the tools it is offered and the call's result, as dicts (an
    error the SDK raised as its text)."""
    from mcp import ClientSession

    try:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        def transport():
            return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    except ImportError:  # the SDK's 1.x spelling
        from mcp.client.streamable_http import streamablehttp_client

        def transport():
            return streamablehttp_client(url, headers=headers)

    async def run():
        async with transport() as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                listed = await session.list_tools()
                tools = [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in listed.tools]
                try:
                    result = await session.call_tool(tool, arguments)
                except Exception as error:  # noqa: BLE001  # the client's own refusal, as text
                    return tools, {"raised": str(error)}
                return tools, result.model_dump(by_alias=True, exclude_none=True, mode="json")

    return asyncio.run(run())


def through_mcp_proxy(repo, tmp_path, city):
    """The result `toolgate mcp-proxy` gives a host calling weather for `city` over stdio, and
    its audit lines: the reference."""
    answers, audit = tmp_path / "proxy-answers.json", tmp_path / "proxy-audit.jsonl"
    answers.write_text(json.dumps([ANSWERS[city]]))
    proxy = subprocess.run(
        [TOOLGATE, "mcp-proxy", "--contracts", str(repo), "--context", str(repo / "context.json"),
         "--audit", str(audit), "--", sys.executable, str(HERE / "scripted_server.py"), str(answers)],
        input="\n".join(json.dumps(message) for message in [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "ref", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
             "params": {"name": "weather", "arguments": {"city": city}}},
        ]) + "\n", capture_output=True, text=True, timeout=60, env={**os.environ, "CI": ""})
    result = json.loads(proxy.stdout.splitlines()[-1])["result"]
    return result, audit_lines(audit)


def audit_lines(audit, received=None):
    """The audit log's decisions, verified as one chain, without what names the door and the
    moment; with `received` (the result a client got), the last line's agent digest is checked
    to be that result's agent bytes'."""
    verified = subprocess.run([TOOLGATE, "audit", "verify", str(audit)], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    lines = [json.loads(line) for line in audit.read_text().splitlines() if '"checkpoint"' not in line]
    if received is not None:
        agent = received["content"][0]["text"].encode()
        assert lines[-1]["agent_sha256"] == hashlib.sha256(agent).hexdigest()
    return [{key: value for key, value in line.items() if key not in DOOR_FIELDS} for line in lines]


def without_request_id(result):
    """A door's MCP result with the call's id taken out of its agent bytes, to compare with the
    reference's (each gateway names a call its own way)."""
    agent = json.loads(result["content"][0]["text"])
    agent.pop("request_id")
    structured = dict(result.get("structuredContent") or {})
    structured.pop("request_id", None)
    return {"agent": agent, "structured": structured, "isError": result.get("isError", False)}
