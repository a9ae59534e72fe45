"""A call's timeline as lanes of time spans: caller speech, transcripts, turns, bot sentences,
tools and barge-ins (docs/replay.md, "Report").

Everything is read from timeline records (docs/timeline.md): the gateway's when the replay
has them, else the caller-side ones (a ``--url`` replay over a telephone dialect). Times are
media ms since the call started. Labels are the peer's and the agent's text, untrusted: the
drawing code escapes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from voicegate.callers.report import Record, interruptions

#: Every span kind, with the colour both drawings give it.
KINDS = {
    "speech": "#bee3f8",  # caller speech, as the VAD found it
    "echo": "#e2e8f0",  # speech the echo gate dropped
    "cue": "#2b6cb0",  # the caller-side timeline: a recording began
    "transcript": "#ebf8ff",
    "dtmf": "#faf089",
    "turn-completed": "#c6f6d5",
    "turn-cancelled": "#fefcbf",
    "turn-error": "#fed7d7",
    "turn-open": "#edf2f7",  # never ended, or ended for a reason this version does not know
    "failure": "#fc8181",  # protocol error, refused call
    "heard": "#fbd38d",
    "cut": "#feebc8",  # heard up to the flush
    "unheard": "#edf2f7",  # generated, never heard
    "tool-ok": "#d6bcfa",
    "tool-error": "#feb2b2",
    "tool-timeout": "#feb2b2",
    "tool-cancelled": "#e9d8fd",
    "tool-open": "#faf5ff",
    "bargein": "#f56565",  # speech onset -> confirmed interruption
    "false-bargein": "#fbb6ce",  # paused, then resumed
    "flush": "#742a2a",
}


@dataclass(frozen=True, slots=True)
class Span:
    """Something that lasted from ``start_ms`` to ``end_ms`` (equal for an instant)."""

    start_ms: int
    end_ms: int
    kind: str  # one of KINDS
    label: str
    detail: str = ""  # a longer text for a tooltip
    heard: str = ""  # a sentence cut by a flush: the words of ``label`` the caller heard


@dataclass(frozen=True, slots=True)
class Lane:
    """One row of the picture."""

    key: str
    title: str
    spans: tuple[Span, ...]


def call_lanes(records: Sequence[Record], end_ms: int) -> tuple[Lane, ...]:
    """The lanes of a call whose timeline is ``records``; open spans end at ``end_ms``."""
    return (
        Lane("caller", "caller speech", tuple(_speech(records, end_ms))),
        Lane("transcripts", "transcripts", tuple(_transcripts(records))),
        Lane("turns", "turns", tuple(_turns(records, end_ms))),
        Lane("bot", "bot sentences", tuple(bot_sentences(records))),
        Lane("tools", "tools", tuple(_tools(records, end_ms))),
        Lane("bargein", "barge-ins", tuple(_bargeins(records))),
    )


def _speech(records: Sequence[Record], end_ms: int) -> list[Span]:
    spans: list[Span] = []
    onset: int | None = None
    for record in records:
        match record["event"]:
            case "speech_started":
                onset = _int(record, "onset_ms")
            case "speech_ended" if onset is not None:
                spans.append(Span(onset, max(onset, _int(record, "end_ms")), "speech", ""))
                onset = None
            case "echo_suppressed":
                start = _int(record, "onset_ms")
                spans.append(Span(start, max(start, _int(record, "end_ms")), "echo", "echo"))
            case "cue_started":  # the caller-side timeline: when each recording began
                label = str(record.get("label", ""))
                spans.append(Span(record["t_ms"], record["t_ms"], "cue", label))
    if onset is not None:
        spans.append(Span(onset, max(onset, end_ms), "speech", ""))
    return spans


def _transcripts(records: Sequence[Record]) -> list[Span]:
    spans: list[Span] = []
    onset: int | None = None
    for record in records:
        t_ms = int(record["t_ms"])
        match record["event"]:
            case "speech_started":
                onset = _int(record, "onset_ms")
            case "transcript" if record.get("final"):
                start = t_ms if onset is None else min(onset, t_ms)
                spans.append(Span(start, t_ms, "transcript", str(record.get("text", ""))))
            case "cue_started" if record.get("transcript"):
                spans.append(Span(t_ms, t_ms, "transcript", str(record["transcript"])))
            case "dtmf":
                spans.append(Span(t_ms, t_ms, "dtmf", f"DTMF {record.get('digit', '')}"))
    return spans


def _turns(records: Sequence[Record], end_ms: int) -> list[Span]:
    started: dict[str, tuple[int, str]] = {}
    spans: list[Span] = []
    for record in records:
        event, t_ms = record["event"], int(record["t_ms"])
        if event == "turn_started":
            started[str(record["turn_id"])] = (t_ms, _input_text(record.get("input")))
        elif event == "turn_ended" and str(record["turn_id"]) in started:
            turn_id = str(record["turn_id"])
            start, said = started.pop(turn_id)
            reason = str(record.get("reason", ""))
            kind = f"turn-{reason}" if f"turn-{reason}" in KINDS else "turn-open"
            detail = str(record.get("detail", "")) or reason
            spans.append(Span(start, t_ms, kind, f"{turn_id}: {said}", detail))
        elif event in ("protocol_error", "call_refused"):
            reason = str(record.get("reason", ""))
            spans.append(Span(t_ms, t_ms, "failure", f"{event}: {reason}", reason))
    for turn_id, (start, said) in started.items():
        spans.append(Span(start, max(start, end_ms), "turn-open", f"{turn_id}: {said}"))
    return sorted(spans, key=lambda span: span.start_ms)


def bot_sentences(records: Sequence[Record]) -> list[Span]:
    """Each ``say``, placed where it played: heard, cut by a flush, or never heard."""
    flushes = flush_times(records)
    heard = {str(r["turn_id"]): str(r["text"]) for r in records if r["event"] == "heard"}
    spans: list[Span] = []
    for turn_id, says in _says_by_turn(records).items():
        marks = _mark_times(records, turn_id)
        spans += _turn_sentences(says, marks, heard.get(turn_id), flushes)
    return sorted(spans, key=lambda span: span.start_ms)


def flush_times(records: Sequence[Record]) -> list[int]:
    """When the provider was flushed or paused: at detection (``playout_paused`` with
    ``flushed`` or ``held``, the moment the caller stops hearing the bot, design §5) and at
    confirmation (``flush_sent``)."""
    return [
        int(r["t_ms"])
        for r in records
        if r["event"] == "flush_sent" or (r["event"] == "playout_paused" and _stopped_at_caller(r))
    ]


def _stopped_at_caller(record: Record) -> bool:
    """Whether a ``playout_paused`` stopped the provider too (cleared, or paused by Asterisk)."""
    return bool(record.get("flushed") or record.get("held"))


def _turn_sentences(
    says: list[tuple[int, str]], marks: list[int], heard: str | None, flushes: list[int]
) -> list[Span]:
    """The sentences of one turn, matched word by word against what the caller heard.

    The ledger reports whole segments heard, then the leading words of the one a flush cut
    (gateway/ledger.py), so ``heard`` is a prefix of the turn's sentences, word for word.
    """
    left = None if heard is None else heard.split()
    spans: list[Span] = []
    previous_end: int | None = None
    for index, (t_ms, text) in enumerate(says):
        words = text.split()
        start = t_ms if previous_end is None else max(t_ms, previous_end)
        mark = marks[index] if index < len(marks) else None
        whole = mark is not None if left is None else bool(words) and left[: len(words)] == words
        if whole:
            end = max(start, mark if mark is not None else start)
            spans.append(Span(start, end, "heard", text))
            left = None if left is None else left[len(words) :]
        elif left and words[: len(left)] == left:
            cut = next((f for f in flushes if f >= start), start)
            spans.append(Span(start, cut, "cut", text, heard=" ".join(left)))
            left, end = [], cut
        else:  # drawn where it would have played, after what went before it
            spans.append(
                Span(start, start, "unheard", text, f"generated at {t_ms} ms, never heard")
            )
            end = start
        previous_end = end
    return spans


def _says_by_turn(records: Sequence[Record]) -> dict[str, list[tuple[int, str]]]:
    says: dict[str, list[tuple[int, str]]] = {}
    for record in records:
        if record["event"] == "say":
            turn = says.setdefault(str(record["turn_id"]), [])
            turn.append((int(record["t_ms"]), str(record.get("text", ""))))
    return says


def _mark_times(records: Sequence[Record], turn_id: str) -> list[int]:
    """When the turn's marks came back, in the order they were sent (``<turn_id>.<n>``)."""
    found: list[tuple[int, int]] = []
    for record in records:
        if record["event"] != "mark_played":
            continue
        turn, _, number = str(record.get("name", "")).rpartition(".")
        if turn == turn_id and number.isdigit():
            found.append((int(number), int(record["t_ms"])))
    return [t_ms for _, t_ms in sorted(found)]


def _tools(records: Sequence[Record], end_ms: int) -> list[Span]:
    running: dict[tuple[str, str], tuple[int, str, str]] = {}
    spans: list[Span] = []
    for record in records:
        event, t_ms = record["event"], int(record["t_ms"])
        key = (str(record.get("turn_id")), str(record.get("call_id")))
        if event == "tool_started":
            running[key] = (t_ms, str(record.get("name", "")), _json(record.get("arguments")))
        elif event in ("tool_finished", "tool_cancelled") and key in running:
            start, name, arguments = running.pop(key)
            outcome = "cancelled" if event == "tool_cancelled" else str(record.get("outcome"))
            kind = f"tool-{outcome}" if f"tool-{outcome}" in KINDS else "tool-open"
            result = _json(record.get("result")) if "result" in record else ""
            detail = f"{name}({arguments}) {outcome} {result}".strip()
            spans.append(Span(start, t_ms, kind, name, detail))
    for start, name, arguments in running.values():
        spans.append(Span(start, max(start, end_ms), "tool-open", name, f"{name}({arguments})"))
    return sorted(spans, key=lambda span: span.start_ms)


def _bargeins(records: Sequence[Record]) -> list[Span]:
    spans: list[Span] = []
    for found in interruptions(records):
        latency = found.latencies()
        label = f"confirmed {latency['confirmed']} ms"
        detail = ", ".join(f"onset → {key} {value} ms" for key, value in latency.items())
        spans.append(Span(found.onset_ms, found.confirmed_ms, "bargein", label, detail))
    paused: int | None = None
    for record in records:
        match record["event"]:
            case "playout_paused":
                paused = int(record["t_ms"])
                if _stopped_at_caller(record):  # the caller stops hearing the bot (design §5)
                    how = "flushed" if record.get("flushed") else "held at the provider"
                    spans.append(Span(paused, paused, "flush", "", f"paused and {how}"))
            case "playout_resumed" if paused is not None:
                resumed = int(record["t_ms"])
                spans.append(Span(paused, resumed, "false-bargein", "resumed", "not a barge-in"))
                paused = None
            case "interruption":
                paused = None
            case "flush_sent":
                verb = str(record.get("verb", ""))
                spans.append(Span(record["t_ms"], record["t_ms"], "flush", "", f"flush: {verb}"))
    return sorted(spans, key=lambda span: span.start_ms)


def _input_text(value: object) -> str:
    if isinstance(value, dict):
        if "text" in value:
            return str(value["text"])
        if "dtmf" in value:
            return f"DTMF {value['dtmf']}"
        return str(value.get("kind", ""))
    return ""


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _int(record: Record, key: str) -> int:
    value = record.get(key)
    return int(value) if isinstance(value, int | float) else int(record["t_ms"])
