"""The playout ledger: what was sent to the caller, and what the caller actually heard.

Design §2 and §4 point 5: the conversation history holds only what the caller heard. Every
bot utterance segment is sent followed by a provider mark (Twilio/Telnyx ``mark``, the browser
dialect's ``mark``). The provider echoes a mark when the audio queued before it has played, and
also when a ``clear`` discarded it (providers.md §b.1), so a mark alone does not prove the audio
was heard: marks that come back after a flush are ignored here, and the segment that was
playing when the flush was sent is counted as heard up to the estimated playback position.

Pure and synchronous: time comes in as media milliseconds from the caller's side of the call.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from voicegate.types import MediaMs


@dataclass(frozen=True, slots=True)
class Segment:
    """One synthesised piece of a bot turn, sent as audio followed by a mark."""

    mark: str
    turn_id: str
    text: str
    duration_ms: int


@dataclass(frozen=True, slots=True)
class TurnHeard:
    """What the caller heard of one turn, once that is settled."""

    turn_id: str
    text: str
    interrupted: bool


@dataclass(slots=True)
class _TurnAccount:
    heard: list[str] = field(default_factory=list)
    outstanding: int = 0
    closed: bool = False


class PlayoutLedger:
    """Segments in flight, in the order the provider plays them."""

    def __init__(self) -> None:
        self._in_flight: deque[Segment] = deque()
        self._turns: dict[str, _TurnAccount] = {}
        self._flushed_marks: set[str] = set()
        self._settled: set[str] = set()
        self._playing_since_ms: MediaMs | None = None
        self._count = 0
        self._cut_turns: set[str] = set()  # turns holding a heard prefix from a cut

    def enqueue(self, turn_id: str, text: str, duration_ms: int, now_ms: MediaMs) -> Segment:
        """Record a segment about to be sent; returns it with the mark name to send after it."""
        self._count += 1
        segment = Segment(f"{turn_id}.{self._count}", turn_id, text, duration_ms)
        if not self._in_flight:
            self._playing_since_ms = now_ms
        self._in_flight.append(segment)
        self._turns.setdefault(turn_id, _TurnAccount()).outstanding += 1
        return segment

    def close_turn(self, turn_id: str) -> TurnHeard | None:
        """No more segments will come for this turn; settle it if everything was played."""
        if turn_id in self._settled:
            return None
        account = self._turns.setdefault(turn_id, _TurnAccount())
        account.closed = True
        return self._settle(turn_id, interrupted=False)

    def acknowledge(self, mark: str, now_ms: MediaMs) -> TurnHeard | None:
        """The provider echoed ``mark``: its segment (and any before it) has played."""
        if mark in self._flushed_marks:
            self._flushed_marks.discard(mark)
            return None
        if all(segment.mark != mark for segment in self._in_flight):
            return None
        settled: TurnHeard | None = None
        while self._in_flight:
            segment = self._in_flight.popleft()
            settled = self._played(segment) or settled
            if segment.mark == mark:
                break
        self._playing_since_ms = now_ms if self._in_flight else None
        return settled

    def cut(self, now_ms: MediaMs) -> list[tuple[Segment, int]]:
        """A flush that may be undone: every segment in flight with the ms of it heard.

        The playing segment's heard words are kept; its turn stays open, because the caller
        hears the rest (re-sent as new segments) if the interruption turns out false.
        """
        partial_ms = 0 if self._playing_since_ms is None else now_ms - self._playing_since_ms
        cut: list[tuple[Segment, int]] = []
        for index, segment in enumerate(self._in_flight):
            played_ms = max(0, min(partial_ms, segment.duration_ms)) if index == 0 else 0
            heard = truncate(segment.text, played_ms, segment)
            if heard:
                self._heard(segment).heard.append(heard)
            self._flushed_marks.add(segment.mark)
            self._heard(segment).outstanding -= 1
            self._cut_turns.add(segment.turn_id)
            cut.append((segment, played_ms))
        self._in_flight.clear()
        self._playing_since_ms = None
        return cut

    def flush(self, now_ms: MediaMs) -> list[TurnHeard]:
        """A flush was sent: the playing segment was cut at ``now_ms``, the rest never heard."""
        partial_ms = 0 if self._playing_since_ms is None else now_ms - self._playing_since_ms
        turns = [t for t in self._cut_turns if t in self._turns]  # heard up to an earlier cut
        self._cut_turns.clear()
        for index, segment in enumerate(self._in_flight):
            if index == 0:
                self._heard(segment).heard.append(truncate(segment.text, partial_ms, segment))
            self._flushed_marks.add(segment.mark)
            self._heard(segment).outstanding -= 1
            if segment.turn_id not in turns:
                turns.append(segment.turn_id)
        self._in_flight.clear()
        self._playing_since_ms = None
        return [heard for turn in turns if (heard := self._settle(turn, interrupted=True))]

    def delay(self, paused_ms: int) -> None:
        """The provider held playback ``paused_ms`` (Asterisk PAUSE_MEDIA): nothing played."""
        if self._playing_since_ms is not None:
            self._playing_since_ms += paused_ms

    @property
    def in_flight(self) -> tuple[Segment, ...]:
        """Segments sent whose marks have not come back."""
        return tuple(self._in_flight)

    def _played(self, segment: Segment) -> TurnHeard | None:
        account = self._heard(segment)
        account.heard.append(segment.text)
        account.outstanding -= 1
        return self._settle(segment.turn_id, interrupted=False)

    def _heard(self, segment: Segment) -> _TurnAccount:
        return self._turns[segment.turn_id]

    def _settle(self, turn_id: str, *, interrupted: bool) -> TurnHeard | None:
        account = self._turns[turn_id]
        if account.outstanding > 0 or not (account.closed or interrupted):
            return None
        del self._turns[turn_id]
        self._settled.add(turn_id)
        self._cut_turns.discard(turn_id)
        text = " ".join(part for part in account.heard if part)
        return TurnHeard(turn_id, text, interrupted)


def remainder(text: str, played_ms: int, segment: Segment) -> str:
    """The words of ``text`` after those :func:`truncate` counts as heard."""
    heard = len(truncate(text, played_ms, segment).split())
    return " ".join(text.split()[heard:])


def truncate(text: str, played_ms: int, segment: Segment) -> str:
    """The words of ``text`` the caller heard in ``played_ms``, assuming an even speaking rate."""
    if segment.duration_ms <= 0 or played_ms <= 0:
        return ""
    words = text.split()
    fraction = min(1.0, played_ms / segment.duration_ms)
    return " ".join(words[: int(len(words) * fraction)])
