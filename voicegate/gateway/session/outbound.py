"""The outbound side of a call: codec commands to the peer, bot speech paced out, flushes.

``Sender`` is the only way anything reaches the peer: each command is encoded by the call's
dialect and sent on its transport, and the timeline records not yet published follow the
audio (the browser page draws them). ``Speaker`` turns the engine's sentences into segments in
the wire format (TTS, then the call's outbound transcoding) and queues them. ``Playback``
drives ``gateway/playout.py`` (pure) on the media clock: it sends the audio now due and feeds
it to the echo gate as its reference, turns the provider's marks (or, without
acknowledgements, the estimated ones) into what the caller heard, and pauses, cuts and flushes
when the barge-in machine says so (design §5). It reports upward through three callbacks,
never by importing the parts above it: what a turn was heard saying, the machine events
``PlayoutStarted``/``PlayoutDrained``, and the drain itself (an ended call hangs up once its
goodbye was heard).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Iterable

from voicegate.codecs import Capabilities, Codec, Command, PlayAudio, PublishEvent
from voicegate.engine.seam import Say
from voicegate.errors import PolicyViolationError
from voicegate.gateway import bargein
from voicegate.gateway.ledger import TurnHeard
from voicegate.gateway.media import CallMedia
from voicegate.gateway.playout import Playout, PlayoutNews, QueuedSegment
from voicegate.gateway.session.clock import CallClock
from voicegate.gateway.timeline import Record
from voicegate.gateway.transport import Transport
from voicegate.speech.ports import TextToSpeech
from voicegate.turns.tracker import TurnTracker

#: Steps the call's barge-in machine with one event and runs its actions.
Apply = Callable[[bargein.Event], Awaitable[None]]
#: Tells the engine (and the timeline) what the caller heard of one turn.
ReportHeard = Callable[[TurnHeard], Awaitable[None]]


class Sender:
    """Codec commands to the peer, and the timeline records it has not seen yet."""

    def __init__(self, codec: Codec, transport: Transport, unpublished: deque[Record]) -> None:
        self._codec = codec
        self._transport = transport
        # Records not yet published to the peer (browser.md §5); the timeline appends them.
        self._unpublished = unpublished

    @property
    def capabilities(self) -> Capabilities:
        """What the call's dialect can do (read each time: some learn it from the start)."""
        return self._codec.capabilities

    @property
    def unpublished(self) -> bool:
        """Whether the timeline has records the peer has not been sent yet."""
        return bool(self._unpublished)

    async def send(self, command: Command) -> None:
        """Encode one command in the call's dialect and send it."""
        for message in self._codec.send(command):
            await self._transport.send(message)

    async def send_all(self, commands: Iterable[Command]) -> None:
        """Send commands in order."""
        for command in commands:
            await self.send(command)

    async def publish_timeline(self) -> None:
        """Tell the peer what happened since the last release (the browser page draws it).

        Runs in the send path, so no task is needed: every inbound frame releases, so records
        reach the peer within a frame. Only called once the call is accepted (AcceptCall sent).
        """
        while self._unpublished:
            await self.send(PublishEvent(self._unpublished.popleft()))


class Playback:
    """Bot audio out on the media clock: release, marks, pause, resume and flush."""

    def __init__(
        self,
        *,
        clock: CallClock,
        sender: Sender,
        playout: Playout,
        tracker: TurnTracker,
        apply: Apply,
        report_heard: ReportHeard,
        on_drained: Callable[[], Awaitable[None]],
        ack_timeout_s: float,
    ) -> None:
        self._clock = clock
        self._ack_timeout_ms = ack_timeout_s * 1000
        self._sender = sender
        self._playout = playout
        self._tracker = tracker
        self._apply = apply
        self._report_heard = report_heard
        self._on_drained = on_drained

    @property
    def idle(self) -> bool:
        """Whether everything sent has been played (or flushed) and nothing waits."""
        return self._playout.idle

    @property
    def due(self) -> bool:
        """Whether :meth:`release` may have anything to send or report now (else skip it)."""
        return self._playout.due or self._sender.unpublished

    def check_acknowledged(self) -> None:
        """Raise if the provider has echoed no mark for too long after its audio played.

        A peer that sends audio but never reads (or plays) ours would otherwise keep its call
        up to ``limits.max_call_s`` with marks unanswered; it breaks the provider protocol (a
        mark comes back once played or cleared, providers.md §b.1), so it is closed with 1008.
        """
        if self._playout.ack_late_ms(self._clock.now_ms) > self._ack_timeout_ms:
            seconds = self._ack_timeout_ms / 1000
            raise PolicyViolationError(
                f"no playback acknowledgement {seconds:g} s after the audio was due to play"
                " (limits.playback_ack_timeout_s)"
            )

    def enqueue(self, segment: QueuedSegment) -> None:
        """Queue one synthesised segment behind the others."""
        self._playout.enqueue(segment)

    async def release(self) -> None:
        """Send the bot audio due at the current media time, and report what playout did."""
        # A provider without acknowledgements: marks fall due on the playout clock.
        for name in self._playout.due_marks(self._clock.now_ms):
            await self.mark_reached(name, estimated=True)
        commands, news = self._playout.release(self._clock.now_ms)
        # Most frames have nothing to send or report: skip the awaits (bench/media_cost.py).
        if commands:
            # The echo gate's reference: what the caller will hear.
            for played in (c.payload for c in commands if isinstance(c, PlayAudio)):
                self._tracker.played(played, self._clock.now_ms)
            await self._sender.send_all(commands)
        if news.started or news.drained:
            await self._on_news(news)
        if self._sender.unpublished:
            await self._sender.publish_timeline()

    async def mark_reached(self, name: str, **estimated: bool) -> None:
        """The provider played the audio up to mark ``name`` (or the playout clock says so)."""
        heard, news = self._playout.mark_reached(name, self._clock.now_ms)
        self._clock.emit("mark_played", name=name, **estimated)
        if heard is not None:
            await self._report_heard(heard)
        await self._on_news(news)

    async def pause(self, flush: bool) -> None:
        """Stop the bot at the caller: clear the provider too when the policy says so.

        A provider that can pause (Asterisk ``PAUSE_MEDIA``) is paused instead of cleared: it
        keeps its queue, so the timeline says ``held``, not ``flushed``.
        """
        if not flush:
            self._playout.pause()
        else:
            await self._sender.send_all(self._playout.cut(self._clock.now_ms))
            self._tracker.flushed(self._clock.now_ms)  # the caller hears no more bot audio
        held = flush and self._sender.capabilities.pause
        self._clock.emit("playout_paused", flushed=flush and not held, held=held)

    async def resume(self) -> None:
        """Play on from the first unheard sample (a false interruption)."""
        await self._sender.send_all(self._playout.resume(self._clock.now_ms))
        self._clock.emit("playout_resumed")

    async def flush(self, epoch: int) -> list[TurnHeard]:
        """Drop every older epoch's audio, here and at the provider; what those turns heard."""
        dropped_ms = self._playout.unplayed_ms(self._clock.now_ms)  # never heard: issue 18
        commands, heard = self._playout.flush(epoch, self._clock.now_ms)
        self._tracker.flushed(self._clock.now_ms)
        await self._sender.send_all(commands)
        verb = self._sender.capabilities.flush_verb
        self._clock.emit("flush_sent", verb=verb, dropped_ms=dropped_ms)
        return heard

    async def _on_news(self, news: PlayoutNews) -> None:
        if news.started:
            self._clock.emit("bot_speaking", interruptible=news.interruptible)
            await self._apply(bargein.PlayoutStarted(self._clock.now_ms, news.interruptible))
        if news.drained:
            self._clock.emit("bot_quiet")
            await self._apply(bargein.PlayoutDrained(self._clock.now_ms))
            await self._on_drained()


class Speaker:
    """The engine's sentences synthesised in the provider's wire format, queued for playout."""

    def __init__(self, tts: TextToSpeech, media: CallMedia, playback: Playback) -> None:
        self._tts = tts
        self._media = media
        self._playback = playback

    async def segment(self, say: Say, epoch: int) -> QueuedSegment:
        """One sentence synthesised, in the provider's wire format."""
        chunks = [chunk async for chunk in self._tts.synthesize(say.text)]
        payload = self._media.outbound(chunks, self._tts.sample_rate)
        return QueuedSegment(epoch, say.turn_id, say.text, payload)

    async def speak(self, say: Say, epoch: int) -> None:
        """Synthesise one sentence and queue it for playout."""
        await self.play(await self.segment(say, epoch))

    async def play(self, segment: QueuedSegment) -> None:
        """Queue a synthesised segment and release what is due."""
        self._playback.enqueue(segment)
        await self._playback.release()
