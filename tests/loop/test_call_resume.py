"""A call resumes on another node where it stopped; a stale node cannot write (issue 13).

Two ``ProjectEngine`` instances with stores of their own on one redis-server (or one SQLite
file) stand for two nodes. The first node is "lost" in the middle of a tool: it never sees
another event. The second opens the same call id, says the resume line, and the step that was
running runs again; memory the lost node wrote before is there.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.loop.loop_kit import said, started, write_project
from tests.loop.test_step_cancellation import PROJECT, activate
from tests.redis_kit import RedisServer, redis_server  # noqa: F401 - the fixture
from voicegate.engine.history import ToolExecuted, UserUttered
from voicegate.engine.llm.script import parse_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.loop.persistence import CallStateStore, ResumeOptions, claim
from voicegate.engine.memory.redis_store import RedisOptions, RedisStore
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.memory.sqlite_calls import SqliteCallStates
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore
from voicegate.engine.memory.store import MemoryStore
from voicegate.engine.project.loader import load_project
from voicegate.engine.seam import CallInfo, MemorySet, Transcript, TurnEvent
from voicegate.errors import StaleCallError, StoreError

RESUME_LINE = "Sorry, we were cut off."
CALL = "CA0000000000000000000000000000re01"


class Node(Protocol):
    """Makes the stores one node opens (memory, call state)."""

    def __call__(self) -> tuple[MemoryStore, CallStateStore]: ...


@pytest.fixture(params=["redis", "sqlite"])
def node_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Node]:
    """Each call makes a node's own connections to the one shared backend."""
    opened: list[Any] = []

    def make() -> tuple[MemoryStore, CallStateStore]:
        if request.param == "redis":
            server: RedisServer = request.getfixturevalue("redis_server")
            store = RedisStore(server.url, RedisOptions("vg:bank"))
            opened.append(store)
            return store, store
        path = tmp_path / "data" / "memory.sqlite3"
        memory, calls = SqliteMemoryStore(path), SqliteCallStates(path)
        opened.extend([memory, calls])
        return memory, calls

    yield make
    for store in opened:
        store.close()


def engine_on(project: Path, node: Node, turns: list[dict[str, object]]) -> ProjectEngine:
    memory, calls = node()
    script = parse_script({"turns": turns}, "<test>")
    return ProjectEngine(
        load_project(project),
        lambda call_id: ScriptedLLM(script),
        memory,
        resume=ResumeOptions(calls, RESUME_LINE),
    )


@contextlib.asynccontextmanager
async def lost_mid_tool(engine: ProjectEngine, text: str) -> AsyncIterator[asyncio.Task[None]]:
    """Run a turn until its tool hangs (it counted its attempt), then leave it there."""
    reached = asyncio.Event()
    stream = engine.turn(CALL, Transcript(text))

    async def consume() -> None:
        async with stream:
            async for event in stream:
                if isinstance(event, MemorySet) and event.name.endswith(".attempts"):
                    reached.set()

    task = asyncio.create_task(consume())
    await reached.wait()
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, StaleCallError):
            await task


async def run(engine: ProjectEngine, text: str) -> list[TurnEvent]:
    events: list[TurnEvent] = []
    async with engine.turn(CALL, Transcript(text)) as stream:
        async for event in stream:
            events.append(event)
    await engine.heard(CALL, events[-1].turn_id, " ".join(said(events)), interrupted=False)
    return events


async def test_a_call_resumes_on_another_node_at_its_pending_step(
    tmp_path: Path, node_stores: Node
) -> None:
    project = write_project(tmp_path / "project", PROJECT)
    first = engine_on(project, node_stores, [activate("lookup")])
    await first.open(CallInfo(CALL))
    async with lost_mid_tool(first, "look it up"):
        second = engine_on(project, node_stores, [])
        await second.open(CallInfo(CALL))
        session = second.session(CALL)
        assert [frame.skill_id for frame in session.dialogue.stack] == ["lookup"]
        assert session.memory.value(FieldRef("lookup", "attempts")) == 1  # written through
        events = await run(second, "hello?")
    assert said(events)[0] == RESUME_LINE
    assert started(events) == ["slow_lookup"]  # the pending step runs again
    assert "Thanks." in said(events)
    assert events[0].turn_id == "t2"  # turn ids go on from the lost node's
    history = session.history.snapshot()
    assert [e.text for e in history if isinstance(e, UserUttered)] == ["look it up", "hello?"]
    done = [e for e in history if isinstance(e, ToolExecuted) and e.name == "slow_lookup"]
    assert len(done) == 1  # recorded once, by the node that completed it
    assert session.memory.value(FieldRef("lookup", "marked")) is True  # not run again
    await second.close(CALL)


async def test_the_resume_line_is_said_once(tmp_path: Path, node_stores: Node) -> None:
    project = write_project(tmp_path / "project", PROJECT)
    first = engine_on(project, node_stores, [activate("lookup")])
    await first.open(CallInfo(CALL))
    async with lost_mid_tool(first, "look it up"):
        second = engine_on(project, node_stores, [])
        await second.open(CallInfo(CALL))
        await run(second, "hello?")
        assert RESUME_LINE not in said(await run(second, "and then?"))
        await second.close(CALL)


async def test_a_stale_node_cannot_write_over_the_new_nodes_state(
    tmp_path: Path, node_stores: Node
) -> None:
    project = write_project(tmp_path / "project", PROJECT)
    first = engine_on(project, node_stores, [activate("lookup")])
    await first.open(CallInfo(CALL))
    async with lost_mid_tool(first, "look it up") as lost:
        second = engine_on(project, node_stores, [])
        await second.open(CallInfo(CALL))
        await run(second, "hello?")
        # The lost node comes back: its turn ends (cancelled: nothing new to save), then it
        # reports what its caller heard, which would change the state: refused.
        lost.cancel()
        with pytest.raises(asyncio.CancelledError):
            await lost
        with pytest.raises(StaleCallError):
            await first.heard(CALL, "t1", "stale words", interrupted=False)
    third = engine_on(project, node_stores, [])
    await third.open(CallInfo(CALL))
    history = third.session(CALL).history.snapshot()
    assert [e.text for e in history if isinstance(e, UserUttered)] == ["look it up", "hello?"]
    assert "stale words" not in str(history)


def test_a_stale_epoch_cannot_write_over_the_new_nodes_memory(node_stores: Node) -> None:
    memory_a, calls_a = node_stores()
    memory_b, calls_b = node_stores()
    first = claim(calls_a, CALL)  # epoch 1
    first.memory(memory_a).save(CALL, "lookup", "attempts", "1")
    second = claim(calls_b, CALL)  # epoch 2: the call was taken over
    assert (first.epoch, second.epoch) == (1, 2)
    second.memory(memory_b).save(CALL, "lookup", "attempts", "2")
    with pytest.raises(StaleCallError):
        first.memory(memory_a).save(CALL, "lookup", "attempts", "99")
    with pytest.raises(StaleCallError):
        first.memory(memory_a).save(CALL, "lookup", "marked", "true")  # a new field too
    assert memory_a.load(CALL) == {("lookup", "attempts"): "2"}
    assert memory_b.load(CALL) == {("lookup", "attempts"): "2"}


async def test_a_stale_nodes_turn_ends_at_its_first_memory_write(
    tmp_path: Path, node_stores: Node
) -> None:
    project = write_project(tmp_path / "project", PROJECT)
    first = engine_on(project, node_stores, [activate("lookup")])
    await first.open(CallInfo(CALL))
    second = engine_on(project, node_stores, [])
    await second.open(CallInfo(CALL))  # takes the call over
    # The first node does not know yet: its turn's first write (the step's set_memory) is
    # refused, the error ends the turn (and the gateway ends the call with it).
    with pytest.raises(StaleCallError):
        await run(first, "look it up")
    third = engine_on(project, node_stores, [])
    await third.open(CallInfo(CALL))
    assert third.session(CALL).memory.value(FieldRef("lookup", "marked")) is None
    assert third.session(CALL).dialogue.stack == []  # nor its state


async def test_a_new_call_id_starts_fresh(tmp_path: Path, node_stores: Node) -> None:
    project = write_project(tmp_path / "project", PROJECT)
    engine = engine_on(project, node_stores, [])
    await engine.open(CallInfo(CALL))
    assert engine.session(CALL).resume_line is None
    assert engine.session(CALL).dialogue.stack == []


async def test_a_stopped_redis_fails_the_turn_with_a_store_error(
    tmp_path: Path,
    redis_server: RedisServer,  # noqa: F811
) -> None:
    project = write_project(tmp_path / "project", PROJECT)
    store = RedisStore(redis_server.url, RedisOptions("vg:bank", timeout_s=0.2, retries=1))
    script = parse_script({"turns": [activate("lookup")]}, "<test>")
    engine = ProjectEngine(
        load_project(project),
        lambda call_id: ScriptedLLM(script),
        store,
        resume=ResumeOptions(store, RESUME_LINE),
    )
    await engine.open(CallInfo(CALL))
    redis_server.stop()
    # The memory write of the first step fails after its retries, the turn ends with the
    # error, and the state cannot be saved either: the error reaches the gateway, which ends
    # the call (docs/redis.md); nothing is silently lost.
    with pytest.raises(StoreError, match="Redis state write failed"):
        await run(engine, "look it up")
    store.close()
