"""What the engine needs of a tool to offer it to the model and run it.

A project's ``@tool`` functions (:class:`~voicegate.engine.tools.decorator.Tool`) and tools
that run elsewhere (:class:`~voicegate.engine.tools.remote.RemoteTool`, e.g. an MCP server's)
both satisfy :class:`InvocableTool`, so the catalog, the dispatcher and the cancellation
contract treat them alike (contract §8.6: MCP tools time out and cancel as local ones do).
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import Any, Literal, Protocol

from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.schema import ToolSpec

#: Where a call ran, as the tracker records it (contract §10.3: ``tool_executed`` ``source``).
ToolSource = Literal["local", "mcp"]


class InvocableTool(Protocol):
    """A tool the model can be offered and the engine can call."""

    @property
    def name(self) -> str:
        """The bare name the model calls it by."""
        ...

    @property
    def spec(self) -> ToolSpec:
        """The schema the model sees."""
        ...

    @property
    def source(self) -> ToolSource:
        """Where the call runs."""
        ...

    @property
    def time_limit(self) -> float | None:
        """The tool's own wall-clock limit in seconds; None means the agent's ``tool_timeout``."""
        ...

    @property
    def run_early(self) -> bool:
        """Whether a speculative turn may run it before it is confirmed (issue 14)."""
        ...

    def argument_problem(self, arguments: Mapping[str, Any]) -> str | None:
        """Why ``arguments`` cannot be passed to the tool, or None when they can."""
        ...

    def invoke(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> Coroutine[Any, Any, Any]:
        """Start one call; the coroutine returns a ToolResult or raises."""
        ...
