#!/usr/bin/env bash
# One command: the gate and the seeds' Python stack on the same generated inputs, side by side.
# Usage: crates/bench/compare/run.sh [SECONDS]    (from anywhere; default 5 s per implementation)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
seconds="${1:-5}"
work="$root/target/compare"
mkdir -p "$work"

# A private virtual environment with the seeds' stack, pinned.
if [ ! -x "$work/venv/bin/python" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet "jsonschema==4.26.0" "rfc3339-validator==0.1.4"
fi

cargo build --quiet --release -p toolgate-bench --bin throughput --manifest-path "$root/Cargo.toml"
rust=$("$root/target/release/throughput" "$work/inputs" --seconds "$seconds")
python=$("$work/venv/bin/python" -W ignore "$here/seeds_stack.py" "$work/inputs" "$seconds")
echo "$rust"
echo "$python"
"$work/venv/bin/python" - "$rust" "$python" <<'PY'
import json, sys
rust, python = (json.loads(line) for line in sys.argv[1:3])
print(f"gate: {rust['per_second']:,.0f} admissions/s; seeds' Python stack: {python['per_second']:,.0f} admissions/s; "
      f"the gate is {rust['per_second'] / python['per_second']:.0f}x faster (goal: at least 50x)")
PY
