"""CPU of the echo gate per caller frame while the bot speaks (issue 12, "cut the per-call cost").

One call's :class:`TurnTracker` (echo gate on, no end-of-turn model) is driven in process as
the session drives it: the bot's answer (the asterisk recordings back to back, 8 kHz μ-law) is
released in 100 ms chunks up to 400 ms ahead of the media clock (``played``); every 20 ms caller
frame (``push``) carries the bot's echo (-20 dB, 120 ms late), and the VAD's events are
scripted: a start the echo explains (held, then dropped) and a barge-in (``goodbye.wav``,
detected 200 ms after its onset), after which playout is flushed and the bot answers again.
Every call's inputs are built before the clock starts, so only the tracker is timed.

- ``tracker_us_per_frame``: ``push`` + ``played`` + ``flushed`` per caller frame (thread CPU).
- ``parts_us``: each part alone, replaying the arguments the tracker gave it in that call:
  ``level_at`` (per caller frame, the reference's ``played``/``flushed`` included),
  ``ac_level_db`` (per caller frame), ``levels_db`` (per 100 ms chunk released) and
  ``gate_frame`` (``echo_gate.frame`` with the VAD's start/end, per caller frame).

Medians over ``--repeats``; run under ``flock /tmp/voicegate-bench.lock``.

    python bench/echo_gate_cost.py [--calls 20] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voicegate.audio.g711 import samples_to_ulaw_bytes, ulaw_bytes_to_samples
from voicegate.audio.pcm import Samples
from voicegate.audio.wav import read_wav
from voicegate.turns import echo_gate
from voicegate.turns.settings import EchoGateSettings, EndOfTurnSettings, TurnSettings
from voicegate.turns.tracker import TurnTracker, Voice
from voicegate.types import AudioEncoding, AudioFormat, MediaMs

ROOT = Path(__file__).resolve().parent.parent
AUDIO = ROOT / "fixtures" / "audio" / "human" / "asterisk"
RATE = 8000
FRAME = 160  # 20 ms
FRAME_MS = 20
CHUNK_MS = 100  # playout's chunk
LEAD_MS = 400  # playout's send_ahead_ms: how far ahead of the media clock it releases
CALL_MS = 10_000
ECHO_GAIN = 0.1  # -20 dB
ECHO_DELAY = 120 * RATE // 1000
#: (onset ms, VAD detection ms, VAD end ms) of a segment the echo explains, and the barge-in.
ECHO_BLIP = (1_900, 2_000, 2_300)
BARGE_IN_AT_MS = 4_000
BOT_PAUSE_MS = 1_000  # after a barge-in, the bot's next answer starts this much later
SETTINGS = TurnSettings(end_of_turn=EndOfTurnSettings(model="none"), echo_gate=EchoGateSettings())
WIRE = AudioFormat(AudioEncoding.PCMU, RATE)


@dataclass(frozen=True)
class VadEvent:
    """A scripted VAD verdict change (the tracker's VoiceLike)."""

    started: bool
    at_ms: MediaMs


@dataclass
class Call:
    """One call's inputs, built before the clock starts."""

    frames: list[Samples]
    chunks: list[bytes]  # the bot's answer in 100 ms wire chunks
    vad: dict[int, list[VadEvent]]  # caller frame index -> events after it


def build_call() -> Call:
    """The bot's answer, the caller's frames (echo + barge-in) and the VAD's script."""
    names = sorted(p.name for p in AUDIO.glob("*.wav"))
    bot = np.concatenate([read_wav(AUDIO / name).samples for name in names])
    bot = np.resize(bot, CALL_MS * RATE // 1000)
    echo = np.zeros_like(bot, dtype=np.float64)
    echo[ECHO_DELAY:] = bot[:-ECHO_DELAY] * ECHO_GAIN
    talker = read_wav(AUDIO / "goodbye.wav").samples
    start = BARGE_IN_AT_MS * RATE // 1000
    echo[start : start + len(talker)] += talker
    caller = np.clip(echo, -32768, 32767).astype(np.int16)
    frames = [caller[i : i + FRAME] for i in range(0, len(caller), FRAME)]
    wire = samples_to_ulaw_bytes(bot)
    step = CHUNK_MS * RATE // 1000
    chunks = [wire[i : i + step] for i in range(0, len(wire), step)]
    onset, detected, end = ECHO_BLIP
    talk_end = BARGE_IN_AT_MS + len(talker) * 1000 // RATE
    vad = {
        detected // FRAME_MS: [VadEvent(True, onset)],
        end // FRAME_MS: [VadEvent(False, end)],
        (BARGE_IN_AT_MS + 200) // FRAME_MS: [VadEvent(True, BARGE_IN_AT_MS)],
        (talk_end + 300) // FRAME_MS: [VadEvent(False, talk_end)],
    }
    return Call(frames, chunks, vad)


def run_call(call: Call, tracker: TurnTracker) -> None:
    """The session's calls into the tracker for one call, on the media clock."""
    next_chunk = 0
    released_until: MediaMs = 0
    resume_at: MediaMs = 0
    for index, frame in enumerate(call.frames):
        now = (index + 1) * FRAME_MS
        out: list[Voice] = tracker.push(frame, now, call.vad.get(index, ()))
        if any(voice.started for voice in out):  # a barge-in: playout flushed, a new answer
            tracker.flushed(now)
            released_until, resume_at = now, now + BOT_PAUSE_MS
        while now >= resume_at and released_until < now + LEAD_MS and next_chunk < len(call.chunks):
            tracker.played(call.chunks[next_chunk], now)
            released_until = max(released_until, now) + CHUNK_MS
            next_chunk += 1


def tracker_cost(calls: list[Call]) -> float:
    """µs of thread CPU per caller frame for ``push`` + ``played`` + ``flushed``."""
    trackers = [TurnTracker(SETTINGS, None, sample_rate=RATE, wire=WIRE) for _ in calls]
    start = time.thread_time_ns()
    for call, tracker in zip(calls, trackers, strict=True):
        run_call(call, tracker)
    elapsed = time.thread_time_ns() - start
    return elapsed / 1000 / sum(len(call.frames) for call in calls)


#: One call of a part: its name, positional and keyword arguments.
Step = tuple[str, tuple[Any, ...], dict[str, Any]]


@dataclass
class Recorded:
    """What the tracker handed each part of the gate in one call, in order."""

    reference: list[Step]
    caller_frames: list[Samples]
    chunks: list[Samples]
    gate: list[Step]


def record(call: Call) -> Recorded:
    """Run one call with the parts wrapped, keeping their arguments."""
    rec = Recorded([], [], [], [])
    tracker = TurnTracker(SETTINGS, None, sample_rate=RATE, wire=WIRE)
    reference = tracker._reference
    for name in ("played", "flushed", "level_at"):
        real = getattr(reference, name)
        setattr(reference, name, _keeping(rec.reference, name, real))
    originals = (echo_gate.frame, echo_gate.speech_started, echo_gate.speech_ended)
    echo_gate.frame = _keeping(rec.gate, "frame", echo_gate.frame)  # type: ignore[assignment]
    echo_gate.speech_started = _keeping(rec.gate, "started", echo_gate.speech_started)  # type: ignore[assignment]
    echo_gate.speech_ended = _keeping(rec.gate, "ended", echo_gate.speech_ended)  # type: ignore[assignment]
    try:
        run_call(call, tracker)
    finally:
        echo_gate.frame, echo_gate.speech_started, echo_gate.speech_ended = originals
    rec.caller_frames = [f for f in call.frames]
    rec.chunks = [ulaw_bytes_to_samples(chunk) for chunk in call.chunks]
    return rec


def _keeping(log: list[Step], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        log.append((name, args, kwargs))
        return fn(*args, **kwargs)

    return wrapper


def parts_cost(rec: Recorded) -> dict[str, float]:
    """µs per use of each part alone, replaying the recorded arguments."""
    queries = sum(1 for name, _, _ in rec.reference if name == "level_at")
    reference = echo_gate.EchoReference(SETTINGS.echo_gate.max_delay_ms)
    calls = [(getattr(reference, name), args) for name, args, _ in rec.reference]
    start = time.thread_time_ns()
    for fn, args in calls:
        fn(*args)
    level_at = (time.thread_time_ns() - start) / 1000 / queries

    level = echo_gate.ac_level_db
    start = time.thread_time_ns()
    for frame in rec.caller_frames:
        level(frame)
    ac_level = (time.thread_time_ns() - start) / 1000 / len(rec.caller_frames)

    levels = echo_gate.levels_db
    start = time.thread_time_ns()
    for chunk in rec.chunks:
        levels(chunk, FRAME)
    chunk_levels = (time.thread_time_ns() - start) / 1000 / len(rec.chunks)

    return {
        "level_at": level_at,
        "ac_level_db": ac_level,
        "levels_db_per_chunk": chunk_levels,
        "gate_frame": _gate_cost(rec.gate),
    }


def _gate_cost(log: list[Step]) -> float:
    """µs per ``echo_gate.frame``, the VAD's starts and ends replayed between frames."""
    parts = {
        "frame": echo_gate.frame,
        "started": echo_gate.speech_started,
        "ended": echo_gate.speech_ended,
    }
    steps = [(parts[name], args[1:], kwargs) for name, args, kwargs in log]
    frames = sum(1 for name, _, _ in log if name == "frame")
    state = echo_gate.EchoGateState()
    start = time.thread_time_ns()
    for fn, args, kwargs in steps:
        state = fn(state, *args, **kwargs)[0]
    return (time.thread_time_ns() - start) / 1000 / max(1, frames)


def main() -> None:
    """Print one JSON object: the gate's CPU per caller frame, whole and by part."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    call = build_call()
    calls = [call] * args.calls
    rec = record(call)
    tracker_cost(calls[:2])  # warm-up
    whole = statistics.median(tracker_cost(calls) for _ in range(args.repeats))
    parts = [parts_cost(rec) for _ in range(args.repeats * 3)]
    report = {
        "benchmark": "echo_gate_cost",
        "calls": args.calls,
        "call_ms": CALL_MS,
        "repeats": args.repeats,
        "caller_frames_per_call": len(call.frames),
        "gate_frames_per_call": sum(1 for name, _, _ in rec.gate if name == "frame"),
        "tracker_us_per_frame": round(whole, 3),
        "parts_us": {key: round(statistics.median(p[key] for p in parts), 3) for key in parts[0]},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
