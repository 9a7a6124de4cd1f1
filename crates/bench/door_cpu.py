"""What each door costs the process that runs it, per call (BENCHMARKS.md, "The doors: CPU per
call"): `toolgate mcp-proxy --listen` in front of the minimal HTTP MCP server (`mcp_http_server`),
against `toolgate ext-proc` (one gRPC stream of four messages a call, as Envoy sends them with
BUFFERED bodies) and `toolgate ext-mcp` (CheckRequest and CheckResponse a call, as agentgateway
makes them), each door with --threads 1 as the listener runs with --http-threads 1. The three serve the same contract (tests/mcp's weather) and take the calls in
alternating blocks of BLOCK, each round a new trio, so the drift of a shared machine weighs on all
three alike; the CPU is each toolgate process's own (the scheduler's count), so the clients' (the
Python gRPC stacks') does not count. A door decides the upstream answer the client hands it; the
listener's figure holds its upstream client's work too (the upstream server's own CPU does not
count).

Run it with the doors' Python environment (`crates/doors/ci/run.sh` makes it: envoy-data-plane,
grpcio, and the ExtMcp client generated in target/doors-ci/generated):

    target/doors-ci/venv/bin/python crates/bench/door_cpu.py TOOLGATE MCP_HTTP_SERVER [CALLS] [ROUNDS]
"""

import asyncio
import http.client
import json
import os
import statistics
import sys

import grpc
from envoy_data_plane.envoy.config.core.v3 import HeaderMap, HeaderValue
from envoy_data_plane.envoy.service.ext_proc.v3 import (
    ExternalProcessorAsyncStub,
    HttpBody,
    HttpHeaders,
    ProcessingRequest,
)
from google.protobuf import struct_pb2
from grpclib.client import Channel

from benchlib import CALL, REPO, arguments, cpu_ns, started

sys.path.insert(0, os.path.join(REPO, "target/doors-ci/generated"))
import ext_mcp_pb2  # noqa: E402
import ext_mcp_pb2_grpc  # noqa: E402

BLOCK = 100
# Each front on one thread, as the listener runs with --http-threads 1 (DOOR_THREADS=default: the
# runtime's one per core).
THREADS = [] if os.environ.get("DOOR_THREADS") == "default" else ["--threads", os.environ.get("DOOR_THREADS", "1")]
ANSWER = ('{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"clear"}],'
          '"structuredContent":{"city":"Lisbon","temperature_c":21.5,"conditions":"clear"},'
          '"resultType":"complete"}}')
ARGUMENTS = json.dumps({"name": "weather", "arguments": {"city": "Lisbon"}}).encode()
RESULT = ('{"content":[{"type":"text","text":"clear"}],"structuredContent":'
          '{"city":"Lisbon","temperature_c":21.5,"conditions":"clear"}}').encode()


def headers(pairs):
    return HttpHeaders(headers=HeaderMap(headers=[HeaderValue(key=k, raw_value=v.encode()) for k, v in pairs]))


class Listener:
    def __init__(self, toolgate, server):
        self.upstream, url = started([server, "127.0.0.1:0"], "listening on ", stream="stdout")
        self.process, listening = started(
            [toolgate, "mcp-proxy", "--root", f"{REPO}/tests/mcp", "--listen", "127.0.0.1:0",
             "--http-threads", "1", "--", url], "listening on http://")
        host, port = listening.removesuffix("/mcp").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=30)

    def calls(self, first, last, loop):
        base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "weather"}
        for n in range(first, last):
            self.connection.request("POST", "/mcp", CALL % n, base)
            body = self.connection.getresponse().read()
            assert b'"outcome":"success"' in body, body[:300]

    def stop(self):
        for process in (self.process, self.upstream):
            process.terminate()
            process.wait(timeout=60)


class ExtProc:
    def __init__(self, toolgate, loop):
        self.process, address = started(
            [toolgate, "ext-proc", "--root", f"{REPO}/tests/mcp", "--listen", "127.0.0.1:0",
             "--drain-timeout", "1s", *THREADS], "grpc://")
        host, port = address.rsplit(":", 1)
        self.channel = loop.run_until_complete(self._channel(host, int(port)))
        self.stub = ExternalProcessorAsyncStub(self.channel)

    async def _channel(self, host, port):
        return Channel(host, port)

    async def one(self, n):
        queue = asyncio.Queue()

        async def messages():
            while (message := await queue.get()) is not None:
                yield message

        replies = self.stub.process(messages()).__aiter__()
        for message in (
            ProcessingRequest(request_headers=headers([(":method", "POST"), ("content-type", "application/json")])),
            ProcessingRequest(request_body=HttpBody(body=(CALL % n).encode(), end_of_stream=True)),
            ProcessingRequest(response_headers=headers([(":status", "200"), ("content-type", "application/json")])),
            ProcessingRequest(response_body=HttpBody(body=(ANSWER % n).encode(), end_of_stream=True)),
        ):
            await queue.put(message)
            reply = await replies.__anext__()
        await queue.put(None)
        assert b'"outcome":"success"' in reply.response_body.response.body_mutation.body

    def calls(self, first, last, loop):
        for n in range(first, last):
            loop.run_until_complete(self.one(n))

    def stop(self):
        self.channel.close()
        self.process.terminate()
        self.process.wait(timeout=60)


class ExtMcp:
    def __init__(self, toolgate):
        self.process, address = started(
            [toolgate, "ext-mcp", "--root", f"{REPO}/tests/mcp", "--listen", "127.0.0.1:0",
             "--drain-timeout", "1s", *THREADS], "grpc://")
        self.channel = grpc.insecure_channel(address)
        self.stub = ext_mcp_pb2_grpc.ExtMcpStub(self.channel)
        self.context = struct_pb2.Struct()
        self.context.update({"tool": "weather", "arguments": {"city": "Lisbon"}})

    def calls(self, first, last, loop):
        for n in range(first, last):
            self.context["requestId"] = n
            self.stub.CheckRequest(ext_mcp_pb2.McpRequest(
                method="tools/call", mcp_request=ARGUMENTS, metadata_context=self.context))
            answer = self.stub.CheckResponse(ext_mcp_pb2.McpResponse(
                method="tools/call", mcp_response=RESULT, metadata_context=self.context))
            assert b'"outcome":"success"' in answer.mutated, answer

    def stop(self):
        self.channel.close()
        self.process.terminate()
        self.process.wait(timeout=60)


def main():
    toolgate, server = arguments(2, "door_cpu.py TOOLGATE MCP_HTTP_SERVER [CALLS] [ROUNDS]")[:2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    loop = asyncio.new_event_loop()
    seen = {"listener": [], "ext-proc": [], "ext-mcp": []}
    for round in range(rounds):
        doors = {"listener": Listener(toolgate, server), "ext-proc": ExtProc(toolgate, loop),
                 "ext-mcp": ExtMcp(toolgate)}
        order = list(doors) if round % 2 == 0 else list(reversed(doors))
        try:
            for name in order:
                doors[name].calls(0, 1000, loop)  # warm
            before = {name: cpu_ns(door.process.pid) for name, door in doors.items()}
            for first in range(0, calls, BLOCK):
                for name in order:
                    doors[name].calls(first, min(first + BLOCK, calls), loop)
            for name, door in doors.items():
                seen[name].append((cpu_ns(door.process.pid) - before[name]) / calls / 1000)
        finally:
            for door in doors.values():
                door.stop()
    for name, values in seen.items():
        print(f"{name}: {', '.join(f'{value:.1f}' for value in values)} µs per call")
    listener = statistics.fmean(seen["listener"])
    for name in ("ext-proc", "ext-mcp"):
        mean = statistics.fmean(seen[name])
        print(f"{name} / listener over {rounds} rounds: {mean / listener:.2f}x "
              f"(means {mean:.1f} / {listener:.1f} µs per call)")


if __name__ == "__main__":
    main()
