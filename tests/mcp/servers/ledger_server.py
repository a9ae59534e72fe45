"""A real MCP server for the tests, written with the ``mcp`` package.

Run over stdio (the default) or over Streamable HTTP on loopback (``--http``: it binds
127.0.0.1 on a free port and prints ``PORT <n>`` on its first stdout line). With
``--token-env NAME`` every HTTP request must carry ``Authorization: Bearer <$NAME>``, else 401.
``--name`` sets the server's name, ``--tools`` limits the tools it offers.

Tools: ``echo``, ``add`` (structured result), ``wait`` (sleeps; a cancellation is recorded),
``hang_once`` (the first call with a tag hangs until cancelled, later ones return at once),
``fail`` (an error result), ``pid`` (this process), ``cancellations`` (calls waiting now,
calls cancelled, and the request ids ``notifications/cancelled`` named).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

CANCELLED: list[dict[str, str]] = []
NOTIFIED: list[str] = []
WAITING: set[str] = set()
HUNG: set[str] = set()


class CancelNotificationLog:
    """Server middleware that records the request ids ``notifications/cancelled`` names."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method == "notifications/cancelled":
            NOTIFIED.append(str((ctx.params or {}).get("requestId")))
        return await call_next(ctx)


def build_server(name: str, only: set[str] | None) -> MCPServer:
    """The server with its tools (all, or those in ``only``)."""
    server = MCPServer(name, middleware=[CancelNotificationLog()], log_level="WARNING")

    async def echo(text: str) -> str:
        return text

    async def add(a: int, b: int) -> dict[str, int]:
        return {"sum": a + b}

    async def wait(seconds: float, ctx: Context, tag: str = "") -> str:
        WAITING.add(tag)
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            CANCELLED.append({"tag": tag, "request_id": ctx.request_id})
            raise
        finally:
            WAITING.discard(tag)
        return f"waited {seconds:g} s"

    async def hang_once(tag: str, ctx: Context) -> dict[str, str]:
        if tag in HUNG:
            return {"status": "done", "tag": tag}
        HUNG.add(tag)
        await wait(3600, ctx, tag)
        return {"status": "unreachable", "tag": tag}

    async def fail(message: str) -> str:
        raise ToolError(message)

    async def pid() -> int:
        return os.getpid()

    async def cancellations() -> dict[str, list[Any]]:
        return {
            "waiting": sorted(WAITING),
            "cancelled": list(CANCELLED),
            "notified": list(NOTIFIED),
        }

    descriptions = {
        echo: "Echo a text back",
        add: "Add two integers",
        wait: "Wait a number of seconds",
        hang_once: "Hang until cancelled the first time a tag is used",
        fail: "Always fail with the given message",
        pid: "The server's process id",
        cancellations: "Tool calls that were cancelled",
    }
    for function, description in descriptions.items():
        if only is None or function.__name__ in only:
            server.tool(description=description)(function)
    return server


def serve_http(server: MCPServer, token: str) -> None:
    """Serve Streamable HTTP on a free loopback port, announced on stdout."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections queue from now on, before uvicorn accepts them
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = guarded(server.streamable_http_app(), token)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])


def guarded(app: Any, token: str) -> Any:
    """The app, refusing HTTP requests without the bearer token (when one is set)."""
    expected = f"Bearer {token}".encode()

    async def guard(scope: Any, receive: Any, send: Any) -> None:
        if (
            token
            and scope["type"] == "http"
            and dict(scope["headers"]).get(b"authorization") != expected
        ):
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    return guard


def main() -> None:
    """Parse the options and serve."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="ledger")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--token-env", default="")
    parser.add_argument("--tools", default="")
    args = parser.parse_args()
    only = set(args.tools.split(",")) if args.tools else None
    server = build_server(args.name, only)
    if args.http:
        serve_http(server, os.environ.get(args.token_env, "") if args.token_env else "")
    else:
        print(f"{args.name}: serving over stdio", file=sys.stderr, flush=True)
        server.run()


if __name__ == "__main__":
    main()
