"""A tool that blocks its thread stalls neither other calls nor its own call's barge-in (issue 12).

fixtures/projects/stuck_bank: the first balance lookup announces itself, then blocks its thread
in synchronous code for 9 s (``tool_timeout`` is 2 s). Real gateway on loopback, emulated
Twilio callers, real VAD; the tool's own record orders what happened across calls.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.calls.call_kit import CallWorld, cue, gateway_for, script_of
from voicegate.callers.driver import drive
from voicegate.callers.twilio import TwilioCaller
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore

STUCK_BANK = Path(__file__).resolve().parents[2] / "fixtures" / "projects" / "stuck_bank"
BALANCE = "synth/festival/balance_8k.wav"
INTERRUPTION = "human/asterisk/please-try-again.wav"
BLOCKED_SID = "CA000000000000000000000000000000b1"
HEALTHY_SID = "CA000000000000000000000000000000b2"


async def timeline_of(
    world: CallWorld, call_sid: str, timeout_s: float = 10.0
) -> list[dict[str, Any]]:
    """The call's timeline, once the gateway has finished the call (just after the close)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while (timeline := world.runner.timeline(call_sid)) is None:
        assert loop.time() < deadline, f"call {call_sid} never finished"
        await asyncio.sleep(0.05)
    return list(timeline.records)


def events(timeline: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [r for r in timeline if r["event"] == event]


async def wait_for_record(world: CallWorld, event: str, timeout_s: float = 20.0) -> None:
    """Poll the tool's own record until ``event`` appears (the blocked thread's progress)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not any(r["event"] == event for r in world.tool_record()):
        assert loop.time() < deadline, f"the tool never recorded {event!r}"
        await asyncio.sleep(0.05)


async def test_a_blocked_tool_stalls_neither_another_calls_barge_in_nor_its_own(
    tmp_path: Path,
) -> None:
    transcripts = ["check my balance", "please try again"]
    async with gateway_for(tmp_path, transcripts, project=STUCK_BANK) as world:
        blocked = TwilioCaller(
            script_of(cue(BALANCE, at_ms=300), cue(INTERRUPTION, at_ms=3400), tail_ms=4000),
            call_sid=BLOCKED_SID,
        )
        blocked_call = asyncio.create_task(drive(world.url, blocked, speed=1.0, max_ms=30_000))
        await wait_for_record(world, "blocking")
        healthy = TwilioCaller(
            script_of(cue(BALANCE, at_ms=300), cue(INTERRUPTION, at_ms=2600), tail_ms=3000),
            call_sid=HEALTHY_SID,
        )
        assert await drive(world.url, healthy, speed=2.0, max_ms=30_000) == 1000
        # The healthy call went through its barge-in to its end while the other tool was
        # still blocked in its thread.
        assert "unblocked" not in [r["event"] for r in world.tool_record()]
        healthy_timeline = await timeline_of(world, HEALTHY_SID)
        assert events(healthy_timeline, "flush_sent")
        assert healthy.clears
        assert await blocked_call == 1000
    # The caller who talked over the blocked call was flushed and its turn cancelled, although
    # the tool could not unwind.
    blocked_timeline = await timeline_of(world, BLOCKED_SID)
    interruption = events(blocked_timeline, "interruption")[0]
    assert events(blocked_timeline, "flush_sent")[0]["t_ms"] == interruption["t_ms"]
    assert blocked.clears
    assert events(blocked_timeline, "turn_cancelled")[0]["turn_id"] == "t1"
    assert events(blocked_timeline, "turn_started")[-1]["turn_id"] == "t2"


async def test_a_blocked_tool_times_out_and_what_it_does_later_is_discarded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with gateway_for(tmp_path, ["check my balance"], project=STUCK_BANK) as world:
        caller = TwilioCaller(
            script_of(cue(BALANCE, at_ms=300), tail_ms=6000), call_sid=BLOCKED_SID
        )
        assert await drive(world.url, caller, speed=1.0, max_ms=30_000) == 1000
        timeline = await timeline_of(world, BLOCKED_SID)
        # The turn ended as a failed tool once tool_timeout passed, while the thread was
        # still blocked; the engine went on and the call ended normally.
        finished = events(timeline, "tool_finished")[0]
        assert finished["name"] == "check_balance"
        assert finished["outcome"] == "timeout"
        assert "unblocked" not in [r["event"] for r in world.tool_record()]
        assert any(
            "check_balance" in r.getMessage() and "timed out" in r.getMessage()
            for r in caplog.records
        )
        # Later the thread comes back: its memory write and its send are discarded, and logged.
        await wait_for_record(world, "unblocked")
        await asyncio.sleep(0.3)
    discarded = [r.getMessage() for r in caplog.records if "discarded" in r.getMessage()]
    assert any("written_after_block" in message for message in discarded)
    assert any("context.send" in message for message in discarded)
    said = [r["text"] for r in events(timeline, "say")]
    assert "Sorry for the wait." not in said
    store = SqliteMemoryStore(tmp_path / "memory.sqlite3")
    stored = store.load(BLOCKED_SID)
    store.close()
    assert ("project", "written_after_block") not in stored
    assert json.loads(stored[("project", "lookups_started")]) == 1
