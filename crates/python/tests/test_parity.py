"""Every bundled fixture, under every version of its tool's contract, through the Python binding
and through `toolgate check`: the same decision, the same agent bytes and the same audit line,
byte for byte."""

import json
import subprocess
import tempfile
from datetime import datetime
from pathlib import Path

import pytest
from toolgate_gate import Contract

REPO = Path(__file__).resolve().parents[3]


def cases():
    for tool_dir in sorted((REPO / "fixtures").iterdir()):
        if not tool_dir.is_dir():
            continue
        tool = tool_dir.name
        versions = sorted(p.name for p in (REPO / "contracts" / tool).iterdir() if p.is_dir())
        for raw in sorted(tool_dir.glob("*/*")):
            if raw.name.endswith(".expect.yaml") or not raw.is_file():
                continue
            for version in versions:
                yield pytest.param(tool, version, raw, id=f"{tool}/{raw.parent.name}/{raw.name}@{version}")


def upstream_status(raw: Path):
    sidecar = raw.with_name(raw.stem + ".expect.yaml")
    if sidecar.is_file():
        for line in sidecar.read_text().splitlines():
            if line.startswith("upstream_status:"):
                return int(line.split(":", 1)[1])
    return None


_contracts = {}


def unchained(line: bytes) -> bytes:
    """`toolgate check`'s audit line without the hash chain its writer appends (its last member):
    the decision's own audit line."""
    cut = line.rindex(b',"chain":{')
    chain = json.loads(line[cut + len(b',"chain":') : -2])
    assert isinstance(chain["seq"], int) and "id" in chain
    return line[:cut] + b"}\n"


def contract(tool: str, version: str) -> Contract:
    if (tool, version) not in _contracts:
        _contracts[tool, version] = Contract.load(REPO, tool, version)
    return _contracts[tool, version]


@pytest.mark.parametrize("tool,version,raw", list(cases()))
def test_the_binding_decides_byte_for_byte_as_toolgate_check(toolgate, tool, version, raw):
    request_file = REPO / "fixtures" / tool / "request.json"
    request = json.loads(request_file.read_text())
    now = datetime.fromisoformat(request.pop("now").replace("Z", "+00:00"))
    status = upstream_status(raw)
    if status is not None:
        request["upstream_status"] = status
    with tempfile.TemporaryDirectory() as scratch:
        audit = Path(scratch) / "audit.jsonl"
        command = [toolgate, "check", tool, str(raw), "--root", str(REPO), "--request", str(request_file),
                   "--contract-version", version, "--audit", str(audit)]
        if status is not None:
            command += ["--upstream-status", str(status)]
        checked = subprocess.run(command, capture_output=True, timeout=60)
        assert checked.returncode in (0, 1), checked.stderr.decode()
        decision = contract(tool, version).admit(raw.read_bytes(), request, now)
        assert checked.returncode == (0 if decision.outcome != "rejected" else 1)
        assert checked.stdout == decision.agent_bytes + b"\n"
        assert unchained(audit.read_bytes()) == decision.audit_line
