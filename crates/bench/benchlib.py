"""What the Python benchmarks next to this file share: where the repository is, the call they
make, and how they start a process and wait for it to say where it listens."""

import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CALL = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Lisbon"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'


def started(command, pattern, stream="stderr"):
    """Starts `command` and reads its `stream` until a line holds `pattern` (within 60 s): the
    process and the word after the pattern (the address it listens at)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    source = process.stderr if stream == "stderr" else process.stdout
    deadline = time.time() + 60
    while time.time() < deadline:
        line = source.readline()
        if not line:
            break
        if pattern in line:
            return process, line.split(pattern, 1)[1].split()[0]
    process.kill()
    sys.exit(f"{command[0]} did not start")


def arguments(needed, usage):
    """The command line's arguments, at least `needed` of them, or `usage` said (exit 2)."""
    if len(sys.argv) <= needed:
        print(f"usage: {usage}", file=sys.stderr)
        sys.exit(2)
    return sys.argv[1:]


def cpu_ns(pid):
    """The process's time on CPU so far, every thread's (the scheduler's own count)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as counts:
                total += int(counts.read().split()[0])
        except OSError:
            pass
    return total
