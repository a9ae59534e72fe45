"""The call timeline: one JSON object per event, stamped with media time since call start.

The event names are a public format (docs/timeline.md): the replay tool writes them to
``timeline.jsonl``, the browser page draws them, benchmarks read latencies from them. Turn
events reuse the engine's record shape (``voicegate.engine.seam.event_record``).

A timeline is bounded (issue 15 #5): peers choose mark names, parameters and transcripts, so
strings are cut to ``max_chars``, containers to ``MAX_ITEMS`` entries, and records past
``max_records`` are only counted, in one final ``timeline_truncated`` record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from voicegate.types import MediaMs

Record = dict[str, Any]

#: Entries kept of a list or mapping inside a record (e.g. a start's custom parameters).
MAX_ITEMS = 32
#: Nesting kept inside a record; deeper values are replaced by a marker.
MAX_DEPTH = 4
TRUNCATED = "timeline_truncated"


def bounded(value: Any, max_chars: int, depth: int = 0) -> Any:
    """``value`` with strings cut to ``max_chars`` and containers to ``MAX_ITEMS``.

    A value already within bounds is returned as it is (no copy).
    """
    if isinstance(value, str):
        return value if len(value) <= max_chars else value[:max_chars] + "..."
    if isinstance(value, dict):
        return _bounded_mapping(value, max_chars, depth)
    if isinstance(value, list | tuple):
        if depth >= MAX_DEPTH:
            return "[...]"
        items = [bounded(v, max_chars, depth + 1) for v in value[:MAX_ITEMS]]
        same = len(items) == len(value) and all(a is b for a, b in zip(items, value, strict=False))
        return value if same else items
    return value


def _bounded_mapping(value: dict[Any, Any], max_chars: int, depth: int) -> Any:
    if depth >= MAX_DEPTH:
        return "{...}"
    items = {
        bounded(str(k), max_chars): bounded(v, max_chars, depth + 1)
        for k, v in list(value.items())[:MAX_ITEMS]
    }
    same = len(items) == len(value) and all(k in value and items[k] is value[k] for k in items)
    return value if same else items


class Timeline:
    """Collects a call's events in order and passes each to optional listeners."""

    def __init__(
        self,
        listeners: tuple[Callable[[Record], None], ...] = (),
        *,
        max_records: int = 5000,
        max_chars: int = 500,
    ) -> None:
        self._records: list[Record] = []
        self._listeners = listeners
        self._max_records = max_records
        self._max_chars = max_chars
        self._truncated: Record | None = None

    def emit(self, t_ms: MediaMs, event: str, **fields: Any) -> Record:
        """Record ``event`` at media time ``t_ms`` (only counted once the timeline is full)."""
        record: Record = {"t_ms": t_ms, "event": event}
        for name, value in fields.items():
            record[name] = bounded(value, self._max_chars)
        if len(self._records) >= self._max_records - 1:
            return self._count_dropped(t_ms, record)
        self._records.append(record)
        for listener in self._listeners:
            listener(record)
        return record

    def _count_dropped(self, t_ms: MediaMs, record: Record) -> Record:
        """Keep one last record saying how many were dropped, and until when."""
        if self._truncated is None:
            self._truncated = {"t_ms": t_ms, "event": TRUNCATED, "dropped": 0, "last_ms": t_ms}
            self._records.append(self._truncated)
            for listener in self._listeners:
                listener(self._truncated)
        self._truncated["dropped"] += 1
        self._truncated["last_ms"] = t_ms
        return record

    @property
    def records(self) -> tuple[Record, ...]:
        """Every record so far, in order."""
        return tuple(self._records)

    def named(self, event: str) -> list[Record]:
        """The records of one event name."""
        return [r for r in self._records if r["event"] == event]

    def to_jsonl(self) -> str:
        """The timeline as JSON lines."""
        return "".join(json.dumps(r, default=str) + "\n" for r in self._records)
