"""Helpers of the MCP tests: the test server's declarations, an HTTP server process."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from voicegate.engine.seam import TurnEvent, TurnEventStream
from voicegate.mcp.config import McpServerConfig, parse_mcp_servers
from voicegate.mcp.connection import LaunchOptions
from voicegate.mcp.server import McpServer

HERE = Path(__file__).resolve().parent
LEDGER = HERE / "servers" / "ledger_server.py"

#: Every bounded wait in these tests; a hang fails the test instead of the suite.
PATIENCE = 20.0

#: Seconds between two looks at a server's state.
POLL = 0.02


def stdio_entry(name: str = "ledger", **extra: Any) -> dict[str, Any]:
    """An ``mcp_servers`` entry running the ledger server over stdio."""
    args = [str(LEDGER), "--name", name, *extra.pop("server_args", [])]
    return {"name": name, "command": "python", "args": args, **extra}


def servers_of(*entries: Mapping[str, Any]) -> dict[str, McpServerConfig]:
    """Parsed ``mcp_servers`` entries."""
    return parse_mcp_servers({"mcp_servers": list(entries)}, "integrations.yml")


def launch_options(**extra: Any) -> LaunchOptions:
    """Servers run in this folder with this interpreter."""
    return LaunchOptions(**{"project_root": HERE, "python": sys.executable, **extra})


@contextmanager
def http_server(
    token_env: str = "", env: Mapping[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Run the ledger server over Streamable HTTP on loopback; yields its URL and process."""
    command = [sys.executable, str(LEDGER), "--http", "--name", "remote"]
    if token_env:
        command += ["--token-env", token_env]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env=dict(env) if env is not None else None
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT "), f"the HTTP server did not start: {line!r}"
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp", process
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


async def bounded(awaitable: Any) -> Any:
    """Await with the tests' patience."""
    async with asyncio.timeout(PATIENCE):
        return await awaitable


async def server_state(server: McpServer) -> dict[str, Any]:
    """The ledger server's ``cancellations`` report (waiting, cancelled, notified)."""
    result = await bounded(server.run("cancellations", {}))
    report: dict[str, Any] = result.llm_response
    return report


async def until_state(
    server: McpServer, reached: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """Poll the server's report (another process: nothing to await) until ``reached``."""
    for _ in range(int(PATIENCE / POLL)):
        state = await server_state(server)
        if reached(state):
            return state
        await asyncio.sleep(POLL)
    raise AssertionError(f"the MCP server never reached the expected state: {state}")


async def until_waiting(server: McpServer, tag: str) -> None:
    """Poll until the server is inside a ``wait`` call tagged ``tag``."""
    await until_state(server, lambda state: tag in state["waiting"])


async def consume(stream: TurnEventStream, received: list[TurnEvent]) -> None:
    """The gateway's turn task: iterate the turn, close the stream however it ends."""
    async with stream:
        async for event in stream:
            received.append(event)
