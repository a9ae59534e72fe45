"""Running a tool: timeouts are failures, cancellation is not (contract §8.6)."""

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.engine.engine_kit import ContextKit
from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.decorator import tool
from voicegate.engine.tools.invoke import invoke_tool
from voicegate.engine.tools.result import ToolResult

Build = Callable[..., ContextKit]


@tool(description="Waits forever")
async def hang(context: ToolContext) -> ToolResult:
    await asyncio.Event().wait()
    return ToolResult()


async def test_timeout_is_a_failure_reported_to_the_model(make_context: Build) -> None:
    outcome = await invoke_tool(hang, {}, make_context().context, time_limit=0.01)
    assert outcome.kind == "timeout"
    assert outcome.llm_response == {"error": "tool 'hang' timed out after 0.01 s (tool_timeout)"}


async def test_a_tool_raising_timeout_error_itself_is_an_error_not_a_timeout(
    make_context: Build,
) -> None:
    @tool(description="Raises TimeoutError")
    async def own_timeout() -> ToolResult:
        raise TimeoutError("backend too slow")

    outcome = await invoke_tool(own_timeout, {}, make_context().context, time_limit=5)
    assert outcome.kind == "error"
    assert "backend too slow" in str(outcome.error)


async def test_an_exception_is_a_failure_with_its_message(make_context: Build) -> None:
    @tool(description="Breaks")
    async def broken(account: str) -> ToolResult:
        raise KeyError(account)

    outcome = await invoke_tool(broken, {"account": "A-1"}, make_context().context, time_limit=5)
    assert outcome.kind == "error"
    assert outcome.llm_response == {"error": "tool 'broken' failed: KeyError: 'A-1'"}


async def test_a_tool_calling_sys_exit_is_a_failure_not_the_end_of_the_loop(
    make_context: Build,
) -> None:
    # Inline (no tool loops: replay on virtual time), the tool runs on the engine's loop;
    # before, its SystemExit ended the turn's task and then the process.
    @tool(description="Exits")
    async def bail() -> ToolResult:
        raise SystemExit(2)

    outcome = await invoke_tool(bail, {}, make_context().context, time_limit=5)
    assert outcome.kind == "error"
    assert outcome.llm_response == {"error": "tool 'bail' failed: SystemExit: 2"}


async def test_invalid_arguments_fail_without_calling_the_function(make_context: Build) -> None:
    calls: list[Any] = []

    @tool(description="Counts calls")
    async def counted(limit: int) -> ToolResult:
        calls.append(limit)
        return ToolResult()

    outcome = await invoke_tool(counted, {"limit": "ten"}, make_context().context, time_limit=5)
    assert outcome.kind == "error"
    assert "expected integer" in str(outcome.error)
    assert calls == []


@pytest.mark.parametrize(
    ("returned", "problem"),
    [({"ok": True}, "expected ToolResult"), (ToolResult({1, 2}), "not JSON-serialisable")],
)
async def test_results_must_be_a_json_tool_result(
    make_context: Build, returned: Any, problem: str
) -> None:
    @tool(description="Returns something")
    async def returns() -> Any:
        return returned

    outcome = await invoke_tool(returns, {}, make_context().context, time_limit=5)
    assert outcome.kind == "error"
    assert problem in str(outcome.error)


async def test_a_tool_that_returns_nothing_succeeds_as_a_bare_tool_result(
    make_context: Build, caplog: pytest.LogCaptureFixture
) -> None:
    # A tool that wrote memory and forgot `return ToolResult()` did its work: it was a failure
    # (its on_failure told the caller so) before.
    @tool(description="Writes and forgets to return")
    async def writes(context: ToolContext) -> ToolResult:
        context.memory.set("selected_card_id", "C-1")  # type: ignore[return-value]

    built = make_context()
    outcome = await invoke_tool(writes, {}, built.context, time_limit=5)
    assert (outcome.kind, outcome.llm_response) == ("ok", None)
    assert "tool 'writes' returned None; read as ToolResult()" in caplog.text


async def test_success_returns_the_llm_response_and_passes_context(make_context: Build) -> None:
    @tool(description="Uses context")
    async def uses_context(account: str, context: ToolContext) -> ToolResult:
        context.memory.set("selected_card_id", account)
        return ToolResult(llm_response={"ok": True})

    kit = make_context()
    outcome = await invoke_tool(uses_context, {"account": "c-9"}, kit.context, time_limit=5)
    assert outcome.kind == "ok"
    assert outcome.llm_response == {"ok": True}
    assert kit.context.memory.get("selected_card_id") == "c-9"


async def test_cancellation_propagates_and_is_not_a_failure(make_context: Build) -> None:
    seen: list[str] = []

    @tool(description="Records its cancellation")
    async def waits() -> ToolResult:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        finally:
            seen.append("finally")
        return ToolResult()

    task = asyncio.create_task(invoke_tool(waits, {}, make_context().context, time_limit=5))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["cancelled", "finally"]


async def test_a_result_returned_from_a_swallowed_cancellation_is_discarded(
    make_context: Build,
) -> None:
    @tool(description="Swallows its cancellation")
    async def swallows() -> ToolResult:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return ToolResult(llm_response="should be discarded")
        return ToolResult()

    task = asyncio.create_task(invoke_tool(swallows, {}, make_context().context, time_limit=5))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_arguments_that_are_not_an_object_are_a_failure(make_context: Build) -> None:
    outcome = await invoke_tool(hang, ["x"], make_context().context, time_limit=5)  # type: ignore[arg-type]
    assert outcome.kind == "error"
    assert "arguments must be an object" in str(outcome.error)
