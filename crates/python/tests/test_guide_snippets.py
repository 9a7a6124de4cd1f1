"""The guide's Python agent snippets (doc/guide/src/mcp.md, "From a Python agent"), run as
written against the framework versions crates/python/ci/run.sh pins: each starts
`toolgate mcp-proxy` in front of a FastMCP weather server, and a scripted model behind OpenAI's
HTTP API (tests/guide/fake_openai.py) calls the tool and answers with what it was given. Only
the snippet's placeholders are replaced: the contracts folder, the server's file, and the
model's address (OPENAI_BASE_URL, as every OpenAI client reads it).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from guide.fake_openai import ANSWER, FakeOpenAI

REPO = Path(__file__).resolve().parents[3]
GUIDE = REPO / "doc/guide/src/mcp.md"
HERE = Path(__file__).resolve().parent


def snippet(framework: str) -> str:
    """The python block that follows the guide's bold heading for `framework`."""
    text = GUIDE.read_text()
    heading = text.index(f"**{framework}**")
    block = re.compile(r"```python\n(.*?)```", re.S).search(text, heading)
    assert block, f"no python block after **{framework}** in {GUIDE}"
    return block.group(1)


def run_snippet(code: str, toolgate: str, tmp_path: Path, model: FakeOpenAI) -> subprocess.CompletedProcess:
    for placeholder in ("/srv/tool-contracts", "weather_server.py"):
        assert placeholder in code, f"the snippet no longer names {placeholder}: update this test"
    code = code.replace("/srv/tool-contracts", str(REPO / "tests/mcp"))
    code = code.replace("weather_server.py", str(HERE / "guide/weather_server.py"))
    if "async def main" in code:
        code += "\nimport asyncio\nasyncio.run(main())\n"
    script = tmp_path / "snippet.py"
    script.write_text(code)
    # `toolgate` and `python` as the snippet names them: the binary under test, this environment's.
    path = os.pathsep.join([str(Path(toolgate).parent), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    env = {
        "PATH": path,
        "HOME": str(tmp_path),
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "NO_COLOR": "1",
    }
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path)


def pinned_in_ci() -> set[str]:
    """The packages crates/python/ci/run.sh installs, as `name==version` (extras dropped)."""
    script = (REPO / "crates/python/ci/run.sh").read_text()
    start = script.index("packages=(")
    block = script[start : script.index("\n)\n", start)]
    pins = re.findall(r'^\s*"?([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^"\s]+)"?', block, re.M)
    return {f"{name}=={version}" for name, version in pins}


def test_the_guide_pins_what_ci_runs_its_snippets_against():
    text = GUIDE.read_text()
    commands = re.findall(r"`pip install ([^`]+)`", text[text.index("## From a Python agent"):])
    assert len(commands) == 3, commands
    pinned = pinned_in_ci()
    for command in commands:
        for requirement in command.replace('"', "").split():
            name = re.sub(r"\[[^\]]*\]", "", requirement)
            assert "==" in name, f"the guide installs {requirement} unpinned"
            assert name in pinned, f"the guide pins {name}; crates/python/ci/run.sh does not ({sorted(pinned)})"


@pytest.fixture
def model():
    model = FakeOpenAI()
    yield model
    model.close()


@pytest.mark.parametrize("framework,package", [
    ("pydantic-ai", "pydantic_ai"),
    ("The OpenAI Agents SDK", "agents"),
    ("LangChain", "langchain_mcp_adapters"),
])
def test_the_guides_snippet_runs_and_the_model_sees_the_projection(framework, package, toolgate, tmp_path, model):
    if os.environ.get("TOOLGATE_REQUIRE_FRAMEWORKS"):
        __import__(package)  # crates/python/ci/run.sh installs every framework: none may be skipped
    else:
        pytest.importorskip(package)
    ran = run_snippet(snippet(framework), toolgate, tmp_path, model)
    assert ran.returncode == 0, ran.stderr[-4000:]
    assert model.tools_offered and "weather" in model.tools_offered[0], model.tools_offered
    assert len(model.tool_outputs) == 1, (model.tool_outputs, ran.stdout)
    # The projection the contract promises, in the gate's envelope: nothing else of the answer.
    seen = json.loads(model.tool_outputs[0])
    assert set(seen) == {"tool", "request_id", "outcome", "data"}, seen
    assert (seen["tool"], seen["outcome"]) == ("weather", "success"), seen
    assert seen["data"] == {"city": "Lisbon", "temperature_c": 21.5, "conditions": "clear"}, seen
    assert ANSWER in ran.stdout, ran.stdout
