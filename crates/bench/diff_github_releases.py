#!/usr/bin/env python3
"""`toolgate diff` on a real bump: two published releases of GitHub's REST description.

For a sample of operations with a JSON success response in both releases (drawn with a fixed
seed), this scaffolds v1 from the older release (`toolgate new --from-openapi`), v2 from the
newer (`--next-version`), runs `toolgate diff --format json`, and counts each verdict's answers
(true, false, undecided). RELIABILITY.md's "GitHub's REST description, two published releases"
table comes from it.

    cargo build --release
    mkdir -p target/github && cd target/github
    for v in 19.0.0 23.0.2; do mkdir -p $v && (cd $v && npm pack @octokit/openapi@$v && tar xzf *.tgz); done
    cd ../.. && python3 crates/bench/diff_github_releases.py 250

Arguments: how many operations (default 60); the folder holding the two releases (default
target/github).
"""

import collections
import json
import os
import random
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLGATE = os.path.join(ROOT, "target", "release", "toolgate")
RELEASES = ("19.0.0", "23.0.2")
VERDICTS = ("upstream_breaking", "upstream_loosened", "agent_widened", "agent_narrowed")


def operations(doc):
    """Every (method, path) whose 2xx response has a JSON body."""
    found = []
    for path, item in doc["paths"].items():
        for method in ("get", "post", "put", "patch", "delete"):
            operation = item.get(method)
            if not isinstance(operation, dict):
                continue
            for code, response in (operation.get("responses") or {}).items():
                if str(code).startswith("2") and "application/json" in (response.get("content") or {}):
                    found.append((method, path))
                    break
    return found


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    folder = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "target", "github")
    older, newer = (
        os.path.join(folder, release, "package", "generated", "api.github.com.json") for release in RELEASES
    )
    with open(older) as a, open(newer) as b:
        both = sorted(set(operations(json.load(a))) & set(operations(json.load(b))))
    random.Random(37).shuffle(both)
    work = os.path.join(folder, "roots")
    compared, refused = [], []
    for method, path in both[:count]:
        name = f"{method.upper()} {path}"
        root = os.path.join(work, re.sub("[^a-zA-Z0-9]", "_", name))
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        scaffold = [TOOLGATE, "new", "op", "--operation", name, "--root", root, "--from-openapi"]
        # Exit 2 is a refusal; 1 says the scaffold's own first test found something to review.
        made = subprocess.run(scaffold + [older], capture_output=True, text=True)
        if made.returncode != 2:
            made = subprocess.run(scaffold + [newer, "--next-version"], capture_output=True, text=True)
        if made.returncode == 2:
            refused.append((name, made.stderr.strip().splitlines()[0] if made.stderr.strip() else ""))
            continue
        diff = subprocess.run([TOOLGATE, "diff", "op", "--root", root, "--format", "json"], capture_output=True, text=True)
        report = json.loads(diff.stdout)
        compared.append((name, report))
        undecided = [verdict for verdict in VERDICTS if report["summary"][verdict] is None]
        if undecided:
            print(f"{name}: undecided {', '.join(undecided)}")
    changed = sum(1 for _, report in compared if report.get("changes"))
    print(f"{count} operations, {len(compared)} compared ({changed} changed), {len(refused)} refused by `toolgate new`")
    for verdict in VERDICTS:
        answers = collections.Counter(str(report["summary"][verdict]).lower() for _, report in compared)
        print(f"  {verdict}: {dict(answers)}")
    for name, why in refused:
        print(f"  refused: {name}: {why[:120]}")


if __name__ == "__main__":
    main()
