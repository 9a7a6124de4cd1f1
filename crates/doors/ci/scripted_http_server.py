"""A stateless Streamable HTTP MCP server on loopback that answers each tools/call with the answer
its script holds for the call's `city` argument, its bytes exactly as written (the request's id put
in place of `__ID__`). It lists `weather` (with `--output-schema`, the output schema an upstream
would advertise: its raw shape, not what the agent is given) and `raw_lookup`, a tool no contract
names. What LiteLLM's proxy and ContextForge's gateway are put in front of.

    python3 scripted_http_server.py ANSWERS.json CALLS_LOG [--output-schema]
    (ANSWERS: a JSON object, city to answer; prints "listening PORT")
"""

import http.server
import json
import sys

answers = json.load(open(sys.argv[1], encoding="utf-8"))
calls_log = sys.argv[2]
advertise_output_schema = "--output-schema" in sys.argv[3:]

TOOL = {
    "name": "weather",
    "description": "The current weather in a city.",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    # The upstream's own shape: more than the contract promises the agent.
    "outputSchema": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "temperature_c": {"type": "number"},
            "conditions": {"type": "string"},
            "station_id": {"type": "string"},
        },
        "required": ["city", "temperature_c", "conditions"],
    },
}

UNGATED = {"name": "raw_lookup", "description": "Anything, unvetted.",
           "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}


class Server(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        # No server-initiated stream: the client goes on without one.
        self.reply(405)

    def do_DELETE(self):
        self.reply(405)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        message = json.loads(body)
        if "id" not in message:
            return self.reply(202)
        method, key = message.get("method"), json.dumps(message["id"])
        if method == "initialize":
            result = {"protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                      "capabilities": {"tools": {}}, "serverInfo": {"name": "scripted", "version": "1"}}
        elif method == "tools/list":
            weather = dict(TOOL) if advertise_output_schema else {k: v for k, v in TOOL.items() if k != "outputSchema"}
            result = {"tools": [weather, UNGATED]}
        elif method == "ping":
            result = {}
        elif method == "tools/call":
            with open(calls_log, "ab") as calls:
                calls.write(body + b"\n")
            city = message["params"].get("arguments", {}).get("city", "")
            answer = answers.get(city, answers.get("*", ""))
            return self.reply(200, answer.replace("__ID__", key).encode())
        else:
            return self.reply(200, json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                               "error": {"code": -32601, "message": "not here"}}).encode())
        self.reply(200, json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode())


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Server)
print("listening", server.server_address[1], flush=True)
server.serve_forever()
