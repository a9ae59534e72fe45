"""The client's playback of bot audio: a buffer drained in real time, marks, and ``clear``.

The rules are Twilio's, which the browser dialect adopts (docs/protocols/browser.md §6): a
mark sits at the position of the audio stream where it arrived and is acknowledged once the
audio before it has played; a mark that arrives with nothing queued is acknowledged at once;
``clear`` silences playback, drops every buffered byte and acknowledges all pending marks, in
order. Everything the caller observes is noted with its media time, for the caller-side
timeline (docs/timeline.md).

Pure and synchronous: the caller tells it the media time and how many bytes a frame holds.
"""

from __future__ import annotations

from collections import deque
from typing import Any


class Playback:
    """Bot audio waiting to be played, the marks among it, and what was observed."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._marks: deque[tuple[int, str]] = deque()  # (byte position, name)
        self._queued = 0  # bytes of bot audio received, ever
        self._played = 0  # bytes played or dropped by a clear, ever
        self._playing = False
        self.bot_started_ms: list[int] = []  # media times at which bot audio began playing
        self.bot_drained_ms: list[int] = []  # media times at which it ran out (not cleared)
        self.clears: list[int] = []  # media times at which a clear arrived
        self.observed: list[dict[str, Any]] = []  # the caller-side timeline

    @property
    def buffered_bytes(self) -> int:
        """Bot audio received and not yet played."""
        return len(self._buffer)

    @property
    def queued_bytes(self) -> int:
        """Bot audio received, ever."""
        return self._queued

    @property
    def played_bytes(self) -> int:
        """Bot audio played or dropped by a clear, ever."""
        return self._played

    @property
    def playing(self) -> bool:
        """Whether the last frame played held bot audio."""
        return self._playing

    def queue_audio(self, payload: bytes) -> None:
        """Bot audio arrived: play it after what is already queued."""
        self._buffer += payload
        self._queued += len(payload)

    def queue_mark(self, name: str, now_ms: int) -> list[str]:
        """A mark arrived; the names to acknowledge at once (it, if nothing is queued)."""
        self.note(now_ms, "mark_received", name=name)
        self._marks.append((self._queued, name))
        return self._due_marks(now_ms, up_to=self._played)

    def play(self, now_ms: int, frame_bytes: int) -> tuple[bytes, list[str]]:
        """Play one frame starting at ``now_ms``: its bot audio and the marks now played."""
        chunk = bytes(self._buffer[:frame_bytes])
        del self._buffer[:frame_bytes]
        if chunk and not self._playing:
            self.bot_started_ms.append(now_ms)
            self.note(now_ms, "bot_audio_started")
        if self._playing and not chunk:
            self.bot_drained_ms.append(now_ms)
            self.note(now_ms, "bot_audio_drained")
        self._playing = bool(chunk)
        self._played += len(chunk)
        return chunk, self._due_marks(now_ms, up_to=self._played)

    def clear(self, now_ms: int, bytes_per_ms: int, *, drop_marks: bool = False) -> list[str]:
        """Drop everything buffered; every pending mark is acknowledged, in order.

        With ``drop_marks`` pending marks are dropped unacknowledged instead (Plivo answers
        a checkpoint only when the audio before it was played).
        """
        self.clears.append(now_ms)
        self.note(now_ms, "clear_received", dropped_ms=len(self._buffer) // max(1, bytes_per_ms))
        self._buffer.clear()
        self._played = self._queued
        self._playing = False
        if drop_marks:
            dropped = [name for _, name in self._marks]
            self._marks.clear()
            if dropped:
                self.note(now_ms, "marks_dropped", names=dropped)
            return []
        return self._due_marks(now_ms, up_to=self._queued)

    def note(self, now_ms: int, event: str, **fields: Any) -> None:
        """Add a record to the caller-side timeline."""
        self.observed.append({"t_ms": now_ms, "event": event, **fields})

    def _due_marks(self, now_ms: int, *, up_to: int) -> list[str]:
        names = []
        while self._marks and self._marks[0][0] <= up_to:
            names.append(self._marks.popleft()[1])
            self.note(now_ms, "mark_echoed", name=names[-1])
        return names
