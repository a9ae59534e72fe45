"""The call timeline: one JSON object per event, stamped with media time since call start.

The event names are a public format (docs/timeline.md): the replay tool writes them to
``timeline.jsonl``, the browser page draws them, benchmarks read latencies from them. Turn
events reuse the engine's record shape (``voicegate.engine.seam.event_record``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from voicegate.types import MediaMs

Record = dict[str, Any]


class Timeline:
    """Collects a call's events in order and passes each to optional listeners."""

    def __init__(self, listeners: tuple[Callable[[Record], None], ...] = ()) -> None:
        self._records: list[Record] = []
        self._listeners = listeners

    def emit(self, t_ms: MediaMs, event: str, **fields: Any) -> Record:
        """Record ``event`` at media time ``t_ms``."""
        record: Record = {"t_ms": t_ms, "event": event, **fields}
        self._records.append(record)
        for listener in self._listeners:
            listener(record)
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
