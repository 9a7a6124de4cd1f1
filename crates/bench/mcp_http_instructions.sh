#!/usr/bin/env bash
# Instructions the MCP proxy executes per call over HTTP (BENCHMARKS.md, "Issue 41, second
# round"): `toolgate mcp-proxy --listen` in front of the minimal HTTP MCP server, run under
# callgrind; `oha` (`cargo install oha`) sends 20 calls to warm it, the counters are zeroed, then
# CALLS sequential calls are counted (every thread of the proxy; the server and oha not). Unlike
# CPU time, the count does not move with the machine.
#
#   crates/bench/mcp_http_instructions.sh [CALLS] [-- PROXY OPTIONS...]
#
# TOOLGATE=path/to/toolgate counts another build (an A/B).
set -euo pipefail
cd "$(dirname "$0")/../.."
calls=${1:-2000}
shift || true
[ "${1:-}" = "--" ] && shift
command -v oha >/dev/null || { echo "needs oha: cargo install oha" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 2; }
cargo build --release -q -p toolgate -p toolgate-bench --bins
bin=target/release
toolgate=${TOOLGATE:-$bin/toolgate}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

$bin/mcp_http_server 127.0.0.1:0 > "$work/server.out" &
for _ in $(seq 50); do grep -q http "$work/server.out" && break; sleep 0.1; done
server=$(grep -o 'http://[^ ]*' "$work/server.out" | head -1)
valgrind -q --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
  "$toolgate" mcp-proxy --root tests/mcp --listen 127.0.0.1:0 "$@" -- "$server" 2> "$work/proxy.err" &
proxy=$!
for _ in $(seq 600); do grep -q 'listening on' "$work/proxy.err" && break; sleep 0.1; done
address=$(grep -o 'listening on http://[^ ]*' "$work/proxy.err" | sed 's|listening on ||')
[ -n "$address" ] || { echo "the proxy did not listen: $(cat "$work/proxy.err")" >&2; exit 1; }

call='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Lisbon"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
send() {
  oha -n "$1" -c 1 --no-tui --output-format json -m POST \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: weather' \
    -d "$call" "$address" > "$work/load.json"
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1])).get("statusCodeDistribution",{}); sys.exit(0 if list(c)==["200"] else "not every call answered 200: %s" % c)' "$work/load.json"
}
send 20
callgrind_control -z "$proxy" > /dev/null 2>&1
send "$calls"
callgrind_control -d "$proxy" > /dev/null 2>&1
sleep 1
kill "$proxy"
wait "$proxy" 2>/dev/null || true
awk -v calls="$calls" '/^summary:/ {printf "instructions per sequential call over HTTP, the proxy process: %d\n", $2 / calls}' "$work/callgrind.out.1"
