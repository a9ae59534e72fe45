"""Playout: bot audio released to the provider at real-time pace, with marks and epochs.

Pacing runs on the caller's media clock (design §6): providers stream caller audio
continuously (Twilio sends a media message every 20 ms, silence included), so each inbound
frame advances ``now_ms`` and releases bot audio until the provider holds at most
``send_ahead_ms`` of it. A small send-ahead is what keeps barge-in fast: on a flush only that
much audio can still be in the provider's buffer, and the ``clear`` verb drops it.

Audio goes out in chunks of ``chunk_ms`` (40 ms by default, at most half the send-ahead), sent
once the provider holds no more than ``send_ahead_ms - chunk_ms``: the provider still never
holds more than ``send_ahead_ms`` (the flush budget is unchanged) and never less than
``send_ahead_ms - chunk_ms - frame_ms`` between two inbound frames, while each call-second of
bot speech takes 25 messages instead of 50 (each one a JSON encode, a base64 and a WebSocket
send on the loop; bench/media_cost.py).

Every segment is followed by a provider mark (``SetMark``); the :class:`PlayoutLedger` turns
the echoed marks into "what the caller heard". Each segment carries the epoch of its turn;
segments of an older epoch are dropped here, before any byte reaches the codec (design §5).
Pure and synchronous: it returns codec commands, the session sends them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from voicegate.codecs import ClearAudio, Command, PlayAudio, SetMark
from voicegate.gateway.ledger import PlayoutLedger, TurnHeard
from voicegate.types import MediaMs


@dataclass(frozen=True, slots=True)
class QueuedSegment:
    """Wire-format audio of one bot segment waiting to be sent."""

    epoch: int
    turn_id: str
    text: str
    payload: bytes
    interruptible: bool = True


@dataclass(frozen=True, slots=True)
class PlayoutNews:
    """What changed in playout that the barge-in machine must hear about."""

    started: bool = False  # bot audio began after silence
    interruptible: bool = True
    drained: bool = False  # everything sent has been played (or flushed)


#: Nothing to report: shared, since release() answers this for almost every inbound frame.
_QUIET = PlayoutNews()


def chunk_for(chunk_ms: int, frame_ms: int, send_ahead_ms: int) -> int:
    """The chunk length used: whole frames, at least one, at most half the send-ahead."""
    most = max(frame_ms, send_ahead_ms // 2 // frame_ms * frame_ms)
    return max(frame_ms, min(chunk_ms // frame_ms * frame_ms, most))


class Playout:
    """The queue of bot audio for one call, released in ``chunk_ms`` pieces on media time."""

    def __init__(
        self,
        *,
        bytes_per_ms: int,
        frame_ms: int = 20,
        send_ahead_ms: int = 100,
        chunk_ms: int | None = None,
    ) -> None:
        self._bytes_per_ms = bytes_per_ms
        self._frame_ms = frame_ms
        self._send_ahead_ms = send_ahead_ms
        self._chunk_ms = chunk_for(chunk_ms or frame_ms, frame_ms, send_ahead_ms)
        self._queue: deque[QueuedSegment] = deque()
        self._offset = 0  # bytes of the head segment already sent
        self._sent_until_ms: MediaMs = 0  # media time at which the sent audio ends
        self._epoch = 0
        self._paused = False
        self._speaking = False
        self.ledger = PlayoutLedger()

    @property
    def epoch(self) -> int:
        """The current turn epoch; audio of older epochs is never sent."""
        return self._epoch

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing in flight at the provider."""
        return not self._queue and not self.ledger.in_flight

    def enqueue(self, segment: QueuedSegment) -> None:
        """Queue a segment; stale epochs are dropped at once."""
        if segment.epoch == self._epoch and segment.payload:
            self._queue.append(segment)

    def pause(self) -> None:
        """Stop releasing audio (what the provider already holds still plays)."""
        self._paused = True

    def resume(self) -> None:
        """Release audio again from where it stopped."""
        self._paused = False

    def release(self, now_ms: MediaMs) -> tuple[list[Command], PlayoutNews]:
        """Commands to send now so the provider holds ``send_ahead_ms`` of audio at most."""
        self._sent_until_ms = max(self._sent_until_ms, now_ms)
        if self._paused or not self._queue:
            return [], _QUIET
        commands: list[Command] = []
        news = _QUIET
        while self._queue and not self._paused:
            if self._sent_until_ms + self._chunk_ms > now_ms + self._send_ahead_ms:
                break
            if not self._speaking:
                self._speaking = True
                news = PlayoutNews(started=True, interruptible=self._queue[0].interruptible)
            commands.extend(self._next_frame(now_ms))
        return commands, news

    def _next_frame(self, now_ms: MediaMs) -> list[Command]:
        head = self._queue[0]
        if self._offset == 0:
            duration = len(head.payload) // self._bytes_per_ms
            self.ledger.enqueue(head.turn_id, head.text, duration, now_ms)
        frame_bytes = self._chunk_ms * self._bytes_per_ms
        chunk = head.payload[self._offset : self._offset + frame_bytes]
        self._offset += len(chunk)
        self._sent_until_ms += len(chunk) // self._bytes_per_ms
        commands: list[Command] = [PlayAudio(chunk)]
        if self._offset >= len(head.payload):
            self._queue.popleft()
            self._offset = 0
            commands.append(SetMark(self.ledger.in_flight[-1].mark))
        return commands

    def mark_reached(self, name: str, now_ms: MediaMs) -> tuple[TurnHeard | None, PlayoutNews]:
        """The provider played (or cleared) audio up to mark ``name``."""
        heard = self.ledger.acknowledge(name, now_ms)
        return heard, self._drain_news()

    def flush(self, new_epoch: int, now_ms: MediaMs) -> tuple[list[Command], list[TurnHeard]]:
        """A confirmed interruption: drop queued audio, clear the provider, settle the ledger."""
        self._epoch = new_epoch
        self._queue.clear()
        self._offset = 0
        self._paused = False
        self._speaking = False
        self._sent_until_ms = now_ms
        return [ClearAudio()], self.ledger.flush(now_ms)

    def _drain_news(self) -> PlayoutNews:
        if self._speaking and self.idle:
            self._speaking = False
            return PlayoutNews(drained=True)
        return _QUIET
