"""Production evidence from the binding: `Retention` keeps what the gate refused (and what a
shadow version decided otherwise), `toolgate reproduce` decides it again to the same agent bytes;
a shadow contract's outcome is the one that contract gives on its own; observe mode hands the
agent the tool's bytes and says so, and is refused in CI. Every expectation is derived from the
gate's own decisions, never written down by hand."""

import json
import os
import shutil
import stat
import subprocess
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import toolgate_gate as tg

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures/job_status"
REQUEST = json.loads((FIXTURES / "request.json").read_text())
NOW = datetime.fromisoformat(REQUEST.pop("now").replace("Z", "+00:00"))
ACCEPTED = (FIXTURES / "accepted/failed_run.json").read_bytes()
NEAR_MISSES = sorted((FIXTURES / "near-miss").glob("*.json"))


@pytest.fixture(scope="module")
def v1():
    return tg.Contract.load(REPO, "job_status", "v1")


@pytest.fixture(scope="module")
def v2():
    return tg.Contract.load(REPO, "job_status", "v2")


@pytest.fixture
def not_in_ci(monkeypatch):
    """Observe mode is refused in CI, and this suite runs there: the tests that observe say
    they are not in CI, as a watched deployment is not."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("TF_BUILD", raising=False)


def kept_records(store):
    """The facts line of every record a folder store holds (its temporary files skipped)."""
    return [
        json.loads(path.read_bytes().split(b"\n", 1)[0])
        for path in sorted(Path(store).rglob("*"))
        if path.is_file() and not path.name.startswith(".")
    ]


def reproduce(toolgate, tmp_path, decision, store, *extra):
    """`toolgate reproduce` on the decision's audit line: (stdout, stderr, exit code)."""
    audit = tmp_path / f"audit-{uuid.uuid4().hex}.jsonl"
    audit.write_bytes(decision.audit_line)
    done = subprocess.run(
        [toolgate, "reproduce", "--audit", str(audit), "--store", store, "--root", str(REPO), *extra],
        capture_output=True,
        timeout=120,
    )
    return done.stdout, done.stderr.decode("utf-8", "replace"), done.returncode


def test_a_refusal_kept_in_a_folder_is_reproduced_to_the_same_agent_bytes(toolgate, tmp_path, v2):
    store = tmp_path / "evidence"
    retention = tg.Retention(store)
    refused = v2.admit(NEAR_MISSES[0].read_bytes(), REQUEST, NOW, retain=retention)
    admitted = v2.admit(ACCEPTED, REQUEST, NOW, retain=retention)
    assert not refused.admitted and admitted.admitted
    summary = retention.close()
    assert "kept 1 in" in summary, summary
    assert retention.stats == {"kept": 1, "dropped": 0, "failed": 0, "lost": 0, "evicted": 0}
    # Private: the operator's upstream bytes are not for the machine's other users.
    assert stat.S_IMODE(store.stat().st_mode) & 0o077 == 0

    stdout, stderr, code = reproduce(toolgate, tmp_path, refused, str(store), "--explain=json")
    assert code == 1, stderr
    assert stdout == refused.agent_bytes + b"\n"
    assert "reproduced exactly" in stderr, stderr
    explained = json.loads(stderr.strip().splitlines()[-1])
    assert explained["rule"] == refused.operator_record["rule"]
    assert explained == refused.operator_record

    # Admitted at rate 0: nothing to find, and reproduce says so instead of guessing.
    _, stderr, code = reproduce(toolgate, tmp_path, admitted, str(store))
    assert code == 2 and admitted.audit_event["raw_sha256"] in stderr, stderr


def test_admissions_are_kept_at_the_rate_given(tmp_path, v2):
    with tg.Retention(tmp_path / "all", admitted="100%") as everything:
        decisions = [v2.admit(ACCEPTED, REQUEST, NOW + timedelta(seconds=i), retain=everything) for i in range(3)]
    assert all(decision.admitted for decision in decisions)
    assert everything.stats["kept"] == 3
    assert sorted(record["time"] for record in kept_records(tmp_path / "all")) == sorted(
        decision.audit_event["time"] for decision in decisions)
    with tg.Retention(tmp_path / "none", admitted=0) as nothing:
        v2.admit(ACCEPTED, REQUEST, NOW, retain=nothing)
    assert nothing.stats["kept"] == 0
    assert kept_records(tmp_path / "none") == []


def test_a_kept_record_needs_its_secret_back_to_be_reproduced(toolgate, tmp_path, v2):
    secret = next(iter(REQUEST["context"]))
    store = tmp_path / "evidence"
    # Secret keys without the operator's key are refused: an unkeyed digest of a tenant is
    # found again by hashing guesses.
    with pytest.raises(tg.RetentionError, match="--retain-secret-key"):
        tg.Retention(store, secret_keys=[secret])
    with pytest.raises(tg.RetentionError, match="at least 32"):
        tg.Retention(store, secret_keys=[secret], secret_key=b"short")
    key = os.urandom(32)
    with tg.Retention(store, secret_keys=[secret], secret_key=key) as retention:
        refused = v2.admit(NEAR_MISSES[0].read_bytes(), REQUEST, NOW, retain=retention)
    [record] = kept_records(store)
    assert secret not in record["context"] and secret in record["context_hmac_sha256"]
    assert json.dumps(REQUEST["context"][secret]) not in json.dumps(record)
    _, stderr, code = reproduce(toolgate, tmp_path, refused, str(store))
    assert code == 2 and secret in stderr, stderr
    request_file = tmp_path / "secrets.json"
    request_file.write_text(json.dumps({"request_id": REQUEST["request_id"], "context": REQUEST["context"]}))
    # The values are checked with the key only.
    _, stderr, code = reproduce(toolgate, tmp_path, refused, str(store), "--request", str(request_file))
    assert code == 2 and "--retain-secret-key" in stderr, stderr
    key_file = tmp_path / "retain.key"
    key_file.write_bytes(key)
    stdout, stderr, code = reproduce(toolgate, tmp_path, refused, str(store), "--request", str(request_file),
                                     "--retain-secret-key", str(key_file))
    assert (code, stdout) == (1, refused.agent_bytes + b"\n"), stderr


def test_a_refusal_kept_in_s3_is_reproduced(toolgate, tmp_path, v2):
    endpoint = os.environ.get("TOOLGATE_S3_ENDPOINT")
    if not endpoint:
        if os.environ.get("TOOLGATE_REQUIRE_S3"):
            pytest.fail("TOOLGATE_REQUIRE_S3 is set but TOOLGATE_S3_ENDPOINT is not")
        pytest.skip("no S3-compatible server (set TOOLGATE_S3_ENDPOINT, as .ci/run does)")
    store = f"s3://{os.environ.get('TOOLGATE_S3_BUCKET', 'evidence')}/python-{uuid.uuid4().hex}"
    with tg.Retention(store, endpoint=endpoint) as retention:
        refused = v2.admit(NEAR_MISSES[1].read_bytes(), REQUEST, NOW, retain=retention)
    assert retention.stats["kept"] == 1, retention.stats
    stdout, stderr, code = reproduce(toolgate, tmp_path, refused, store, "--endpoint", endpoint)
    assert (code, stdout) == (1, refused.agent_bytes + b"\n"), stderr
    assert "reproduced exactly" in stderr


def test_a_shadow_outcome_is_what_that_version_decides_on_its_own(tmp_path, v1, v2):
    raws = [ACCEPTED] + [path.read_bytes() for path in sorted(FIXTURES.glob("*/*.json"))]
    disagreements = 0
    refusals = 0
    with tg.Retention(tmp_path / "evidence") as retention:
        for raw in raws:
            decision = v1.admit(raw, REQUEST, NOW, shadow=v2, retain=retention)
            alone = v2.admit(raw, REQUEST, NOW)
            assert decision.audit_line != v1.admit(raw, REQUEST, NOW).audit_line
            shadow = decision.shadow
            assert (shadow["version"], shadow["outcome"], shadow["code"]) == ("v2", alone.outcome, alone.code)
            assert shadow["layer"] == alone.layer
            assert shadow["agent_differs"] == (alone.agent_bytes != decision.agent_bytes)
            assert decision.audit_event["shadow"] == shadow
            differs = alone.outcome != decision.outcome or alone.agent_bytes != decision.agent_bytes
            assert decision.shadow_disagrees == differs
            # What the agent sees is the enforced version's, whatever the shadow said.
            assert decision.agent_bytes == v1.admit(raw, REQUEST, NOW).agent_bytes
            disagreements += differs
            refusals += not decision.admitted
    assert disagreements > 0, "job_status v1 and v2 decide every bundled fixture alike"
    # Every refusal, and every disagreement, whatever the admission rate (0 here); distinct bytes.
    kept = {record["raw_sha256"] for record in kept_records(tmp_path / "evidence")}
    expected = {
        v1.admit(raw, REQUEST, NOW).audit_event["raw_sha256"]
        for raw in raws
        if not v1.admit(raw, REQUEST, NOW).admitted or v1.admit(raw, REQUEST, NOW, shadow=v2).shadow_disagrees
    }
    assert kept == expected


def test_a_shadow_must_be_another_version_of_the_same_tool(v2):
    with pytest.raises(ValueError, match="not of \"job_status\""):
        v2.admit(ACCEPTED, REQUEST, NOW, shadow=tg.Contract.load(REPO, "release_status"))
    with pytest.raises(ValueError, match="itself"):
        v2.admit(ACCEPTED, REQUEST, NOW, shadow=tg.Contract.load(REPO, "job_status", "v2"))


def test_observe_mode_hands_the_agent_the_tools_bytes_and_says_so(not_in_ci, v2):
    raw = NEAR_MISSES[0].read_bytes()
    enforced = v2.admit(raw, REQUEST, NOW)
    observed = v2.admit(raw, REQUEST, NOW, observe=True)
    assert not observed.enforced and enforced.enforced
    assert observed.agent_bytes == raw
    assert observed.gate_bytes == enforced.agent_bytes
    assert (observed.outcome, observed.code) == (enforced.outcome, enforced.code)
    assert observed.audit_event["mode"] == "observe"
    assert "mode" not in enforced.audit_event
    assert "observed only" in repr(observed)


def test_observe_mode_is_refused_in_ci(monkeypatch, v2):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(ValueError, match="refused in CI"):
        v2.admit(ACCEPTED, REQUEST, NOW, observe=True)


def test_a_closed_retention_refuses_instead_of_losing(tmp_path, v2):
    retention = tg.Retention(tmp_path / "evidence")
    assert "kept 0" in retention.close()
    assert "already closed" in retention.close()
    assert retention.flush() is True
    assert "closed" in repr(retention)
    with pytest.raises(ValueError, match="closed"):
        v2.admit(ACCEPTED, REQUEST, NOW, retain=retention)


@pytest.mark.parametrize("settings,error,why", [
    ({"admitted": "2"}, ValueError, "admitted"),
    ({"admitted": True}, TypeError, "admitted"),
    ({"admitted": [0.1]}, TypeError, "admitted"),
    ({"budget": "lots"}, ValueError, "budget"),
    ({"budget": 0}, ValueError, "budget"),
    ({"max_age": 0}, ValueError, "max_age"),
    ({"max_age": "soon"}, ValueError, "max_age"),
    ({"max_age": timedelta(seconds=-1)}, ValueError, "max_age"),
    ({"max_records": 0}, ValueError, "max_records"),
    ({"recipients": ["age1-not-a-key"]}, tg.RetentionError, "age1-not-a-key"),
])
def test_bad_settings_are_refused_with_what_to_write(tmp_path, settings, error, why):
    with pytest.raises(error, match=why):
        tg.Retention(tmp_path / "evidence", **settings)


def test_settings_read_as_the_command_line_reads_them(tmp_path):
    for settings in [{"admitted": 0.01, "budget": "512MiB", "max_age": "7d"},
                     {"admitted": "1%", "budget": 4096, "max_age": timedelta(days=1)},
                     {"max_age": 3600, "max_records": 10}]:
        with tg.Retention(tmp_path / uuid.uuid4().hex, **settings) as retention:
            assert retention.store.startswith(str(tmp_path))


def test_a_store_that_cannot_be_used_is_refused_at_start(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with pytest.raises(tg.RetentionError, match="a-file"):
        tg.Retention(blocked)
    with pytest.raises(tg.RetentionError, match="s3://"):
        tg.Retention("s3://")


def test_the_tool_decorator_retains_and_shadows(tmp_path, v1, v2):
    raw = NEAR_MISSES[0].read_bytes()
    with tg.Retention(tmp_path / "evidence") as retention:
        @tg.gate_tool(v1, retain=retention, shadow=v2, request_id=lambda: REQUEST["request_id"],
                      context=REQUEST["context"])
        def job_status() -> bytes:
            return raw

        answer = job_status()
    assert json.loads(answer)["outcome"] == "failure"
    assert retention.stats["kept"] == 1
    [record] = kept_records(tmp_path / "evidence")
    assert record["shadow"]["version"] == "v2"
    assert record["raw_sha256"] == v1.admit(raw, REQUEST, NOW).audit_event["raw_sha256"]


def test_a_refusal_kept_by_the_binding_becomes_a_fixture_the_suite_passes(toolgate, tmp_path, v2):
    """From a refused call in production to a regression fixture: `reproduce --save-fixture`
    on the binding's audit line, then `toolgate test` (as CI runs it) passes the new case under
    each contract version."""
    root = tmp_path / "repo"
    for folder in ("contracts/job_status", "fixtures/job_status"):
        shutil.copytree(REPO / folder, root / folder)
    store = tmp_path / "evidence"
    with tg.Retention(store) as retention:
        refused = v2.admit(NEAR_MISSES[0].read_bytes(), REQUEST, NOW, retain=retention)
    audit = tmp_path / "audit.jsonl"
    audit.write_bytes(refused.audit_line)
    saved = subprocess.run(
        [toolgate, "reproduce", "--audit", str(audit), "--store", str(store), "--root", str(root),
         "--save-fixture", "near-miss/refused_in_python"],
        capture_output=True, timeout=120,
    )
    assert saved.returncode == 1, saved.stderr.decode()
    assert (root / "fixtures/job_status/near-miss/refused_in_python.json").read_bytes() == NEAR_MISSES[0].read_bytes()
    case = "job_status::near-miss::refused_in_python@"
    environment = {key: value for key, value in os.environ.items() if key not in ("CI", "TF_BUILD")}
    subprocess.run([toolgate, "test", case, "--accept"], cwd=root, env=environment, capture_output=True, timeout=300)
    checked = subprocess.run([toolgate, "test", case], cwd=root, env={**environment, "CI": "true"},
                             capture_output=True, timeout=300)
    out = checked.stdout.decode()
    assert checked.returncode == 0, out + checked.stderr.decode()
    assert "2 of 2 cases passed" in out, out
