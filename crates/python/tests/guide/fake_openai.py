"""A scripted model behind OpenAI's HTTP API (chat completions and responses), for running the
guide's agent snippets exactly as written, offline: the first request asks for the `weather`
tool for Lisbon; the next, which holds the tool's output, answers with that output verbatim, so
the test reads exactly what the model was given.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = "the tool said: "
CALL = {"city": "Lisbon"}


class FakeOpenAI:
    """The server, on a loopback port, and what the model was shown."""

    def __init__(self):
        self.tool_outputs: list[str] = []
        self.tools_offered: list[list[str]] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # the test's output stays its own
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.endswith("/chat/completions"):
                    reply = model.chat(body)
                elif self.path.endswith("/responses"):
                    reply = model.responses(body)
                else:
                    self.send_error(404)
                    return
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def chat(self, body: dict) -> dict:
        self.tools_offered.append([tool["function"]["name"] for tool in body.get("tools", [])])
        outputs = [message for message in body["messages"] if message.get("role") == "tool"]
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        base = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body.get("model", "m"), "usage": usage}
        if not outputs:
            call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": json.dumps(CALL)}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            return {**base, "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
        content = outputs[-1]["content"]
        if isinstance(content, list):  # content parts
            content = "".join(part.get("text", "") for part in content)
        self.tool_outputs.append(content)
        message = {"role": "assistant", "content": ANSWER + content}
        return {**base, "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}

    def responses(self, body: dict) -> dict:
        self.tools_offered.append([tool.get("name") for tool in body.get("tools", [])])
        items = body["input"] if isinstance(body["input"], list) else []
        outputs = [item for item in items if item.get("type") == "function_call_output"]
        usage = {
            "input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
            "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0},
        }
        base = {
            "id": "resp_1", "object": "response", "created_at": 0, "model": body.get("model", "m"),
            "status": "completed", "usage": usage, "parallel_tool_calls": False, "tool_choice": "auto",
            "tools": [], "error": None, "incomplete_details": None, "instructions": None, "metadata": {},
            "temperature": None, "top_p": None,
        }
        if not outputs:
            call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather",
                    "arguments": json.dumps(CALL), "status": "completed"}
            return {**base, "output": [call]}
        output = outputs[-1]["output"]
        if isinstance(output, list):
            output = "".join(part.get("text", "") for part in output)
        self.tool_outputs.append(output)
        text = {"type": "output_text", "text": ANSWER + output, "annotations": []}
        message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [text]}
        return {**base, "output": [message]}
