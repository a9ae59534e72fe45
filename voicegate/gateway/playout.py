"""Playout: bot audio released to the provider at real-time pace, with marks and epochs.

Pacing runs on the caller's media clock (design §6): providers stream caller audio
continuously (Twilio sends a media message every 20 ms, silence included), so each inbound
frame advances ``now_ms`` and releases bot audio until the provider holds at most
``send_ahead_ms`` of it (500 ms by default). What the provider holds plays on while the
gateway is late (a stalled media loop, a delayed packet); a barge-in does not wait for it,
since every provider's flush verb (``clear``, ``killAudio``, ``FLUSH_MEDIA``, ...) drops it.
bench/calls.py at 150 calls on 2 cores (two rounds each): with 100 ms, 103 and 1 calls had
choppy playout, with 400 ms none; the loop stalled for 100-500 ms either way.

Audio goes out in chunks of ``chunk_ms`` (200 ms by default, at most half the send-ahead),
sent once the provider holds no more than ``send_ahead_ms - chunk_ms``: the provider never
holds more than ``send_ahead_ms`` and never less than ``send_ahead_ms - chunk_ms - frame_ms``
(280 ms) between two inbound frames, while each call-second of bot speech takes 10 messages
instead of 50 (each one a JSON encode, a base64 and a WebSocket send on the loop, one
``send`` system call each; bench/media_cost.py).

Every segment is followed by a provider mark (``SetMark``); the :class:`PlayoutLedger` turns
the echoed marks into "what the caller heard". A provider with no acknowledgement (Jambonz,
``Capabilities.playback_acks`` false) gets ``estimate_acks``: each mark falls due on the
playout's own clock when the audio sent before it has had time to play (:meth:`due_marks`),
and the session treats it as echoed, noting that it is an estimate. Each segment carries the
epoch of its turn; segments of an older epoch are dropped here, before any byte reaches the
codec (design §5). Pure and synchronous: it returns codec commands, the session sends them.

A provider that can pause (``Capabilities.pause``: Asterisk's ``PAUSE_MEDIA`` plays silence and
keeps its queue) gets ``provider_pause``: at detection :meth:`cut` holds playback there instead
of clearing it, so a false interruption resumes with ``CONTINUE_MEDIA`` exactly where it
stopped, nothing re-sent and no estimate of the playback position; the ledger's clock is held
for as long as the provider was paused. A confirmed interruption still flushes (Asterisk's
``FLUSH_MEDIA`` also ends the pause).

A provider that acknowledges marks must echo each one once the audio before it has played
(Twilio ``mark``, providers.md §b.1; Plivo ``playedStream``, Vonage ``websocket:notify``,
Asterisk ``MEDIA_MARK_PROCESSED``): that is when the audio sent before it ends on the media
clock, since the provider holds at most ``send_ahead_ms``. :meth:`ack_late_ms` says how far
past that moment the oldest unechoed mark is: a peer that never reads what it is sent (so
never plays it) is late by ever more, while a playing one is late by its network delay.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from typing import TypeVar

from voicegate.codecs import ClearAudio, Command, PausePlayback, PlayAudio, ResumePlayback, SetMark
from voicegate.gateway.ledger import PlayoutLedger, Segment, TurnHeard, remainder
from voicegate.types import MediaMs

_T = TypeVar("_T")


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


def provider_pace(
    chunk_ms: int, send_ahead_ms: int, *, frame_ms: int, min_bytes: int, bytes_per_ms: int
) -> tuple[int, int]:
    """Chunk and send-ahead, lifted for a provider that wants ``min_bytes`` per message.

    Exotel asks for at least 3.2 kB per media message (codecs/exotel.py): the chunk grows to
    the whole frames holding that much, and the send-ahead to two chunks, so one chunk is
    queued at the provider while the previous one plays. Other providers are unchanged.
    """
    least = -(-min_bytes // (bytes_per_ms * frame_ms)) * frame_ms
    if least <= chunk_ms:
        return chunk_ms, send_ahead_ms
    return least, max(send_ahead_ms, 2 * least)


class Playout:
    """The queue of bot audio for one call, released in ``chunk_ms`` pieces on media time."""

    def __init__(
        self,
        *,
        bytes_per_ms: int,
        frame_ms: int = 20,
        send_ahead_ms: int = 100,
        chunk_ms: int | None = None,
        estimate_acks: bool = False,
        provider_pause: bool = False,
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
        # The segments in the ledger's flight, with their audio, so a cut can re-queue them.
        self._unacked: deque[tuple[str, QueuedSegment]] = deque()
        self._cleared = False  # a cut cleared the provider and nothing was sent since
        self._estimate_acks = estimate_acks
        self._estimated: deque[tuple[MediaMs, str]] = deque()  # (due media time, mark)
        self._provider_pause = provider_pause
        self._held: tuple[MediaMs, MediaMs] | None = None  # (paused at, sent until then)
        # Marks sent and not echoed, each with the media time its audio ends playing.
        self._awaited: deque[tuple[str, MediaMs]] = deque()

    @property
    def epoch(self) -> int:
        """The current turn epoch; audio of older epochs is never sent."""
        return self._epoch

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing in flight at the provider."""
        return not self._queue and not self.ledger.in_flight

    @property
    def due(self) -> bool:
        """Whether :meth:`release` or :meth:`due_marks` may have anything to do.

        When not, both answer nothing, whatever ``now_ms``: the caller may skip them (most
        inbound frames, bench/media_cost.py). The media time ``release`` records then is
        taken up at its next call, since it only keeps the latest (``max``) of them.
        """
        pending = bool(self._estimated) or bool(self._awaited)
        return pending or (bool(self._queue) and not self._paused)

    def enqueue(self, segment: QueuedSegment) -> None:
        """Queue a segment; stale epochs are dropped at once."""
        if segment.epoch == self._epoch and segment.payload:
            self._queue.append(segment)

    def pause(self) -> None:
        """Stop releasing audio (what the provider already holds still plays)."""
        self._paused = True

    def resume(self, now_ms: MediaMs = 0) -> list[Command]:
        """Release audio again from where it stopped; continue the provider if it was held."""
        self._paused = False
        if self._held is None:
            return []
        self._unhold(now_ms)
        return [ResumePlayback()]

    def _unhold(self, now_ms: MediaMs) -> None:
        """The provider's pause ends: what it holds plays ``now_ms - paused at`` later."""
        assert self._held is not None
        held_at, sent_until = self._held
        self._held = None
        paused_ms = max(0, now_ms - held_at)
        self._sent_until_ms = sent_until + paused_ms
        self.ledger.delay(paused_ms)
        self._estimated = deque((due + paused_ms, mark) for due, mark in self._estimated)
        self._awaited = deque((mark, due + paused_ms) for mark, due in self._awaited)

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
            sent = self.ledger.enqueue(head.turn_id, head.text, duration, now_ms)
            self._unacked.append((sent.mark, head))
        frame_bytes = self._chunk_ms * self._bytes_per_ms
        chunk = head.payload[self._offset : self._offset + frame_bytes]
        self._offset += len(chunk)
        self._sent_until_ms += len(chunk) // self._bytes_per_ms
        self._cleared = False
        commands: list[Command] = [PlayAudio(chunk)]
        if self._offset >= len(head.payload):
            self._queue.popleft()
            self._offset = 0
            mark = self.ledger.in_flight[-1].mark
            commands.append(SetMark(mark))
            if self._estimate_acks:  # played once everything sent so far has played
                self._estimated.append((self._sent_until_ms, mark))
            else:  # the provider echoes it once everything sent so far has played
                self._awaited.append((mark, self._sent_until_ms))
        return commands

    def due_marks(self, now_ms: MediaMs) -> list[str]:
        """Marks whose audio has played by ``now_ms`` on the playout clock (estimate_acks)."""
        due = []
        while self._estimated and self._estimated[0][0] <= now_ms:
            due.append(self._estimated.popleft()[1])
        return due

    def mark_reached(self, name: str, now_ms: MediaMs) -> tuple[TurnHeard | None, PlayoutNews]:
        """The provider played (or cleared) audio up to mark ``name``."""
        heard = self.ledger.acknowledge(name, now_ms)
        _settle_through(self._unacked, name)
        _settle_through(self._awaited, name)
        return heard, self._drain_news()

    def ack_late_ms(self, now_ms: MediaMs) -> int:
        """How long after its audio should have played the oldest unechoed mark is (0: none).

        While the provider is paused (``provider_pause``) nothing plays, so nothing is late.
        """
        if not self._awaited or self._held is not None:
            return 0
        return max(0, now_ms - self._awaited[0][1])

    def cut(self, now_ms: MediaMs) -> list[Command]:
        """Caller speech detected: clear the provider now and pause, keeping what is unheard.

        Issue 14 §3: the caller stops hearing the bot at detection. The audio the provider
        dropped is queued again from its first unheard sample (the ledger's playback
        estimate), so :meth:`resume` after a false interruption loses and repeats nothing.
        A provider that can pause is paused instead (``provider_pause``).
        """
        if self._provider_pause:
            return self._hold(now_ms)
        cut = self.ledger.cut(now_ms)
        again = [
            self._rest(queued, segment, played)
            for (segment, played), (_, queued) in zip(cut, self._unacked, strict=True)
        ]
        if self._offset:  # the head was being sent: it is in flight, so re-queued above
            self._queue.popleft()
            self._offset = 0
        self._queue.extendleft(reversed([s for s in again if s.payload]))
        self._unacked.clear()
        self._estimated.clear()  # the provider dropped that audio; the cut settled its marks
        self._awaited.clear()
        self._sent_until_ms = now_ms
        self._paused = True
        self._cleared = True
        return [ClearAudio()]

    def _hold(self, now_ms: MediaMs) -> list[Command]:
        """Pause at the provider: it keeps what it holds, and nothing needs sending again."""
        self._paused = True
        if self._held is not None:
            return []  # already paused there
        self._held = (now_ms, max(self._sent_until_ms, now_ms))
        return [PausePlayback()]

    def _rest(self, queued: QueuedSegment, segment: Segment, played_ms: int) -> QueuedSegment:
        """What the caller has not heard of a segment cut after ``played_ms``."""
        start = min(len(queued.payload), played_ms * self._bytes_per_ms)
        text = remainder(queued.text, played_ms, segment)
        return replace(queued, payload=queued.payload[start:], text=text)

    def unplayed_ms(self, now_ms: MediaMs) -> int:
        """Bot audio the caller has not heard yet: queued here, or sent and not yet played."""
        queued = sum(len(segment.payload) for segment in self._queue) - self._offset
        at, sent_until = self._held or (now_ms, self._sent_until_ms)  # paused: none played
        return queued // self._bytes_per_ms + max(0, sent_until - at)

    def flush(self, new_epoch: int, now_ms: MediaMs) -> tuple[list[Command], list[TurnHeard]]:
        """A confirmed interruption: drop queued audio, clear the provider, settle the ledger."""
        if self._held is not None:  # the flush ends the provider's pause too (FLUSH_MEDIA)
            self._unhold(now_ms)
        self._epoch = new_epoch
        self._queue.clear()
        self._offset = 0
        self._paused = False
        self._speaking = False
        self._sent_until_ms = now_ms
        self._unacked.clear()
        self._estimated.clear()
        self._awaited.clear()
        # After a cut with nothing sent since, the provider holds nothing: one clear is enough.
        commands: list[Command] = [] if self._cleared else [ClearAudio()]
        self._cleared = False
        return commands, self.ledger.flush(now_ms)

    def _drain_news(self) -> PlayoutNews:
        if self._speaking and self.idle:
            self._speaking = False
            return PlayoutNews(drained=True)
        return _QUIET


def _settle_through(marks: deque[tuple[str, _T]], name: str) -> None:
    """Drop the marks up to and including ``name`` (a mark echoes every one before it)."""
    if any(mark == name for mark, _ in marks):
        while marks and marks.popleft()[0] != name:
            pass
