"""One live MCP client session with one server, over stdio or Streamable HTTP.

The ``mcp`` package's transports and client are anyio context managers that must be entered
and left by the same task, while voicegate calls tools from whichever turn is running. So each
connection has an owner task (created in the runtime's task group, never fire-and-forget) that
opens the transport, lists the tools, hands them back, and holds the session open until
:meth:`McpConnection.close`. Turns call :meth:`McpConnection.call` from their own tasks: the
session multiplexes JSON-RPC requests, and a caller cancelled mid-call makes the client send
``notifications/cancelled`` for its request (on a 2026-07-28 Streamable HTTP session the
request's response stream is closed instead, which is that protocol's cancellation signal).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CONNECTION_CLOSED, CallToolResult, Implementation, Tool

from voicegate.clock.virtual import holding, real_time
from voicegate.errors import McpServerError
from voicegate.mcp.config import HttpTransport, McpServerConfig, StdioTransport
from voicegate.mcp.watch import watched

log = logging.getLogger(__name__)

#: A stdio ``command`` naming Python runs the interpreter voicegate runs on, so a server
#: shipped with a project finds the ``mcp`` package that voicegate depends on.
PYTHON_COMMANDS = frozenset({"python", "python3"})

#: How long ``close`` waits for the owner task to shut the transport down before cancelling.
CLOSE_PATIENCE = 5.0

#: tools/list pages read at most (a server whose cursor never ends cannot hang startup).
MAX_LIST_PAGES = 100

#: How voicegate introduces itself to servers.
CLIENT_INFO = Implementation(name="voicegate", version="0.1.0")

_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the mcp package's own defaults


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    """How servers are started and reached (built by the CLI)."""

    project_root: Path
    python: str = field(default_factory=lambda: sys.executable)
    connect_timeout: float = 15.0
    stderr: TextIO | None = None


class McpConnection:
    """A session with one server, opened by :meth:`open` and held until :meth:`close`."""

    def __init__(self, server: McpServerConfig, options: LaunchOptions) -> None:
        self.server = server
        self._options = options
        self._client: Client | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._broken = False
        self._http_refusal = ""  # the last HTTP error status, which the mcp client drops

    @property
    def usable(self) -> bool:
        """Open, and no call has found the server gone."""
        task = self._task
        return (
            self._client is not None and not self._broken and task is not None and not task.done()
        )

    def mark_broken(self) -> None:
        """The transport ended or failed a call: the next call opens a new connection."""
        self._broken = True

    async def open(self, tasks: asyncio.TaskGroup) -> tuple[Tool, ...]:
        """Connect, handshake and list the tools; raises McpServerError saying why not."""
        ready: asyncio.Future[tuple[Tool, ...]] = asyncio.get_running_loop().create_future()
        self._task = tasks.create_task(self._hold(ready), name=f"mcp server {self.server.name}")
        limit = self._options.connect_timeout
        try:
            # A server answers in its own time: virtual time waits for it (docs/replay.md).
            with holding():
                async with asyncio.timeout(limit):
                    return await asyncio.shield(ready)
        except TimeoutError:
            await self.close()
            raise self._failure(f"no answer within {limit:g} s") from None
        except BaseException:
            await self.close()
            raise
        finally:
            if ready.done() and not ready.cancelled():
                ready.exception()  # a failure settled after a timeout counts as retrieved

    async def call(self, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        """One ``tools/call``; MCPError(CONNECTION_CLOSED) when the session is not open."""
        client = self._client
        if client is None or self._broken:
            raise MCPError(CONNECTION_CLOSED, "the connection is closed")
        with holding():  # virtual time stands still until the server answers
            return await client.call_tool(name, dict(arguments))

    async def close(self) -> None:
        """Shut the session down (a stdio server's process is stopped) and wait for it."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if self._client is None:  # still connecting: nothing to wind down gracefully
            task.cancel()
        # A server exits in its own (wall) time: at a replay's full speed the grace periods
        # would be over before it could, and a clean shutdown would be a kill (docs/replay.md).
        with real_time():
            _, pending = await asyncio.wait({task}, timeout=CLOSE_PATIENCE)
        if pending:
            log.warning("MCP server %r did not shut down in time; cancelling", self.server.name)
            task.cancel()
            await asyncio.wait({task})

    async def _hold(self, ready: asyncio.Future[tuple[Tool, ...]]) -> None:
        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(self._client_for(stack))
                tools = await _list_tools(client)
                self._client = client
                if not ready.done():
                    ready.set_result(tools)
                await self._stop.wait()
        except (KeyboardInterrupt, SystemExit, asyncio.CancelledError):
            raise
        except BaseException as error:  # never into the task group: it would cancel its owner
            if ready.done():
                log.warning(
                    "MCP server %r: the session ended: %s", self.server.name, describe(error)
                )
            else:
                ready.set_exception(self._failure(describe(error) + self._http_refusal))
        finally:
            self._client = None
            self._broken = True
            if not ready.done():
                ready.set_exception(self._failure("the session closed while connecting"))

    def _client_for(self, stack: AsyncExitStack) -> Client:
        transport = self.server.transport
        if isinstance(transport, StdioTransport):
            stderr = self._options.stderr or sys.stderr
            opened = stdio_client(self._stdio_parameters(transport), errlog=stderr)
            return Client(
                watched(opened, self.mark_broken), mode="auto", cache=None, client_info=CLIENT_INFO
            )
        http = httpx2.AsyncClient(
            headers=dict(transport.headers),
            timeout=_HTTP_TIMEOUT,
            event_hooks={"response": [self._note_refusal]},
        )
        stack.push_async_callback(http.aclose)
        opened_http = streamable_http_client(transport.url, http_client=http)
        return Client(
            watched(opened_http, self.mark_broken), mode="auto", cache=None, client_info=CLIENT_INFO
        )

    async def _note_refusal(self, response: httpx2.Response) -> None:
        # The mcp client turns an HTTP error into a generic JSON-RPC error; keep the status so
        # a refused token reads as such (contract §10.2: name the failure).
        if response.status_code >= 400:
            refused = " (authentication refused)" if response.status_code in (401, 403) else ""
            self._http_refusal = (
                f"; the server answered HTTP {response.status_code} "
                f"{response.reason_phrase}{refused}"
            )

    def _stdio_parameters(self, transport: StdioTransport) -> StdioServerParameters:
        command = transport.command
        if command in PYTHON_COMMANDS:
            command = self._options.python
        root = self._options.project_root
        cwd = root / transport.cwd if transport.cwd else root
        env = dict(transport.env) or None
        return StdioServerParameters(command=command, args=list(transport.args), env=env, cwd=cwd)

    def _failure(self, cause: str) -> McpServerError:
        return McpServerError(
            f"{self.server.where}: MCP server {self.server.name!r} "
            f"({describe_transport(self.server.transport)}): {cause}"
        )


async def _list_tools(client: Client) -> tuple[Tool, ...]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(tools)


def describe_transport(transport: StdioTransport | HttpTransport) -> str:
    """A short, secret-free description: the command or the URL (headers are never shown)."""
    if isinstance(transport, StdioTransport):
        return "stdio: " + " ".join([transport.command, *transport.args])
    return f"Streamable HTTP: {transport.url}"


def describe(error: BaseException) -> str:
    """What went wrong, readable: exception groups are opened, MCP errors give their message."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in error.exceptions)
    if isinstance(error, httpx2.HTTPStatusError):
        return f"HTTP {error.response.status_code} from {error.request.url}"
    if isinstance(error, MCPError):
        return f"{error.error.message} (MCP error {error.error.code})"
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
