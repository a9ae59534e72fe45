"""The inbound stage: the caller's audio and transcripts turned into machine events.

Design §2 and §6: each inbound 20 ms frame is the call's media clock. ``InboundAudio`` takes
a provider payload apart into frames (decode, resample, reframe: ``gateway/media.py``), and
for each frame advances ``now_ms``, feeds the recogniser, runs the VAD and the turn tracker
(end of turn and echo gate), steps the barge-in machine with what they found and the timers
it needs, and releases the bot audio now due. ``TranscriptReader`` is the recogniser's side:
its own task reads interim and final transcripts, gives them to the turn tracker, lets the
speculator start a turn at a held pause, and steps the machine. Neither decides how the call
reacts to the caller's speech: the machine decides, and ``session/reactions.py`` acts.
"""

from __future__ import annotations

import logging

from voicegate.errors import SpeechError
from voicegate.gateway import bargein
from voicegate.gateway.media import CallMedia
from voicegate.gateway.session.clock import CallClock
from voicegate.gateway.session.outbound import Playback
from voicegate.gateway.session.reactions import BargeInReactions
from voicegate.gateway.session.speculator import Speculator
from voicegate.speech.ports import SpeechToTextStream, TranscriptResult
from voicegate.turns.tracker import TurnTracker, VoiceLike

log = logging.getLogger(__name__)


class InboundAudio:
    """The caller's audio, frame by frame, through the recogniser, the VAD and the machine."""

    def __init__(
        self,
        *,
        clock: CallClock,
        frame_ms: int,
        media: CallMedia,
        stt: SpeechToTextStream,
        tracker: TurnTracker,
        reactions: BargeInReactions,
        playback: Playback,
    ) -> None:
        self._clock = clock
        self._frame_ms = frame_ms
        self._media = media
        self._stt = stt
        self._tracker = tracker
        self._reactions = reactions
        self._playback = playback

    async def audio(self, payload: bytes) -> None:
        """One provider media payload: each of its frames advances the media clock."""
        for frame in self._media.inbound(payload):
            self._clock.now_ms += self._frame_ms
            self._stt.push(frame, self._clock.now_ms)
            voices = self._media.detect_now(frame)
            if voices is None:  # Silero windows to score, in the worker's batch
                voices = await self._media.detect_held()
            hearing = self._media.hears_voice
            for voice in self._tracker.push(frame, self._clock.now_ms, voices, hearing=hearing):
                await self._on_voice(voice)
            if bargein.needs_tick(self._reactions.state):
                await self._reactions.apply(bargein.Tick(self._clock.now_ms))
            if self._playback.due:  # most frames: no bot audio due, no await
                self._playback.check_acknowledged()  # a deaf peer ends here (1008)
                await self._playback.release()

    async def _on_voice(self, voice: VoiceLike) -> None:
        if voice.started:
            self._clock.emit("speech_started", onset_ms=voice.at_ms)
            self._stt.speech_started(voice.at_ms)
            await self._reactions.apply(bargein.SpeechStarted(self._clock.now_ms, voice.at_ms))
        else:
            self._clock.emit("speech_ended", end_ms=voice.at_ms)
            self._stt.speech_ended(voice.at_ms)
            await self._reactions.apply(bargein.SpeechEnded(self._clock.now_ms, voice.at_ms))


class TranscriptReader:
    """The recogniser's results: to the turn tracker, the speculator and the machine."""

    def __init__(
        self,
        *,
        clock: CallClock,
        log_id: str,
        stt: SpeechToTextStream,
        tracker: TurnTracker,
        speculator: Speculator,
        reactions: BargeInReactions,
    ) -> None:
        self._clock = clock
        self._log_id = log_id
        self._stt = stt
        self._tracker = tracker
        self._speculator = speculator
        self._reactions = reactions

    async def run(self) -> None:
        """Read transcripts until the recogniser ends; its failure does not end the call."""
        try:
            async for result in self._stt.results():
                await self._on_transcript(result)
        except SpeechError as error:
            # A failed recogniser must not end the call: keypad input still works, and the
            # reason is logged and on the timeline (issue 7).
            log.warning("call %s: speech recognition failed: %s", self._log_id, error)
            self._clock.emit("speech_error", engine="stt", reason=str(error))

    async def _on_transcript(self, result: TranscriptResult) -> None:
        self._clock.emit("transcript", text=result.text, final=result.final)
        self._tracker.transcript(result.text, result.at_ms)
        if not result.final:
            self._speculator.speculate(self._tracker)
        now_ms = self._clock.now_ms
        await self._reactions.apply(bargein.Transcript(now_ms, result.text, result.final))
