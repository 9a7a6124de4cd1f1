"""The seeds' own stack, running toolgate's pipeline on the same inputs.

Python `json` with an `object_pairs_hook` that rejects duplicate names and a `parse_constant`
that rejects NaN/Infinity, `jsonschema.Draft202012Validator` with its format checker (date-time
needs `rfc3339-validator`, which this checks is installed and working), correlation, the binding,
freshness and membership rules of job_status, and a projection that builds a new compact object.

Usage: seeds_stack.py FOLDER [SECONDS]   (FOLDER as written by the `throughput` binary)
Prints one JSON line with the measured throughput; exits 1 if any decision differs from the gate's.
"""

import datetime
import json
import pathlib
import sys
import time

import jsonschema

ROOT = pathlib.Path(__file__).resolve().parents[3]
MAX_BYTES = 4096


class Rejected(Exception):
    pass


def reject_duplicates(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise Rejected("duplicate member " + key)
        result[key] = value
    return result


def reject_constant(name):
    raise Rejected("not JSON: " + name)


def parse_rfc3339(text):
    # The format checker already proved `text` is an RFC 3339 date-time.
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))


def failure(request_id, code, retryable):
    return json.dumps(
        {"tool": "job_status", "request_id": request_id, "outcome": "failure", "error": {"code": code, "retryable": retryable}},
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()


def make_gate(schema, request):
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    request_id = request["request_id"]
    now = parse_rfc3339(request["now"])
    project, runs = request["context"]["project_id"], set(request["context"]["runs"])
    retryable_codes = {"UPSTREAM_UNAVAILABLE"}

    def admit(raw):
        try:
            if len(raw) > MAX_BYTES:
                raise Rejected("max_bytes")
            document = json.loads(raw.decode("utf-8"), object_pairs_hook=reject_duplicates, parse_constant=reject_constant)
            if not validator.is_valid(document):
                raise Rejected("schema")
            if document["tool"] != "job_status" or document["request_id"] != request_id:
                raise Rejected("correlation")
            if document["outcome"] == "failure":
                code = document["error"]["code"]
                return True, failure(request_id, code, code in retryable_codes)
            data = document["data"]
            if data["project_id"] != project:
                raise Rejected("project_binding")
            age = now - parse_rfc3339(data["observed_at"])
            if age > datetime.timedelta(minutes=15) or -age > datetime.timedelta(minutes=2):
                raise Rejected("observed_at_fresh")
            if data["run_id"] not in runs:
                raise Rejected("run_belongs_to_project")
            output = {
                "tool": "job_status",
                "request_id": request_id,
                "outcome": "success",
                "data": {key: data[key] for key in ("project_id", "run_id", "state", "observed_at")},
            }
            return True, json.dumps(output, separators=(",", ":"), ensure_ascii=False).encode()
        except (Rejected, UnicodeDecodeError, ValueError, KeyError, TypeError):
            return False, failure(request_id, "INVALID_RESPONSE", False)

    return admit


def main():
    folder = pathlib.Path(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    if checker.conforms("2026-02-30T00:00:00Z", "date-time"):
        sys.exit("the date-time format is not checked: install rfc3339-validator")
    schema = json.loads((ROOT / "contracts/job_status/v1/envelope.schema.json").read_text())
    request = json.loads((folder / "request.json").read_text())
    inputs = [path.read_bytes() for path in sorted((folder / "inputs").glob("*.json"))]
    expected = (folder / "decisions.txt").read_text().split()
    admit = make_gate(schema, request)

    decided = ["admitted" if admit(raw)[0] else "rejected" for raw in inputs]
    differences = [index for index, (ours, theirs) in enumerate(zip(decided, expected)) if ours != theirs]
    if differences or len(decided) != len(expected):
        sys.exit(f"the Python pipeline decides {len(differences)} inputs differently from the gate, e.g. input {differences[:5]}")

    admissions, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for raw in inputs:
            admit(raw)
        admissions += len(inputs)
    elapsed = time.perf_counter() - start
    print(json.dumps({
        "implementation": f"Python {sys.version.split()[0]} json + jsonschema {jsonschema.__version__ if hasattr(jsonschema, '__version__') else ''}".strip(),
        "admissions": admissions,
        "seconds": elapsed,
        "per_second": admissions / elapsed,
    }))


if __name__ == "__main__":
    main()
