"""What a shared caller rate (`--caller-rate-store redis://…`) costs a call, and whether three
replicas hold one caller to it (BENCHMARKS.md, "A caller's rate across replicas").

1. Latency: two proxies in front of `mcp_http_server`, each with `--caller-rate` high enough never
   to refuse, one keeping it in this process, one in a real `redis-server` on loopback;
   sequential `tools/call`s on one kept-alive connection each, in alternating blocks; the wall
   time of each call, and the medians' difference: what asking Redis adds.
2. The limit: three proxies sharing `--caller-rate 50/s` in Redis, three clients (one a replica)
   calling as fast as they can for SECONDS; how many calls passed a second, all together.

    python3 rate_store_latency.py TOOLGATE MCP_HTTP_SERVER [CALLS] [SECONDS]
"""

import http.client
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from benchlib import CALL, REPO, arguments, started

HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "weather",
}


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def proxy(toolgate, url, rate, store=None):
    args = [toolgate, "mcp-proxy", "--root", f"{REPO}/tests/mcp", "--listen", "127.0.0.1:0",
            "--http-threads", "1", "--caller-rate", rate]
    if store:
        args += ["--caller-rate-store", store]
    process, listening = started(args + ["--", url], "listening on http://")
    host, port = listening.removesuffix("/mcp").split(":")
    return process, host, int(port)


def call(connection, n):
    connection.request("POST", "/mcp", CALL % n, HEADERS)
    response = connection.getresponse()
    response.read()
    return response.status


def latency(toolgate, url, store, calls):
    plain = proxy(toolgate, url, "1000000/s")
    shared = proxy(toolgate, url, "1000000/s", store)
    seen = {"local": [], "redis": []}
    try:
        connections = {name: http.client.HTTPConnection(host, port, timeout=30)
                       for name, (_, host, port) in (("local", plain), ("redis", shared))}
        for connection in connections.values():
            for n in range(200):
                call(connection, n)
        for first in range(0, calls, 100):
            for name, connection in connections.items():
                for n in range(first, first + 100):
                    began = time.perf_counter()
                    if call(connection, n) != 200:
                        sys.exit(f"{name}: call {n} refused")
                    seen[name].append(time.perf_counter() - began)
    finally:
        for process, _, _ in (plain, shared):
            process.terminate()
            process.wait(timeout=60)
    local, redis = (statistics.median(seen[name]) * 1e6 for name in ("local", "redis"))
    print(f"latency p50: local bucket {local:.0f} µs, Redis {redis:.0f} µs: +{redis - local:.0f} µs a call")


def limit(toolgate, url, store, seconds):
    replicas = [proxy(toolgate, url, "50/s", store) for _ in range(3)]
    passed = [0, 0, 0]
    stop = time.time() + seconds

    def hammer(index):
        _, host, port = replicas[index]
        n = 0
        while time.time() < stop:
            n += 1
            # A connection a call: a refused one (429) is closed by the listener.
            connection = http.client.HTTPConnection(host, port, timeout=30)
            if call(connection, n) == 200:
                passed[index] += 1
            connection.close()

    try:
        threads = [threading.Thread(target=hammer, args=(index,)) for index in range(3)]
        began = time.time()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        took = time.time() - began
    finally:
        for process, _, _ in replicas:
            process.terminate()
            process.wait(timeout=60)
    total = sum(passed)
    print(f"limit: 3 replicas sharing 50/s passed {total} calls in {took:.1f}s "
          f"({total / took:.1f}/s; the burst of 50 and 50/s after it allow {50 + 50 * took:.0f})")


def main():
    toolgate, server = arguments(2, "rate_store_latency.py TOOLGATE MCP_HTTP_SERVER [CALLS] [SECONDS]")[:2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 5
    if not shutil.which("redis-server"):
        sys.exit("needs redis-server (Debian's package)")
    work = tempfile.mkdtemp(prefix="toolgate-rate-")
    port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--dir", work],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    upstream, url = started([server, "127.0.0.1:0"], "listening on ", stream="stdout")
    try:
        time.sleep(0.5)
        store = f"redis://127.0.0.1:{port}"
        latency(toolgate, url, store, calls)
        limit(toolgate, url, store, seconds)
    finally:
        upstream.kill()
        redis.kill()


if __name__ == "__main__":
    main()
