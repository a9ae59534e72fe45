"""A memory write the store cannot take ends the turn with the ``StoreError`` (docs/redis.md).

Never silently lost: not when the tool lets the error through (it would otherwise become a
tool failure the model reads), and not when the tool catches it and returns normally.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.loop.loop_kit import TOOL_HEADER, write_project
from tests.loop.test_step_cancellation import activate, blocks_skill
from voicegate.engine.history import ToolExecuted
from voicegate.engine.llm.script import parse_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.store import InMemoryStore
from voicegate.engine.project.loader import load_project
from voicegate.engine.seam import CallInfo, Transcript
from voicegate.errors import StoreError

CARELESS = (
    '@tool(description="careless")\n'
    "async def careless(context: ToolContext = None) -> ToolResult:\n"
    "    try:\n"
    '        context.memory.set("attempts", 1)\n'
    "    except Exception:\n"
    "        pass  # a tool that swallows the store's error\n"
    "    return ToolResult()\n\n\n"
    '@tool(description="plain")\n'
    "async def plain(context: ToolContext = None) -> ToolResult:\n"
    '    context.memory.set("attempts", 1)\n'
    "    return ToolResult()\n"
)


class BrokenStore(InMemoryStore):
    """Reads work; every write fails as a Redis that stayed down past the retries would."""

    def save(self, conversation_id: str, namespace: str, entry: str, json_value: str) -> None:
        raise StoreError("Redis write failed: Connection refused")


def engine_for(tmp_path: Path, tool: str) -> ProjectEngine:
    steps = f"  - id: run\n    execute_tool: {tool}\n"
    project = write_project(
        tmp_path / "project",
        {**blocks_skill("work", steps), "skills/work/tools.py": TOOL_HEADER + CARELESS},
    )
    script = parse_script({"turns": [activate("work")]}, "<test>")
    return ProjectEngine(load_project(project), lambda _: ScriptedLLM(script), BrokenStore())


async def run_turn(engine: ProjectEngine) -> None:
    async with engine.turn("c1", Transcript("go")) as stream:
        async for _ in stream:
            pass


@pytest.mark.parametrize("tool", ["plain", "careless"])
async def test_a_failed_memory_write_ends_the_turn_with_the_store_error(
    tmp_path: Path, tool: str
) -> None:
    engine = engine_for(tmp_path, tool)
    await engine.open(CallInfo("c1"))
    with pytest.raises(StoreError, match="Redis write failed"):
        await run_turn(engine)
    history = engine.session("c1").history.snapshot()
    assert not [e for e in history if isinstance(e, ToolExecuted) and e.name == tool]
