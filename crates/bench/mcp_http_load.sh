#!/usr/bin/env bash
# The MCP proxy under load over Streamable HTTP (BENCHMARKS.md, "The MCP proxy over HTTP"):
# `oha` (a Rust HTTP load generator: `cargo install oha`) sends the same tools/call to a
# minimal HTTP MCP server directly, then through `toolgate mcp-proxy --listen` in front of it
# (upstream over HTTP), then through the proxy in front of the stdio server mcp_latency
# serves; it prints p50/p99 latency, throughput, and the proxy's peak memory.
#
#   crates/bench/mcp_http_load.sh [REQUESTS] [CONNECTIONS]
set -euo pipefail
cd "$(dirname "$0")/../.."
requests=${1:-20000}
connections=${2:-16}
command -v oha >/dev/null || { echo "needs oha: cargo install oha" >&2; exit 2; }
cargo build --release -q -p toolgate -p toolgate-bench --bins
bin=target/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

call='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Lisbon"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
load() { # URL LABEL
  oha -n "$requests" -c "$connections" --no-tui --output-format json -m POST \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: weather' \
    -d "$call" "$1" > "$work/$2.json"
  python3 - "$work/$2.json" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["latencyPercentiles"]; s = r["summary"]
codes = r.get("statusCodeDistribution", {})
print(f"{sys.argv[2]:<32} p50 {p['p50']*1e6:8.0f} µs  p99 {p['p99']*1e6:8.0f} µs  {s['requestsPerSec']:9.0f} req/s  statuses {codes}")
PY
}
listening() { # STDERR-FILE -> address
  for _ in $(seq 100); do
    address=$(grep -o 'listening on http://[^ ]*' "$1" 2>/dev/null | head -1 | sed 's|listening on ||') || true
    [ -n "${address:-}" ] && { echo "$address"; return; }
    sleep 0.1
  done
  echo "nothing listens: $(cat "$1")" >&2; exit 1
}
peak() { grep VmHWM "/proc/$1/status" | awk '{print $2/1024 " MiB"}'; }

$bin/mcp_http_server 127.0.0.1:0 > "$work/server.out" & 
server=$(listening "$work/server.out")
load "$server" "direct (HTTP server)"

$bin/toolgate mcp-proxy --root tests/mcp --listen 127.0.0.1:0 -- "$server" 2> "$work/proxy1.err" &
proxy1=$!
through=$(listening "$work/proxy1.err")
load "$through" "proxy, HTTP upstream"
echo "  the proxy's peak memory: $(peak $proxy1)"

MCP_LATENCY_SERVER=1 $bin/toolgate mcp-proxy --root tests/mcp --listen 127.0.0.1:0 -- $bin/mcp_latency 2> "$work/proxy2.err" &
proxy2=$!
through=$(listening "$work/proxy2.err")
load "$through" "proxy, stdio upstream"
echo "  the proxy's peak memory: $(peak $proxy2)"
