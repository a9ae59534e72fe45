"""Turns cancelled at random points while their tools await (design §4 under load).

Every turn runs a tool that writes memory, then awaits a random number of times; the task
consuming the turn is cancelled after a random number of event-loop steps, the way barge-ins
land. Afterwards: no task may be left running, every memory write made before a cancel must
be in the store (read back through a fresh store on the same SQLite file, as after a restart),
and no cancelled call may be recorded while every completed one is.

    python bench/turn_cancellation.py [--turns 1000] [--seed 7] [--store sqlite|memory]

Prints one JSON object. ``tests/engine/test_cancellation_load.py`` runs the same drill with
fewer turns and asserts on its observations.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicegate.engine.history import ToolExecuted
from voicegate.engine.llm.script import parse_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.fields import FieldType, MemoryField, SkillMemory
from voicegate.engine.memory.schema import MemorySchema
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore
from voicegate.engine.memory.store import InMemoryStore, MemoryStore
from voicegate.engine.project.model import Project, Skill
from voicegate.engine.seam import CallInfo, Say, ToolCancelled, Transcript, TurnEventStream
from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.decorator import Tool, tool
from voicegate.engine.tools.result import ToolResult

CALL = "drill"
MAX_TOOL_AWAITS = 6
MAX_CANCEL_DELAY = 40  # event-loop steps before the barge-in lands (a whole turn takes ~25)


@dataclass
class Drill:
    """What one run observed."""

    turns: int
    started: list[int] = field(default_factory=list)  # tool invocation tokens, in order
    written_before_await: list[int] = field(default_factory=list)
    completed: list[int] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)
    recorded: list[int] = field(default_factory=list)  # tokens of ToolExecuted events
    stored_attempts: list[int] = field(default_factory=list)  # memory read back from the store
    cancelled_turns: int = 0
    cancel_events_seen: int = 0  # ToolCancelled among undelivered events
    leaked_tasks: int = 0
    unwind_seconds: list[float] = field(default_factory=list)
    elapsed_seconds: float = 0.0


def drill_tool(drill: Drill) -> Tool:
    """A tool that writes memory, then awaits ``n`` times."""

    @tool(description="Do some work")
    async def work(n: int, context: ToolContext) -> ToolResult:
        token = len(drill.started) + 1
        drill.started.append(token)
        context.memory.set("attempts", [*context.memory.get("attempts", []), token])
        drill.written_before_await.append(token)
        try:
            for _ in range(n):
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            drill.cancelled.append(token)
            raise
        drill.completed.append(token)
        return ToolResult(llm_response={"token": token})

    return work


def drill_project(drill: Drill) -> Project:
    """One skill with the tool and a list field it appends to."""
    attempts = MemoryField("attempts", FieldType.LIST)
    memory = MemorySchema({}, {"drill": SkillMemory("drill", {"attempts": attempts})})
    return Project(memory=memory, skills={"drill": Skill("drill", {"work": drill_tool(drill)})})


def drill_script(turns: int, rng: random.Random) -> dict[str, Any]:
    """Every script turn calls the tool, then speaks about its result."""
    steps = [
        {
            "steps": [
                {
                    "say": "Working on it.",
                    "calls": [{"work": {"n": rng.randint(0, MAX_TOOL_AWAITS)}}],
                },
                {"say": "Finished job {work.token}. Next?"},
            ]
        }
        for _ in range(turns)
    ]
    return {"turns": steps}


async def run_drill(
    turns: int, seed: int, store: MemoryStore, reopen: Callable[[], MemoryStore] | None = None
) -> Drill:
    """Run ``turns`` user turns; ``reopen()`` gives a fresh store on the same data, if any."""
    rng = random.Random(seed)
    drill = Drill(turns)
    script = parse_script(drill_script(turns, rng), "<drill>")
    engine = ProjectEngine(drill_project(drill), lambda call_id: ScriptedLLM(script), store)
    await engine.open(CallInfo(CALL))
    began = time.perf_counter()
    for number in range(turns):
        await _one_turn(engine, drill, rng, number)
        drill.leaked_tasks = max(drill.leaked_tasks, len(asyncio.all_tasks()) - 1)
    history = engine.session(CALL).history.snapshot()
    await engine.close(CALL)
    drill.elapsed_seconds = time.perf_counter() - began
    drill.leaked_tasks = max(drill.leaked_tasks, len(asyncio.all_tasks()) - 1)
    drill.recorded = [e.result["token"] for e in history if isinstance(e, ToolExecuted)]
    drill.stored_attempts = _stored_attempts(reopen() if reopen is not None else store)
    return drill


async def _one_turn(engine: ProjectEngine, drill: Drill, rng: random.Random, number: int) -> None:
    stream = engine.turn(CALL, Transcript(f"turn {number}"))
    heard: list[str] = []
    task = asyncio.create_task(_consume(stream, heard))
    for _ in range(rng.randrange(MAX_CANCEL_DELAY)):
        if task.done():
            break
        await asyncio.sleep(0)
    asked = time.perf_counter()
    if task.cancel():
        drill.cancelled_turns += 1
    try:
        await task
    except asyncio.CancelledError:
        drill.unwind_seconds.append(time.perf_counter() - asked)
        drill.cancel_events_seen += sum(isinstance(e, ToolCancelled) for e in stream.undelivered())
    await engine.heard(CALL, stream.turn_id, " ".join(heard), interrupted=task.cancelled())


async def _consume(stream: TurnEventStream, heard: list[str]) -> None:
    async with stream:
        async for event in stream:
            if isinstance(event, Say):
                heard.append(event.text)  # in this drill, everything delivered is heard


def _stored_attempts(store: MemoryStore) -> list[int]:
    return list(json.loads(store.load(CALL).get(("drill", "attempts"), "null")) or [])


def summary(drill: Drill, store_kind: str) -> dict[str, Any]:
    """The JSON report."""
    unwind_ms = sorted(seconds * 1000 for seconds in drill.unwind_seconds) or [0.0]
    return {
        "bench": "turn_cancellation",
        "store": store_kind,
        "turns": drill.turns,
        "cancelled_turns": drill.cancelled_turns,
        "tool_calls_started": len(drill.started),
        "tool_calls_cancelled": len(drill.cancelled),
        "tool_calls_completed": len(drill.completed),
        "tool_calls_recorded": len(drill.recorded),
        "leaked_tasks": drill.leaked_tasks,
        "lost_memory_writes": len(set(drill.written_before_await) - set(drill.stored_attempts)),
        "recorded_cancelled_calls": len(set(drill.recorded) & set(drill.cancelled)),
        "unrecorded_completed_calls": len(set(drill.completed) - set(drill.recorded)),
        "elapsed_s": round(drill.elapsed_seconds, 3),
        "turns_per_s": round(drill.turns / drill.elapsed_seconds, 1),
        "cancel_to_unwound_ms": {
            "p50": round(statistics.median(unwind_ms), 3),
            "p99": round(unwind_ms[int(0.99 * (len(unwind_ms) - 1))], 3),
            "max": round(unwind_ms[-1], 3),
        },
    }


def sqlite_save_us(path: Path, saves: int = 2000) -> dict[str, float]:
    """Microseconds one committed SQLite memory write blocks the event loop."""
    store = SqliteMemoryStore(path)
    times = []
    for number in range(saves):
        began = time.perf_counter()
        store.save("latency", "project", f"entry{number % 50}", str(number))
        times.append((time.perf_counter() - began) * 1e6)
    store.close()
    times.sort()
    return {"p50": round(times[saves // 2], 1), "p99": round(times[int(saves * 0.99)], 1)}


async def _main(turns: int, seed: int, store_kind: str) -> dict[str, Any]:
    if store_kind == "memory":
        return summary(await run_drill(turns, seed, InMemoryStore()), store_kind)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.sqlite3"
        store = SqliteMemoryStore(path)
        try:
            drill = await run_drill(turns, seed, store, lambda: SqliteMemoryStore(path))
        finally:
            store.close()
        return summary(drill, store_kind) | {"sqlite_save_us": sqlite_save_us(path)}


def main() -> None:
    """Run the drill and print its JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--store", choices=("sqlite", "memory"), default="sqlite")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(_main(args.turns, args.seed, args.store)), indent=2))


if __name__ == "__main__":
    main()
