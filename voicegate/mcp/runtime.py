"""The MCP servers of a running gateway: started with it, stopped with it.

:class:`McpRuntime` owns the task group every server connection runs in (so no connection
task outlives it). :meth:`McpRuntime.connect` checks the skills' imports, connects every
*referenced* server (a declared server nothing imports is never started), lists its tools and
resolves the imports; any failure raises McpServerError naming the server and the cause, and
the servers already started are stopped when the ``async with`` block is left.

:func:`project_tools` is the one-call form the CLI uses: a project, its declared servers and
the launch options in, a :class:`~voicegate.engine.tools.catalog.ToolCatalog` out holding every
skill's local tools plus its allowlisted MCP tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection, Mapping
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Self

from voicegate.engine.project.model import Project
from voicegate.engine.tools.catalog import ToolCatalog
from voicegate.engine.tools.remote import RemoteTool
from voicegate.mcp.config import McpServerConfig
from voicegate.mcp.connection import LaunchOptions
from voicegate.mcp.imports import (
    McpImport,
    check_imports,
    project_catalog,
    project_imports,
    project_tool_names,
    resolve_imports,
)
from voicegate.mcp.server import McpServer


class McpRuntime:
    """Declared MCP servers, connected on demand and all stopped on exit."""

    def __init__(self, servers: Mapping[str, McpServerConfig], options: LaunchOptions) -> None:
        self.declared = dict(servers)
        self.options = options
        self.servers: dict[str, McpServer] = {}
        self._tasks: asyncio.TaskGroup | None = None

    async def __aenter__(self) -> Self:
        tasks = asyncio.TaskGroup()
        await tasks.__aenter__()
        self._tasks = tasks
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        tasks, self._tasks = self._tasks, None
        try:
            await self.stop()
        finally:
            if tasks is not None:
                # Every connection task has ended in stop(); the group closes empty, and an
                # error from the body propagates as itself rather than in an exception group.
                await tasks.__aexit__(None, None, None)

    async def connect(
        self, imports: Collection[McpImport], taken: Mapping[str, Collection[str]] | None = None
    ) -> dict[str, dict[str, RemoteTool]]:
        """Start the servers ``imports`` reference; each skill's imported tools by name.

        ``taken`` holds each skill's local and shared tool names (an import may not reuse one).
        """
        check_imports(imports, self.declared, taken or {})
        wanted = sorted({item.server for item in imports} - set(self.servers))
        # Servers start side by side; every one is registered first, so all are stopped on
        # exit, and the first failure in name order is the one reported.
        started = await asyncio.gather(
            *(self._start(name) for name in wanted), return_exceptions=True
        )
        for outcome in started:
            if isinstance(outcome, BaseException):
                raise outcome
        return resolve_imports(imports, self.servers)

    async def stop(self) -> None:
        """Stop every started server (stdio processes are ended), last started first."""
        for server in reversed(list(self.servers.values())):
            await server.stop()

    async def _start(self, name: str) -> None:
        if self._tasks is None:
            raise RuntimeError("use McpRuntime in 'async with' before connecting servers")
        server = McpServer(self.declared[name], self.options, self._tasks)
        self.servers[name] = server  # registered first, so a half-started server is stopped
        await server.start()


@asynccontextmanager
async def project_tools(
    project: Project, servers: Mapping[str, McpServerConfig], options: LaunchOptions
) -> AsyncIterator[ToolCatalog]:
    """Connect the servers ``project`` imports from; yield its tool catalog; stop them."""
    async with McpRuntime(servers, options) as runtime:
        imports = project_imports(project)
        imported = await runtime.connect(imports, project_tool_names(project))
        yield project_catalog(project, imported)
