#!/usr/bin/env bash
# The MCP proxy under load over Streamable HTTP (BENCHMARKS.md, "The MCP proxy over HTTP"):
# `oha` (a Rust HTTP load generator: `cargo install oha`) sends the same tools/call to a
# minimal HTTP MCP server directly, then through `toolgate mcp-proxy --listen` in front of it
# (upstream over HTTP), then through the proxy in front of the stdio server mcp_latency
# serves; it prints p50/p99 latency, throughput, the CPU each process spent per call (the
# proxy's, then the server's where both run;
# the scheduler's own count, /proc/PID/task/*/schedstat), and the proxy's peak memory.
#
#   crates/bench/mcp_http_load.sh [REQUESTS] [CONNECTIONS]
#
# TOOLGATE=path/to/toolgate measures another build of the proxy (an A/B against the same
# server and load generator); TOOLGATE_PROXY_ARGS adds options to both proxies (for example
# "--http-threads 1").
set -euo pipefail
cd "$(dirname "$0")/../.."
requests=${1:-20000}
connections=${2:-16}
command -v oha >/dev/null || { echo "needs oha: cargo install oha" >&2; exit 2; }
cargo build --release -q -p toolgate -p toolgate-bench --bins
bin=target/release
toolgate=${TOOLGATE:-$bin/toolgate}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

call='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Lisbon"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
cpu_ns() { # PID -> nanoseconds on a CPU, every thread
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{sum += $1} END {print sum + 0}'
}
load() { # URL LABEL [PID...]: the PIDs whose CPU per call is reported
  local url=$1 label=$2; shift 2
  local before=() pid
  for pid in "$@"; do before+=("$(cpu_ns "$pid")"); done
  oha -n "$requests" -c "$connections" --no-tui --output-format json -m POST \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: weather' \
    -d "$call" "$url" > "$work/load.json"
  local cpu="" index=0
  for pid in "$@"; do
    cpu+=" $(( ($(cpu_ns "$pid") - ${before[$index]}) / requests / 1000 ))"
    index=$((index + 1))
  done
  python3 - "$work/load.json" "$label" "$cpu" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["latencyPercentiles"]; s = r["summary"]
codes = r.get("statusCodeDistribution", {})
cpu = " / ".join(sys.argv[3].split())
print(f"{sys.argv[2]:<24} p50 {p['p50']*1e6:6.0f} µs  p99 {p['p99']*1e6:6.0f} µs  {s['requestsPerSec']:8.0f} req/s  CPU per call {cpu} µs  statuses {codes}")
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
server_pid=$!
server=$(listening "$work/server.out")
load "$server" "direct (HTTP server)" "$server_pid"

$toolgate mcp-proxy --root tests/mcp --listen 127.0.0.1:0 ${TOOLGATE_PROXY_ARGS:-} -- "$server" 2> "$work/proxy1.err" &
proxy1=$!
through=$(listening "$work/proxy1.err")
load "$through" "proxy, HTTP upstream" "$proxy1" "$server_pid"
echo "  the proxy's peak memory: $(peak $proxy1)"

MCP_LATENCY_SERVER=1 $toolgate mcp-proxy --root tests/mcp --listen 127.0.0.1:0 ${TOOLGATE_PROXY_ARGS:-} -- $bin/mcp_latency 2> "$work/proxy2.err" &
proxy2=$!
through=$(listening "$work/proxy2.err")
load "$through" "proxy, stdio upstream" "$proxy2"
echo "  the proxy's peak memory: $(peak $proxy2)"
