"""MCP tools inside turns: the engine's streaming interface with the scripted model.

The cancellation contract (design §4) holds for an MCP tool exactly as for a local one: a
barge-in while the tool awaits its server cancels the MCP request (the server is told and its
handler is cancelled), the call is not recorded, its step stays pending and the next turn
calls the tool again.
"""

import asyncio
from typing import Any

import pytest

from tests.engine.engine_kit import RecordingLLM, collect, engine_for, open_call, script_of
from tests.mcp.mcp_kit import (
    bounded,
    consume,
    launch_options,
    server_state,
    servers_of,
    stdio_entry,
    until_waiting,
)
from voicegate.engine.history import ToolExecuted
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.fields import SkillMemory
from voicegate.engine.memory.schema import MemorySchema
from voicegate.engine.project.model import (
    AgentSettings,
    Project,
    ResolvedTool,
    Skill,
    ToolOrigin,
)
from voicegate.engine.project.skill_model import Frontmatter, ToolImport
from voicegate.engine.seam import (
    Say,
    ToolCancelled,
    ToolFinished,
    ToolStarted,
    Transcript,
    TurnEnded,
    TurnEvent,
)
from voicegate.mcp.imports import project_imports, project_tool_names
from voicegate.mcp.runtime import McpRuntime, project_catalog, project_tools


def project_importing(*tools: str, tool_timeout: float = 10.0) -> Project:
    """A project whose skill ``cards`` imports ``mcp/ledger:<tool>`` for each tool."""
    entries = tuple(
        ToolImport(f"mcp/ledger:{tool}", tool, "ledger", line) for line, tool in enumerate(tools, 5)
    )
    # as the loader resolves them: the toolset names each MCP import and its server
    toolset = {tool: ResolvedTool(tool, ToolOrigin.MCP, None, "ledger") for tool in tools}
    skill = Skill("cards", frontmatter=Frontmatter(import_tools=entries), toolset=toolset)
    return Project(
        agent=AgentSettings(persona="Test persona.", tool_timeout=tool_timeout),
        memory=MemorySchema({}, {"cards": SkillMemory("cards", {})}),
        skills={"cards": skill},
    )


def recorded(engine: ProjectEngine) -> list[ToolExecuted]:
    history = engine.session("c1").history.snapshot()
    return [event for event in history if isinstance(event, ToolExecuted)]


def calls_of(events: list[TurnEvent]) -> list[tuple[str, Any]]:
    return [
        (type(event).__name__, event.name)
        for event in events
        if isinstance(event, ToolStarted | ToolFinished | ToolCancelled)
    ]


ECHO_SCRIPT = {
    "turns": [
        {
            "steps": [
                {"say": "Let me check.", "calls": [{"echo": {"text": "hi"}}]},
                {"say": "It said {echo.result}."},
            ]
        }
    ]
}


async def test_a_turn_calls_an_imported_tool_and_the_model_sees_its_schema() -> None:
    project = project_importing("echo")
    servers = servers_of(stdio_entry())
    async with project_tools(project, servers, launch_options()) as catalog:
        recorder: list[RecordingLLM] = []
        engine = engine_for(project, script_of(ECHO_SCRIPT), catalog=catalog, recorder=recorder)
        await open_call(engine)
        events = await bounded(collect(engine, "c1", Transcript("what does it say?")))
    offered = {spec.name: spec for spec in recorder[0].tools}
    assert "echo" in offered
    assert not {"add", "wait", "pid", "cancellations"} & set(offered)  # not allowlisted
    assert offered["echo"].description == "Echo a text back"
    assert offered["echo"].parameters["properties"]["text"]["type"] == "string"
    assert events[-2:] == [Say("t1", "It said hi.", "model"), TurnEnded("t1", "completed")]
    finished = [event for event in events if isinstance(event, ToolFinished)]
    assert [(event.outcome, event.result) for event in finished] == [("ok", {"result": "hi"})]
    assert [(event.name, event.source, event.result) for event in recorded(engine)] == [
        ("echo", "mcp", {"result": "hi"})
    ]


TIMEOUT_SCRIPT = {
    "turns": [
        {
            "steps": [
                {"calls": [{"wait": {"seconds": 30, "tag": "slow"}}]},
                {"say": "That took too long."},
            ]
        }
    ]
}


async def test_a_turn_honours_the_servers_tool_timeout() -> None:
    project = project_importing("wait", tool_timeout=30.0)
    servers = servers_of(stdio_entry(tool_timeout=0.3))
    async with McpRuntime(servers, launch_options()) as runtime:
        imported = await bounded(runtime.connect(project_imports(project)))
        engine = engine_for(
            project, script_of(TIMEOUT_SCRIPT), catalog=project_catalog(project, imported)
        )
        await open_call(engine)
        events = await bounded(collect(engine, "c1", Transcript("take your time")))
        state = await server_state(runtime.servers["ledger"])
    finished = [event for event in events if isinstance(event, ToolFinished)]
    assert [(event.outcome, event.result) for event in finished] == [
        ("timeout", {"error": "tool 'wait' timed out after 0.3 s (tool_timeout)"})
    ]
    assert events[-1] == TurnEnded("t1", "completed")
    assert [item["tag"] for item in state["cancelled"]] == ["slow"]


BARGE_SCRIPT = {
    "turns": [
        {
            "steps": [
                {"say": "Sure.", "calls": [{"hang_once": {"tag": "barge"}}]},
                {"say": "Status: {hang_once.status}."},
            ]
        },
        {"say": "Goodbye."},
    ]
}


async def test_a_barge_in_while_an_mcp_tool_awaits_keeps_the_step_pending() -> None:
    project = project_importing("hang_once")
    async with McpRuntime(servers_of(stdio_entry()), launch_options()) as runtime:
        imported = await bounded(
            runtime.connect(project_imports(project), project_tool_names(project))
        )
        server = runtime.servers["ledger"]
        engine = engine_for(
            project, script_of(BARGE_SCRIPT), catalog=project_catalog(project, imported)
        )
        await open_call(engine)

        # the gateway's turn task, cancelled while the tool awaits its server (a barge-in)
        stream = engine.turn("c1", Transcript("check it"))
        received: list[TurnEvent] = []
        task = asyncio.create_task(consume(stream, received))
        await until_waiting(server, "barge")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

        assert recorded(engine) == []
        assert calls_of(received) == [("ToolStarted", "hang_once")]
        assert calls_of(list(stream.undelivered())) == [("ToolCancelled", "hang_once")]
        assert stream.undelivered()[-1] == TurnEnded("t1", "cancelled")
        state = await server_state(server)
        assert [item["tag"] for item in state["cancelled"]] == ["barge"]
        # the client told the server: notifications/cancelled named the cancelled request
        assert state["notified"] == [state["cancelled"][0]["request_id"]]

        # the step stayed pending: the next turn calls the tool again, and it completes
        events = await bounded(collect(engine, "c1", Transcript("hello?")))
        assert calls_of(events) == [("ToolStarted", "hang_once"), ("ToolFinished", "hang_once")]
        assert events[-2:] == [Say("t2", "Status: done.", "model"), TurnEnded("t2", "completed")]
        assert [(event.turn_id, event.name, event.source) for event in recorded(engine)] == [
            ("t2", "hang_once", "mcp")
        ]
        assert await bounded(collect(engine, "c1", Transcript("thanks"))) == [
            Say("t3", "Goodbye.", "model"),
            TurnEnded("t3", "completed"),
        ]
