#!/usr/bin/env bash
# The doors with clients someone else generated, one front through every door, and the coding
# agents' hooks inside the real Claude Code and Codex CLIs (npm, run offline against a scripted
# model, model_server.py), and the Python doors inside LiteLLM's proxy and ContextForge's gateway
# (PyPI, each in a virtual environment of its own): PyPI's envoy-data-plane (Envoy's protos, betterproto2 and grpclib)
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
# The gateways' Python doors (toolgate_gate.litellm, toolgate_gate.contextforge) inside LiteLLM's
# proxy and ContextForge's gateway, each in a virtual environment of its own with the wheel,
# installed in the background while the tests below run (about 1.5 minutes each here).
# ContextForge needs Python 3.12 or 3.13: the first found on PATH or under pyenv.
litellm_packages=("litellm[proxy]==1.108.7" pytest==9.2.0)
contextforge_packages=(mcp-contextforge-gateway==1.1.0 cpex==0.1.4 pytest==9.2.0)
python_312() {
  local candidate
  # pyenv's shims answer `command -v` for versions they cannot run: each is asked to run.
  for candidate in python3.12 python3.13 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[23].*/bin/python3; do
    if "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] not in ((3, 12), (3, 13)))' >/dev/null 2>&1; then
      "$candidate" -c 'import sys; print(sys.executable)'; return
    fi
  done
  return 1
}
gateway_venv() { # FOLDER PYTHON PACKAGE...
  local folder=$1 python=$2; shift 2
  if ! installed "$folder" "$*"; then
    rm -rf "$folder"
    "$python" -m venv "$folder"
    "$folder/bin/pip" install --quiet --disable-pip-version-check "$@"
    echo "$*" > "$folder/.installed"
  fi
  "$folder/bin/pip" install --quiet --disable-pip-version-check --no-deps --force-reinstall "${wheels[0]}"
}
contextforge_python=$(python_312) || { echo "doors ci: ContextForge needs Python 3.12 or 3.13 (python3.12 on PATH, or pyenv's)" >&2; exit 2; }
started=$SECONDS
gateway_venv "$work/litellm" python3 "${litellm_packages[@]}" > "$work/litellm-install.log" 2>&1 &
litellm_install=$!
gateway_venv "$work/contextforge" "$contextforge_python" "${contextforge_packages[@]}" > "$work/contextforge-install.log" 2>&1 &
contextforge_install=$!
cargo build --locked --release --quiet --bin toolgate
EXT_MCP_GENERATED="$PWD/$work/generated" TOOLGATE_BIN="$PWD/target/release/toolgate" \
  CLAUDE_BIN="$PWD/$work/claude-code/node_modules/.bin/claude" CODEX_BIN="$PWD/$work/codex/node_modules/.bin/codex" \
  "$work/venv/bin/python" -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning \
  crates/doors/ci/test_doors.py crates/doors/ci/test_claude_code.py crates/doors/ci/test_codex.py
wait "$litellm_install" || { cat "$work/litellm-install.log" >&2; exit 1; }
wait "$contextforge_install" || { cat "$work/contextforge-install.log" >&2; exit 1; }
echo "doors ci: the gateways' environments were ready $((SECONDS - started))s after their installs began"
for gateway in litellm contextforge; do
  begun=$SECONDS
  TOOLGATE_BIN="$PWD/target/release/toolgate" "$work/$gateway/bin/python" -m pytest -q -p no:cacheprovider \
    -W ignore::DeprecationWarning "crates/doors/ci/test_$gateway.py"
  echo "doors ci: $gateway's door passed in $((SECONDS - begun))s"
done
