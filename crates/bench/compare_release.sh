#!/usr/bin/env bash
# The gate at this checkout against the gate at another revision (the previous release, by
# default the newest tag, else REV), in wall-clock time on the small-response workload
# (BENCHMARKS.md, "Against the previous release"): `small_responses` is built at both (the same
# source file, copied into a worktree of REV) and the two builds run in turn, PAIRS times each,
# interleaved, so both see the same machine in the same minutes. Each run prints its own paired
# ratios (admit / parse-only, admit + audit line / parse-only: a ratio cancels most of the
# machine's drift); the medians of each build's ratios are compared at the end.
#
#   crates/bench/compare_release.sh [REV] [PAIRS]
#
# TOOLGATE_SMALL_COUNT and TOOLGATE_SMALL_ROUNDS are passed on (100,000 inputs, 15 rounds).
# Both builds use mimalloc, the allocator the toolgate binary ships with
# (TOOLGATE_BENCH_FEATURES= for the system's).
set -euo pipefail
cd "$(dirname "$0")/../.."
rev=${1:-$(git describe --tags --abbrev=0 2>/dev/null || true)}
[ -n "$rev" ] || { echo "compare_release.sh: no release tag here; name the revision to compare with" >&2; exit 2; }
pairs=${2:-5}
features=${TOOLGATE_BENCH_FEATURES-mimalloc}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/base" "$rev" >/dev/null
cp crates/bench/src/bin/small_responses.rs "$work/base/crates/bench/src/bin/"
# The base builds in a target folder of its own (kept between runs, so a second comparison
# against the same revision builds nothing again).
cargo build --release -q --locked -p toolgate-bench --bin small_responses --features "$features" \
    --manifest-path "$work/base/Cargo.toml" --target-dir target/compare-base
cargo build --release -q --locked -p toolgate-bench --bin small_responses --features "$features"
base_bin=target/compare-base/release/small_responses
head_bin=target/release/small_responses
[ -x "$base_bin" ] || { echo "compare_release.sh: the base build failed" >&2; exit 2; }
ratio() { # LINE FIELD(1: admit, 2: audit) -> the ratio
  sed -E 's/.*admit \/ parse-only ([0-9.]+)x, admit \+ audit line \/ parse-only ([0-9.]+)x.*/\1 \2/' <<<"$1" |
    cut -d' ' -f"$2"
}
declare -a base_admit base_audit head_admit head_audit
for round in $(seq 1 "$pairs"); do
  for which in base head; do
    # Alternate which goes first, as the in-process pairing does.
    if (( round % 2 == 0 )); then which=$([ "$which" = base ] && echo head || echo base); fi
    bin=$([ "$which" = base ] && echo "$base_bin" || echo "$head_bin")
    line=$("$bin")
    echo "$which ($([ "$which" = base ] && echo "$rev" || echo this checkout)): $line"
    if [ "$which" = base ]; then
      base_admit+=("$(ratio "$line" 1)"); base_audit+=("$(ratio "$line" 2)")
    else
      head_admit+=("$(ratio "$line" 1)"); head_audit+=("$(ratio "$line" 2)")
    fi
  done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo
echo "medians over $pairs runs each: admit / parse-only: $rev $(median "${base_admit[@]}")x, this checkout $(median "${head_admit[@]}")x"
echo "                                admit + audit line / parse-only: $rev $(median "${base_audit[@]}")x, this checkout $(median "${head_audit[@]}")x"
