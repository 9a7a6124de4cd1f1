"""What the coding agents' end-to-end tests share: the scripted model the real CLI talks to, the
MCP server's scripted answer, the fixed failure the gate gives, and the audit log's lines (one
chain, checked by `toolgate audit verify`)."""

import contextlib
import json
import subprocess
import sys

from conftest import HERE, TOOLGATE

OSLO = {"city": "Oslo", "temperature_c": 3.5, "conditions": "snow"}


def answer(structured=None, text="CANARY prose", is_error=False):
    """A tools/call result line for scripted_server.py (its id put in place of __ID__)."""
    result = {"content": [{"type": "text", "text": text}]}
    if structured is not None:
        result["structuredContent"] = structured
    if is_error:
        result["isError"] = True
    return json.dumps({"jsonrpc": "2.0", "id": "__ID__", "result": result}).replace('"__ID__"', "__ID__")


def agent_bytes(request_id, outcome="success", data=None, code="INVALID_RESPONSE", retryable=False):
    """The gate's agent bytes for the weather tool: the projection, or the fixed failure."""
    envelope = {"tool": "weather", "request_id": request_id, "outcome": outcome}
    if outcome == "success":
        envelope["data"] = data
    else:
        envelope["error"] = {"code": code, "retryable": retryable}
    return json.dumps(envelope, separators=(",", ":"))


@contextlib.contextmanager
def scripted_model(tool, arguments, log):
    """model_server.py on a free port, asked to call `tool` with `arguments`: its port."""
    model = subprocess.Popen([sys.executable, str(HERE / "model_server.py"), tool, json.dumps(arguments), str(log)],
                             stdout=subprocess.PIPE, text=True)
    try:
        yield model.stdout.readline().split()[-1]
    finally:
        model.terminate()
        model.wait(timeout=10)


def scripted_server(tmp_path, upstream):
    """The MCP server's command (scripted_server.py answering `upstream` once), and the file it
    writes each tools/call it receives to."""
    answers, calls = tmp_path / "answers.json", tmp_path / "calls.jsonl"
    answers.write_text(json.dumps([upstream]))
    return [sys.executable, str(HERE / "scripted_server.py"), str(answers), str(calls)], calls


def received(calls):
    return calls.read_text().splitlines() if calls.exists() else []


def audit_lines(audit):
    verified = subprocess.run([TOOLGATE, "audit", "verify", str(audit)], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    return [json.loads(line) for line in audit.read_text().splitlines() if '"checkpoint"' not in line]


def hook_command(agent, repo, audit):
    return " ".join([TOOLGATE, "hook", agent, "--root", str(repo), "--context", str(repo / "context.json"),
                     "--audit", str(audit)])
