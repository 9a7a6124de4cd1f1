"""The binding's own behaviour: errors that name the file, line and pointer; bad types refused
with a way out; large inputs bounded; threads sharing one contract; the retry policy and the
audit sinks."""

import json
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import toolgate_gate as tg

REPO = Path(__file__).resolve().parents[3]
REQUEST = json.loads((REPO / "fixtures/job_status/request.json").read_text())
NOW = datetime.fromisoformat(REQUEST.pop("now").replace("Z", "+00:00"))
ACCEPTED = (REPO / "fixtures/job_status/accepted/failed_run.json").read_bytes()


@pytest.fixture(scope="module")
def job_status():
    return tg.Contract.load(REPO, "job_status")


def test_the_newest_version_loads_by_default_and_any_by_name_or_number(job_status):
    assert (job_status.tool, job_status.version, job_status.direction) == ("job_status", "v2", "result")
    assert tg.Contract.load(REPO, "job_status", "v1").version == "v1"
    assert tg.Contract.load(REPO, "job_status", 1).version == "v1"
    with pytest.raises(ValueError, match="not a version folder"):
        tg.Contract.load(REPO, "job_status", "latest")


def test_an_admitted_decision_carries_the_projection_and_its_audit_event(job_status):
    decision = job_status.admit(ACCEPTED, REQUEST, NOW)
    assert decision.admitted and decision.outcome == "admitted"
    assert (decision.code, decision.layer, decision.rule, decision.operator_record) == (None, None, None, None)
    agent = decision.agent_json()
    assert agent == json.loads(decision.agent_bytes)
    assert agent["request_id"] == "req.J7q94MkP" and agent["outcome"] == "success"
    event = decision.audit_event
    assert event == json.loads(decision.audit_line)
    assert decision.audit_line.endswith(b"\n")
    assert event["outcome"] == "admitted" and event["tool"] == "job_status"


def test_a_request_object_and_a_dict_decide_alike(job_status):
    typed = tg.Request(REQUEST["request_id"], context=REQUEST["context"], upstream=REQUEST["upstream"])
    assert typed.context == REQUEST["context"]
    assert job_status.admit(ACCEPTED, typed, NOW).audit_line == job_status.admit(ACCEPTED, REQUEST, NOW).audit_line


def test_a_rejection_gives_the_agent_the_fixed_failure_and_the_operator_the_details(job_status):
    decision = job_status.admit(b'{"tool":"job_status","tool":"x"}', REQUEST, NOW)
    assert not decision.admitted
    assert (decision.layer, decision.rule, decision.code, decision.retryable) == (
        "parse", "duplicate_member", "INVALID_RESPONSE", False)
    assert decision.agent_json() == {
        "tool": "job_status", "request_id": "req.J7q94MkP", "outcome": "failure",
        "error": {"code": "INVALID_RESPONSE", "retryable": False},
    }
    assert decision.operator_record["rule"] == "duplicate_member"
    assert "duplicate_member" in decision.operator_text
    assert b"duplicate" not in decision.agent_bytes


def test_an_upstream_status_is_decided_before_the_body(job_status):
    decision = job_status.admit(b"<html>busy</html>", {**REQUEST, "upstream_status": 503}, NOW)
    assert (decision.code, decision.retryable) == ("UPSTREAM_UNAVAILABLE", True)


def test_the_clock_decides_freshness(job_status):
    later = NOW + timedelta(hours=2)
    assert job_status.admit(ACCEPTED, REQUEST, later).rule == "observed_at_fresh"


@pytest.mark.parametrize("raw,why", [
    ({"a": 1}, "not a parsed value"),
    ([1, 2], "not a parsed value"),
    ('{"a": 1}', "not str"),
    (42, "must be bytes"),
    (None, "must be bytes"),
])
def test_raw_must_be_the_bytes_the_tool_returned(job_status, raw, why):
    with pytest.raises(TypeError, match=why):
        job_status.admit(raw, REQUEST, NOW)


def test_bytearray_and_memoryview_are_bytes_too(job_status):
    expected = job_status.admit(ACCEPTED, REQUEST, NOW).audit_line
    assert job_status.admit(bytearray(ACCEPTED), REQUEST, NOW).audit_line == expected
    assert job_status.admit(memoryview(ACCEPTED), REQUEST, NOW).audit_line == expected


@pytest.mark.parametrize("request_,error,why", [
    ({}, ValueError, "needs a request_id"),
    ({"request_id": 7}, TypeError, "request_id is a str"),
    ({"request_id": "r", "contxt": {}}, ValueError, "no member .contxt."),
    ({"request_id": "r", "context": {"when": datetime.now()}}, TypeError, "must be JSON"),
    ({"request_id": "r", "context": {"x": float("nan")}}, ValueError, "NaN"),
    ({"request_id": "r", "upstream_status": 70000}, ValueError, "HTTP status"),
    ("req-1", TypeError, "a dict with request_id"),
])
def test_a_bad_request_is_refused_with_what_to_write(job_status, request_, error, why):
    with pytest.raises(error, match=why):
        job_status.admit(ACCEPTED, request_, NOW)


def test_the_decision_time_must_carry_its_zone(job_status):
    with pytest.raises(ValueError, match="time zone"):
        job_status.admit(ACCEPTED, REQUEST, datetime(2026, 11, 29, 12))
    with pytest.raises(TypeError, match="datetime"):
        job_status.admit(ACCEPTED, REQUEST, "2026-11-29T12:00:00Z")
    assert job_status.admit(ACCEPTED, REQUEST, None).audit_event["time"] != "2026-11-29T12:00:00Z"


def test_a_contract_error_names_file_line_and_pointer(tmp_path):
    with pytest.raises(tg.ContractError) as caught:
        tg.Contract.from_files("tool: t\nversion: 1\ndirection: result\nshape:\n  schema: s.json\n  fields: []\nextra: 1\n",
                               {"s.json": '{"type": "object"}'})
    problems = caught.value.errors
    assert any(p.file == "contract.yaml" and p.line == 7 and p.json_pointer == "/extra" for p in problems), problems
    with pytest.raises(tg.ContractError) as caught:
        tg.Contract.from_files("tool: t\nversion: 1\ndirection: result\nshape:\n  schema: s.json\n  fields: [{name: a, from: /a}]\n",
                               {"s.json": '{"type": "object", "type": "array"}'})
    assert any(p.file == "s.json" for p in caught.value.errors), caught.value.errors
    with pytest.raises(tg.ContractError, match="cannot read the tool's contract folder") as caught:
        tg.Contract.load(tmp_path, "nothing_here")
    assert caught.value.errors[0].file.endswith("nothing_here")
    (tmp_path / "contracts/t/v1").mkdir(parents=True)
    with pytest.raises(tg.ContractError, match="contract.yaml"):
        tg.Contract.load(tmp_path, "t")


def test_a_body_far_over_the_limit_is_refused_on_a_bounded_prefix(job_status):
    huge = b"[" * (64 << 20)
    started = time.perf_counter()
    decision = job_status.admit(huge, REQUEST, NOW)
    assert time.perf_counter() - started < 5
    assert (decision.layer, decision.rule) == ("transport", "max_bytes")
    assert decision.audit_event["raw_len"] == 4097


def test_one_contract_serves_many_threads(job_status):
    bodies = [ACCEPTED, b'{"a":1,"a":2}', b"not json"] * 200
    expected = [job_status.admit(body, REQUEST, NOW).audit_line for body in bodies[:3]]
    with ThreadPoolExecutor(max_workers=8) as pool:
        lines = list(pool.map(lambda body: job_status.admit(body, REQUEST, NOW).audit_line, bodies))
    assert lines == expected * 200


def test_the_gil_is_released_while_deciding(job_status):
    # A thread spinning in Python keeps running while others decide large bodies in Rust.
    big = b'{"pad": "' + b"x" * 4000 + b'"}'
    stop = threading.Event()
    spins = [0]

    def spin():
        while not stop.is_set():
            spins[0] += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        for _ in range(2000):
            job_status.admit(big, REQUEST, NOW)
    finally:
        stop.set()
        spinner.join()
    assert spins[0] > 0


def test_the_retry_policy_is_the_contracts(job_status):
    policy = job_status.retry_policy
    assert (policy.max_attempts, policy.time_budget, policy.retryable_codes) == (3, 10.0, ["UPSTREAM_UNAVAILABLE"])
    unavailable = job_status.admit(b"", {**REQUEST, "upstream_status": 503}, NOW)
    assert policy.should_retry(unavailable, 1, 0.5)
    assert not policy.should_retry(unavailable, 3, 0.5)
    assert not policy.should_retry(unavailable, 1, 11.0)
    assert not policy.should_retry(job_status.admit(b"nope", REQUEST, NOW), 1, 0.0)
    assert policy.is_retryable("UPSTREAM_UNAVAILABLE") and not policy.is_retryable("NOT_FOUND")
    with pytest.raises(ValueError):
        policy.is_retryable("TEAPOT")
    with pytest.raises(ValueError):
        policy.should_retry(unavailable, 1, -1.0)


def test_audit_sinks_write_the_gates_lines(job_status, tmp_path):
    decision = job_status.admit(ACCEPTED, REQUEST, NOW)
    path = tmp_path / "audit.jsonl"
    with tg.JsonLinesAudit(path) as sink:
        sink.record(decision)
        sink.record(decision)
    assert path.read_bytes() == decision.audit_line * 2
    seen = []
    tg.CallbackAudit(seen.append).record(decision)
    assert seen == [decision.audit_event]


def test_the_gate_version_is_the_crates():
    assert tg.gate_version() == "0.1.0"


def test_a_tools_own_error_is_mapped_by_the_contract_and_unmapped_not_retried():
    # tests/mcp's weather contract maps the error `unknown_city` (upstream_errors, tool_error: true).
    weather = tg.Contract.load(REPO / "tests/mcp", "weather")
    request = {"request_id": "r1", "context": {"city": "Lisbon"}}
    mapped = weather.admit(b'{"error":"unknown_city"}', request, tool_error=True)
    assert json.loads(mapped.agent_bytes)["error"] == {"code": "NOT_FOUND", "retryable": False}
    assert mapped.operator_record["rule"] == "upstream_errors.unknown_city"
    unmapped = weather.admit(b"", request, tool_error=True)
    assert json.loads(unmapped.agent_bytes)["error"] == {"code": "INVALID_RESPONSE", "retryable": False}
    assert unmapped.operator_record["rule"] == "tool_error"
    # The same bytes as a result are a result: refused by the schema, not by the mapping.
    as_result = weather.admit(b'{"error":"unknown_city"}', request)
    assert as_result.operator_record["layer"] == "schema"
    with pytest.raises(ValueError, match="has no status"):
        weather.admit(b"", {"request_id": "r1", "upstream_status": 404}, tool_error=True)


def test_a_bundle_loads_as_its_folder_and_a_changed_one_is_refused(toolgate, tmp_path):
    bundle = tmp_path / "contracts.tar.gz"
    subprocess.run([toolgate, "bundle", "--root", str(REPO), "--output", str(bundle)], check=True,
                   capture_output=True)
    from_bundle = tg.Contract.load(bundle, "job_status")
    assert from_bundle.version == "v2"
    from_folder = tg.Contract.load(REPO, "job_status")
    decided = [contract.admit(ACCEPTED, REQUEST, NOW) for contract in (from_bundle, from_folder)]
    assert decided[0].admitted and decided[0].agent_bytes == decided[1].agent_bytes
    assert decided[0].audit_event["contract_digest"] == decided[1].audit_event["contract_digest"]
    assert tg.Contract.load(bundle, "job_status", 1).version == "v1"
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(bundle.read_bytes()[:-40])
    with pytest.raises(tg.ContractError) as refused:
        tg.Contract.load(broken, "job_status")
    assert str(broken) in str(refused.value)
