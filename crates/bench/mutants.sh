#!/usr/bin/env bash
# Mutation testing of the gate's security-critical modules with cargo-mutants (scope and settings:
# .cargo/mutants.toml). Prints how many mutants were caught, missed, unviable and timed out, then
# holds the missed ones to crates/gate/mutants-survivors.txt, the accepted survivors, each with
# the reason it is equivalent: a survivor not on that list (a gap in the tests, or new code that
# needs one) or a listed one that no longer survives (a stale entry) fails the run.
#
# Usage: crates/bench/mutants.sh [cargo-mutants arguments, e.g. -j 2, --iterate, --in-diff FILE]
# With --in-diff (a pull request's changes only), listed survivors outside the diff are not
# reported as stale.
# About 80 minutes on 2 cores for some 625 mutants: a periodic check, not part of `.ci/run`
# (pull requests run `cargo mutants --in-diff` on their own changes instead; see the example
# workflow). Results land in target/mutants/mutants.out/.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
accepted="$root/crates/gate/mutants-survivors.txt"
output="$root/target/mutants"

if ! command -v cargo-mutants >/dev/null 2>&1; then
    cargo install --locked cargo-mutants
fi

partial=false
for argument in "$@"; do
    case "$argument" in --in-diff | --in-diff=* | -D | --shard | --shard=* | -F | --re | --re=* | -f | --file | --file=*) partial=true ;; esac
done

mkdir -p "$output"
status=0
cargo mutants --dir "$root" --package toolgate-gate --output "$output" "$@" || status=$?
# cargo-mutants: 0 all caught, 2 some missed, 3 some timed out; anything else is a failure of
# the run itself (1 usage, 4 the unmutated tree's tests fail).
case "$status" in 0 | 2 | 3) ;; *) exit "$status" ;; esac

results="$output/mutants.out"
count() { if [ -f "$results/$1.txt" ]; then grep -c . "$results/$1.txt" || true; else echo 0; fi; }
echo "caught $(count caught), missed $(count missed), unviable $(count unviable), timeouts $(count timeout)"

partial_flag=""
if "$partial"; then partial_flag="--partial"; fi
status=0
"$root/crates/bench/mutants-compare.sh" "$results" "$accepted" $partial_flag || status=$?
if [ "$(count timeout)" != 0 ]; then
    echo "Mutants that timed out (target/mutants/mutants.out/timeout.txt): a mutant that makes the gate hang"
    echo "must be caught by a test that bounds the time, not by cargo-mutants' timeout."
    status=1
fi
exit "$status"
