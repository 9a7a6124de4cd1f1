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

from agents import OSLO, agent_bytes, answer, audit_lines, hook_command, received, scripted_model, scripted_server

CLAUDE = os.environ["CLAUDE_BIN"]
TOOL = "mcp__weather__weather"


def agent(repo, tmp_path, city, upstream):
    """Claude Code asked for `city`'s weather, the MCP server answering `upstream`: the result
    block the model was shown, the calls the server received, the audit lines, and everything the
    model was sent after its first turn."""
    log, audit = tmp_path / "model.jsonl", tmp_path / "audit.jsonl"
    server, calls = scripted_server(tmp_path, upstream)
    with scripted_model(TOOL, {"city": city}, log) as port:
        handler = [{"type": "command", "command": hook_command("claude-code", repo, audit), "timeout": 30}]
        settings = {"hooks": {event: [{"matcher": "mcp__weather__.*", "hooks": handler}]
                              for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure")}}
        (tmp_path / "settings.json").write_text(json.dumps(settings))
        (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"weather": {
            "command": server[0], "args": server[1:]}}}))
        home = tmp_path / "home"
        home.mkdir()
        env = {**os.environ, "HOME": str(home), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
               "ANTHROPIC_API_KEY": "sk-ant-offline", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "ENABLE_TOOL_SEARCH": "false", "CI": ""}
        done = subprocess.run([CLAUDE, "-p", f"What is the weather in {city}?", "--mcp-config", "mcp.json",
                               "--strict-mcp-config", "--allowedTools", TOOL, "--settings", "settings.json"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr
    shown = [json.loads(line)["body"] for line in log.read_text().splitlines()]
    results = [block for body in shown for message in body.get("messages", []) if message["role"] == "user"
               and isinstance(message["content"], list) for block in message["content"]
               if block.get("type") == "tool_result"]
    assert results, "the model was never shown the call's result"
    return results[-1], received(calls), audit_lines(audit), "\n".join(json.dumps(body) for body in shown[1:])


def test_an_admitted_result_reaches_the_model_as_the_gates_bytes(repo, tmp_path):
    result, calls, lines, later = agent(repo, tmp_path, "Oslo", answer(OSLO))
    assert result["content"] == agent_bytes("toolu_1", data=OSLO), result
    assert not result.get("is_error")
    assert len(calls) == 1 and "CANARY" not in later
    # The arguments and the result: two decisions.
    assert [line["outcome"] for line in lines] == ["admitted", "admitted"], lines


def test_a_refused_result_reaches_the_model_as_the_fixed_failure(repo, tmp_path):
    result, calls, lines, later = agent(repo, tmp_path, "Oslo", answer({**OSLO, "note": "CANARY member"}))
    assert result["content"] == agent_bytes("toolu_1", "failure"), result
    assert len(calls) == 1 and "CANARY" not in later
    assert lines[-1]["outcome"] == "rejected" and lines[-1]["layer"] == "schema", lines[-1]


def test_refused_arguments_are_denied_before_the_tool_runs(repo, tmp_path):
    result, calls, lines, later = agent(repo, tmp_path, "Paris", answer(OSLO))
    assert calls == [], calls
    assert result.get("is_error") and result["content"].endswith(agent_bytes("toolu_1", "failure")), result
    assert "Paris" not in result["content"]
    assert [line["outcome"] for line in lines] == ["rejected"], lines


def test_a_tools_error_is_shown_with_the_fixed_failure_beside_it(repo, tmp_path):
    # What no Claude Code hook can prevent, said in the guide: the error's text is shown.
    result, calls, lines, later = agent(repo, tmp_path, "Oslo", answer(text="CANARY error", is_error=True))
    assert result.get("is_error") and "CANARY error" in result["content"], result
    failure = agent_bytes("toolu_1", "failure", code="UPSTREAM_UNAVAILABLE", retryable=True)
    assert json.dumps(failure)[1:-1] in later, later[-2000:]
    assert lines[-1]["outcome"] == "rejected", lines
