"""What a scenario expects of its call, checked against the timelines (docs/replay.md).

Expectations read the gateway's timeline (docs/timeline.md) and, for what only the caller can
tell, the caller-side one: how many ``clear``s arrived, and whether any bot audio was heard
between a ``clear`` and the next turn. :func:`unmet` lists every expectation that failed, in
words, so a test can assert the list is empty and show it when it is not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from voicegate.callers.fields import Fields

Record = Mapping[str, Any]
_COUNTED = {"turns": "turn_started", "interruptions": "interruption", "flushes": "flush_sent"}
_TOOL_EVENTS = ("tool_started", "tool_finished", "tool_cancelled")


@dataclass(frozen=True, slots=True)
class HeardExpectation:
    """What the caller should have heard of one turn."""

    text: str | None = None  # exactly this
    starts_with: str | None = None  # or at least this much (barge-in truncates by marks)
    interrupted: bool | None = None


@dataclass(frozen=True, slots=True)
class Expectations:
    """Everything a scenario may expect; None or empty means "not checked"."""

    counts: Mapping[str, int] = field(default_factory=dict)  # turns, interruptions, flushes
    clears: int | None = None  # clears the caller received
    tools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # event -> tool names
    heard: Mapping[str, HeardExpectation] = field(default_factory=dict)  # turn id ->
    said: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # turn id -> texts
    never_said: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    no_bot_audio_after_clear: bool = False


def parse_expectations(fields: Fields | None) -> Expectations:
    """The ``expect`` mapping of a scenario."""
    if fields is None:
        return Expectations()
    counts = {key: fields.integer(key) for key in _COUNTED if fields.has(key)}
    tools = {event: names for event in _TOOL_EVENTS if (names := fields.texts(event)) is not None}
    expectations = Expectations(
        counts=counts,
        clears=fields.optional_integer("clears"),
        tools=tools,
        heard=_heard(fields.mapping("heard")),
        said=_texts_per_turn(fields.mapping("said")),
        never_said=_texts_per_turn(fields.mapping("never_said")),
        no_bot_audio_after_clear=fields.flag("no_bot_audio_after_clear", False),
    )
    fields.done()
    return expectations


def _heard(fields: Fields | None) -> dict[str, HeardExpectation]:
    if fields is None:
        return {}
    heard = {}
    for turn_id, value in fields.items():
        if isinstance(value, str):
            heard[turn_id] = HeardExpectation(text=value)
            continue
        entry = Fields(value, f"{fields.where}.{turn_id}")
        heard[turn_id] = HeardExpectation(
            text=entry.optional_text("text"),
            starts_with=entry.optional_text("starts_with"),
            interrupted=entry.flag("interrupted", False) if entry.has("interrupted") else None,
        )
        entry.done()
    return heard


def _texts_per_turn(fields: Fields | None) -> dict[str, tuple[str, ...]]:
    if fields is None:
        return {}
    texts = {}
    for turn_id, _ in fields.items():
        listed = fields.texts(turn_id)
        texts[turn_id] = listed or ()
    return texts


def unmet(
    expect: Expectations, records: Sequence[Record], observed: Sequence[Record] = ()
) -> list[str]:
    """Every expectation the call did not meet, described; empty when all were met."""
    problems: list[str] = []
    for key, event in _COUNTED.items():
        if key in expect.counts:
            _compare(problems, key, expect.counts[key], len(_named(records, event)))
    if expect.clears is not None:
        _compare(problems, "clears", expect.clears, len(_named(observed, "clear_received")))
    for event, names in expect.tools.items():
        _compare(problems, event, list(names), [r["name"] for r in _named(records, event)])
    problems += _heard_problems(expect.heard, records)
    problems += _said_problems(expect.said, expect.never_said, records)
    if expect.no_bot_audio_after_clear:
        problems += _audio_after_clear(records, observed)
    return problems


def _named(records: Sequence[Record], event: str) -> list[Record]:
    return [record for record in records if record["event"] == event]


def _compare(problems: list[str], what: str, expected: object, actual: object) -> None:
    if expected != actual:
        problems.append(f"{what}: expected {expected!r}, got {actual!r}")


def _heard_problems(heard: Mapping[str, HeardExpectation], records: Sequence[Record]) -> list[str]:
    reports = {r["turn_id"]: r for r in _named(records, "heard")}
    problems: list[str] = []
    for turn_id, wanted in heard.items():
        report = reports.get(turn_id)
        if report is None:
            problems.append(f"heard {turn_id}: no heard record for the turn")
            continue
        text = report["text"]
        if wanted.text is not None:
            _compare(problems, f"heard {turn_id} text", wanted.text, text)
        if wanted.starts_with is not None and not text.startswith(wanted.starts_with):
            problems.append(f"heard {turn_id}: {text!r} does not start with {wanted.starts_with!r}")
        if wanted.interrupted is not None:
            _compare(
                problems, f"heard {turn_id} interrupted", wanted.interrupted, report["interrupted"]
            )
    return problems


def _said_problems(
    said: Mapping[str, tuple[str, ...]],
    never_said: Mapping[str, tuple[str, ...]],
    records: Sequence[Record],
) -> list[str]:
    spoken = {(r["turn_id"], r["text"]) for r in _named(records, "say")}
    missing = [
        f"said {turn_id}: {text!r} was never said"
        for turn_id, texts in said.items()
        for text in texts
        if (turn_id, text) not in spoken
    ]
    extra = [
        f"never_said {turn_id}: {text!r} was said"
        for turn_id, texts in never_said.items()
        for text in texts
        if (turn_id, text) in spoken
    ]
    return missing + extra


def _audio_after_clear(records: Sequence[Record], observed: Sequence[Record]) -> list[str]:
    """Bot audio the caller heard after a clear and before the next turn started."""
    turn_starts = [r["t_ms"] for r in _named(records, "turn_started")]
    audio_starts = [r["t_ms"] for r in _named(observed, "bot_audio_started")]
    problems = []
    for clear_ms in (r["t_ms"] for r in _named(observed, "clear_received")):
        next_turn = min((t for t in turn_starts if t >= clear_ms), default=None)
        heard = [t for t in audio_starts if t > clear_ms and (next_turn is None or t < next_turn)]
        if heard:
            problems.append(
                f"bot audio at {heard[0]} ms after the clear at {clear_ms} ms, "
                f"before the next turn started ({next_turn} ms)"
            )
    return problems
