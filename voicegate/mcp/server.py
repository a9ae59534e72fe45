"""One declared MCP server for the life of the gateway: connected, listed, reconnected.

Startup connects and lists (contract §10.2: a failure stops startup, naming the server and
the cause). Afterwards a call that finds the server gone (its process died, the connection
dropped) fails as a *tool failure* the model reads (§11 q28 leaves the policy open; voicegate
chooses this so a session never dies with a server), and the next call opens a new connection
first. A cancelled call is neither a failure nor a reason to reconnect: the cancellation
propagates untouched (design §4) after the client has told the server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from mcp import MCPError
from mcp.types import CONNECTION_CLOSED, CallToolResult, Tool

from voicegate.engine.tools.result import ToolResult
from voicegate.errors import McpServerError, ToolExecutionError
from voicegate.mcp.config import McpServerConfig
from voicegate.mcp.connection import LaunchOptions, McpConnection, describe
from voicegate.mcp.results import error_text_of, llm_response_of

log = logging.getLogger(__name__)


class McpServer:
    """A server's live connection (replaced when it breaks) and its startup tool listing."""

    def __init__(
        self, config: McpServerConfig, options: LaunchOptions, tasks: asyncio.TaskGroup
    ) -> None:
        self.config = config
        self._options = options
        self._tasks = tasks
        self._connection: McpConnection | None = None
        self._lock = asyncio.Lock()
        self.tools: Mapping[str, Tool] = {}
        self.connections_opened = 0

    @property
    def name(self) -> str:
        """The server id of ``mcp/<server>:<tool>``."""
        return self.config.name

    @property
    def connected(self) -> bool:
        """Whether a usable session is open (false once the server's side has ended)."""
        return self._connection is not None and self._connection.usable

    async def start(self) -> None:
        """Connect and list the tools; raises McpServerError naming the server and cause."""
        async with self._lock:
            connection = await self._connect()
            self._connection = connection

    async def run(self, tool: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call ``tool``; an error result or a lost server raises ToolExecutionError."""
        result = await self._call(tool, arguments)
        if result.is_error:
            raise ToolExecutionError(
                f"MCP tool {tool!r} (server {self.name!r}) failed: {error_text_of(result)}"
            )
        return ToolResult(llm_response_of(result))

    async def stop(self) -> None:
        """Close the connection (a stdio server's process is stopped)."""
        async with self._lock:
            connection, self._connection = self._connection, None
            if connection is not None:
                await connection.close()

    async def _call(self, tool: str, arguments: Mapping[str, Any]) -> CallToolResult:
        connection = await self._live_connection()
        try:
            return await connection.call(tool, arguments)
        except Exception as error:
            # Tool errors arrive as results; an exception is the session failing (the server
            # went away, or answered outside the protocol): the next call opens a new one.
            raise self._lost(connection, tool, error) from None

    async def _live_connection(self) -> McpConnection:
        async with self._lock:
            connection = self._connection
            if connection is not None and connection.usable:
                return connection
            self._connection = None
            if connection is not None:
                await connection.close()
            try:
                self._connection = await self._connect()
            except McpServerError as error:
                raise ToolExecutionError(
                    f"MCP server {self.name!r} is unavailable: cannot reconnect: {error}"
                ) from None
            log.info("MCP server %r reconnected", self.name)
            return self._connection

    async def _connect(self) -> McpConnection:
        connection = McpConnection(self.config, self._options)
        listed = await connection.open(self._tasks)
        self.connections_opened += 1
        if not self.tools:
            self.tools = {tool.name: tool for tool in listed}
        return connection

    def _lost(self, connection: McpConnection, tool: str, error: Exception) -> ToolExecutionError:
        connection.mark_broken()
        log.warning("MCP server %r failed a call to %r: %s", self.name, tool, describe(error))
        gone = isinstance(error, MCPError) and error.error.code == CONNECTION_CLOSED
        what = "went away during the call" if gone else "failed the call"
        return ToolExecutionError(
            f"MCP tool {tool!r} failed: the server {self.name!r} {what} ({describe(error)}); "
            "it will be reconnected for the next call"
        )
