"""Turn-taking end to end (issue 14): a real gateway, an emulated Twilio caller, real VAD.

The end-of-turn model (the shipped Smart Turn v3.2) answers at a short pause instead of after
the VAD's 500 ms, and the echo gate keeps the bot's own voice, echoed back by the caller's
phone (callers/echo.py), from interrupting the bot while the caller still can.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.calls.call_kit import (
    CallWorld,
    cue,
    gateway_for,
    recording,
    script_of,
    transcript_of,
)
from voicegate.callers.driver import drive
from voicegate.callers.echo import EchoPath
from voicegate.callers.script import Cue
from voicegate.callers.twilio import FRAME_BYTES, FRAME_MS, TwilioCaller
from voicegate.cli.engines import build_espeak
from voicegate.engine.history import UserUttered
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore
from voicegate.gateway.bargein import BargeInPolicy
from voicegate.gateway.media import MediaFactory
from voicegate.gateway.session import SessionSettings
from voicegate.turns.settings import EchoGateSettings, EndOfTurnSettings, TurnSettings
from voicegate.turns.smart_turn import SmartTurnModel, bundled_model_path
from voicegate.turns.tracker import TurnFactory
from voicegate.vad.settings import VadSettings

BALANCE = "synth/festival/balance_8k.wav"
INTERRUPTION = "human/asterisk/please-try-again.wav"
FIVE = "human/asterisk/digit-5.wav"
CALL_SID = "CA00000000000000000000000000000042"


@pytest.fixture(scope="module")
def model() -> Iterator[SmartTurnModel]:
    loaded = SmartTurnModel(bundled_model_path())
    yield loaded
    loaded.close()


def records(world: CallWorld) -> list[dict[str, Any]]:
    timeline = world.runner.timeline(CALL_SID)
    assert timeline is not None
    return list(timeline.records)


def named(timeline: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [r for r in timeline if r["event"] == event]


async def test_the_model_ends_the_turn_at_a_short_pause(
    tmp_path: Path, model: SmartTurnModel
) -> None:
    # A fallback far away, so the turn can only end early through the model's verdict.
    eot = EndOfTurnSettings(
        silence_timeout_ms=5000, incomplete_timeout_ms=5000, hesitation_timeout_ms=5000
    )
    turns = TurnFactory(TurnSettings(eot, EchoGateSettings(enabled=False)), model)
    media = MediaFactory(vad=VadSettings(stop_ms=eot.ask_after_ms))
    async with gateway_for(tmp_path, ["check my balance"], media=media, turns=turns) as world:
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=7000))
        assert await drive(world.url, caller, speed=2.0, max_ms=30_000) == 1000
    timeline = records(world)
    [end] = named(timeline, "end_of_turn")
    assert end["reason"] == "model"
    assert end["score"] >= 0.5
    assert end["words"] == "check my balance"  # the recogniser's pause transcript was in
    ended = named(timeline, "speech_ended")[0]
    assert (ended["t_ms"], ended["end_ms"]) == (end["t_ms"], end["end_ms"])
    started = named(timeline, "turn_started")[0]
    assert started["input"] == {"text": "check my balance"}
    assert started["t_ms"] >= end["t_ms"]


async def test_a_trailing_and_keeps_the_turn_open(tmp_path: Path, model: SmartTurnModel) -> None:
    eot = EndOfTurnSettings(silence_timeout_ms=600, hesitation_timeout_ms=1500)
    turns = TurnFactory(TurnSettings(eot, EchoGateSettings(enabled=False)), model)
    media = MediaFactory(vad=VadSettings(stop_ms=eot.ask_after_ms))
    transcripts = ["balance and"]  # the scripted recogniser shows it whole by the pause
    async with gateway_for(tmp_path, transcripts, media=media, turns=turns) as world:
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=5000))
        assert await drive(world.url, caller, speed=2.0, max_ms=30_000) == 1000
    [end] = named(records(world), "end_of_turn")
    assert end["reason"] == "hesitation timeout"
    assert end["silence_ms"] >= 1500


def echo_world(gate: bool) -> dict[str, Any]:
    settings = TurnSettings(EndOfTurnSettings(model="none"), EchoGateSettings(enabled=gate))
    return {"turns": TurnFactory(settings), "tts": build_espeak("en-us", 16000)}


@pytest.mark.parametrize("gate", [False, True], ids=["gate-off", "gate-on"])
async def test_the_bots_echo_never_interrupts_it_with_the_gate_on(
    tmp_path: Path, gate: bool
) -> None:
    async with gateway_for(tmp_path, ["check my balance"], **echo_world(gate)) as world:
        echo = EchoPath(8000, delay_ms=100, gain_db=-10.0)
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=9000), echo=echo)
        assert await drive(world.url, caller, speed=2.0, max_ms=30_000) == 1000
    timeline = records(world)
    assert named(timeline, "bot_speaking")
    if gate:
        assert not named(timeline, "interruption")
        assert not named(timeline, "playout_paused")
        assert not caller.clears
        assert named(timeline, "echo_suppressed")
    else:  # the control: without the gate the echo alone makes the bot stop for the caller
        assert named(timeline, "playout_paused")


async def test_the_caller_still_interrupts_over_the_echo(tmp_path: Path) -> None:
    transcripts = ["check my balance", "please try again"]
    async with gateway_for(tmp_path, transcripts, **echo_world(True)) as world:
        echo = EchoPath(8000, delay_ms=100, gain_db=-10.0)
        cues = [
            cue(BALANCE, at_ms=300),
            replace(cue(INTERRUPTION, after_bot_speech=1, delay_ms=1500)),
        ]
        caller = TwilioCaller(script_of(*cues), echo=echo)
        assert await drive(world.url, caller, speed=2.0, max_ms=30_000) == 1000
    timeline = records(world)
    [interruption] = named(timeline, "interruption")
    assert caller.clears
    assert interruption["onset_ms"] >= caller.bot_started_ms[0] + 1500


def quiet(relative: str, peak_dbfs: float, **placement: int) -> Cue:
    """A fixture recording as a quiet talker says it: its peaks scaled to ``peak_dbfs``."""
    samples = recording(relative).astype(np.float64)
    scaled = samples * (32768 * 10 ** (peak_dbfs / 20) / np.abs(samples).max())
    samples16 = np.round(scaled).astype(np.int16)
    return Cue(samples16, label=relative, transcript=transcript_of(relative), **placement)


async def test_a_quiet_caller_interrupts_the_bot_on_a_line_without_echo(tmp_path: Path) -> None:
    # Peaks at -42 dBFS: the loudest 20 ms of "please try again" ~50 dBFS, some 35 dB under
    # espeak-ng's. The echo gate held it back as echo when its margin stopped at 20 dB
    # (bench/line_conditions.py quiet_-45dBFS: every barge-in missed); this line shows no echo.
    transcripts = ["check my balance", "please try again"]
    async with gateway_for(tmp_path, transcripts, **echo_world(True)) as world:
        over = quiet(INTERRUPTION, -42.0, after_bot_speech=1, delay_ms=1500)
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), over))
        assert await drive(world.url, caller, speed=2.0, max_ms=30_000) == 1000
    timeline = records(world)
    assert not named(timeline, "echo_suppressed")
    [interruption] = named(timeline, "interruption")
    assert caller.clears
    assert interruption["onset_ms"] >= caller.bot_started_ms[0] + 1500


async def test_a_false_alarm_resumes_from_the_first_unheard_sample(tmp_path: Path) -> None:
    # "five" (0.6 s of speech) is detected but, needing 1.5 s to interrupt, never confirmed:
    # the provider is cleared at detection and the utterance then resumes where it was cut.
    settings = SessionSettings(barge_in=BargeInPolicy(min_speech_ms=1500))
    async with gateway_for(tmp_path, ["check my balance", "five"], settings=settings) as world:
        cues = [cue(BALANCE, at_ms=300), cue(FIVE, after_bot_speech=1, delay_ms=700)]
        caller = TwilioCaller(script_of(*cues), quiet_ms=2000)
        assert await drive(world.url, caller, speed=2.0, max_ms=30_000) == 1000
    timeline = records(world)
    [paused] = named(timeline, "playout_paused")
    assert (paused["flushed"], paused["held"]) == (True, False)  # Twilio cannot pause: clear
    assert named(timeline, "playout_resumed")
    assert not named(timeline, "interruption")
    assert caller.clears == [caller.clears[0]]  # one clear, at detection
    said = [r["text"] for r in named(timeline, "say") if r["turn_id"] == "t1"]
    [heard] = [r for r in named(timeline, "heard") if r["turn_id"] == "t1"]
    assert heard["text"] == " ".join(said)  # exact through pause, flush and resume
    assert not heard["interrupted"]
    # Every sample of the answer reached the caller once: nothing lost, nothing repeated
    # (within the ledger's one-frame estimate of where playback stood at the clear).
    answer_ms = sum(len(text) * 40 for text in said)
    assert abs(played_ms(caller) - answer_ms) <= 2 * FRAME_MS * len(said)


def played_ms(caller: TwilioCaller) -> int:
    track = np.frombuffer(bytes(caller.bot_track), dtype=np.uint8)
    frames = track[: len(track) // FRAME_BYTES * FRAME_BYTES].reshape(-1, FRAME_BYTES)
    return int((frames != 0xFF).sum()) // (FRAME_BYTES // FRAME_MS)


class Undecided:
    """An end-of-turn model that always finds the turn incomplete (isolates the pause rule)."""

    def submit(self, samples: Any, sample_rate: int) -> Future[float] | None:
        future: Future[float] = Future()
        future.set_result(0.1)
        return future


def speculative_world(world_args: dict[str, Any] | None = None) -> dict[str, Any]:
    # Every pause waits 2.5 s for more speech (the model says incomplete), so a caller who
    # goes on after 1.4 s overrides the speculative turn started at the pause (1.2 s after
    # it: far more than the 32 frames a busy receive loop handles before it yields).
    eot = EndOfTurnSettings(incomplete_timeout_ms=2500, speculative=True)
    turns = TurnFactory(TurnSettings(eot, EchoGateSettings(enabled=False)), Undecided())
    return {"turns": turns, "media": MediaFactory(vad=VadSettings(stop_ms=eot.ask_after_ms))}


async def test_a_speculative_turn_the_caller_overrides_leaves_no_trace(tmp_path: Path) -> None:
    async with gateway_for(tmp_path, ["check my balance"], **speculative_world()) as world:
        histories: dict[str, list[Any]] = {}
        engine, close = world.engine, world.engine.close

        async def keep_history(call_id: str) -> None:  # the session is gone after close
            histories[call_id] = engine.session(call_id).history.snapshot()
            await close(call_id)

        engine.close = keep_history  # type: ignore[method-assign]
        balance_ms = len(recording(BALANCE)) // 8
        cues = [cue(BALANCE, at_ms=300), cue(FIVE, at_ms=300 + balance_ms + 1400)]
        caller = TwilioCaller(script_of(*cues, tail_ms=6000))
        assert await drive(world.url, caller, speed=2.0, max_ms=40_000) == 1000
    timeline = records(world)
    order = [r["event"] for r in timeline if r["event"].startswith("speculation")]
    # At the first pause a turn started; the caller went on and it was cancelled unheard;
    # at the second pause another started, and the end of the turn confirmed it.
    assert order == [
        "speculation_started",
        "speculation_cancelled",
        "speculation_started",
        "speculation_confirmed",
    ]
    assert named(timeline, "speculation_cancelled")[0]["reason"] == "caller went on"
    # The cancelled turn ran no tool and wrote no memory: the lookup ran once, in the turn
    # that was confirmed, and counted one lookup.
    assert [r["event"] for r in world.tool_record()] == ["started", "finished"]
    reopened = SqliteMemoryStore(tmp_path / "memory.sqlite3")
    assert json.loads(reopened.load(CALL_SID)[("project", "lookups_started")]) == 1
    # Nor is it in the history: one caller turn, and the model's script was rewound, so
    # the confirmed turn said the first scripted answer, not the second.
    [history] = histories.values()
    assert [e.text for e in history if isinstance(e, UserUttered)] == ["check my balance"]
    heard = [r["text"] for r in named(timeline, "heard") if r["text"]]
    assert heard[0].startswith("Sure.")
    assert not any("Goodbye" in text for text in heard)


async def test_a_confirmed_speculative_turn_has_its_answer_ready_at_the_end_of_turn(
    tmp_path: Path,
) -> None:
    async with gateway_for(tmp_path, ["check my balance"], **speculative_world()) as world:
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=4000))
        assert await drive(world.url, caller, speed=2.0, max_ms=40_000) == 1000
    timeline = records(world)
    events = [r["event"] for r in timeline]
    started = events.index("speculation_started")
    [end] = named(timeline, "end_of_turn")
    confirmed = named(timeline, "speculation_confirmed")[0]
    # The engine's turn started at the pause, before the end of the turn was declared, and
    # its first sentence was synthesised and waiting when it was: no turn started after it.
    assert started < events.index("end_of_turn") < events.index("speculation_confirmed")
    assert confirmed["held"] >= 1
    assert len(named(timeline, "turn_started")) == 1
    assert events.index("turn_started") < events.index("end_of_turn")
    assert end["reason"] == "incomplete timeout"
    assert named(timeline, "bot_speaking")
