"""The production configuration's CPU per call against the plain listener's (BENCHMARKS.md,
"Signed audit at a cost that fits every call"): `toolgate mcp-proxy --listen` in front of the
minimal HTTP MCP server (`mcp_http_server`), sequential `tools/call`s over one kept-alive
connection, the proxy's CPU from its scheduler counts (/proc/PID/task/*/schedstat), in turns:
plain, then with every production part on (`--auth` with the caller's token cached, a signed
audit log, 1 % of admissions and every refusal retained to an S3-compatible store), ROUNDS times
each, alternating, and the ratio of the medians.

Needs PyJWT and cryptography (to sign the caller's token) and an S3-compatible endpoint in
TOOLGATE_S3_ENDPOINT (`.ci/s3-server` starts moto; credentials from the environment).

    python3 production_cpu.py TOOLGATE MCP_HTTP_SERVER [CALLS] [ROUNDS]
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

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESOURCE = "https://toolgate.bench/mcp"
ISSUER = "https://auth.bench"
CALL = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Lisbon"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'


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


def started(command, pattern, stream="stderr"):
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


def measure(address, calls, headers, pid):
    host, port = address.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
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

    for n in range(50):  # warm: the token verified and cached, the contract's series made
        call(n)
    before = cpu_ns(pid)
    for n in range(calls):
        call(n)
    return (cpu_ns(pid) - before) / calls / 1000


def main():
    toolgate, server = sys.argv[1], sys.argv[2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
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
    upstream, url = started([server, "127.0.0.1:0"], "listening on ", stream="stdout")
    parts = {
        "auth": ["--auth", f"{work}/auth.yaml"],
        "audit": ["--audit", f"{work}/audit.jsonl", "--audit-key", f"{work}/audit.pem"],
        "audit-unsigned": ["--audit", f"{work}/unsigned.jsonl"],
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
    try:
        for _ in range(rounds):
            for name, (args, headers) in configurations.items():
                proxy, listening = started(
                    [toolgate, "mcp-proxy", "--root", f"{REPO}/tests/mcp", "--listen", "127.0.0.1:0",
                     "--http-threads", "1", *args, "--", url], "listening on http://")
                try:
                    seen[name].append(measure(listening.removesuffix("/mcp"), calls, headers, proxy.pid))
                finally:
                    proxy.terminate()
                    proxy.wait(timeout=60)
    finally:
        upstream.kill()
    plain, production = (statistics.median(seen[name]) for name in ("plain", "production"))
    for name, values in seen.items():
        print(f"{name}: {', '.join(f'{value:.1f}' for value in values)} µs per call")
    print(f"production / plain, medians of {rounds}: {production:.1f} / {plain:.1f} µs = {production / plain:.2f}x")


if __name__ == "__main__":
    main()
