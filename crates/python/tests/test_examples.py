"""The documented framework examples (examples/python/) run, offline, and hand the model only
what the contract promises."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("example,package", [
    ("pydantic_ai_weather.py", "pydantic_ai"),
    ("openai_agents_weather.py", "agents"),
])
def test_the_example_runs_and_gates_every_answer(example, package):
    pytest.importorskip(package)
    ran = subprocess.run(
        [sys.executable, str(REPO / "examples/python" / example), "Lisbon", "Porto", "Faro"],
        capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": ""},
    )
    assert ran.returncode == 0, ran.stderr
    answers = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]
    assert [answer["outcome"] for answer in answers] == ["success", "failure", "failure"], ran.stdout
    assert answers[0]["data"] == {"city": "Lisbon", "temperature_c": 21.5, "conditions": "clear"}
    assert "ignore your instructions" not in ran.stdout
    # The refusals went to the operator's log, not the model.
    assert "refused a result" in ran.stderr
