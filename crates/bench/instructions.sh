#!/usr/bin/env bash
# Instructions, cache and branch behaviour per input (valgrind's cachegrind, simulated caches and
# branch predictor): repeatable whatever else the machine is doing, unlike wall-clock time, and
# available where the CPU exposes no hardware counters. For each workload (the bundled small mix,
# and contracts written from Stripe's and GitHub's own descriptions), prints per input, for
# serde_json's parse alone and for the full admit: instructions, L1 instruction-cache misses, L1
# data read misses, indirect and conditional branch mispredictions, and admit's ratio to parse.
#
# Usage: crates/bench/instructions.sh [WORKLOAD ...]   (default: every workload)
# Environment: PROFILE_BINARY (default target/release/profile_admit, built first when unset), for
# measuring another build of the same program (a PGO build, say).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
if [ -z "${PROFILE_BINARY:-}" ]; then
  cargo build --quiet --release -p toolgate-bench --bin profile_admit --manifest-path "$root/Cargo.toml"
  PROFILE_BINARY="$root/target/release/profile_admit"
fi
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(small_mix payment_intent pull_request)

# Prints "instructions i1_misses d1_read_misses indirect_mispredicts conditional_mispredicts".
simulate() {
  valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes --cachegrind-out-file=/dev/null \
    "$PROFILE_BINARY" "$1" "$2" 2>&1 | tr -d ',' | awk '
      /I +refs:/      { refs = $NF }
      /I1 +misses:/   { i1 = $NF }
      /D1 +misses:/   { sub(/.*\(/, ""); d1 = $1 }
      /Mispredicts:/  { sub(/.*\(/, ""); cond = $1; ind = $4 }
      END { print refs, i1, d1, ind, cond }'
}

# Per input: a run of N inputs less a run of none (contract compilation and input generation
# are setup, not admission).
per_input() {
  local mode=$1 inputs=$2
  paste -d' ' <(simulate "$mode" "$inputs") <(simulate "$mode" 0) | awk -v n="$inputs" '
    { printf "%.0f %.1f %.1f %.2f %.1f\n", ($1-$6)/n, ($2-$7)/n, ($3-$8)/n, ($4-$9)/n, ($5-$10)/n }'
}

printf '%-16s %-10s %12s %9s %9s %9s %9s\n' workload pipeline instructions I1-miss D1r-miss ind-misp cond-misp
for workload in "${workloads[@]}"; do
  # Enough inputs to cycle through the mix; fewer for the 26 KB pull requests.
  case "$workload" in pull_request) inputs=500 ;; payment_intent) inputs=2000 ;; *) inputs=20000 ;; esac
  read -r -a parse <<<"$(per_input "$workload-parse-only" "$inputs")"
  read -r -a admit <<<"$(per_input "$workload" "$inputs")"
  printf '%-16s %-10s %12s %9s %9s %9s %9s\n' "$workload" parse-only "${parse[@]}"
  printf '%-16s %-10s %12s %9s %9s %9s %9s\n' "$workload" admit "${admit[@]}"
  awk -v a="${admit[0]}" -v p="${parse[0]}" -v w="$workload" \
    'BEGIN { printf "%-16s admit / parse-only: %.2fx in instructions\n", w, a / p }'
done
