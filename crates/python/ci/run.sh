#!/usr/bin/env bash
# The Python binding in CI: a fresh virtual environment of its own (target/python-ci/venv) with
# maturin, pytest and the frameworks the wrapper tests and examples use (pinned); the wheel
# built as a release builds it (profile `wheel`: stripped, no debug info; abi3 for CPython 3.9+;
# manylinux2014, linked against glibc 2.17 by zig's toolchain, so it installs on RHEL 7/8 and
# Ubuntu 18.04+), checked for its tag and size, installed into it, and the pytest suite run against it
# (parity with `toolgate check` on every bundled fixture, the binding's behaviour, LangChain's
# @tool, the pydantic-ai and OpenAI Agents SDK examples, and the guide's MCP snippets for the three
# frameworks run as written). `cargo test` does not depend on it.
#
#   crates/python/ci/run.sh        (from anywhere; needs python3 with venv, and cargo)
set -euo pipefail
cd "$(dirname "$0")/../../.."
work=target/python-ci
packages=(
  maturin==1.16.0
  ziglang==0.17.1
  pytest==9.2.0
  langchain-core==1.8.3
  # The guide's MCP snippets (doc/guide/src/mcp.md), run by tests/test_guide_snippets.py: the
  # versions a reader installing them today gets.
  "pydantic-ai-slim[mcp,openai]==2.68.0"
  fastmcp==3.4.11
  mcp==1.30.0
  openai-agents==0.24.0
  langchain==1.5.2
  langchain-openai==1.8.1
  langchain-mcp-adapters==0.3.2
)
rm -rf "$work/venv" "$work/wheels"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}"
# maturin finds zig as `python -m ziglang`: the environment's python first on PATH.
(cd crates/python && PATH="$PWD/../../$work/venv/bin:$PATH" "../../$work/venv/bin/maturin" build \
  --locked --quiet --profile wheel --zig --compatibility manylinux2014 --out "../../$work/wheels")
wheels=("$work"/wheels/toolgate_gate-*.whl)
[ "${#wheels[@]}" -eq 1 ] || { echo "python ci: expected one wheel, found: ${wheels[*]}" >&2; exit 1; }
case "${wheels[0]##*/}" in
  toolgate_gate-*-cp39-abi3-manylinux2014_*.whl) ;;
  *) echo "python ci: ${wheels[0]##*/} is not an abi3 manylinux2014 wheel" >&2; exit 1 ;;
esac
# 17 MB with the release profile's line tables; stripped it is under half that.
size=$(wc -c < "${wheels[0]}")
[ "$size" -le 12000000 ] || { echo "python ci: ${wheels[0]##*/} is $size bytes: is the wheel profile stripped?" >&2; exit 1; }
# The distribution's name on PyPI is free, or is this project's (its Repository URL).
"$work/venv/bin/python" crates/python/ci/name_is_ours.py toolgate-gate "https://github.com/toolgate/toolgate"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "${wheels[0]}"
cargo build --locked --release --quiet --bin toolgate

# pytest's exit codes: 0 passed; 1 tests failed; 2 interrupted; 3 internal error; 4 usage
# error; 5 no tests collected, which here means the suite went missing: a failure too.
set +e
TOOLGATE_BIN="$PWD/target/release/toolgate" TOOLGATE_REQUIRE_FRAMEWORKS=1 "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
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
