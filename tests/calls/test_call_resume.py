"""A call cut mid-turn resumes on another gateway sharing one Redis (issue 13).

Two real gateways on loopback, each with its own engine, dialogue plane and Redis connection,
share one redis-server. An emulated Twilio caller's stream to the first is cut while a tool
awaits; the same CallSid then streams to the second, which finds the call's state in Redis,
says the resume line, and goes on with the pending tool.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from tests.calls.call_kit import SLOW_BANK, cue, script_of
from tests.calls.test_blocking_tool import events
from tests.redis_kit import RedisServer, redis_server  # noqa: F401 - the fixture
from voicegate.callers.driver import drive
from voicegate.callers.twilio import TwilioCaller
from voicegate.engine.llm.script import parse_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.loop.persistence import ResumeOptions
from voicegate.engine.memory.redis_store import RedisOptions, RedisStore
from voicegate.engine.project.loader import load_project
from voicegate.engine.tools.isolation import ToolLoops
from voicegate.gateway.dialogue import DialoguePlane, ThreadedEngine
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.media import MediaFactory
from voicegate.gateway.options import GatewayOptions, TwilioOptions
from voicegate.gateway.redis_registry import RedisCallRegistry, RegistryOptions
from voicegate.gateway.session import CallServices, SessionRunner, SessionSettings
from voicegate.speech.fakes import ScriptedSpeechToText, ToneTextToSpeech

BALANCE = "synth/festival/balance_8k.wav"
CALL_SID = "CA0000000000000000000000000000re02"
RESUME_LINE = "Sorry, we were cut off."
FIRST_NODE = {
    "turns": [
        {
            "calls": [
                {"activate": {"flow_id": "check_balance"}},
                {"check_balance": {"account_id": "A-17", "delay_ms": 60_000}},
            ]
        }
    ]
}
SECOND_NODE = {
    "turns": [
        {
            "steps": [
                {"calls": [{"check_balance": {"account_id": "A-17", "delay_ms": 10}}]},
                {"say": "Your balance is {check_balance.balance} dollars."},
            ]
        }
    ]
}


@contextlib.asynccontextmanager
async def node(
    project: Path,
    url: str,
    transcripts: list[str],
    turns: dict[str, Any],
    *,
    leases: bool = False,
    timeout_s: float = 0.5,
) -> AsyncIterator[tuple[str, SessionRunner]]:
    """A gateway on a free port whose engine keeps memory and call state in Redis.

    With ``leases``, the node also takes each call's lease in the shared call registry.
    ``timeout_s`` bounds each Redis command (the registry's health answer is never reused).
    """
    store = RedisStore(url, RedisOptions("voicegate:slow_bank", timeout_s=timeout_s, retries=1))
    script = parse_script(turns, "<test>")
    tool_loops = ToolLoops()
    engine = ProjectEngine(
        load_project(project),
        lambda call_id: ScriptedLLM(script),
        store,
        tool_loops=tool_loops,
        resume=ResumeOptions(store, RESUME_LINE),
    )
    plane = DialoguePlane()
    plane.start()
    registry = RedisCallRegistry(
        url, RegistryOptions("voicegate:slow_bank:calls", 10, timeout_s=timeout_s, health_s=0.0)
    )
    services = CallServices(
        engine=ThreadedEngine(engine, plane),
        stt=ScriptedSpeechToText(transcripts),
        tts=ToneTextToSpeech(16000, ms_per_char=5),
        media=MediaFactory(),
        leases=registry if leases else None,
    )
    runner = SessionRunner(services, SessionSettings())
    options = GatewayOptions(port=0, twilio=TwilioOptions(parameters={}))
    try:
        async with Gateway(runner, options) as gateway:
            yield "ws" + gateway.base_url.removeprefix("http") + "/twilio", runner
    finally:
        await registry.aclose()
        plane.stop()
        tool_loops.close()
        store.close()


def tool_record(project: Path) -> list[str]:
    path = project / "tool_record.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [json.loads(line)["event"] for line in lines]


async def until_started(project: Path, timeout_s: float = 30.0) -> None:
    """Poll the tool's own record until its lookup started (it then awaits its backend)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while "started" not in tool_record(project):
        assert loop.time() < deadline, "the tool never started"
        await asyncio.sleep(0.05)


async def finished_timeline(runner: SessionRunner, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """The call's timeline once the gateway has finished it (just after the close)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while (timeline := runner.timeline(CALL_SID)) is None:
        assert loop.time() < deadline, "the call never finished"
        await asyncio.sleep(0.05)
    return list(timeline.records)


async def test_a_call_cut_mid_tool_resumes_on_another_gateway(
    tmp_path: Path,
    redis_server: RedisServer,  # noqa: F811
) -> None:
    project = tmp_path / "project"
    shutil.copytree(SLOW_BANK, project)
    async with node(project, redis_server.url, ["check my balance"], FIRST_NODE) as (url, _):
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=60_000), call_sid=CALL_SID)
        call = asyncio.create_task(drive(url, caller, speed=1.0, max_ms=70_000))
        await until_started(project)
        call.cancel()  # the stream is cut while the tool awaits its backend
        with contextlib.suppress(asyncio.CancelledError):
            await call
    async with node(project, redis_server.url, ["hello?"], SECOND_NODE) as (url, runner):
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=4000), call_sid=CALL_SID)
        assert await drive(url, caller, speed=2.0, max_ms=30_000) == 1000
        timeline = await finished_timeline(runner)
    said = [(r["turn_id"], r["text"]) for r in events(timeline, "say")]
    assert said[0] == ("t2", RESUME_LINE)  # first, in the turn after the lost one
    assert ("t2", "Your balance is 42 dollars.") in said
    assert tool_record(project).count("started") == 2  # the pending tool ran again
    assert tool_record(project).count("finished") == 1
    client = redis_server.client()
    memory = client.hgetall(f"voicegate:slow_bank:mem:{CALL_SID}")
    assert memory['["project", "lookups_started"]'] == "2"  # the lost node's write was kept
    assert client.hget(f"voicegate:slow_bank:call:{CALL_SID}", "epoch") == "2"
    assert client.pttl(f"voicegate:slow_bank:call:{CALL_SID}") > 0
    client.close()


async def test_a_callsid_live_on_one_node_is_refused_by_another_then_resumes_there(
    tmp_path: Path,
    redis_server: RedisServer,  # noqa: F811
) -> None:
    project = tmp_path / "project"
    shutil.copytree(SLOW_BANK, project)
    async with (
        node(project, redis_server.url, ["check my balance"], FIRST_NODE, leases=True) as (
            a,
            runner_a,
        ),
        node(project, redis_server.url, ["hello?"], SECOND_NODE, leases=True) as (b, _),
    ):
        first = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=60_000), call_sid=CALL_SID)
        call = asyncio.create_task(drive(a, first, speed=1.0, max_ms=70_000))
        await until_started(project)
        # The same CallSid on the other node while the call is live on the first: refused
        # (1013, "call ... is live on node ..."), and the first node's call goes on.
        twin = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=2000), call_sid=CALL_SID)
        assert await drive(b, twin, speed=2.0, max_ms=10_000) == 1013
        assert not call.done()
        call.cancel()  # the first node's stream ends: its lease is given back
        with contextlib.suppress(asyncio.CancelledError):
            await call
        await finished_timeline(runner_a)
        again = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=4000), call_sid=CALL_SID)
        assert await drive(b, again, speed=2.0, max_ms=30_000) == 1000
    assert tool_record(project).count("finished") == 1  # resumed on the second node
