#!/usr/bin/env bash
# The Python binding in CI: a fresh virtual environment of its own (target/python-ci/venv) with
# maturin, pytest and the frameworks the wrapper tests and examples use (pinned); the wheel
# built by `maturin build --release`, installed into it, and the pytest suite run against it
# (parity with `toolgate check` on every bundled fixture, the binding's behaviour, LangChain's
# @tool, the pydantic-ai and OpenAI Agents SDK examples). `cargo test` does not depend on it.
#
#   crates/python/ci/run.sh        (from anywhere; needs python3 with venv, and cargo)
set -euo pipefail
cd "$(dirname "$0")/../../.."
work=target/python-ci
packages=(
  maturin==1.16.0
  pytest==9.2.0
  langchain-core==1.8.3
  pydantic-ai-slim==2.68.0
  openai-agents==0.24.0
)
rm -rf "$work/venv" "$work/wheels"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}"
(cd crates/python && "../../$work/venv/bin/maturin" build --release --locked --quiet --out "../../$work/wheels")
wheels=("$work"/wheels/toolgate_gate-*.whl)
[ "${#wheels[@]}" -eq 1 ] || { echo "python ci: expected one wheel, found: ${wheels[*]}" >&2; exit 1; }
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "${wheels[0]}"
cargo build --locked --release --quiet --bin toolgate

# pytest's exit codes: 0 passed; 1 tests failed; 2 interrupted; 3 internal error; 4 usage
# error; 5 no tests collected, which here means the suite went missing: a failure too.
set +e
TOOLGATE_BIN="$PWD/target/release/toolgate" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
  crates/python/tests
status=$?
set -e
case $status in
  0) echo "python: the wheel ${wheels[0]##*/} passed its suite" ;;
  1) echo "python: tests failed" >&2 ;;
  5) echo "python: no tests were collected from crates/python/tests" >&2 ;;
  *) echo "python: pytest could not run the suite (exit $status)" >&2 ;;
esac
exit $status
