"""The parts of one admitted call, built in order and connected (the call's composition root).

Once the gateway admits a call, its parts can be made: they need the call's audio formats,
the provider's pace and capabilities, and the call's media and recogniser. ``CallParts``
builds them the way ``cli/wiring.py`` builds the gateway: explicitly, each with the
collaborators it uses. The parts form a cycle (playback and turns step the barge-in machine;
the machine acts on playback and turns), so the parts made before the machine get its
``apply`` and its state through this object's three small forwarders, never a reference to
an object that does not exist yet. What the session itself owns (the transport, the task
group, the recogniser's stream it must close) is passed in.
"""

from __future__ import annotations

import asyncio
import functools

from voicegate.codecs import CallStarted, Codec
from voicegate.gateway import bargein
from voicegate.gateway.call_ending import hang_up
from voicegate.gateway.media import CallMedia
from voicegate.gateway.playout import Playout, provider_pace
from voicegate.gateway.session.clock import CallClock
from voicegate.gateway.session.ending import CallEnding
from voicegate.gateway.session.heard import HeardReporter
from voicegate.gateway.session.inbound import InboundAudio, TranscriptReader
from voicegate.gateway.session.outbound import Playback, Sender, Speaker
from voicegate.gateway.session.reactions import BargeInReactions
from voicegate.gateway.session.settings import CallServices, SessionSettings
from voicegate.gateway.session.speculator import Speculator
from voicegate.gateway.session.turn_runner import TurnRunner
from voicegate.gateway.transport import Transport
from voicegate.speech.ports import SpeechToTextStream


def open_playout(codec: Codec, settings: SessionSettings) -> Playout:
    """Playout paced for the provider: its frame size limits and its acknowledgements."""
    capabilities = codec.capabilities
    bytes_per_ms = capabilities.outbound_format.bytes_for_ms(1000) // 1000
    chunk_ms, send_ahead_ms = provider_pace(
        settings.chunk_ms,
        settings.send_ahead_ms,
        frame_ms=settings.frame_ms,
        min_bytes=capabilities.outbound_frames.min_bytes,
        bytes_per_ms=bytes_per_ms,
    )
    return Playout(
        bytes_per_ms=bytes_per_ms,
        frame_ms=settings.frame_ms,
        send_ahead_ms=send_ahead_ms,
        chunk_ms=chunk_ms,
        estimate_acks=not capabilities.playback_acks,
        provider_pause=capabilities.pause,
    )


class CallParts:
    """One admitted call's parts: inbound, reactions, turns, speculation, playback, ending."""

    def __init__(
        self,
        *,
        started: CallStarted,
        codec: Codec,
        transport: Transport,
        services: CallServices,
        settings: SessionSettings,
        call_id: str,
        provider_id: str,
        clock: CallClock,
        sender: Sender,
        tasks: asyncio.TaskGroup,
        media: CallMedia,
        stt: SpeechToTextStream,
    ) -> None:
        playout = open_playout(codec, settings)
        tracker = services.turns.open(
            media.sample_rate,
            codec.capabilities.outbound_format,
            on_pause=stt.speech_paused,
            report=clock.timeline.emit,
            on_resume=self._caller_resumed,
        )
        end_call = functools.partial(
            hang_up,
            codec=codec,
            transport=transport,
            emit=clock.emit,
            control=services.call_control,
            started=started,
        )
        ending = CallEnding(playout, end_call)
        heard = HeardReporter(clock, services.engine, call_id, codec, playout.ledger)
        self.playback = Playback(
            clock=clock,
            sender=sender,
            playout=playout,
            tracker=tracker,
            apply=self._apply,
            report_heard=heard.report,
            on_drained=ending.when_heard,
            ack_timeout_s=settings.limits.playback_ack_timeout_s,
        )
        self.runner = TurnRunner(
            clock=clock,
            engine=services.engine,
            call_id=call_id,
            log_id=provider_id,
            settings=settings,
            tasks=tasks,
            speaker=Speaker(services.tts, media, self.playback),
            heard=heard,
            ending=ending,
            apply=self._apply,
        )
        self.speculator = Speculator(clock, self._machine, self.runner, self.playback)
        self.reactions = BargeInReactions(
            clock=clock,
            policy=settings.barge_in,
            playback=self.playback,
            runner=self.runner,
            speculator=self.speculator,
            heard=heard,
            ending=ending,
        )
        self.inbound = InboundAudio(
            clock=clock,
            frame_ms=settings.frame_ms,
            media=media,
            stt=stt,
            tracker=tracker,
            reactions=self.reactions,
            playback=self.playback,
        )
        self.transcripts = TranscriptReader(
            clock=clock,
            log_id=provider_id,
            stt=stt,
            tracker=tracker,
            speculator=self.speculator,
            reactions=self.reactions,
        )

    def stop(self) -> None:
        """The call is over: cancel the running turn and any speculative one."""
        self.runner.stop()
        self.speculator.drop("call over")

    async def _apply(self, event: bargein.Event) -> None:
        await self.reactions.apply(event)

    def _machine(self) -> bargein.BargeInState:
        return self.reactions.state

    def _caller_resumed(self) -> None:
        """The caller went on after the pause: the speculative turn is void."""
        self.speculator.drop("caller went on")
