"""The production configuration's CPU per call against the plain listener's (BENCHMARKS.md,
"Signed audit at a cost that fits every call"): `toolgate mcp-proxy --listen` in front of the
minimal HTTP MCP server (`mcp_http_server`), sequential `tools/call`s over one kept-alive
connection, the proxy's CPU from its scheduler counts (/proc/PID/task/*/schedstat). Two proxies
run side by side, each in front of an upstream of its own, plain and with every production part on
(`--auth` with the caller's token cached, a signed audit log, 1 % of admissions and every refusal
retained to an S3-compatible store), and take the calls in alternating blocks of BLOCK: on a
shared machine the CPU a call costs drifts by a third within a minute, and blocks a few
milliseconds apart see the same drift, where whole runs in turns did not. Each round starts a
new pair, warms it, and makes CALLS calls to each, the pair's order swapped every other round;
the ratio is of the mean CPU per call over all rounds (25 rounds or more: one pair's ratio is off
by up to a tenth by where its processes landed). `TOOLGATE_PRODUCTION_PARTS=none` measures the
plain proxy against itself: what the method alone reads.

Needs PyJWT and cryptography (to sign the caller's token) and an S3-compatible endpoint in
TOOLGATE_S3_ENDPOINT (`.ci/s3-server` starts moto; credentials from the environment).

    python3 production_cpu.py TOOLGATE MCP_HTTP_SERVER [CALLS] [ROUNDS]   # 2000 25
"""

import base64
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from benchlib import CALL, REPO, arguments, cpu_ns, started

RESOURCE = "https://toolgate.bench/mcp"
ISSUER = "https://auth.bench"


BLOCK = 100


class Proxy:
    """One proxy under test: its process and its connection."""

    def __init__(self, address, headers, process):
        host, port = address.split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=30)
        self.process = process
        self.call = caller(self.connection, headers)


def caller(connection, headers):
    base = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "weather",
        **headers,
    }

    def call(n):
        connection.request("POST", "/mcp", CALL % n, base)
        response = connection.getresponse()
        body = response.read()
        if response.status != 200 or b'"outcome":"success"' not in body:
            sys.exit(f"call {n}: {response.status} {body[:300]!r}")

    return call


def measure_round(proxies, calls):
    """CALLS calls to each proxy in alternating blocks: each one's CPU per call, in µs, over the
    whole round (what its own threads spent while the other proxy had the calls is counted too:
    a timer or a writer thread is part of the cost)."""
    before = {name: cpu_ns(proxy.process.pid) for name, proxy in proxies.items()}
    for first in range(0, calls, BLOCK):
        for proxy in proxies.values():
            for n in range(first, min(first + BLOCK, calls)):
                proxy.call(n)
    return {name: (cpu_ns(proxy.process.pid) - before[name]) / calls / 1000
            for name, proxy in proxies.items()}


def main():
    toolgate, server = arguments(2, "production_cpu.py TOOLGATE MCP_HTTP_SERVER [CALLS] [ROUNDS]")[:2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 25
    endpoint = os.environ.get("TOOLGATE_S3_ENDPOINT")
    if not endpoint:
        sys.exit("needs TOOLGATE_S3_ENDPOINT (an S3-compatible server; .ci/s3-server starts one)")
    work = tempfile.mkdtemp(prefix="toolgate-production-cpu-")
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    jwk = {"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": "k1",
           "x": base64.urlsafe_b64encode(public).rstrip(b"=").decode()}
    with open(f"{work}/jwks.json", "w") as out:
        json.dump({"keys": [jwk]}, out)
    with open(f"{work}/auth.yaml", "w") as out:
        out.write(f"resource: {RESOURCE}\nauthorization_servers: [{ISSUER}]\njwks: {work}/jwks.json\n"
                  "algorithms: [EdDSA]\nscopes: [mcp]\ntools:\n  weather:\n    scopes: [weather:read]\n")
    now = int(time.time())
    token = jwt.encode({"iss": ISSUER, "aud": RESOURCE, "sub": "bench", "scope": "mcp weather:read",
                        "iat": now, "exp": now + 3600}, key, algorithm="EdDSA", headers={"kid": "k1"})
    subprocess.run([toolgate, "audit", "keygen", f"{work}/audit.pem"], check=True, capture_output=True)
    parts = {
        "auth": ["--auth", f"{work}/auth.yaml"],
        "audit": ["--audit", f"{work}/audit.jsonl", "--audit-key", f"{work}/audit.pem"],
        "audit-unsigned": ["--audit", f"{work}/unsigned.jsonl"],
        # Nothing: the plain proxy against itself, to see what the measurement alone gives.
        "none": [],
        # Signed, its lines held back for 25 ms and written together.
        "audit-flushed": ["--audit", f"{work}/flushed.jsonl", "--audit-key", f"{work}/audit.pem",
                          "--audit-flush-interval", "25ms"],
        "retain": ["--retain", "s3://evidence/production-cpu", "--retain-endpoint", endpoint,
                   "--retain-admitted", "1%"],
    }
    # TOOLGATE_PRODUCTION_PARTS=auth,audit (say) weighs some parts alone.
    chosen = os.environ.get("TOOLGATE_PRODUCTION_PARTS", "auth,audit,retain").split(",")
    configurations = {
        "plain": ([], {}),
        "production": ([arg for part in chosen for arg in parts[part]],
                       {"Authorization": f"Bearer {token}"} if "auth" in chosen else {}),
    }
    seen = {name: [] for name in configurations}
    for round in range(rounds):
        # A new pair each round, each with an upstream of its own, and each configuration
        # started and called first in every other round: where the scheduler puts a pair weighs
        # on all its calls. (With one upstream shared, the proxy started first cost a third more
        # per call: the plain proxy against itself read 0.73x one way and 1.20x the other.)
        order = list(configurations) if round % 2 == 0 else list(reversed(configurations))
        proxies, upstreams = {}, []
        try:
            for name in order:
                # An upstream each: proxies sharing one share its threads unevenly.
                upstream, url = started([server, "127.0.0.1:0"], "listening on ",
                                        stream="stdout")
                upstreams.append(upstream)
                args, headers = configurations[name]
                process, listening = started(
                    [toolgate, "mcp-proxy", "--root", f"{REPO}/tests/mcp", "--listen",
                     "127.0.0.1:0", "--http-threads", "1", *args, "--", url],
                    "listening on http://")
                proxies[name] = Proxy(listening.removesuffix("/mcp"), headers, process)
            # Warm: the token verified and cached, the series made, the retention worker
            # and its client running (a new process costs more for its first thousand).
            for proxy in proxies.values():
                for n in range(1000):
                    proxy.call(n)
            for name, cost in measure_round(proxies, calls).items():
                seen[name].append(cost)
        finally:
            for proxy in proxies.values():
                proxy.process.terminate()
                proxy.process.wait(timeout=60)
            for upstream in upstreams:
                upstream.kill()
                upstream.wait(timeout=60)
    for name, values in seen.items():
        print(f"{name}: {', '.join(f'{value:.1f}' for value in values)} µs per call")
    # Over all rounds, each configuration first in half of them: the order's share cancels.
    plain, production = (statistics.fmean(seen[name]) for name in ("plain", "production"))
    firsts = {
        first: statistics.fmean(seen["production"][at] / seen["plain"][at]
                                for at in range(rounds) if (at % 2 == 0) == (first == "plain"))
        for first in ("plain", "production") if rounds > 1 or first == "plain"
    }
    print("production / plain, by which was first: "
          + ", ".join(f"{first} first {ratio:.2f}" for first, ratio in firsts.items()))
    print(f"production / plain over {rounds} rounds: {production / plain:.2f}x "
          f"(means {production:.1f} / {plain:.1f} µs per call)")


if __name__ == "__main__":
    main()
