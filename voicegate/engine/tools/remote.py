"""Tools that run outside the project's Python code, invoked through a coroutine.

An MCP server's tool (contract §10.3) is one: it gets no ``ToolContext`` (it cannot write
memory or send messages), its arguments are checked by the server against its own schema, and
it may carry its own time limit (the server's ``tool_timeout``). The call is awaited by the
same :func:`~voicegate.engine.tools.invoke.invoke_tool` as a local tool, so a barge-in raises
``asyncio.CancelledError`` at the remote call's ``await`` and the call is not recorded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.invocable import ToolSource
from voicegate.engine.tools.result import ToolResult
from voicegate.engine.tools.schema import ToolSpec

#: Runs one call with the model's arguments; raises ToolExecutionError when the call failed.
RemoteCall = Callable[[Mapping[str, Any]], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A tool served elsewhere, offered to the model under ``spec.name``."""

    spec: ToolSpec
    call: RemoteCall
    source: ToolSource = "mcp"
    time_limit: float | None = None
    #: A remote tool's effects are unknown: it never runs in an unconfirmed speculative turn.
    run_early: bool = False

    @property
    def name(self) -> str:
        """The bare name the model calls it by."""
        return self.spec.name

    def argument_problem(self, arguments: Mapping[str, Any]) -> str | None:
        """Missing required arguments; the server checks everything else against its schema."""
        required = self.spec.parameters.get("required", [])
        missing = [name for name in required if name not in arguments]
        return f"missing required arguments {missing}" if missing else None

    def invoke(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> Coroutine[Any, Any, ToolResult]:
        """Start the remote call (the context is not passed on: remote tools get none)."""
        return self._run(arguments)

    async def _run(self, arguments: Mapping[str, Any]) -> ToolResult:
        return await self.call(arguments)
