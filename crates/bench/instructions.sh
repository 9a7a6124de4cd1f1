#!/usr/bin/env bash
# Instruction counts (valgrind callgrind): repeatable whatever else the machine is doing, unlike
# wall-clock time. Prints instructions per small-mix input for serde_json parse alone and for the
# full admit, and their ratio. Usage: crates/bench/instructions.sh [INPUTS]   (default 20000)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
inputs="${1:-20000}"
cargo build --quiet --release -p toolgate-bench --bin profile_admit --manifest-path "$root/Cargo.toml"
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$root/target/release/profile_admit" "$1" "$2" 2>&1 \
    | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
per_input() {
  # Subtract a run with zero inputs: contract compilation and input generation are setup.
  echo $(( ($(count "$1" "$inputs") - $(count "$1" 0)) / inputs ))
}
parse=$(per_input mix-parse-only)
admit=$(per_input mix)
echo "serde_json parse only: $parse instructions per input"
echo "admit:                 $admit instructions per input"
awk -v a="$admit" -v p="$parse" 'BEGIN { printf "admit / parse-only:    %.2fx (instructions)\n", a / p }'
