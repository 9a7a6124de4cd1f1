#!/usr/bin/env bash
# The retainer against an S3-compatible store adding 40 ms per PUT (BENCHMARKS.md, "Retention
# that keeps up"): moto's server started as .ci/run starts it (.ci/s3-server), then
# `retention_throughput` offers RECORDS refusals at once and says how many a second were kept.
#
#   crates/bench/retention_throughput.sh [RECORDS] [DELAY_MS]
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q -p toolgate-bench --bin retention_throughput
source .ci/s3-server
trap stop_s3_server EXIT
target/release/retention_throughput "$TOOLGATE_S3_ENDPOINT" "$TOOLGATE_S3_BUCKET" "${1:-3000}" "${2:-40}"
