"""The browser client in real headless Chromium, against a real gateway on loopback.

Chromium's fake microphone plays a WAV file (fixtures/browser/, built by mic_files.py) into
the page's capture worklet; the page streams it to ``/browser``, plays the bot through its
playback worklet and draws the timeline records the gateway publishes. The gateway runs
fixtures/projects/slow_bank with a scripted recogniser, a tone synthesiser and real VAD.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.browser.browser_kit import (
    ARTIFACTS,
    browser_gateway,
    click_call_button,
    page_on,
    require_chromium,
    stats,
)
from tests.browser.cdp import Page
from tests.browser.mic_files import BARGE_IN, ECHO
from voicegate.gateway.session import SessionSettings

TRANSCRIPTS = ["check my balance", "go forward ten meters"]
ANSWER = (
    "Sure. Let me check that for you, this can take a moment. Found it. Your balance is 42 dollars."
)
#: The level (RMS) of the bot's tone (amplitude 4000) is 2828; echo below 1000 is attenuated.
ECHO_LEVEL = 1000
SECOND_TURN = "window.voicegate.records.some(r => r.event === 'turn_started' && r.turn_id === 't2')"
#: True once the page has a transcript record 400 ms after the flush (the caller still speaks).
AFTER_FLUSH = """(() => {
  const records = window.voicegate.records;
  const flush = records.find(r => r.event === 'flush_sent');
  return flush && records.some(r => r.event === 'transcript' && r.t_ms >= flush.t_ms + 400);
})()"""


async def page_records(page: Page, event: str) -> list[dict[str, Any]]:
    """The records of one event the page received, in order."""
    found = await page.evaluate(
        f"window.voicegate.records.filter(r => r.event === {json.dumps(event)})"
    )
    assert isinstance(found, list)
    return found


async def texts(page: Page, selector: str) -> list[str]:
    """The text of every element matching ``selector``."""
    found = await page.evaluate(
        f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent)"
    )
    assert isinstance(found, list)
    return found


def first(records: list[dict[str, Any]], event: str, **match: Any) -> dict[str, Any]:
    return next(
        r for r in records if r["event"] == event and all(r.get(k) == v for k, v in match.items())
    )


async def test_a_caller_talks_over_the_bot_and_the_page_stops_playback(tmp_path: Path) -> None:
    require_chromium()
    # 400 ms sent ahead (config playout.send_ahead_ms) leaves audio in the page's buffer when
    # the clear arrives, so the clear has something to drop; at 100 ms the gateway's pause on
    # the caller's first words starves the buffer before the interruption is confirmed.
    settings = SessionSettings(send_ahead_ms=400)
    async with (
        browser_gateway(tmp_path, TRANSCRIPTS, settings=settings) as world,
        page_on(world, tmp_path, BARGE_IN.path, query="?tenant=acme&lang=en") as page,
    ):
        await click_call_button(page)
        call_id = await page.wait_for("document.querySelector('#call-id').textContent")
        # The caller's first utterance is transcribed and drawn.
        await page.wait_for("!!document.querySelector('.marker.transcript.final')")
        # The bot answers: the page plays it and acknowledges marks as they play.
        await page.wait_for("window.voicegate.stats.marksAcked >= 1")
        played_before_clear = (await stats(page))["playedMs"]
        # The second utterance lands over the answer: interruption, flush, clear.
        await page.wait_for("window.voicegate.stats.clears >= 1")
        await page.wait_for("!!document.querySelector('.log li[data-event=flush_sent]')")
        # Half a second on, the caller still talking: nothing has played since the clear.
        await page.wait_for(AFTER_FLUSH)
        quiet = await stats(page)
        await page.wait_for(SECOND_TURN)
        await page.screenshot(ARTIFACTS / "browser" / "barge_in.png")
        interruption = (await page_records(page, "interruption"))[0]
        flush = (await page_records(page, "flush_sent"))[0]
        markers = await texts(page, ".marker.interruption")
        finals = await texts(page, ".marker.transcript.final")
        log = await texts(page, ".log li")
        await click_call_button(page)  # hang up
        await page.wait_for("window.voicegate.stats.state === 'idle'")
        ended = await stats(page)
        struck = await texts(page, ".marker.say .sentence.not-heard")
        open_bars = await texts(page, ".bar:not(.closed)")
    timeline = world.timeline(call_id)
    # The figure shown is the audio the barge-in took from the caller, as the gateway counted
    # it (its queue and the page's buffer), not only what the page's buffer held.
    flushes = [r for r in timeline if r["event"] == "flush_sent"]
    assert ended["droppedMs"] == sum(r["dropped_ms"] for r in flushes)
    assert ended["droppedMs"] >= ended["bufferDroppedMs"] > 0
    # Sentences of the interrupted turn the caller heard none of are struck through.
    heard_t1 = first(timeline, "heard", turn_id="t1")["text"]
    unheard = [
        r["text"]
        for r in timeline
        if r["event"] == "say" and r["turn_id"] == "t1" and r["text"].split()[0] not in heard_t1
    ]
    assert struck == unheard
    # The call is over: nothing on the lanes still grows.
    assert open_bars == []
    # The page's query string became the call's metadata.
    assert first(timeline, "call_started")["metadata"] == {"tenant": "acme", "lang": "en"}
    # The page's records are the gateway's own timeline, published as it happened.
    assert interruption == {"type": "event", **first(timeline, "interruption")}
    assert flush == {"type": "event", **first(timeline, "flush_sent")}
    # Transcribed, answered, interrupted: in that order, in the gateway's media time.
    said = first(timeline, "transcript", final=True)
    bot = first(timeline, "bot_speaking")
    assert said["text"] == "check my balance"
    assert said["t_ms"] <= bot["t_ms"] < interruption["t_ms"] == flush["t_ms"]
    assert finals[0] == "“check my balance”"
    # The page drew the interruption with its latency (onset to confirmation, then the flush).
    latency = interruption["t_ms"] - interruption["onset_ms"]
    assert 0 < latency < 1000
    assert markers == [f"barge-in {latency} ms · flush {latency} ms"]
    assert any(f"barge-in: confirmed {latency} ms after" in line for line in log)
    assert any("flush (clear) sent" in line for line in log)
    # The page played the answer and acknowledged its first mark while playing.
    assert played_before_clear > 0
    assert "mark_played" in {r["event"] for r in timeline}
    # The clear dropped the queued audio at once, and nothing played after it.
    assert quiet["lastClear"]["droppedMs"] > 0
    assert quiet["playedMs"] == quiet["lastClear"]["playedMs"]
    # What the caller heard of the interrupted answer is a strict prefix of it.
    heard = first(timeline, "heard", turn_id="t1")
    assert heard["interrupted"]
    assert ANSWER.startswith(heard["text"])
    assert len(heard["text"]) < len(ANSWER)
    assert first(timeline, "tool_cancelled", turn_id="t1")["name"] == "check_balance"
    assert page.problems() == []
    (ARTIFACTS / "browser" / "barge_in.timeline.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in timeline), encoding="utf-8"
    )


async def test_the_bots_own_audio_on_the_microphone_does_not_interrupt_it(
    tmp_path: Path,
) -> None:
    require_chromium()
    async with (
        browser_gateway(tmp_path, TRANSCRIPTS) as world,
        page_on(world, tmp_path, ECHO.path) as page,
    ):
        await click_call_button(page)
        call_id = await page.wait_for("document.querySelector('#call-id').textContent")
        await page.wait_for(
            "window.voicegate.records.some(r => r.event === 'bot_quiet')", timeout_s=20
        )
        page_stats = await stats(page)
        await click_call_button(page)
        await page.wait_for("window.voicegate.stats.state === 'idle'")
    timeline = world.timeline(call_id)
    start, end = first(timeline, "bot_speaking")["t_ms"], first(timeline, "bot_quiet")["t_ms"]
    # The echo really reached the gateway: at least a second of the tone at a high level while
    # the bot spoke (Chromium's audio processing attenuates a steady tone after a while).
    loud = [t for t, level in world.stt.calls[0] if start <= t <= end and level > ECHO_LEVEL]
    assert len(loud) * 20 >= 1000
    # ... and neither the VAD nor the barge-in machine took it for the caller.
    during = [r["event"] for r in timeline if start <= r["t_ms"] <= end]
    assert "speech_started" not in during
    assert "interruption" not in {r["event"] for r in timeline}
    assert page_stats["clears"] == 0
    heard = first(timeline, "heard", turn_id="t1")
    assert (heard["text"], heard["interrupted"]) == (ANSWER, False)
    # The page acknowledged every mark, as each sentence finished playing.
    assert page_stats["marksAcked"] == len([r for r in timeline if r["event"] == "mark_played"])
    assert page_stats["marksAcked"] >= 4
    assert page.problems() == []
