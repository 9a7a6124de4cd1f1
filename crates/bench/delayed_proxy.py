"""A TCP forwarder that holds each chunk a client sends for DELAY_MS before passing it on: a
server on loopback made to answer as one across a network does (BENCHMARKS.md, "Listing a large
bucket"), where `tc netem` is not at hand.

    python3 delayed_proxy.py LISTEN_PORT TARGET_PORT DELAY_MS
"""

import asyncio

from benchlib import arguments


async def pipe(reader, writer, delay):
    try:
        while chunk := await reader.read(65536):
            if delay:
                await asyncio.sleep(delay)
            writer.write(chunk)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main():
    usage = "delayed_proxy.py LISTEN_PORT TARGET_PORT DELAY_MS"
    listen, target, delay_ms = (int(value) for value in arguments(3, usage)[:3])

    async def forward(client_reader, client_writer):
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target)
        await asyncio.gather(
            pipe(client_reader, server_writer, delay_ms / 1000),
            pipe(server_reader, client_writer, 0),
        )

    server = await asyncio.start_server(forward, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


asyncio.run(main())
