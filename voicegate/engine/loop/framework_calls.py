"""Tools the engine invokes itself: post-write hooks and response button sources.

Post-write hooks (tools reference, "Post-write hooks"; contract §7.5): after a *top-level*
write to a skill field (``set_fields``, ``correct``, a ``set:`` button; issue 6 calls
:meth:`PostWriteHooks.write`), the skill's ``run_after_setting_<entry>`` runs. Its
``llm_response`` with a non-null ``error`` rolls the triggering write back and the message goes
to the model; ``{"error": None}`` is success. A hook that raises or times out fails the same
way (a decision: the contract names only the ``error`` key), and so does a hook cancelled by a
barge-in (HOOK-CAN-01, issue 17): the value it never validated does not stay in memory.
Writes inside a hook never trigger
hooks, and a hook leaves an already-set project field alone instead of failing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from voicegate.engine.loop.session import Session
from voicegate.engine.loop.stream import TurnChannel
from voicegate.engine.memory.fields import MemoryField
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.tools.buttons import Button
from voicegate.engine.tools.catalog import BoundTool
from voicegate.engine.tools.context import ButtonCollector
from voicegate.engine.tools.invoke import ToolOutcome, invoke_tool
from voicegate.engine.tools.reserved import hook_name
from voicegate.errors import EngineError, MemoryWriteError


class PostWriteHooks:
    """Top-level writes to skill fields, each followed by the field's hook."""

    def __init__(self, session: Session, channel: TurnChannel) -> None:
        self._session = session
        self._channel = channel
        self._in_hook = False

    async def write(self, skill_id: str, entry: str, value: Any) -> str | None:
        """Write ``<skill_id>.<entry>`` and run its hook; returns the hook's error, if any."""
        ref = FieldRef(skill_id, entry)
        declared = self._session.memory.schema.field(ref)
        if declared is None:
            raise MemoryWriteError(f"{ref.qualified} is not declared")
        previous = self._session.memory.value(ref)
        writer = self._session.tool_context(self._channel, skill_id).memory
        writer.set(ref.qualified, value)
        hook = self._hook(skill_id, entry)
        if hook is None or self._in_hook:
            return None  # writes made inside a hook do not re-trigger hooks
        self._in_hook = True
        try:
            context = self._session.tool_context(self._channel, skill_id, hook=True)
            outcome = await invoke_tool(
                hook.tool,
                {},
                context,
                self._session.tool_timeout,
                tool_loops=self._session.tool_loops,
            )
        except asyncio.CancelledError:
            # HOOK-CAN-01: a hook cut off by a barge-in never validated the value; like a
            # hook error (tools reference, post-write hooks) it rolls the write back.
            self._roll_back(ref, previous, declared)
            raise
        finally:
            self._in_hook = False
        error = hook_error(outcome)
        if error is not None:
            self._roll_back(ref, previous, declared)
        return error

    def _hook(self, skill_id: str, entry: str) -> BoundTool | None:
        """The skill's ``run_after_setting_<entry>``: its own, else one it imports from the
        shared ``tools/`` (skill.md reference: hooks may be local or imported)."""
        found = self._session.catalog.hook(skill_id, entry)
        skill = self._session.project.skills.get(skill_id)
        if found is not None or skill is None:
            return found
        imported = skill.hooks.get(hook_name(entry))
        return BoundTool(imported.tool, skill_id) if imported and imported.tool else None

    def _roll_back(self, ref: FieldRef, previous: Any, declared: MemoryField) -> None:
        """Restore the value a hook's field held before the write that triggered it."""
        self._session.memory.write(ref, previous)
        self._session.write_recorder(self._channel)(ref, previous, declared)


def hook_error(outcome: ToolOutcome) -> str | None:
    """The error a hook reports: a failed call, or a non-null ``error`` in its response."""
    if outcome.kind != "ok":
        return outcome.error or "the post-write hook failed"
    response = outcome.llm_response
    if isinstance(response, Mapping) and response.get("error") is not None:
        return str(response["error"])
    return None


async def run_button_source(
    session: Session, channel: TurnChannel, skill_id: str, tool_name: str
) -> tuple[Button, ...]:
    """Invoke a response button source tool and offer the buttons it set (contract §2.7)."""
    bound = session.catalog.local(skill_id, tool_name)
    if bound is None:
        raise EngineError(f"skill {skill_id!r} has no tool {tool_name!r} to source buttons")
    collector = ButtonCollector()
    context = session.tool_context(channel, skill_id, buttons=collector)
    outcome = await invoke_tool(
        bound.tool, {}, context, session.tool_timeout, tool_loops=session.tool_loops
    )
    if outcome.kind != "ok" or not collector.buttons:
        return ()
    channel.offer_buttons(collector.buttons)
    return collector.buttons
