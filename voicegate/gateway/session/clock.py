"""The call's media clock, and its timeline stamped with it.

Every decision about a call's audio runs on media time (design §6): ``now_ms`` is advanced
only by the inbound stage, one frame at a time, and every other part of the session reads it.
Each part records what it did on the call's timeline at that same time, so the clock and the
timeline travel together as one small shared object instead of a session-wide attribute that
every part would have to reach into.
"""

from __future__ import annotations

from typing import Any

from voicegate.gateway.timeline import Record, Timeline
from voicegate.types import MediaMs


class CallClock:
    """Media time of one call (advanced by each inbound frame) and the call's timeline."""

    __slots__ = ("now_ms", "timeline")

    def __init__(self, timeline: Timeline) -> None:
        self.now_ms: MediaMs = 0
        self.timeline = timeline

    def emit(self, event: str, **fields: Any) -> Record:
        """Put one record on the call's timeline at the current media time."""
        return self.timeline.emit(self.now_ms, event, **fields)
