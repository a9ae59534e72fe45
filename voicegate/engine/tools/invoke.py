"""Running one tool call: argument check, wall-clock timeout, failure capture.

Contract §8.6: each call has a wall-clock limit (``tool_timeout``, default 10 s; an MCP tool
uses its server's ``tool_timeout`` when set, carried as the tool's own ``time_limit``). A
timeout or an exception is a *failure* reported to the model; a cancellation is not a failure
and is never caught here: ``asyncio.CancelledError`` propagates so the caller records nothing.
The same holds for local ``@tool`` functions and remote tools (``InvocableTool``).

Local ``@tool`` functions run on a tool loop thread when ``tool_loops`` is given (the engine
always gives it; issue 12): the limit is then enforced by the engine's loop even when the tool
blocks its own thread, and the turn goes on with a timed-out tool.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from voicegate.engine.history import ToolOutcomeKind
from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.invocable import InvocableTool
from voicegate.engine.tools.isolation import (
    CompletedBeforeCancel,
    EngineCalls,
    ToolExited,
    ToolLoops,
    contained,
)
from voicegate.engine.tools.result import ToolResult
from voicegate.errors import ToolExecutionError, ToolTimeoutError

log = logging.getLogger(__name__)

DEFAULT_TOOL_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """How a call ended and what the model reads back (the result, or ``{"error": ...}``)."""

    kind: ToolOutcomeKind
    llm_response: Any
    error: str | None = None

    @classmethod
    def ok(cls, llm_response: Any) -> ToolOutcome:
        """A call that returned a ToolResult."""
        return cls("ok", llm_response)

    @classmethod
    def failure(cls, error: ToolExecutionError) -> ToolOutcome:
        """A call that failed; the model reads the error message."""
        kind: ToolOutcomeKind = "timeout" if isinstance(error, ToolTimeoutError) else "error"
        return cls(kind, {"error": str(error)}, str(error))


async def invoke_tool(
    tool: InvocableTool,
    arguments: Mapping[str, Any],
    context: ToolContext,
    time_limit: float,
    *,
    tool_loops: ToolLoops | None = None,
) -> ToolOutcome:
    """Call ``tool``; failures become outcomes, cancellation propagates.

    ``time_limit`` is the agent's ``tool_timeout``; a tool with its own limit uses that.
    With ``tool_loops``, a local tool runs on a tool loop thread (see ``isolation``).
    """
    if not isinstance(arguments, Mapping):
        problem: str | None = f"arguments must be an object, got {type(arguments).__name__}"
    else:
        problem = tool.argument_problem(arguments)
    if problem is not None:
        return ToolOutcome.failure(ToolExecutionError(f"tool {tool.name!r}: {problem}"))
    own_limit = tool.time_limit
    limit = own_limit if own_limit is not None else time_limit
    try:
        result = await _call_with_timeout(tool, arguments, context, limit, tool_loops)
    except ToolExecutionError as error:
        return ToolOutcome.failure(error)
    except CompletedBeforeCancel as completed:
        # The tool returned on its thread just before a barge-in reached it: it is recorded
        # like a call that returned, and the cancel lands at the turn's next await.
        _redeliver_cancellation()
        return _checked_result(tool, completed.value)
    _reraise_swallowed_cancellation()
    return _checked_result(tool, result)


async def _call_with_timeout(
    tool: InvocableTool,
    arguments: Mapping[str, Any],
    context: ToolContext,
    time_limit: float,
    tool_loops: ToolLoops | None,
) -> Any:
    deadline = asyncio.timeout(time_limit)
    try:
        async with deadline:
            if tool_loops is None or tool.source != "local":
                # Inline (replay on virtual time): a tool's sys.exit() must not reach the loop.
                return await contained(lambda: tool.invoke(arguments, context))

            def start(calls: EngineCalls) -> Coroutine[Any, Any, Any]:
                return tool.invoke(arguments, context.across(calls))

            return await tool_loops.run(tool.name, start)
    except TimeoutError as error:
        if deadline.expired():
            log.error("tool %r timed out after %g s (tool_timeout)", tool.name, time_limit)
            raise ToolTimeoutError(
                f"tool {tool.name!r} timed out after {time_limit:g} s (tool_timeout)"
            ) from None
        raise _failed(tool, error) from error
    except (ToolExecutionError, CompletedBeforeCancel):
        raise  # already says what failed (a remote tool's error result, a lost server)
    except Exception as error:
        raise _failed(tool, error) from error


def _failed(tool: InvocableTool, error: Exception) -> ToolExecutionError:
    log.warning("tool %r failed", tool.name, exc_info=error)
    what = str(error) if isinstance(error, ToolExited) else f"{type(error).__name__}: {error}"
    return ToolExecutionError(f"tool {tool.name!r} failed: {what}")


def _redeliver_cancellation() -> None:
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        task.uncancel()
        task.cancel()


def _reraise_swallowed_cancellation() -> None:
    # A tool that catches CancelledError must re-raise; if it returned instead, the turn is
    # still over and the runtime discards what it returned (tools reference, "Cancellation").
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def _checked_result(tool: InvocableTool, result: Any) -> ToolOutcome:
    if result is None:
        # A tool that only writes or sends returns a bare ToolResult() (tools reference); one
        # that falls off its end did its work too, and must not be reported as failed (its
        # on_failure would tell the caller so). Said once in the log, not to the caller.
        log.warning("tool %r returned None; read as ToolResult()", tool.name)
        return ToolOutcome.ok(None)
    if not isinstance(result, ToolResult):
        return ToolOutcome.failure(
            ToolExecutionError(
                f"tool {tool.name!r} returned {type(result).__name__}, expected ToolResult"
            )
        )
    try:
        json.dumps(result.llm_response)
    except (TypeError, ValueError) as error:
        return ToolOutcome.failure(
            ToolExecutionError(
                f"tool {tool.name!r}: llm_response is not JSON-serialisable: {error}"
            )
        )
    return ToolOutcome.ok(result.llm_response)
