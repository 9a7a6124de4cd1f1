"""A scripted model on loopback, so the real Claude Code and Codex CLIs run offline: Anthropic's
Messages API (`/v1/messages`, Claude Code) and OpenAI's Responses API (`/v1/responses`, Codex).
The first turn that offers TOOL (`mcp__<server>__<tool>`; Codex offers it as the tool `<tool>` of
the namespace `mcp__<server>`) calls it with INPUT; every later turn answers "done". Each request
body is appended to LOG as a JSON line, for the test to read what the model was shown.

    python3 model_server.py TOOL INPUT_JSON LOG     (prints "listening on PORT")
"""

import http.server
import json
import sys

TOOL, INPUT, LOG = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
USAGE = {"input_tokens": 1, "output_tokens": 1}


def turn(body):
    """The blocks of the model's answer to a request, and why it stops."""
    # Answered once any message holds the call's result (a hook's context may follow it).
    answered = any(isinstance(message.get("content"), list)
                   and any(block.get("type") == "tool_result" for block in message["content"])
                   for message in body.get("messages", []))
    offered = any(tool.get("name") == TOOL for tool in body.get("tools", []))
    if offered and not answered:
        return [{"type": "tool_use", "id": "toolu_1", "name": TOOL, "input": INPUT}], "tool_use"
    return [{"type": "text", "text": "done"}], "end_turn"


def events(body, blocks, stop):
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model", "m"),
               "content": [], "stop_reason": None, "stop_sequence": None, "usage": USAGE}
    yield {"type": "message_start", "message": message}
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            yield {"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}}
            yield {"type": "content_block_delta", "index": index,
                   "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}}
        else:
            yield {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            yield {"type": "content_block_delta", "index": index,
                   "delta": {"type": "text_delta", "text": block["text"]}}
        yield {"type": "content_block_stop", "index": index}
    yield {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": USAGE}
    yield {"type": "message_stop"}


def responses_turn(body):
    """The Responses API's output item for a request: the call, or the last word."""
    namespace, name = TOOL.rsplit("__", 1)
    answered = any(item.get("type") == "function_call_output" for item in body.get("input", []))
    offered = any(tool.get("type") == "namespace" and tool.get("name") == namespace
                  for tool in body.get("tools", []))
    if offered and not answered:
        return {"type": "function_call", "id": "fc_1", "call_id": "call_1", "namespace": namespace,
                "name": name, "arguments": json.dumps(INPUT), "status": "completed"}
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "done", "annotations": []}]}


def responses_events(body):
    item = responses_turn(body)
    usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
             "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
    response = {"id": "resp_1", "object": "response", "status": "completed", "model": body.get("model", "m"),
                "output": [item], "usage": usage}
    yield {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}}
    yield {"type": "response.output_item.added", "output_index": 0, "item": item}
    yield {"type": "response.output_item.done", "output_index": 0, "item": item}
    yield {"type": "response.completed", "response": response}


class Model(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps({"path": self.path, "body": body}) + "\n")
        if self.path.split("?")[0].endswith("/responses"):
            self.answer(
                "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                        for event in responses_events(body)).encode(),
                "text/event-stream",
            )
            return
        blocks, stop = turn(body)
        if body.get("stream"):
            data = "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                           for event in events(body, blocks, stop)).encode()
            kind = "text/event-stream"
        else:
            data = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model", "m"),
                               "content": blocks, "stop_reason": stop, "stop_sequence": None,
                               "usage": USAGE}).encode()
            kind = "application/json"
        self.answer(data, kind)

    def answer(self, data, kind):
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        # Codex asks for the provider's models: none beyond the one configured.
        self.answer(json.dumps({"data": [], "models": []}).encode(), "application/json")


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
print(f"listening on {server.server_address[1]}", flush=True)
server.serve_forever()
