"""What `toolgate mcp-proxy` costs over stdio, measured by a client that is not the project's:
plain Python, its own JSON-RPC lines over pipes (BENCHMARKS.md, "The MCP proxy").

Against the minimal server `mcp_latency` serves (MCP_LATENCY_SERVER=1), directly and through the
proxy in front of it with the `weather` contract from tests/mcp/contracts:
  - latency: sequential tools/call round trips, p50 and p99;
  - CPU: the proxy process's time on CPU per call over those round trips (the scheduler's
    count, /proc/PID/task/*/schedstat; user and system time sampled per tick, /proc/PID/stat),
    next to the server's own;
  - throughput: calls per second with 64 calls in flight.

With --instructions, it counts instead the instructions the proxy executes per call (valgrind's
callgrind, the proxy's own user space, not the server's): two runs of different lengths, so the
start-up (contracts compiled, the handshake) cancels out. Deterministic, where the CPU times
above move with the machine.

TOOLGATE_PROXY_ARGS adds options to the proxy's command line (BENCHMARKS.md, "Metrics and
traces", measures --metrics and --otlp-endpoint so).

Usage: python3 mcp_stdio_client.py TOOLGATE MCP_LATENCY [CALLS]
       python3 mcp_stdio_client.py --instructions TOOLGATE MCP_LATENCY
"""

import json
import os
import re
import shlex
import tempfile
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CALL = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Lisbon"}}}\n'
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """(on CPU, user, system) seconds the process has used so far. The first is the scheduler's
    own count, in nanoseconds, summed over the process's threads (/proc/PID/task/*/schedstat);
    the split into user and system time is only sampled, a clock tick (10 ms) at a time."""
    on_cpu = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            on_cpu += int(open(f"/proc/{pid}/task/{task}/schedstat").read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return on_cpu / 1e9, int(fields[11]) / TICKS, int(fields[12]) / TICKS  # utime, stime


def start(command):
    env = dict(os.environ, MCP_LATENCY_SERVER="1")
    # Unbuffered input (each call is written at once); buffered output, so a line is read in one
    # system call rather than a byte at a time.
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0)
    out = os.fdopen(process.stdout.fileno(), "rb", buffering=1 << 16, closefd=False)
    process.stdin.write(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n')
    out.readline()
    return process, out


def measure(command, calls, warm_up=500, in_flight=64):
    process, out = start(command)
    write = process.stdin.write
    for n in range(1, warm_up + 1):
        write(CALL % n)
        out.readline()
    before = cpu_seconds(process.pid)
    times = []
    for n in range(calls):
        started = time.perf_counter_ns()
        write(CALL % (warm_up + 1 + n))
        line = out.readline()
        times.append(time.perf_counter_ns() - started)
        if b'"result"' not in line:
            sys.exit(f"not a result: {line!r}")
    after = cpu_seconds(process.pid)
    on_cpu, user, system = ((a - b) / calls * 1e6 for a, b in zip(after, before))
    # Throughput: a writer keeps `in_flight` calls outstanding, the reader counts answers.
    total = calls * 4
    window = threading.Semaphore(in_flight)
    first = warm_up + calls + 1

    def writer():
        for n in range(total):
            window.acquire()
            write(CALL % (first + n))

    started = time.perf_counter()
    thread = threading.Thread(target=writer)
    thread.start()
    for _ in range(total):
        out.readline()
        window.release()
    elapsed = time.perf_counter() - started
    thread.join()
    process.stdin.close()
    process.wait()
    times.sort()
    return {
        "p50": times[len(times) // 2] / 1000,
        "p99": times[int(len(times) * 0.99)] / 1000,
        "cpu_per_call": on_cpu,
        "user_per_call": user,
        "system_per_call": system,
        "throughput": total / elapsed,
    }


def proxy_command(toolgate, server):
    """The proxy in front of `server`, with the extra options TOOLGATE_PROXY_ARGS names (e.g.
    `--metrics 127.0.0.1:0 --otlp-endpoint http://127.0.0.1:4318 --trace-sample 0`, to measure
    what metrics and tracing add)."""
    extra = shlex.split(os.environ.get("TOOLGATE_PROXY_ARGS", ""))
    return [toolgate, "mcp-proxy", "--root", os.path.join(REPO, "tests/mcp"), *extra, "--", server]


def instructions(command, calls):
    """Instructions callgrind counts in `command`'s process over `calls` sequential calls."""
    with tempfile.TemporaryDirectory() as scratch:
        out_file = os.path.join(scratch, "callgrind.out")
        process, out = start(["valgrind", "-q", "--tool=callgrind", f"--callgrind-out-file={out_file}"] + command)
        for n in range(1, calls + 1):
            process.stdin.write(CALL % n)
            if b'"result"' not in out.readline():
                sys.exit("the proxy did not answer a call under valgrind")
        process.stdin.close()
        process.wait()
        totals = re.search(rb"^totals: (\d+)", open(out_file, "rb").read(), re.MULTILINE)
        return int(totals.group(1))


def main():
    if sys.argv[1] == "--instructions":
        command = proxy_command(sys.argv[2], sys.argv[3])
        short, long = 500, 2500
        per_call = (instructions(command, long) - instructions(command, short)) / (long - short)
        print(f"instructions per sequential call, the proxy process: {per_call:,.0f}")
        return
    toolgate, server = sys.argv[1], sys.argv[2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
    direct = measure([server], calls)
    proxied = measure(proxy_command(toolgate, server), calls)
    print(json.dumps({"direct": direct, "proxy": proxied}))
    print(f"p50: direct {direct['p50']:.1f} µs, through the proxy {proxied['p50']:.1f} µs: "
          f"{proxied['p50'] - direct['p50']:.1f} µs added; p99 {direct['p99']:.1f} / {proxied['p99']:.1f} µs")
    print(f"CPU per call: the proxy process {proxied['cpu_per_call']:.1f} µs "
          f"(sampled: {proxied['user_per_call']:.1f} user + {proxied['system_per_call']:.1f} system); "
          f"the server alone {direct['cpu_per_call']:.1f} µs ({direct['user_per_call']:.1f} + {direct['system_per_call']:.1f}); "
          f"proxy / server {proxied['cpu_per_call'] / direct['cpu_per_call']:.2f}")
    print(f"64 in flight: direct {direct['throughput']:,.0f} calls/s, through the proxy {proxied['throughput']:,.0f} "
          f"({proxied['throughput'] / direct['throughput']:.0%} of direct)")


if __name__ == "__main__":
    main()
