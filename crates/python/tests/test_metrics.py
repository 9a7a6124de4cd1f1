"""Metrics from the binding: `Contract.admit(metrics=...)` counts every decision as
`toolgate serve` counts it (the same series, the same labels, the same values on the same
inputs), the latency histogram holds one observation per decision, a shadow version's agreement
is counted, and a retention's records are read at each snapshot. Every expected count is derived
from the decisions the gate returned, never written down by hand."""

import base64
import json
import subprocess
from collections import Counter
from datetime import datetime
from pathlib import Path

import toolgate_gate as tg

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures/job_status"
REQUEST = json.loads((FIXTURES / "request.json").read_text())
NOW_TEXT = REQUEST.pop("now")
NOW = datetime.fromisoformat(NOW_TEXT.replace("Z", "+00:00"))
RAWS = sorted(FIXTURES.glob("*/*.json"))


def decisions_of(samples):
    """The decision counter's samples, by their labels."""
    return {
        tuple(sorted(sample["labels"].items())): sample["value"]
        for sample in samples
        if sample["name"] == "toolgate_decisions_total"
    }


def value(samples, name, **labels):
    found = [s["value"] for s in samples if s["name"] == name and all(s["labels"].get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def test_admit_counts_every_decision_as_serve_does(toolgate):
    assert RAWS, "the bundled job_status fixtures are missing"
    contract = tg.Contract.load(REPO, "job_status", "v1")
    metrics = tg.Metrics()
    expected = Counter()
    lines = []
    for number, path in enumerate(RAWS):
        raw = path.read_bytes()
        decision = contract.admit(raw, REQUEST, NOW, metrics=metrics)
        expected[(decision.outcome, decision.layer or "none", decision.code or "none")] += 1
        lines.append(json.dumps({
            "id": number, "tool": "job_status", "version": "v1",
            "raw_base64": base64.b64encode(raw).decode(),
            "request": dict(REQUEST, now=NOW_TEXT),
        }))
    lines.append(json.dumps({"id": "m", "op": "metrics"}))
    samples = metrics.snapshot()
    counted = Counter()
    for labels, count in decisions_of(samples).items():
        labels = dict(labels)
        assert (labels["tool"], labels["contract_version"], labels["direction"]) == ("job_status", "v1", "result")
        counted[(labels["outcome"], labels["layer"], labels["code"])] += count
    assert counted == expected
    assert len(expected) > 2, "the fixtures should reach several outcomes and layers"
    assert value(samples, "toolgate_decision_duration_seconds_count", tool="job_status") == len(RAWS)
    assert value(samples, "toolgate_decision_duration_seconds_bucket", tool="job_status", le="+Inf") == len(RAWS)

    served = subprocess.run(
        [toolgate, "serve", "--stdio", "--root", str(REPO)],
        input="\n".join(lines) + "\n", capture_output=True, text=True, check=True,
    )
    answers = [json.loads(line) for line in served.stdout.splitlines()]
    assert [a["id"] for a in answers] == list(range(len(RAWS))) + ["m"]
    served_samples = answers[-1]["metrics"]["samples"]
    assert decisions_of(served_samples) == decisions_of(samples)
    assert answers[-1]["metrics"]["exposition"].count("toolgate_decisions_total{") == len(decisions_of(samples))
    assert "toolgate_decisions_total" in metrics.exposition()


def test_a_shadow_versions_agreement_is_counted():
    v1 = tg.Contract.load(REPO, "job_status", "v1")
    v2 = tg.Contract.load(REPO, "job_status", "v2")
    metrics = tg.Metrics()
    agreements = Counter()
    for path in RAWS:
        decision = v1.admit(path.read_bytes(), REQUEST, NOW, shadow=v2, metrics=metrics)
        agreements["disagree" if decision.shadow_disagrees else "agree"] += 1
    samples = metrics.snapshot()
    for agreement, count in agreements.items():
        assert value(samples, "toolgate_shadow_decisions_total", shadow_version="v2", agreement=agreement) == count


def test_a_retentions_records_and_a_loaded_contract_are_reported(tmp_path):
    contract = tg.Contract.load(REPO, "job_status", "v1")
    metrics = tg.Metrics()
    metrics.loaded(contract)
    refused = 0
    with tg.Retention(str(tmp_path / "store")) as retention:
        metrics.watch(retention)
        for path in RAWS:
            decision = contract.admit(path.read_bytes(), REQUEST, NOW, retain=retention, metrics=metrics)
            refused += not decision.admitted
        assert retention.flush()
        samples = metrics.snapshot()
    assert refused > 0
    assert value(samples, "toolgate_retention_records_total", result="kept") == refused
    assert value(samples, "toolgate_contract_info", tool="job_status", contract_version="v1") == 1
