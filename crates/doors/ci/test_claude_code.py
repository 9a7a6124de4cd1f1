"""`toolgate hook claude-code` inside the real Claude Code CLI (npm @anthropic-ai/claude-code,
pinned in run.sh), run headless and offline: a scripted model (model_server.py) calls the
weather tool of a scripted MCP server (scripted_server.py), and the test reads what the model was
shown. The tool's result reaches the model only as the gate's agent bytes; a result the contract
refuses, as the fixed failure; arguments the argument contract refuses are denied before the tool
runs; a tool's error text is shown (Claude Code allows no hook to take it back) with the fixed
failure beside it. Every decision is an audit line of one chain.

Run by crates/doors/ci/run.sh, which installs the CLI in target/doors-ci/claude-code.
"""

import json
import os
import subprocess
import sys

from conftest import HERE, TOOLGATE

CLAUDE = os.environ["CLAUDE_BIN"]
TOOL = "mcp__weather__weather"
OSLO = {"city": "Oslo", "temperature_c": 3.5, "conditions": "snow"}


def answer(structured=None, text="CANARY prose", is_error=False):
    result = {"content": [{"type": "text", "text": text}]}
    if structured is not None:
        result["structuredContent"] = structured
    if is_error:
        result["isError"] = True
    return json.dumps({"jsonrpc": "2.0", "id": "__ID__", "result": result}).replace('"__ID__"', "__ID__")


def agent(repo, tmp_path, city, upstream):
    """Claude Code asked for `city`'s weather, the MCP server answering `upstream`: what the model
    was shown of the call, the calls the server received, and the audit lines."""
    answers, calls, log, audit = (tmp_path / name for name in ("answers.json", "calls.jsonl", "model.jsonl", "audit.jsonl"))
    answers.write_text(json.dumps([upstream]))
    model = subprocess.Popen([sys.executable, str(HERE / "model_server.py"), TOOL, json.dumps({"city": city}), str(log)],
                             stdout=subprocess.PIPE, text=True)
    try:
        port = model.stdout.readline().split()[-1]
        hook = " ".join([TOOLGATE, "hook", "claude-code", "--root", str(repo), "--context",
                         str(repo / "context.json"), "--audit", str(audit)])
        handler = [{"type": "command", "command": hook, "timeout": 30}]
        settings = {"hooks": {event: [{"matcher": "mcp__weather__.*", "hooks": handler}]
                              for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure")}}
        (tmp_path / "settings.json").write_text(json.dumps(settings))
        (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"weather": {
            "command": sys.executable, "args": [str(HERE / "scripted_server.py"), str(answers), str(calls)]}}}))
        home = tmp_path / "home"
        home.mkdir()
        env = {**os.environ, "HOME": str(home), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
               "ANTHROPIC_API_KEY": "sk-ant-offline", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "ENABLE_TOOL_SEARCH": "false", "CI": ""}
        done = subprocess.run([CLAUDE, "-p", f"What is the weather in {city}?", "--mcp-config", "mcp.json",
                               "--strict-mcp-config", "--allowedTools", TOOL, "--settings", "settings.json"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr
    finally:
        model.terminate()
        model.wait(timeout=10)
    shown = [json.loads(line)["body"] for line in log.read_text().splitlines()]
    results = [block for body in shown for message in body.get("messages", []) if message["role"] == "user"
               and isinstance(message["content"], list) for block in message["content"]
               if block.get("type") == "tool_result"]
    assert results, "the model was never shown the call's result"
    received = calls.read_text().splitlines() if calls.exists() else []
    lines = [json.loads(line) for line in audit.read_text().splitlines() if '"checkpoint"' not in line]
    verified = subprocess.run([TOOLGATE, "audit", "verify", str(audit)], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    return results[-1], received, lines, "\n".join(json.dumps(body) for body in shown[1:])


def failure(code="INVALID_RESPONSE", retryable=False):
    return json.dumps({"tool": "weather", "request_id": "toolu_1", "outcome": "failure",
                       "error": {"code": code, "retryable": retryable}}, separators=(",", ":"))


def test_an_admitted_result_reaches_the_model_as_the_gates_bytes(repo, tmp_path):
    result, received, lines, later = agent(repo, tmp_path, "Oslo", answer(OSLO))
    expected = json.dumps({"tool": "weather", "request_id": "toolu_1", "outcome": "success", "data": OSLO},
                          separators=(",", ":"))
    assert result["content"] == expected, result
    assert not result.get("is_error")
    assert len(received) == 1 and "CANARY" not in later
    # The arguments and the result: two decisions.
    assert [line["outcome"] for line in lines] == ["admitted", "admitted"], lines


def test_a_refused_result_reaches_the_model_as_the_fixed_failure(repo, tmp_path):
    result, received, lines, later = agent(repo, tmp_path, "Oslo", answer({**OSLO, "note": "CANARY member"}))
    assert result["content"] == failure(), result
    assert len(received) == 1 and "CANARY" not in later
    assert lines[-1]["outcome"] == "rejected" and lines[-1]["layer"] == "schema", lines[-1]


def test_refused_arguments_are_denied_before_the_tool_runs(repo, tmp_path):
    result, received, lines, later = agent(repo, tmp_path, "Paris", answer(OSLO))
    assert received == [], received
    assert result.get("is_error") and result["content"].endswith(failure()), result
    assert "Paris" not in result["content"]
    assert [line["outcome"] for line in lines] == ["rejected"], lines


def test_a_tools_error_is_shown_with_the_fixed_failure_beside_it(repo, tmp_path):
    # What no Claude Code hook can prevent, said in the guide: the error's text is shown.
    result, received, lines, later = agent(repo, tmp_path, "Oslo", answer(text="CANARY error", is_error=True))
    assert result.get("is_error") and "CANARY error" in result["content"], result
    assert json.dumps(failure("UPSTREAM_UNAVAILABLE", True))[1:-1] in later, later[-2000:]
    assert lines[-1]["outcome"] == "rejected", lines
