"""The figures of one call, for the report's table.

Latencies follow docs/timeline.md ("Barge-in latencies") and the definitions of /metrics
(docs/metrics.md): answer = end of caller speech → first bot audio, barge-in → flush = speech
onset → playout paused and provider flushed. All are media ms.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from voicegate.callers.report import Record, failure_lines, interruptions
from voicegate.callers.views.lanes import Lane, flush_times


@dataclass(frozen=True, slots=True)
class Figure:
    """One row of the table: what, its value, and how it is measured."""

    name: str
    value: str
    note: str = ""


def call_figures(
    records: Sequence[Record], observed: Sequence[Record], lanes: Sequence[Lane], end_ms: int
) -> list[Figure]:
    """The figures of a call: its gateway timeline, the caller-side one, and its lanes."""
    found = interruptions(records)
    latencies = [i.latencies() for i in found]
    resumed = sum(1 for r in records if r["event"] == "playout_resumed")
    return [
        Figure("media", f"{end_ms} ms", "caller audio streamed"),
        Figure("turns", _turns(records)),
        Figure("answer latency", _ms(answer_latencies(records)), "end of speech → bot audio"),
        Figure("final transcript", _ms(_stt_latencies(records)), "end of speech → final"),
        Figure("interruptions", f"{len(found)} (false: {resumed})", "confirmed (resumed)"),
        Figure("barge-in → flush", _ms(flush_latencies(records)), "onset → caller stops hearing"),
        Figure("onset → confirmed", _ms([v["confirmed"] for v in latencies])),
        Figure("onset → turn cancelled", _ms([v["turn_cancelled"] for v in latencies])),
        Figure("onset → flush sent", _ms([v["flush_sent"] for v in latencies])),
        Figure("bot sentences", _sentences(lanes)),
        Figure("tools", _tools(lanes)),
        Figure("clears received", _clears(observed), "bot audio dropped by clears"),
        Figure("failures", _failures(records)),
        Figure("call end", _call_end(records, observed)),
    ]


def answer_latencies(records: Sequence[Record]) -> list[int]:
    """For each end of caller speech answered with bot audio, ms until that audio."""
    return _after_speech(records, lambda r: r["event"] == "bot_speaking")


def flush_latencies(records: Sequence[Record]) -> list[int]:
    """For each confirmed interruption, ms from its onset until the caller stopped hearing."""
    stops = flush_times(records)
    found: list[int] = []
    for interruption in interruptions(records):
        stop = next((t for t in stops if t >= interruption.onset_ms), None)
        if stop is not None:
            found.append(stop - interruption.onset_ms)
    return found


def _stt_latencies(records: Sequence[Record]) -> list[int]:
    return _after_speech(records, lambda r: r["event"] == "transcript" and bool(r.get("final")))


def _after_speech(records: Sequence[Record], answer: Callable[[Record], bool]) -> list[int]:
    """Ms from each end of caller speech (``end_ms``) to the first record after it that
    ``answer`` accepts; ends of speech left unanswered count for nothing."""
    found: list[int] = []
    end: int | None = None
    for record in records:
        if record["event"] == "speech_ended":
            end = int(record.get("end_ms", record["t_ms"]))
        elif end is not None and answer(record):
            found.append(int(record["t_ms"]) - end)
            end = None
    return found


def _ms(values: Sequence[int | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "—"
    listed = ", ".join(str(v) for v in known) + " ms"
    if len(known) < 3:
        return listed
    return f"{listed} (median {statistics.median(known):g} ms)"


def _turns(records: Sequence[Record]) -> str:
    started = sum(1 for r in records if r["event"] == "turn_started")
    reasons = Counter(str(r.get("reason")) for r in records if r["event"] == "turn_ended")
    parts = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
    return f"{started} ({parts})" if parts else str(started)


def _sentences(lanes: Sequence[Lane]) -> str:
    kinds = Counter(span.kind for lane in lanes if lane.key == "bot" for span in lane.spans)
    total = sum(kinds.values())
    return (
        f"{total} generated: {kinds['heard']} heard, {kinds['cut']} cut by a flush, "
        f"{kinds['unheard']} never heard"
    )


def _tools(lanes: Sequence[Lane]) -> str:
    spans = [span for lane in lanes if lane.key == "tools" for span in lane.spans]
    if not spans:
        return "none"
    parts = []
    for name in sorted({span.label for span in spans}):
        runs = [span for span in spans if span.label == name]
        outcomes = Counter(span.kind.removeprefix("tool-") for span in runs)
        said = ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items()))
        took = ", ".join(str(span.end_ms - span.start_ms) for span in runs)
        parts.append(f"{name}: {len(runs)} run(s) ({said}; {took} ms)")
    return "; ".join(parts)


def _clears(observed: Sequence[Record]) -> str:
    clears = [r for r in observed if r["event"] == "clear_received"]
    dropped = sum(int(r.get("dropped_ms", 0)) for r in clears)
    return f"{len(clears)} ({dropped} ms of bot audio dropped)"


def _failures(records: Sequence[Record]) -> str:
    lines = failure_lines(records)
    return "; ".join(lines) if lines else "none"


def _call_end(records: Sequence[Record], observed: Sequence[Record]) -> str:
    ended = [str(r.get("reason", "")) for r in records if r["event"] == "call_ended"]
    closed = [r.get("close_code") for r in observed if r["event"] == "stream_closed"]
    parts = [f"ended: {reason}" for reason in ended]
    parts += [f"close code {code}" for code in closed]
    return "; ".join(parts) if parts else "—"
