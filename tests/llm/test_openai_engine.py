"""End to end: a project whose integrations.yml points at the local server, run by ProjectEngine.

The fake model answers the way a model would: it calls check_balance when that tool is offered
(after ``activate`` first, if the engine offers only that), and once the tool's result is in
the conversation it reads the balance from it and speaks.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.llm.chat_server import (
    ChatServer,
    Reply,
    call_arguments,
    call_start,
    chunk,
    sse,
    text_chunks,
)
from voicegate.cli.engines import build_llm
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.store import InMemoryStore
from voicegate.engine.project.loader import load_project
from voicegate.engine.seam import (
    CallInfo,
    Say,
    ToolFinished,
    ToolStarted,
    Transcript,
    TurnEnded,
    TurnEvent,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bank_balance"
KEY_ENV = "VOICEGATE_TEST_KEY"


def bank_model(body: dict[str, Any]) -> Reply:
    """One model step for the bank example."""
    messages = body["messages"]
    offered = {tool["function"]["name"] for tool in body.get("tools", [])}
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    if "call_balance" in results:
        balance = json.loads(results["call_balance"])
        text = f"Your balance is {balance['balance']} {balance['currency']}. Anything else?"
        return Reply(sse([*text_chunks(text, 3), chunk({}, "stop")]), piece_bytes=9)
    if "check_balance" in offered:
        payloads = [
            *text_chunks("Sure.", 2),
            call_start(0, "call_balance", "check_balance", '{"accou'),
            call_arguments(0, 'nt_id": "A-'),
            call_arguments(0, '17"}'),
            chunk({}, "tool_calls"),
        ]
        return Reply(sse(payloads), piece_bytes=9)
    assert "activate" in offered, f"the engine offered neither tool: {sorted(offered)}"
    arguments = '{"flow_id": "check_balance"}'
    return Reply(sse([call_start(0, "call_activate", "activate", arguments)]))


def project_at(tmp_path: Path, base_url: str) -> Path:
    root = shutil.copytree(EXAMPLE, tmp_path / "bank_balance")
    (root / "integrations.yml").write_text(
        "llm: {model_group: main}\n"
        "model_groups:\n"
        "  - id: main\n"
        "    models:\n"
        f"      - {{provider: openai, model: bank-model, api_base: '{base_url}',"
        f" api_key_env: {KEY_ENV}}}\n"
    )
    return root


async def engine_on(tmp_path: Path, server: ChatServer) -> ProjectEngine:
    project = load_project(project_at(tmp_path, server.base_url))
    llm = build_llm("openai", project, {KEY_ENV: "sk-e2e"})
    engine = ProjectEngine(project, llm, InMemoryStore())
    await engine.open(CallInfo("c1", conversation_id="conv-1"))
    return engine


async def test_a_tool_call_round_trip_through_the_engine(tmp_path: Path) -> None:
    async with ChatServer(bank_model) as server:
        engine = await engine_on(tmp_path, server)
        events: list[TurnEvent] = []
        async with engine.turn("c1", Transcript("What's the balance of A-17?")) as stream:
            async for event in stream:
                events.append(event)
        await engine.close("c1")
    said = [(event.text, event.source) for event in events if isinstance(event, Say)]
    assert said == [
        ("Sure.", "model"),
        ("One moment while I look that up.", "tool"),
        ("Your balance is 1250.75 USD.", "model"),  # sentence by sentence, as it streamed
        ("Anything else?", "model"),
    ]
    started = [e for e in events if isinstance(e, ToolStarted) and e.name == "check_balance"]
    finished = [e for e in events if isinstance(e, ToolFinished) and e.name == "check_balance"]
    assert [e.arguments for e in started] == [{"account_id": "A-17"}]
    assert [(e.outcome, e.result) for e in finished] == [
        ("ok", {"balance": 1250.75, "currency": "USD"})
    ]
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].reason == "completed"
    last = server.requests[-1]
    assert last.headers["Authorization"] == "Bearer sk-e2e"
    assert last.body["model"] == "bank-model"
    calls = [call for m in last.body["messages"] for call in m.get("tool_calls", ())]
    balance_call = next(call for call in calls if call["id"] == "call_balance")
    assert json.loads(balance_call["function"]["arguments"]) == {"account_id": "A-17"}
    (result,) = [m for m in last.body["messages"] if m.get("tool_call_id") == "call_balance"]
    assert result["role"] == "tool"
    assert json.loads(result["content"]) == {"balance": 1250.75, "currency": "USD"}


async def test_a_turn_cancelled_mid_stream_drops_the_models_connection(tmp_path: Path) -> None:
    talkative = Reply(sse(text_chunks("Let me see. ", 4), done=False), endless=True, pause=0.01)
    async with ChatServer.replying(talkative) as server:
        engine = await engine_on(tmp_path, server)
        first_say = asyncio.Event()
        said: list[str] = []

        async def consume() -> None:
            async with engine.turn("c1", Transcript("hello")) as stream:
                async for event in stream:
                    if isinstance(event, Say):
                        said.append(event.text)
                        first_say.set()

        task = asyncio.create_task(consume())
        await first_say.wait()  # spoken while the model is still streaming
        task.cancel()  # the caller barged in
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(server.disconnected.wait(), timeout=5)  # a deadline only
        await engine.close("c1")
    assert said == ["Let me see."]
    assert server.completed == 0


async def test_an_empty_answer_is_asked_again(tmp_path: Path) -> None:
    empty = Reply(sse([chunk({"role": "assistant", "content": ""}), chunk({}, "stop")]))
    spoken = Reply(sse([*text_chunks("Hello, how can I help?", 4), chunk({}, "stop")]))
    async with ChatServer.replying(empty, spoken) as server:
        engine = await engine_on(tmp_path, server)
        async with engine.turn("c1", Transcript("hello")) as stream:
            events = [event async for event in stream]
        await engine.close("c1")
    assert [e.text for e in events if isinstance(e, Say)] == ["Hello, how can I help?"]
    assert events[-1] == TurnEnded(events[-1].turn_id, "completed")
    assert len(server.requests) == 2


async def test_a_call_of_an_unknown_tool_tells_the_model_what_it_was_offered(
    tmp_path: Path,
) -> None:
    unknown = Reply(sse([call_start(0, "call_x", "transfer_funds", "{}"), chunk({}, "tool_calls")]))
    spoken = Reply(sse([*text_chunks("Sorry, I cannot do that.", 5), chunk({}, "stop")]))
    async with ChatServer.replying(unknown, spoken) as server:
        engine = await engine_on(tmp_path, server)
        async with engine.turn("c1", Transcript("move my money")) as stream:
            [event async for event in stream]
        await engine.close("c1")
    offered = [tool["function"]["name"] for tool in server.requests[0].body["tools"]]
    (result,) = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    error = json.loads(result["content"])["error"]
    assert error == f"there is no tool 'transfer_funds' (offered: {', '.join(offered)})"
    assert "activate" in offered
