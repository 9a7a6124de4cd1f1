"""`Door`: the binary's door in the wheel, for gateways that hand a plugin an MCP call already
parsed (LiteLLM, ContextForge: their own end-to-end tests are in crates/doors/ci). Here, what the
door says of each part, and that nothing it cannot read gets through."""

import json
import shutil

import pytest

from toolgate_gate import Door, DoorError, fixed_failure

OSLO = {"city": "Oslo", "temperature_c": 3.5, "conditions": "snow"}


def result(structured, text="CANARY prose"):
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured}


@pytest.fixture
def door(repo, tmp_path):
    audit = tmp_path / "audit.jsonl"
    opened = Door(repo / "tests/mcp", audit=audit)
    yield opened, audit
    opened.close()


def test_an_admitted_result_is_rebuilt(door):
    door, audit = door
    built, agent = door.decide_result("weather", "r1", {"city": "Oslo"}, result(OSLO))
    assert json.loads(agent) == {"tool": "weather", "request_id": "r1", "outcome": "success", "data": OSLO}
    assert built == {"content": [{"type": "text", "text": agent}], "structuredContent": json.loads(agent),
                     "isError": False}
    door.close()
    assert json.loads(audit.read_text().splitlines()[0])["outcome"] == "admitted"


def test_a_refused_result_is_the_fixed_failure(door):
    door, _ = door
    built, agent = door.decide_result("weather", "r1", {"city": "Oslo"}, result({**OSLO, "note": "CANARY"}))
    assert agent == fixed_failure("weather", "r1")
    assert built["isError"] is True and "CANARY" not in json.dumps(built)


@pytest.mark.parametrize("handed", [{"content": "not a list"}, {"structuredContent": float("nan")}, object()])
def test_what_the_door_cannot_read_is_the_fixed_failure(door, handed):
    door, _ = door
    built, agent = door.decide_result("weather", "r1", {"city": "Oslo"}, handed)
    assert json.loads(agent)["outcome"] == "failure"
    assert built["isError"] is True


def test_a_tool_without_a_contract_is_refused_and_not_offered(door):
    door, _ = door
    verdict, failure = door.decide_arguments("raw_lookup", "r1", {"city": "Oslo"})
    assert verdict == "refused" and json.loads(failure)["outcome"] == "failure"
    built, agent = door.decide_result("raw_lookup", "r1", {}, result(OSLO))
    assert agent == fixed_failure("raw_lookup", "r1") and "CANARY" not in json.dumps(built)
    listed = door.decide_tools_list({"tools": [{"name": "raw_lookup", "inputSchema": {"type": "object"}},
                                               {"name": "weather", "inputSchema": {"type": "object"}}]})
    assert [tool["name"] for tool in listed["tools"]] == ["weather"]
    assert "data" in json.dumps(listed["tools"][0]["outputSchema"])


def test_arguments_are_decided_by_their_contract(repo, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(repo / "tests/mcp/contracts", root / "contracts")
    folder = root / "contracts/weather.arguments/v1"
    folder.mkdir(parents=True)
    (folder / "contract.yaml").write_text(
        "tool: weather.arguments\nversion: 1\ndirection: action\ndescription: The city asked about.\n"
        "limits: { max_bytes: 1024, max_depth: 2 }\nshape:\n  schema: arguments.schema.json\n"
        "  fields:\n    - { name: city, from: /city }\n")
    (folder / "arguments.schema.json").write_text(json.dumps({
        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {"city": {"type": "string", "minLength": 1}}, "required": ["city"]}))
    door = Door(root)
    assert door.decide_arguments("weather", "r1", {"city": "Oslo"}) == ("unchanged", None)
    assert door.decide_arguments("weather", "r1", {"city": "Oslo", "units": "CANARY"}) == ("rebuilt", {"city": "Oslo"})
    verdict, failure = door.decide_arguments("weather", "r1", {"city": ""})
    assert verdict == "refused" and "CANARY" not in failure


def test_a_broken_contract_is_refused_at_open(repo, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(repo / "tests/mcp/contracts", root / "contracts")
    (root / "contracts/weather/v1/contract.yaml").write_text("tool: weather\nversion: 1\nshape: [\n")
    with pytest.raises(DoorError, match="contract.yaml"):
        Door(root)


def test_observe_mode_passes_the_upstreams_result(repo, monkeypatch):
    # Refused in CI, as every front refuses it there.
    monkeypatch.setenv("CI", "true")
    with pytest.raises(DoorError, match="refused in CI"):
        Door(repo / "tests/mcp", observe=True)
    monkeypatch.delenv("CI")
    door = Door(repo / "tests/mcp", observe=True)
    handed = result({**OSLO, "note": "kept"})
    built, agent = door.decide_result("weather", "r1", {"city": "Oslo"}, handed)
    assert agent is None and built["structuredContent"]["note"] == "kept"
