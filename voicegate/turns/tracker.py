"""One call's turn-taking: the echo gate and the end-of-turn machine between VAD and barge-in.

The call session hands every caller frame with the VAD's verdict changes to :meth:`push` and
gets back the speech starts and ends the rest of the call should see: echo-explained speech
removed, pauses that did not end the turn bridged, the end of the turn released when the
model, the transcript and the silence agree (:mod:`.end_of_turn`). Model inferences run on
the shared :class:`SmartTurnModel` threads; their futures are polled on the media clock, one
check per frame, so nothing here awaits and no task is started (design §6, §8).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from voicegate.audio.g711 import alaw_bytes_to_samples, ulaw_bytes_to_samples
from voicegate.audio.pcm import Samples, pcm16le_to_samples
from voicegate.turns import echo_gate, end_of_turn
from voicegate.turns.echo_gate import EchoLoss, EchoReference, ac_level_db, levels_db
from voicegate.turns.settings import EchoGateSettings, EndOfTurnSettings, TurnSettings
from voicegate.types import AudioEncoding, AudioFormat, MediaMs

log = logging.getLogger(__name__)

#: Audio the model may look at: its 8 s window plus the pre-roll before the turn's onset.
_KEEP_MS = 8000


class EndOfTurnModel(Protocol):
    """Scores whether a turn is complete, off the caller's thread (:class:`SmartTurnModel`)."""

    def submit(self, samples: Samples, sample_rate: int) -> Future[float] | None:
        """Start scoring the audio up to the pause (a future); None if the model is busy."""
        ...


class VoiceLike(Protocol):
    """A VAD verdict change (gateway.media.VoiceEvent has this shape)."""

    @property
    def started(self) -> bool:
        """Speech started (else ended)."""
        ...

    @property
    def at_ms(self) -> MediaMs:
        """Its onset or end, media time."""
        ...


@dataclass(frozen=True, slots=True)
class Voice:
    """A speech start or end as the rest of the call should see it."""

    started: bool
    at_ms: MediaMs


#: Where decisions are recorded: ``report(t_ms, event, **fields)`` (the call timeline's emit).
Reporter = Callable[..., object]


class TurnTracker:
    """Per-call state: recent caller audio, the bot's echo reference, both machines."""

    def __init__(
        self,
        settings: TurnSettings,
        model: EndOfTurnModel | None,
        *,
        sample_rate: int,
        wire: AudioFormat,
        on_pause: Callable[[MediaMs], None] | None = None,
        report: Reporter | None = None,
        on_resume: Callable[[], None] | None = None,
    ) -> None:
        self._on_resume = on_resume
        self._eot_settings = settings.end_of_turn
        self._gate_settings = settings.echo_gate
        self._model = model if settings.end_of_turn.uses_model else None
        self._rate = sample_rate
        self._wire = wire
        self._on_pause = on_pause
        self._report = report
        self._frames: deque[tuple[MediaMs, Samples]] = deque()
        self._reference = EchoReference(settings.echo_gate.max_delay_ms)
        self._echo_loss = EchoLoss()
        self._gate = echo_gate.EchoGateState()
        self._eot = end_of_turn.EndOfTurnState()
        self._scoring: tuple[MediaMs, Future[float]] | None = None
        self._turn_onset_ms: MediaMs = 0

    def push(
        self,
        frame: Samples,
        now_ms: MediaMs,
        voices: Iterable[VoiceLike],
        *,
        hearing: bool = False,
    ) -> list[Voice]:
        """One caller frame ending at ``now_ms`` and the VAD's events for it.

        ``hearing``: the VAD took this frame for possible speech (``Detector.hears_voice``),
        a start it has not confirmed yet; a held pause is not released on it.
        """
        if self._model is not None:
            self._remember(frame, now_ms)
        out = self._gate_frame(frame, now_ms) if self._gate_settings.enabled else []
        for voice in voices:
            out.extend(self._gate_voice(voice, now_ms))
        if self._eot.pause is None:  # the common case: nothing to judge
            return out
        self._poll_score(now_ms)
        if hearing and self._echo_may_explain(frame, now_ms):
            hearing = False  # the bot's own voice coming back: no sign the caller goes on
        return [*out, *self._decide(now_ms, hearing)]

    def played(self, payload: bytes, now_ms: MediaMs) -> None:
        """Bot audio (wire format) was released to the provider at ``now_ms``."""
        if not self._gate_settings.enabled:
            return  # no gate to consult it: not decoded, and not kept (it was never trimmed)
        samples = _decode(payload, self._wire.encoding)
        rate = self._wire.sample_rate
        frame = rate * echo_gate.REFERENCE_FRAME_MS // 1000
        levels = levels_db(samples, frame)
        if not levels:
            return
        reference, frame_ms = self._reference, frame * 1000 // rate
        for level in levels[:-1]:  # whole frames; the last piece may be short
            reference.played(frame_ms, level, now_ms)
        last = len(samples) - frame * (len(levels) - 1)
        reference.played(last * 1000 // rate, levels[-1], now_ms)

    def flushed(self, now_ms: MediaMs) -> None:
        """The provider was told to drop its buffered bot audio."""
        self._reference.flushed(now_ms)

    def transcript(self, text: str, covers_ms: MediaMs) -> None:
        """A transcript of the caller's audio up to ``covers_ms`` (interim or final)."""
        self._eot = end_of_turn.heard(self._eot, text, covers_ms)
        if self._scoring is not None and end_of_turn.held_by_words(self._eot, self._eot_settings):
            # The hold-word rule decides this pause whatever the model says: an inference
            # still waiting for a thread is not run at all.
            self._drop_scoring()
            self._eot = end_of_turn.unscored(self._eot, "hold word")

    def speculation_text(self) -> str | None:
        """The words of the held pause, if a speculative turn may start on them now."""
        pause = self._eot.pause
        if not self._eot_settings.speculative or self._model is None or pause is None:
            return None
        if not pause.words or end_of_turn.held_by_words(self._eot, self._eot_settings):
            return None
        return pause.words.strip() or None

    # --- echo gate ------------------------------------------------------------------------

    def _gate_frame(self, frame: Samples, now_ms: MediaMs) -> list[Voice]:
        frame_ms = len(frame) * 1000 // self._rate
        start = now_ms - frame_ms
        reference = self._reference.level_at(start, now_ms)
        held = self._gate.held
        # Most frames have nothing to judge (bench/media_cost.py): no bot audio to echo and
        # nothing held, or caller speech already let through. The frames of a passed segment
        # all start before the VAD's next onset (its detector is quiet again after the end),
        # and the gate only looks at frames (evidence, echo) from an onset on: no record needed.
        if (held is None and reference is None) or (held is not None and held.released):
            return []
        level = ac_level_db(frame)
        if reference is None:  # a held start, the bot's audio out of the window
            evident = level > -self._gate_settings.silence_below_db
        else:
            self._echo_loss.observe(start, level, reference)  # nobody let through: echo
            evident = level > reference - self._echo_loss.margin(self._gate_settings)
        self._gate, released = echo_gate.frame(
            self._gate,
            start,
            evident,
            reference is not None,
            self._gate_settings,
            frame_ms=frame_ms,
        )
        if released is None:
            return []
        self._echo_loss.caller()
        return self._turn_voice(Voice(True, released.onset_ms), now_ms)

    def _gate_voice(self, voice: VoiceLike, now_ms: MediaMs) -> list[Voice]:
        if voice.started:
            # The segment's frames are no evidence of the echo until the gate has judged it.
            self._echo_loss.hold(voice.at_ms)
            self._gate, start = echo_gate.speech_started(
                self._gate, voice.at_ms, self._gate_settings
            )
            if start is None:
                return []
            self._echo_loss.caller()
            return self._turn_voice(Voice(True, start.onset_ms), now_ms)
        held = self._gate.held
        self._gate, end = echo_gate.speech_ended(self._gate, voice.at_ms)
        if end is None:
            if held is not None:
                self._echo_loss.echo()
            if held is not None and self._report is not None:
                self._report(now_ms, "echo_suppressed", onset_ms=held.onset_ms, end_ms=voice.at_ms)
            return []
        return self._turn_voice(Voice(False, end.end_ms), now_ms)

    def _echo_may_explain(self, frame: Samples, now_ms: MediaMs) -> bool:
        """Whether the bot's audio of the echo window may be what the VAD hears in ``frame``.

        The gate's own test (a frame no louder than the reference less the margin), asked
        only for a frame the VAD hears in a held pause: rare, so not worth a per-frame record.
        """
        if not self._gate_settings.enabled:
            return False
        frame_ms = len(frame) * 1000 // self._rate
        reference = self._reference.level_at(now_ms - frame_ms, now_ms)
        if reference is None:
            return False
        margin = self._echo_loss.margin(self._gate_settings)
        return ac_level_db(frame) <= reference - margin

    # --- end of turn ----------------------------------------------------------------------

    def _turn_voice(self, voice: Voice, now_ms: MediaMs) -> list[Voice]:
        if voice.started:
            self._eot, continues = end_of_turn.resumed(self._eot)
            self._drop_scoring()
            if continues:
                if self._on_resume is not None:
                    self._on_resume()  # the caller went on: a speculative turn is void
                return []
            self._turn_onset_ms = voice.at_ms
            return [voice]
        self._eot = end_of_turn.paused(self._eot, voice.at_ms)
        if self._model is not None:
            self._eot = end_of_turn.unscored(self._eot, self._start_scoring(voice.at_ms))
            if self._on_pause is not None:
                self._on_pause(voice.at_ms)
        return []

    def _drop_scoring(self) -> None:
        """Forget the inference for a pause that speech resumed (unstarted: not run at all)."""
        if self._scoring is not None:
            self._scoring[1].cancel()
            self._scoring = None

    def _start_scoring(self, end_ms: MediaMs) -> str:
        """Ask the model about the pause at ``end_ms`` if it can change the decision.

        One inference per pause at most. Not for a short utterance (``min_speech_ms``): the
        silence timeout decides it. Echo never gets here: the gate drops the segments the
        bot's echo explains before they make a pause. Returns the pause's ``model`` state.
        """
        assert self._model is not None
        self._drop_scoring()
        if end_ms - self._turn_onset_ms < self._eot_settings.min_speech_ms:
            return "short"
        begin = self._turn_onset_ms - self._eot_settings.preroll_ms
        frames = [samples for end, samples in self._frames if end > begin]
        if not frames:
            return "short"
        future = self._model.submit(np.concatenate(frames), self._rate)
        if future is None:
            return "shed"
        self._scoring = (end_ms, future)
        return "asked"

    def _poll_score(self, now_ms: MediaMs) -> None:
        if self._scoring is None or not self._scoring[1].done():
            return
        end_ms, future = self._scoring
        self._scoring = None
        try:
            score = future.result()
        except Exception as error:  # the silence fallback still ends the turn
            log.warning("end-of-turn model failed: %s", error)
            return
        self._eot = end_of_turn.scored(self._eot, end_ms, score, now_ms)

    def _decide(self, now_ms: MediaMs, hearing: bool) -> list[Voice]:
        self._eot, end = end_of_turn.decide(
            self._eot, now_ms, self._eot_settings, hearing_voice=hearing
        )
        if end is None:
            return []
        # Ended without the verdict (a timeout on a loaded machine): an inference still queued
        # for the model's thread would cost ~85 ms of CPU for a turn already over, and keep a
        # place a later pause could use (bench/calls.py's end_of_turn: "silence timeout /
        # asked").
        self._drop_scoring()
        if self._report is not None and self._model is not None:
            self._report(
                now_ms,
                "end_of_turn",
                reason=end.reason,
                end_ms=end.end_ms,
                silence_ms=end.silence_ms,
                score=None if end.score is None else round(end.score, 3),
                words=end.words,
                model=end.model,
            )
        return [Voice(False, end.end_ms)]

    def _remember(self, frame: Samples, now_ms: MediaMs) -> None:
        self._frames.append((now_ms, frame))
        keep = _KEEP_MS + self._eot_settings.preroll_ms
        while self._frames and self._frames[0][0] <= now_ms - keep:
            self._frames.popleft()


#: The behaviour before issue 14: a VAD pause ends the turn, no echo gate.
SILENCE_ONLY = TurnSettings(
    end_of_turn=EndOfTurnSettings(model="none"), echo_gate=EchoGateSettings(enabled=False)
)


@dataclass(frozen=True, slots=True)
class TurnFactory:
    """What every call shares: the settings and the one loaded model (None: silence only)."""

    settings: TurnSettings = field(default_factory=lambda: SILENCE_ONLY)
    model: EndOfTurnModel | None = None

    def open(
        self,
        sample_rate: int,
        wire: AudioFormat,
        *,
        on_pause: Callable[[MediaMs], None] | None = None,
        report: Reporter | None = None,
        on_resume: Callable[[], None] | None = None,
    ) -> TurnTracker:
        """One call's tracker."""
        return TurnTracker(
            self.settings,
            self.model,
            sample_rate=sample_rate,
            wire=wire,
            on_pause=on_pause,
            report=report,
            on_resume=on_resume,
        )


def _decode(payload: bytes, encoding: AudioEncoding) -> Samples:
    match encoding:
        case AudioEncoding.PCMU:
            return ulaw_bytes_to_samples(payload)
        case AudioEncoding.PCMA:
            return alaw_bytes_to_samples(payload)
        case AudioEncoding.L16:
            return pcm16le_to_samples(payload)
