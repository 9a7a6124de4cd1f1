#!/usr/bin/env python3
"""`toolgate diff` beside jsoncompat on the change kinds a schema differ gets wrong.

Each case is a pair of `data` schemas (v1 → v2) from the differ's regression pairs
(`tests/it/diff_soundness.rs`), with the truth established by a response both compiled contracts
decide both ways (or, for "no", by the argument in the test). For each, this prints what
`toolgate diff` answers (upstream breaking / loosened: true, false or undecided) and what
jsoncompat answers (`check_compat` as a deserializer: can the new schema read everything the old
one admitted, i.e. not breaking; as a serializer: not loosened), and marks an answer that
contradicts the truth ("unsound": a wrong "compatible") or that declines a case the truth settles
("undecided").

    cargo build --release
    python3 -m venv target/jsoncompat && target/jsoncompat/bin/pip install jsoncompat==0.3.1
    target/jsoncompat/bin/python crates/bench/diff_comparison.py

The user guide's "How toolgate diff compares" (doc/guide/src/bump.md) table comes from this script.
"""

import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLGATE = os.path.join(ROOT, "target", "release", "toolgate")


def obj(properties, **extra):
    schema = {"type": "object", "properties": properties}
    schema.update(extra)
    return schema


def union(maximum):
    return obj({"b": {"oneOf": [{"type": "integer", "maximum": maximum}, {"type": "integer", "minimum": 3}]}})


def behind_ref(max_length):
    return obj(
        {"e": {"$ref": "#/properties/data/$defs/d", "not": {"const": "zz"}}},
        **{"$defs": {"d": {"type": "string", "maxLength": max_length}}},
    )


def pattern(text):
    return obj({"s": {"type": "string", "pattern": text}})


def branch(kind):
    return {"type": "object", "required": ["kind"], "properties": {"kind": {"const": kind}}}


# (class of wrong "no" in issue 23, change, v1, v2, truth: (breaking, loosened))
CASES = [
    ("1", "`required` names an undeclared member", obj({"a": {"type": "string"}}),
     obj({"a": {"type": "string"}}, required=["g"]), (True, False)),
    ("2", "an overlapping `oneOf` branch tightened", union(5), union(2), (False, True)),
    ("3", "`allOf` of two `multipleOf` → one", obj({"c": {"type": "integer", "allOf": [{"multipleOf": 2}, {"multipleOf": 3}]}}),
     obj({"c": {"type": "integer", "multipleOf": 5}}), (True, True)),
    ("4", "`maxLength` behind a `$ref` beside `not`", behind_ref(5), behind_ref(2), (True, False)),
    ("5", "`^[^\\n]{1,6}$` → `^.{1,6}$`", pattern("^[^\\n]{1,6}$"), pattern("^.{1,6}$"), (True, False)),
    ("5", "`^\\w+$` → `^[a-zé]+$`", pattern("^\\w+$"), pattern("^[a-zé]+$"), (True, True)),
    ("5", "`^[٠-٩]+$` → `^\\d+$`", pattern("^[٠-٩]+$"), pattern("^\\d+$"), (True, True)),
    ("–", "an enum narrowed", obj({"x": {"enum": ["a", "b"]}}), obj({"x": {"enum": ["a"]}}), (True, False)),
    ("–", "a discriminated `oneOf` branch added", obj({"x": {"oneOf": [branch("a"), branch("b")]}}),
     obj({"x": {"oneOf": [branch("a"), branch("b"), branch("c")]}}), (False, True)),
]


def response(data):
    return {
        "type": "object",
        "required": ["tool", "request_id", "data"],
        "properties": {"tool": {"const": "probe"}, "request_id": {"type": "string", "maxLength": 32}, "data": data},
        "additionalProperties": False,
    }


def toolgate(v1, v2):
    with tempfile.TemporaryDirectory() as root:
        for version, data in ((1, v1), (2, v2)):
            folder = os.path.join(root, "contracts", "probe", f"v{version}")
            os.makedirs(folder)
            with open(os.path.join(folder, "contract.yaml"), "w", encoding="utf-8") as handle:
                handle.write(
                    f"tool: probe\nversion: {version}\ndirection: result\nshape:\n  schema: s.schema.json\n"
                    "  correlation: { tool: /tool, request_id: /request_id }\n  fields:\n"
                    "    - { name: f0, from: /data, optional: true }\n"
                )
            with open(os.path.join(folder, "s.schema.json"), "w", encoding="utf-8") as handle:
                json.dump(response(data), handle)
        run = subprocess.run([TOOLGATE, "diff", "probe", "--root", root, "--format", "json"],
                             capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise SystemExit(f"toolgate diff failed: {run.stderr}")
        answers = json.loads(run.stdout)["summary"]
        return answers["upstream_breaking"], answers["upstream_loosened"]


def jsoncompat(v1, v2):
    try:
        import jsoncompat as checker
    except ImportError:
        raise SystemExit("jsoncompat is not installed: see the docstring")
    old, new = json.dumps(response(v1)), json.dumps(response(v2))
    try:
        breaking = not checker.check_compat(old, new, "deserializer")
        loosened = not checker.check_compat(old, new, "serializer")
    except Exception as error:  # jsoncompat refuses some schemas outright
        return f"error: {error}".splitlines()[0][:60], None
    return breaking, loosened


def judge(answer, truth):
    if answer is None:
        return "undecided"
    if isinstance(answer, str):
        return answer
    if answer == truth:
        return "yes" if truth else "no"
    return "**unsound** (says no)" if truth else "wrong (says yes)"


def main():
    print("| change (v1 → v2) | truth: breaking / loosened | toolgate diff | jsoncompat 0.3.1 |")
    print("| --- | --- | --- | --- |")
    for _, words, v1, v2, truth in CASES:
        ours = toolgate(v1, v2)
        theirs = jsoncompat(v1, v2)
        cell = lambda answers: " / ".join(judge(answer, expected) for answer, expected in zip(answers, truth))
        shown = " / ".join("yes" if value else "no" for value in truth)
        print(f"| {words} | {shown} | {cell(ours)} | {cell(theirs)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
