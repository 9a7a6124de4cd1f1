"""The official Python SDK (`mcp`) client through toolgate mcp-proxy, in each of its modes
(handshake, auto, pinned to 2026-07-28), over stdio and over the proxy's Streamable HTTP
listener; the same checks as check.mjs.

    python python_client.py TOOLGATE CONTRACTS SERVER_EVERYTHING PROXY_URL
"""

import asyncio
import json
import os
import sys

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

SERVER_WORDS = [
    "Returns structured content along with an output schema",
    "Get Structured Content Tool",
    "Choose city",
    "Cloudy",
]


def dump(value):
    return json.dumps(value.model_dump(mode="json", by_alias=True) if hasattr(value, "model_dump") else str(value))


async def exercise(label, server, mode):
    failures, seen = [], []
    try:
        async with Client(server, mode=mode) as client:
            listed = await client.list_tools()
            seen.append(dump(listed))
            names = [tool.name for tool in listed.tools]
            if names != ["get-structured-content"]:
                failures.append(f"lists only the contracted tool, got {names}")
            admitted = await client.call_tool("get-structured-content", {"location": "New York"})
            seen.append(dump(admitted))
            data = (admitted.structured_content or {}).get("data") or {}
            if admitted.is_error or data.get("temperature") != 33 or data.get("humidity") != 82 or "conditions" in data:
                failures.append(f"New York is admitted as the projection, got {dump(admitted)}")
            refused = await client.call_tool("get-structured-content", {"location": "Los Angeles"})
            seen.append(dump(refused))
            if not refused.is_error or (refused.structured_content or {}).get("error", {}).get("code") != "INVALID_RESPONSE":
                failures.append(f"Los Angeles (73 °C) is refused, got {dump(refused)}")
            try:
                echoed = await client.call_tool("echo", {"message": "hello"})
                seen.append(dump(echoed))
                if not echoed.is_error:
                    failures.append("a tool without a contract is refused")
            except Exception as error:  # the SDK raises the JSON-RPC error
                seen.append(str(error))
    except Exception as error:
        failures.append(f"{type(error).__name__}: {error}")
    for words in SERVER_WORDS:
        if any(words in text for text in seen):
            failures.append(f"the server's words reached the client: {words}")
    if failures:
        print(f"FAIL {label}:\n  " + "\n  ".join(failures), file=sys.stderr)
        return False
    print(f"ok   {label}")
    return True


async def observe(label, server, mode):
    """Observe mode: the server's own listing (every tool, its own schemas), so the SDK accepts
    every result passed on unchanged, the ones the contract refuses too; a tool without a
    contract is called as the server serves it."""
    failures = []
    try:
        async with Client(server, mode=mode) as client:
            listed = await client.list_tools()
            names = [tool.name for tool in listed.tools]
            if "echo" not in names or "get-structured-content" not in names or len(names) <= 2:
                failures.append(f"lists every tool the server lists, got {names}")
            own = next((tool for tool in listed.tools if tool.name == "get-structured-content"), None)
            if own is None or SERVER_WORDS[0] not in (own.description or "") or own.output_schema is None:
                failures.append(f"the server's own description and output schema, got {dump(own) if own else None}")
            refused = await client.call_tool("get-structured-content", {"location": "Los Angeles"})
            if refused.is_error or (refused.structured_content or {}).get("temperature") != 73:
                failures.append(f"Los Angeles passes unchanged, got {dump(refused)}")
            echoed = await client.call_tool("echo", {"message": "hello"})
            if echoed.is_error or getattr(echoed.content[0], "text", None) != "Echo: hello":
                failures.append(f"a tool without a contract is called as the server serves it, got {dump(echoed)}")
    except Exception as error:
        failures.append(f"the client refused what the proxy passed: {type(error).__name__}: {error}")
    if failures:
        print(f"FAIL {label}:\n  " + "\n  ".join(failures), file=sys.stderr)
        return False
    print(f"ok   {label}")
    return True


async def main():
    toolgate, contracts, everything, proxy_url = sys.argv[1:5]
    stdio = StdioServerParameters(
        command=toolgate,
        args=["mcp-proxy", "--root", contracts, "--", "node", everything, "stdio"],
    )
    ok = True
    for mode in ["legacy", "auto", "2026-07-28"]:
        ok &= await exercise(f"Python SDK, stdio, {mode}", stdio, mode)
        ok &= await exercise(f"Python SDK, Streamable HTTP, {mode}", proxy_url, mode)
    # Observe mode is refused in CI: the proxy is told this is no pipeline.
    observing = StdioServerParameters(
        command=toolgate,
        args=["mcp-proxy", "--root", contracts, "--mode", "observe", "--", "node", everything, "stdio"],
        env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", ""), "CI": "false"},
    )
    for mode in ["legacy", "2026-07-28"]:
        ok &= await observe(f"Python SDK, stdio, {mode}, observe mode", observing, mode)
    sys.exit(0 if ok else 1)


asyncio.run(main())
