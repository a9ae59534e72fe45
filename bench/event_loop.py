"""Server CPU per WebSocket message (aiohttp receive + send), asyncio's loop against uvloop.

The server is a child process running an aiohttp echo WebSocket on the loop under test; the
clients (this process, aiohttp, stdlib loop) send Twilio-sized ``media`` messages and wait for
each echo. The figure is the server's CPU time (``getrusage``, read over HTTP before and after)
divided by the messages it received, in µs; the medians of ``--runs`` alternating rounds are
reported, because this machine is shared and noisy. It decided ``server.uvloop: true``.

    python bench/event_loop.py [--runs 4] [--connections 50] [--messages 400]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import resource
import statistics
import subprocess
import sys
from collections.abc import Coroutine
from typing import Any

LOOPS = ("asyncio", "uvloop")
#: A Twilio ``media`` message with 20 ms of μ-law audio (providers.md §b.1).
MESSAGE = json.dumps(
    {
        "event": "media",
        "sequenceNumber": "1",
        "streamSid": "MZ" + "0" * 32,
        "media": {
            "track": "inbound",
            "chunk": "1",
            "timestamp": "20",
            "payload": base64.b64encode(b"\xff" * 160).decode(),
        },
    }
)


def cpu_seconds() -> float:
    """This process's user + system CPU time."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def echo_server() -> None:
    """Serve ``/ws`` (echo) and ``/cpu`` on a free port; print the port; run forever."""
    from aiohttp import web

    async def echo(request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse(compress=False)
        await socket.prepare(request)
        async for message in socket:
            await socket.send_str(message.data)
        return socket

    async def cpu(request: web.Request) -> web.Response:
        return web.json_response({"cpu_s": cpu_seconds()})

    app = web.Application()
    app.router.add_get("/ws", echo)
    app.router.add_get("/cpu", cpu)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    print(runner.addresses[0][1], flush=True)
    await asyncio.Event().wait()


async def measure(port: int, connections: int, messages: int) -> float:
    """Server µs of CPU per message received and echoed."""
    import aiohttp

    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as session:

        async def server_cpu() -> float:
            async with session.get(base + "/cpu") as reply:
                return float((await reply.json())["cpu_s"])

        async def one_connection() -> None:
            async with session.ws_connect(base + "/ws", compress=0) as socket:
                for _ in range(messages):
                    await socket.send_str(MESSAGE)
                    await socket.receive()

        before = await server_cpu()
        await asyncio.gather(*(one_connection() for _ in range(connections)))
        after = await server_cpu()
    return (after - before) / (connections * messages) * 1e6


def run_server(loop: str) -> None:
    """The child process: the echo server on ``loop``."""
    main: Coroutine[Any, Any, None] = echo_server()
    if loop == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main)
    else:
        asyncio.run(main)


def one_round(loop: str, connections: int, messages: int) -> float:
    """Start a server on ``loop``, measure it, stop it."""
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", loop], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        return asyncio.run(measure(port, connections, messages))
    finally:
        server.kill()
        server.wait()


def main() -> None:
    """Alternate the loops for ``--runs`` rounds; print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--serve", choices=LOOPS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        run_server(args.serve)
        return
    rounds: dict[str, list[float]] = {loop: [] for loop in LOOPS}
    for _ in range(args.runs):
        for loop in LOOPS:
            rounds[loop].append(one_round(loop, args.connections, args.messages))
    report = {
        "server_cpu_us_per_message": {
            loop: {"median": round(statistics.median(v), 1), "runs": [round(x, 1) for x in v]}
            for loop, v in rounds.items()
        }
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
