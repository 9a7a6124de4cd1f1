#!/usr/bin/env bash
# The doors with clients someone else generated, one front through every door, and the coding
# agents' hooks inside the real Claude Code and Codex CLIs (npm, run offline against a scripted
# model, model_server.py): PyPI's envoy-data-plane (Envoy's protos, betterproto2 and grpclib)
# drives `toolgate ext-proc`; a client grpcio-tools generates here from the vendored
# ext_mcp.proto drives `toolgate ext-mcp`; the parity test adds mcp-proxy, serve, the Python
# binding (the wheel crates/python/ci/run.sh built, which .ci/run runs first) and the hooks. Everything it installs goes to target/doors-ci/ (pinned);
# `cargo test` does not depend on it (it has its own Rust clients: tests/mcp/doors.rs).
#
#   crates/doors/ci/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
work=target/doors-ci
packages=(envoy-data-plane==2.2.0 grpcio==1.85.4 grpcio-tools==1.85.4 pytest==9.2.0)
installed() { [ -f "$1/.installed" ] && [ "$(cat "$1/.installed")" = "$2" ]; }
if ! installed "$work/venv" "${packages[*]}"; then
  rm -rf "$work/venv"
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}"
  echo "${packages[*]}" > "$work/venv/.installed"
fi
wheels=(target/python-ci/wheels/toolgate_gate-*.whl)
[ -f "${wheels[0]}" ] || { echo "doors ci: run crates/python/ci/run.sh first (it builds the wheel)" >&2; exit 2; }
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --force-reinstall "${wheels[0]}"
# The ExtMcp client, generated from the same .proto the server is built from.
rm -rf "$work/generated" && mkdir -p "$work/generated"
"$work/venv/bin/python" -m grpc_tools.protoc -I crates/doors/proto \
  --python_out="$work/generated" --grpc_python_out="$work/generated" crates/doors/proto/ext_mcp.proto
# The real Claude Code CLI (a native binary npm installs), for `toolgate hook claude-code`.
claude_code=@anthropic-ai/claude-code@2.1.332
if ! installed "$work/claude-code" "$claude_code"; then
  rm -rf "$work/claude-code" && mkdir -p "$work/claude-code"
  npm install --prefix "$work/claude-code" --silent --no-audit --no-fund --no-save "$claude_code"
  echo "$claude_code" > "$work/claude-code/.installed"
fi
# The real Codex CLI (a native binary npm installs), for `toolgate hook codex`.
codex=@openai/codex@0.171.0
if ! installed "$work/codex" "$codex"; then
  rm -rf "$work/codex" && mkdir -p "$work/codex"
  npm install --prefix "$work/codex" --silent --no-audit --no-fund --no-save "$codex"
  echo "$codex" > "$work/codex/.installed"
fi
cargo build --locked --release --quiet --bin toolgate
EXT_MCP_GENERATED="$PWD/$work/generated" TOOLGATE_BIN="$PWD/target/release/toolgate" \
  CLAUDE_BIN="$PWD/$work/claude-code/node_modules/.bin/claude" CODEX_BIN="$PWD/$work/codex/node_modules/.bin/codex" \
  "$work/venv/bin/python" -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning \
  crates/doors/ci/test_doors.py crates/doors/ci/test_claude_code.py crates/doors/ci/test_codex.py
