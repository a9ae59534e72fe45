"""The ``/calls`` pages in Chromium: the list, and one call's timeline read from its log as it
grows, with the browser page's view (issue 18)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.browser.browser_kit import require_chromium
from tests.browser.cdp import chromium
from tests.server.server_kit import ScriptedRunner, running_gateway
from voicegate.gateway.calllog import CallLogOptions

CALL = "twilio-0123456789abcdef"
SAID = ["Sure.", "Your balance is 42 dollars.", "Anything else?"]
RECORDS: list[dict[str, Any]] = [
    {"t_ms": 0, "event": "call_connected", "gateway_call_id": CALL, "dialect": "twilio",
     "started_at": 1.0, "pid": 1},
    {"t_ms": 0, "event": "call_started", "call_id": "CA42", "metadata": {}},
    {"t_ms": 400, "event": "speech_started", "onset_ms": 300},
    {"t_ms": 1200, "event": "speech_ended", "end_ms": 1000},
    {"t_ms": 1300, "event": "transcript", "text": "check my balance", "final": True},
    {"t_ms": 1300, "event": "turn_started", "turn_id": "t1", "input": {"text": "x"}},
    *({"t_ms": 1400, "event": "say", "turn_id": "t1", "text": t, "source": "model"} for t in SAID),
    {"t_ms": 1420, "event": "bot_speaking", "interruptible": True},
    {"t_ms": 2000, "event": "speech_started", "onset_ms": 1900},
    {"t_ms": 2200, "event": "interruption", "reason": "caller speech", "onset_ms": 1900,
     "epoch": 1},
    {"t_ms": 2200, "event": "flush_sent", "verb": "clear", "dropped_ms": 2600},
    {"t_ms": 2200, "event": "heard", "turn_id": "t1", "text": "Sure. Your balance",
     "interrupted": True},
]  # fmt: skip
CLOSED = {"t_ms": 2300, "event": "call_closed", "code": 1000, "reason": "call ended"}


def lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


async def test_a_call_page_draws_the_log_live_and_strikes_what_was_not_heard(
    tmp_path: Path,
) -> None:
    require_chromium()
    log = tmp_path / "calls" / f"{CALL}.jsonl"
    log.parent.mkdir()
    log.write_text(lines(RECORDS[:6]), encoding="utf-8")
    logs = CallLogOptions(log.parent)
    async with (
        running_gateway(ScriptedRunner(), call_logs=logs) as gateway,
        chromium(tmp_path, allow_microphone=False) as page,
    ):
        await page.navigate(f"{gateway.base_url}/calls/{CALL}")
        await page.wait_for("window.voicegate.records.length === 6")
        assert not await page.evaluate("window.voicegate.state.ended")
        # The call goes on: the page picks up what is appended, then sees it end.
        with log.open("a", encoding="utf-8") as file:
            file.write(lines([*RECORDS[6:], CLOSED]))
        await page.wait_for("window.voicegate.state.ended")
        struck = await page.evaluate(
            "[...document.querySelectorAll('.marker.say .not-heard')].map(e => e.textContent)"
        )
        final = await page.evaluate(
            "document.querySelector('.marker.transcript.final').textContent"
        )
        shown = await page.evaluate("window.voicegate.records.length")
        await page.navigate(f"{gateway.base_url}/calls")
        await page.wait_for("window.voicegate.calls.length === 1")
        listed = await page.evaluate("window.voicegate.calls[0]")
        link = await page.evaluate("document.querySelector('#calls a').getAttribute('href')")
        problems = page.problems()
    assert shown == len(RECORDS) + 1
    assert final == "“check my balance”"
    assert struck == ["Anything else?"]  # neither played nor heard: struck through
    assert listed["provider_call_id"] == "CA42"
    assert listed["state"] == "ended"
    assert link == f"/calls/{CALL}"
    assert problems == []
