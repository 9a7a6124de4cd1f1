"""What `toolgate hook claude-code` adds to each MCP tool call (BENCHMARKS.md, "A coding
agent's hook"): the agent runs it once per event and waits for it, so its whole run counts,
process start and contract loading included. Runs the documented PostToolUse event for the MCP
tests' weather tool through the binary EVENTS times against ROOT (default: tests/mcp, three
contracts), and prints the wall time's median and 95th percentile and the CPU a run.

    python3 crates/bench/hook_latency.py TOOLGATE [EVENTS] [ROOT]
"""

import json
import os
import resource
import statistics
import subprocess
import sys
import time

from benchlib import REPO, arguments

EVENT = json.dumps({
    "hook_event_name": "PostToolUse", "tool_name": "mcp__weather__weather", "tool_input": {"city": "Oslo"},
    "tool_use_id": "toolu_1", "mcp_server": {"name": "weather"},
    "tool_response": json.dumps({"city": "Oslo", "temperature_c": 3.5, "conditions": "snow"}),
}).encode()


def main():
    toolgate = arguments(1, "hook_latency.py TOOLGATE [EVENTS] [ROOT]")[0]
    events = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    root = sys.argv[3] if len(sys.argv) > 3 else os.path.join(REPO, "tests/mcp")
    walls = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(events):
        started = time.perf_counter()
        done = subprocess.run([toolgate, "hook", "claude-code", "--root", root], input=EVENT,
                              capture_output=True, check=True)
        walls.append(time.perf_counter() - started)
        assert b"updatedMCPToolOutput" in done.stdout, done.stdout + done.stderr
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / events
    walls.sort()
    print(f"{events} events against {root}: wall p50 {statistics.median(walls) * 1000:.1f} ms, "
          f"p95 {walls[int(0.95 * (events - 1))] * 1000:.1f} ms; CPU {cpu * 1000:.1f} ms an event")


if __name__ == "__main__":
    main()
