#!/usr/bin/env bash
# Holds a cargo-mutants run's missed mutants to the accepted survivors (mutants.sh calls it; a
# test in `cargo test` runs it on made-up results). Names are compared without their line and
# column, so an edit elsewhere in a file does not make every entry stale; a name that occurs
# twice must be listed twice. Exit 0 when they match, 1 when a survivor is not listed or (unless
# --partial: a run over part of the code, such as --in-diff) a listed one no longer survives.
#
# Usage: mutants-compare.sh RESULTS_DIR ACCEPTED_LIST [--partial]
set -euo pipefail
results="$1"
accepted="$2"
partial="${3:-}"
if [ ! -f "$accepted" ]; then
    echo "mutants-compare: no accepted-survivor list at $accepted" >&2
    exit 2
fi

# Without line and column, and without control characters (the names quote source code, which a
# pull request writes).
names() { LC_ALL=C tr -d '\000-\010\013-\037\177' | sed -E 's/^([^:]+):[0-9]+:[0-9]+: /\1: /' | sed '/^$/d' | LC_ALL=C sort; }
missed="$(if [ -f "$results/missed.txt" ]; then names < "$results/missed.txt"; fi)"
listed="$(grep -v -e '^#' -e '^[[:space:]]*$' "$accepted" | names || true)"
new="$(LC_ALL=C comm -23 <(printf '%s\n' "$missed" | sed '/^$/d') <(printf '%s\n' "$listed" | sed '/^$/d'))"
stale=""
if [ "$partial" != "--partial" ]; then
    stale="$(LC_ALL=C comm -13 <(printf '%s\n' "$missed" | sed '/^$/d') <(printf '%s\n' "$listed" | sed '/^$/d'))"
fi
if [ -n "$new" ]; then
    echo
    echo "Survivors not in $(basename "$accepted"): write a test that catches each, or list it there"
    echo "with the reason it cannot change what the gate decides or writes:"
    printf '  %s\n' "$new"
fi
if [ -n "$stale" ]; then
    echo
    echo "Listed in $(basename "$accepted") but no longer surviving: remove these entries:"
    printf '  %s\n' "$stale"
fi
if [ -n "$new" ] || [ -n "$stale" ]; then
    exit 1
fi
echo "every survivor is listed with its reason"
