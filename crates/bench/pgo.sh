#!/usr/bin/env bash
# A profile-guided build of the gate, measured against the plain release build.
#
# 1. builds `profile_admit` instrumented (-Cprofile-generate) and runs it on every workload
#    (admission, and admission with the audit line), which writes the profiles;
# 2. merges them with the toolchain's own llvm-profdata (`rustup component add llvm-tools`);
# 3. builds `ratios` and `profile_admit` with -Cprofile-use, and the same without;
# 4. runs both `ratios` alternately, ROUNDS times each (default 3), and, when valgrind is
#    installed, `instructions.sh` on both builds.
#
# Builds go to target/pgo/ so the ordinary target/release is untouched. The same three steps
# serve an adapter that builds the gate itself: train on the adapter's own traffic, then build
# with -Cprofile-use (see BENCHMARKS.md, "A profile-guided build").
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
rounds="${ROUNDS:-3}"
host="$(rustc -vV | sed -n 's/^host: //p')"
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  echo "pgo.sh: $profdata is missing; install it with: rustup component add llvm-tools" >&2
  exit 2
fi
work="$root/target/pgo"
rm -rf "$work/profiles"
mkdir -p "$work/profiles"
build() { # target-dir rustflags
  RUSTFLAGS="$2" cargo build --quiet --release --manifest-path "$root/Cargo.toml" \
    -p toolgate-bench --bin profile_admit --bin ratios --target-dir "$1"
}
build "$work/generate" "-Cprofile-generate=$work/profiles"
for workload in small_mix payment_intent pull_request; do
  iterations=200000
  [ "$workload" = pull_request ] && iterations=5000
  "$work/generate/release/profile_admit" "$workload" "$iterations"
  "$work/generate/release/profile_admit" "$workload-audit" "$iterations"
done
"$profdata" merge -o "$work/merged.profdata" "$work/profiles"
build "$work/use" "-Cprofile-use=$work/merged.profdata -Cllvm-args=-pgo-warn-missing-function=false"
build "$work/plain" ""
for round in $(seq "$rounds"); do
  echo "== round $round: plain release build"
  "$work/plain/release/ratios"
  echo "== round $round: profile-guided build"
  "$work/use/release/ratios"
done
if command -v valgrind >/dev/null; then
  echo "== instructions, cache and branch figures: plain release build"
  PROFILE_BINARY="$work/plain/release/profile_admit" "$root/crates/bench/instructions.sh"
  echo "== instructions, cache and branch figures: profile-guided build"
  PROFILE_BINARY="$work/use/release/profile_admit" "$root/crates/bench/instructions.sh"
fi
