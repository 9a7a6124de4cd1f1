"""The official Python SDK's OAuth support against toolgate mcp-proxy --auth: a small
authorization server started here (RFC 8414 metadata, a JWKS, a client-credentials token
endpoint that binds each token to the resource it is asked for, RFC 8707) issues RS256 tokens;
the SDK's ClientCredentialsOAuthProvider discovers it from the proxy's 401 and its protected
resource metadata (RFC 9728), obtains a token and calls through the proxy. A client whose
registration holds no `tools:call` scope sees no tool and is refused the call; the proxy's
audit names each caller; nothing the SDK sent upstream is its token.

    python python_oauth.py TOOLGATE CONTRACTS SERVER_EVERYTHING WORK_DIR
"""

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# Each client and the scopes its registration may be granted.
CLIENTS = {
    "agent-7": ("secret-7", {"mcp", "tools:call"}),
    "reader-3": ("secret-3", {"mcp"}),
}


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class AuthorizationServer:
    """RS256 tokens for the registered clients, each bound to the resource it names."""

    def __init__(self):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        jwk.update(kid="as-1", alg="RS256", use="sig")
        self.jwks = {"keys": [jwk]}
        self.issued = []
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
                    return self.answer(200, {
                        "issuer": server.issuer,
                        "authorization_endpoint": f"{server.issuer}/authorize",
                        "token_endpoint": f"{server.issuer}/token",
                        "jwks_uri": f"{server.issuer}/jwks",
                        "response_types_supported": ["code"],
                        "grant_types_supported": ["client_credentials"],
                        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                        "scopes_supported": ["mcp", "tools:call"],
                    })
                if self.path == "/jwks":
                    return self.answer(200, server.jwks)
                self.answer(404, {"error": "not_found"})

            def do_POST(self):
                if self.path != "/token":
                    return self.answer(404, {"error": "not_found"})
                length = int(self.headers.get("Content-Length", "0"))
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                basic = self.headers.get("Authorization", "")
                try:
                    client_id, secret = base64.b64decode(basic.removeprefix("Basic ")).decode().split(":", 1)
                    client_id, secret = urllib.parse.unquote(client_id), urllib.parse.unquote(secret)
                except Exception:
                    return self.answer(401, {"error": "invalid_client"})
                registered = CLIENTS.get(client_id)
                if registered is None or registered[0] != secret:
                    return self.answer(401, {"error": "invalid_client"})
                if form.get("grant_type") != ["client_credentials"]:
                    return self.answer(400, {"error": "unsupported_grant_type"})
                asked = set(form.get("scope", [""])[0].split())
                granted = " ".join(sorted(asked & registered[1]))
                resource = form.get("resource", [None])[0]
                now = int(time.time())
                claims = {"iss": server.issuer, "sub": client_id, "scope": granted, "iat": now, "exp": now + 300}
                if resource:
                    claims["aud"] = resource
                token = jwt.encode(claims, server.key, algorithm="RS256", headers={"kid": "as-1"})
                server.issued.append((client_id, resource, granted, token))
                self.answer(200, {"access_token": token, "token_type": "Bearer", "expires_in": 300, "scope": granted})

        self.http = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


class MemoryStorage:
    def __init__(self):
        self.tokens, self.client = None, None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


def client_for(url, issuer, client_id):
    provider = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=MemoryStorage(),
        client_id=client_id,
        client_secret=CLIENTS[client_id][0],
        scope="mcp tools:call",
        issuer=issuer,
    )
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(auth=provider)), mode="legacy")


async def exercise(url, authorization, audit, upstream_log):
    failures = []
    # The challenge a client starts from.
    try:
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}", headers={"Content-Type": "application/json"}))
        failures.append("a POST without a token was served")
    except urllib.error.HTTPError as refused:
        challenge = refused.headers.get("WWW-Authenticate", "")
        if refused.code != 401 or "resource_metadata=" not in challenge:
            failures.append(f"no token: wanted 401 naming the metadata, got {refused.code} {challenge!r}")
    try:
        async with client_for(url, authorization.issuer, "agent-7") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            if names != ["get-structured-content"]:
                failures.append(f"agent-7 lists the contracted tool, got {names}")
            admitted = await client.call_tool("get-structured-content", {"location": "New York"})
            data = (admitted.structured_content or {}).get("data") or {}
            if admitted.is_error or data.get("temperature") != 33:
                failures.append(f"agent-7's call is served as the projection, got {admitted}")
    except Exception as error:
        failures.append(f"agent-7: {type(error).__name__}: {error}")
    issued = [entry for entry in authorization.issued if entry[0] == "agent-7"]
    if not issued or any(resource != url for _, resource, _, _ in issued):
        failures.append(f"agent-7's tokens are bound to the proxy's resource: {[entry[:3] for entry in issued]}")
    try:
        async with client_for(url, authorization.issuer, "reader-3") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            if names:
                failures.append(f"reader-3 (no tools:call) sees no tool, got {names}")
            try:
                result = await client.call_tool("get-structured-content", {"location": "New York"})
                failures.append(f"reader-3's call is refused, got {result}")
            except Exception:
                pass
    except Exception as error:
        failures.append(f"reader-3: {type(error).__name__}: {error}")
    callers = set()
    with open(audit) as lines:
        for line in lines:
            callers.add(json.loads(line).get("caller"))
    if callers != {"agent-7"}:
        failures.append(f"the audit names the callers that called: {callers}")
    with open(upstream_log, errors="replace") as seen:
        text = seen.read()
    for _, _, _, token in authorization.issued:
        if token.rsplit(".", 1)[1] in text:
            failures.append("a caller's token reached the upstream")
    return failures


async def main():
    toolgate, contracts, everything, work = sys.argv[1:5]
    authorization = AuthorizationServer()
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    auth = os.path.join(work, "oauth-auth.yaml")
    with open(auth, "w") as file:
        file.write(
            f"resource: {url}\nauthorization_servers: [{authorization.issuer}]\n"
            f"jwks: {authorization.issuer}/jwks\nalgorithms: [RS256]\nscopes: [mcp]\n"
            "other_tools:\n  scopes: [tools:call]\n"
        )
    audit = os.path.join(work, "oauth-audit.jsonl")
    if os.path.exists(audit):
        os.remove(audit)
    upstream_log = os.path.join(work, "oauth-listener.err")
    with open(upstream_log, "w") as stderr:
        proxy = subprocess.Popen(
            [toolgate, "mcp-proxy", "--root", contracts, "--listen", f"127.0.0.1:{port}", "--auth", auth,
             "--audit", audit, "--", "node", everything, "stdio"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
        )
    try:
        for _ in range(200):
            with open(upstream_log) as said:
                if "listening on" in said.read():
                    break
            time.sleep(0.05)
        failures = await exercise(url, authorization, audit, upstream_log)
    finally:
        proxy.kill()
        proxy.wait()
    if failures:
        print("FAIL Python SDK OAuth (client credentials) through --auth:\n  " + "\n  ".join(failures), file=sys.stderr)
        sys.exit(1)
    print("ok   Python SDK OAuth (client credentials) through --auth: discovered, token bound to the resource, scopes per tool, callers audited")


asyncio.run(main())
