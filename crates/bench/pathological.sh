#!/usr/bin/env bash
# The pathological contracts of tests/it/pathological.rs, each verb run once with the release
# binary: wall time, CPU time and peak memory (GNU time's maximum resident set size), the figures
# RELIABILITY.md's budget table holds. cargo test enforces the budgets on the debug build (an
# address-space cap and a CPU limit); this measures what a user's release binary spends.
#
# Usage: crates/bench/pathological.sh          (about a minute after the builds)
# Needs GNU time (`apt-get install time`).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cases="$(mktemp -d)"
trap 'rm -rf "$cases"' EXIT

cargo build --release --quiet --manifest-path "$root/Cargo.toml"
TOOLGATE_KEEP_PATHOLOGICAL="$cases" cargo test --quiet --manifest-path "$root/Cargo.toml" \
    --test it pathological -- --test-threads 1 >/dev/null
toolgate="$root/target/release/toolgate"

printf '| case | verb | exit | wall (s) | CPU (s) | peak RSS (MB) |\n| --- | --- | --- | --- | --- | --- |\n'
for dir in "$cases"/*/; do
    tool="$(basename "$dir")"
    for verb in check test lint mutate diff; do
        case "$verb" in
            check) args=(check "$tool" --request "fixtures/$tool/request.json") ;;
            test) args=(test) ;;
            diff) args=(diff "$tool" v1 v2) ;;
            *) args=("$verb" "$tool") ;;
        esac
        status=0
        (cd "$dir" && /usr/bin/time -f '%e %U %S %M' -o "$cases/time" \
            "$toolgate" "${args[@]}" <"$dir/body.json" >/dev/null 2>&1) || status=$?
        # GNU time writes "Command exited with non-zero status N" first when it did.
        tail -n 1 "$cases/time" | awk -v tool="$tool" -v verb="$verb" -v status="$status" \
            '{ printf "| %s | %s | %s | %.2f | %.2f | %d |\n", tool, verb, status, $1, $2 + $3, $4 / 1024 }'
    done
done
