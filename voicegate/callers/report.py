"""What a replayed call produced: barge-in latencies, what was heard, and the output files.

Latencies follow docs/timeline.md: from the speech onset of an ``interruption`` record
(``onset_ms``, the VAD's first speech frame) to the interruption's own ``t_ms`` (confirmed), to
the ``turn_cancelled`` and the ``flush_sent`` that follow it. All are media time, so they say
what the caller experienced, not how busy the machine was.
"""

from __future__ import annotations

import json
import wave
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voicegate.audio.pcm import Samples

Record = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Interruption:
    """One confirmed interruption and what it set off, in media ms since call start."""

    confirmed_ms: int
    onset_ms: int
    reason: str
    turn_id: str | None  # the turn it cancelled, if one was running
    cancelled_ms: int | None
    flushed_ms: int | None

    def latencies(self, from_ms: int | None = None) -> dict[str, int | None]:
        """Ms from ``from_ms`` (default: the VAD onset) to confirmed, cancelled and flushed."""
        start = self.onset_ms if from_ms is None else from_ms
        return {
            "confirmed": self.confirmed_ms - start,
            "turn_cancelled": None if self.cancelled_ms is None else self.cancelled_ms - start,
            "flush_sent": None if self.flushed_ms is None else self.flushed_ms - start,
        }


@dataclass(frozen=True, slots=True)
class TurnHeard:
    """What the caller heard of one turn."""

    turn_id: str
    text: str
    interrupted: bool


def interruptions(records: Sequence[Record]) -> list[Interruption]:
    """Every interruption, with the cancel and flush that followed it."""
    found = []
    for index, record in enumerate(records):
        if record["event"] != "interruption":
            continue
        after = _until_next_interruption(records[index + 1 :])
        cancelled = next((r for r in after if r["event"] == "turn_cancelled"), None)
        flushed = next((r for r in after if r["event"] == "flush_sent"), None)
        found.append(
            Interruption(
                confirmed_ms=record["t_ms"],
                onset_ms=record["onset_ms"],
                reason=str(record.get("reason", "")),
                turn_id=None if cancelled is None else cancelled["turn_id"],
                cancelled_ms=None if cancelled is None else cancelled["t_ms"],
                flushed_ms=None if flushed is None else flushed["t_ms"],
            )
        )
    return found


def heard_turns(records: Sequence[Record]) -> list[TurnHeard]:
    """What was heard of each turn, in the order it was settled."""
    return [
        TurnHeard(r["turn_id"], r["text"], bool(r["interrupted"]))
        for r in records
        if r["event"] == "heard"
    ]


def summary(records: Sequence[Record], *, observed: Sequence[Record] = ()) -> list[str]:
    """Turns, what the caller said, interruptions with their latencies, what was heard, and
    what failed (the gateway's view; ``observed``, the caller's, only lengthens the media)."""
    turns = [r for r in records if r["event"] == "turn_started"]
    found = interruptions(records)
    # The gateway's timeline may stop before the call did (a gateway too old to record a
    # hang-up by socket close wrote nothing after it): the caller saw the call to its end.
    media = max(_end_ms(records), _end_ms(observed))
    lines = [f"turns: {len(turns)}   interruptions: {len(found)}   media: {media} ms"]
    lines += transcript_lines(records)
    if not turns and not any(r["event"] == "speech_started" for r in records):
        # Otherwise a silent, too quiet or unreadable recording reads like a working call.
        # (A text provider's turns come from its prompts, without speech records.)
        lines.append("no caller speech detected: the VAD found none, so no turn started")
    lines += echo_lines(records)
    for number, interruption in enumerate(found, start=1):
        lines.append(_interruption_line(number, interruption))
    for heard in heard_turns(records):
        mark = " (interrupted)" if heard.interrupted else ""
        lines.append(f"heard {heard.turn_id}{mark}: {heard.text!r}")
    return lines + failure_lines(records)


def transcript_lines(records: Sequence[Record]) -> list[str]:
    """What the recogniser made of the caller (final transcripts) and the keys pressed."""
    lines = []
    for record in records:
        if record["event"] == "transcript" and record.get("final"):
            lines.append(f"caller at {record['t_ms']} ms: {record.get('text')!r}")
        elif record["event"] == "dtmf":
            lines.append(f"caller at {record['t_ms']} ms: DTMF {record.get('digit')!r}")
    return lines


def echo_lines(records: Sequence[Record]) -> list[str]:
    """Caller speech the echo gate dropped: else a quiet caller over the bot just vanishes."""
    return [
        f"speech at {r['onset_ms']}-{r['end_ms']} ms dropped as the bot's echo: no louder than "
        "its echo could be (docs/turn-taking.md, Echo gate)"
        for r in records
        if r["event"] == "echo_suppressed"
    ]


def failure_lines(records: Sequence[Record]) -> list[str]:
    """What failed in the call: turns that ended in error, protocol errors, refusals."""
    lines = []
    for record in records:
        at = f"at {record['t_ms']} ms"
        match record["event"]:
            case "turn_ended" if record.get("reason") == "error":
                lines.append(f"turn {record.get('turn_id')} failed {at}: {record.get('detail')}")
            case "protocol_error":
                lines.append(f"protocol error {at}: {record.get('reason')}")
            case "call_refused":
                lines.append(f"call refused ({record.get('code')}): {record.get('reason')}")
    return lines


#: What a close code from the gateway means (SECURITY.md), for a summary over the wire.
CLOSE_MEANINGS = {
    1000: "the call ended normally",
    1001: "the gateway is shutting down",
    1002: "the gateway refused a malformed message",
    1006: "the connection dropped without a close frame",
    1007: "the gateway refused invalid UTF-8",
    1008: "refused: authentication failed or a limit was broken (see the gateway's log)",
    1009: "a message was too big",
    1011: "the gateway failed on this call (see the gateway's log)",
    1013: "the gateway is full or starting; try again",
}


def caller_summary(observed: Sequence[Record]) -> list[str]:
    """What the caller alone can tell: what it said, bot audio, clears, marks, how it ended."""
    lines = [
        f"caller said at {r['t_ms']} ms: {r['transcript']!r}"
        for r in observed
        if r["event"] == "cue_started" and r.get("transcript")
    ]
    lines += _counts_and_clears(observed)
    for record in observed:
        if record["event"] == "stream_closed":
            code = record.get("close_code")
            meaning = CLOSE_MEANINGS.get(code, "") if isinstance(code, int) else "no close code"
            lines.append(f"closed: {code} ({meaning})" if meaning else f"closed: {code}")
            if record.get("close_reason"):  # the gateway's own words: why it ended the call
                lines.append(f"close reason: {record['close_reason']!r}")
    return lines


def _counts_and_clears(observed: Sequence[Record]) -> list[str]:
    counts = {
        event: sum(1 for r in observed if r["event"] == event)
        for event in ("bot_audio_started", "clear_received", "mark_echoed")
    }
    lines = [
        f"bot spoke {counts['bot_audio_started']} time(s); clears received: "
        f"{counts['clear_received']}; marks acknowledged: {counts['mark_echoed']}"
    ]
    for record in observed:
        if record["event"] == "clear_received":
            lines.append(
                f"clear at {record['t_ms']} ms ({record.get('dropped_ms', 0)} ms of audio dropped)"
            )
    return lines


def write_call_wav(path: Path, caller: Samples, bot: Samples, sample_rate: int) -> None:
    """A stereo 16-bit WAV: the caller on the left channel, the bot on the right."""
    length = max(len(caller), len(bot))
    stereo = np.zeros((length, 2), dtype="<i2")
    stereo[: len(caller), 0] = caller
    stereo[: len(bot), 1] = bot
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(2)
        writer.setsampwidth(2)
        writer.setframerate(sample_rate)
        writer.writeframes(stereo.tobytes())


def write_jsonl(path: Path, records: Iterable[Record]) -> int:
    """One JSON object per line; the number of lines written."""
    lines = [json.dumps(dict(record), default=str) + "\n" for record in records]
    path.write_text("".join(lines), encoding="utf-8")
    return len(lines)


def _interruption_line(number: int, interruption: Interruption) -> str:
    latency = interruption.latencies()
    parts = [f"onset → confirmed {latency['confirmed']} ms"]
    for key, label in (("turn_cancelled", "turn cancelled"), ("flush_sent", "flush sent")):
        value = latency[key]
        parts.append(f"→ {label} {value} ms" if value is not None else f"no {label}")
    turn = f"turn {interruption.turn_id}" if interruption.turn_id else "no turn running"
    return (
        f"interruption {number} at {interruption.confirmed_ms} ms ({turn}, "
        f"{interruption.reason}): {', '.join(parts)}"
    )


def _end_ms(records: Sequence[Record]) -> int:
    return max((int(r["t_ms"]) for r in records), default=0)


def _until_next_interruption(records: Sequence[Record]) -> Sequence[Record]:
    for index, record in enumerate(records):
        if record["event"] == "interruption":
            return records[:index]
    return records
