"""`toolgate hook codex` inside the real Codex CLI (npm @openai/codex, pinned in run.sh), run
headless (`codex exec`) and offline: a scripted model (model_server.py, the Responses API) calls
the weather tool of a scripted MCP server, and the test reads what the model was shown. Codex's
hooks cannot replace a result, so the hook blocks every one with the gate's agent bytes as the
reason, and Codex hands the model exactly that reason as the call's output: the projection, or
the fixed failure. Arguments the argument contract refuses are denied before the tool runs. A
tool's error runs no hook, so its text is shown (the guide says so). Every decision is an audit
line of one chain.

Run by crates/doors/ci/run.sh, which installs the CLI in target/doors-ci/codex.
"""

import json
import os
import subprocess

from agents import OSLO, agent_bytes, answer, audit_lines, hook_command, received, scripted_model, scripted_server

CODEX = os.environ["CODEX_BIN"]
TOOL = "mcp__weather__weather"


def toml(value):
    """A TOML string (TOML's basic strings take JSON's escapes)."""
    return json.dumps(str(value))


def agent(repo, tmp_path, city, upstream):
    """Codex asked for `city`'s weather, the MCP server answering `upstream`: the call's output the
    model was shown, the calls the server received, the audit lines, and everything the model was
    sent after its first turn."""
    log, audit = tmp_path / "model.jsonl", tmp_path / "audit.jsonl"
    server, calls = scripted_server(tmp_path, upstream)
    hook = hook_command("codex", repo, audit)
    with scripted_model(TOOL, {"city": city}, log) as port:
        home = tmp_path / "codex-home"
        home.mkdir()
        hooks = "".join(f"""
[[hooks.{event}]]
matcher = "mcp__weather__.*"
[[hooks.{event}.hooks]]
type = "command"
command = {toml(hook)}
timeout = 30
""" for event in ("PreToolUse", "PostToolUse"))
        (home / "config.toml").write_text(f"""
model = "scripted"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"
env_key = "SCRIPTED_MODEL_KEY"

[mcp_servers.weather]
command = {toml(server[0])}
args = [{", ".join(toml(arg) for arg in server[1:])}]
{hooks}""")
        env = {**os.environ, "CODEX_HOME": str(home), "SCRIPTED_MODEL_KEY": "offline", "CI": ""}
        # The test is the sandbox: Codex's own approval prompt for MCP tools and its trust prompt
        # for new hooks have no one to answer them here.
        done = subprocess.run([CODEX, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                               "--dangerously-bypass-hook-trust", f"What is the weather in {city}?"],
                              cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr
    shown = [json.loads(line)["body"] for line in log.read_text().splitlines()]
    outputs = [item for body in shown for item in body.get("input", [])
               if isinstance(item, dict) and item.get("type") == "function_call_output"]
    assert outputs, "the model was never shown the call's output"
    return outputs[-1]["output"], received(calls), audit_lines(audit), "\n".join(json.dumps(body) for body in shown[1:])


def test_an_admitted_result_reaches_the_model_as_the_gates_bytes(repo, tmp_path):
    output, calls, lines, later = agent(repo, tmp_path, "Oslo", answer(OSLO))
    assert output == agent_bytes("call_1", data=OSLO), output
    assert len(calls) == 1 and "CANARY" not in later
    assert [line["outcome"] for line in lines] == ["admitted", "admitted"], lines


def test_a_refused_result_reaches_the_model_as_the_fixed_failure(repo, tmp_path):
    output, calls, lines, later = agent(repo, tmp_path, "Oslo", answer({**OSLO, "note": "CANARY member"}))
    assert output == agent_bytes("call_1", "failure"), output
    assert len(calls) == 1 and "CANARY" not in later
    assert lines[-1]["outcome"] == "rejected", lines


def test_a_tools_error_is_shown_as_codex_shows_it(repo, tmp_path):
    # What no Codex hook can prevent, said in the guide: Codex runs no PostToolUse hook for a
    # result with isError, so its text reaches the model. Only the arguments were decided.
    output, calls, lines, later = agent(repo, tmp_path, "Oslo", answer(text="CANARY error", is_error=True))
    assert "CANARY error" in json.dumps(output), output
    assert [line["tool"] for line in lines] == ["weather.arguments"], lines


def test_refused_arguments_are_denied_before_the_tool_runs(repo, tmp_path):
    output, calls, lines, later = agent(repo, tmp_path, "Paris", answer(OSLO))
    assert calls == [], calls
    assert agent_bytes("call_1", "failure") in json.dumps(output) or agent_bytes("call_1", "failure") in output, output
    assert [line["outcome"] for line in lines] == ["rejected"], lines
