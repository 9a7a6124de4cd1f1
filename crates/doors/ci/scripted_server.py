"""A handshake-era MCP server over stdio that answers each tools/call with the next answer of a
script, its bytes exactly as written (duplicate keys and all), the proxy's id put in place of
`__ID__`. What `toolgate mcp-proxy` is put in front of by test_doors.py's parity test.

    python3 scripted_server.py ANSWERS.json [CALLS_LOG]    (ANSWERS: a JSON list of strings)
"""

import json
import sys

answers = json.load(open(sys.argv[1], encoding="utf-8"))
# Where each tools/call it receives is written, if anywhere (a test counts the upstream's calls).
calls = open(sys.argv[2], "ab") if len(sys.argv) > 2 else None
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    message = json.loads(line)
    if calls is not None and message.get("method") == "tools/call":
        calls.write(line)
        calls.flush()
    if "id" not in message or "method" not in message:
        continue
    key = json.dumps(message["id"])
    method = message["method"]
    if method == "initialize":
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted", "version": "1"},
        }}
        out.write(json.dumps(reply).encode() + b"\n")
    elif method == "tools/list":
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [
            {"name": "weather", "inputSchema": {"type": "object"}},
        ]}}
        out.write(json.dumps(reply).encode() + b"\n")
    elif method == "tools/call" and answers:
        out.write(answers.pop(0).replace("__ID__", key).encode() + b"\n")
    else:
        reply = {"jsonrpc": "2.0", "id": message["id"],
                 "error": {"code": -32601, "message": "not here"}}
        out.write(json.dumps(reply).encode() + b"\n")
    out.flush()
