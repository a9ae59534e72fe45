"""The detector: a frame scorer, the two thresholds and the state machine, on media time."""

from __future__ import annotations

from dataclasses import dataclass

from voicegate.errors import ConfigError
from voicegate.types import MediaMs
from voicegate.vad.combined import CombinedScorer
from voicegate.vad.dc import DcRemover
from voicegate.vad.frames import Frame, check_frame, frame_length, iter_frames
from voicegate.vad.machine import MachineState, Phase, SpeechEnded, VadEvent, finish, step
from voicegate.vad.scoring import FrameEvidence, FrameScorer, Verdict, classify
from voicegate.vad.settings import ScorerKind, VadSettings, check_sample_rate
from voicegate.vad.silero import SileroModel, SileroScorer
from voicegate.vad.silero_batch import BatchableScorer
from voicegate.vad.webrtc import WebrtcScorer


def build_scorer(
    sample_rate: int, settings: VadSettings, *, model: SileroModel | None = None
) -> FrameScorer:
    """The scorer ``settings.scorer`` names, for one stream at ``sample_rate``.

    ``model`` is the process's shared Silero model; without one a Silero scorer loads its own.
    """
    check_sample_rate(sample_rate)
    if settings.scorer is ScorerKind.WEBRTC:
        return WebrtcScorer(sample_rate, settings.webrtc_aggressiveness, settings.frame_ms)
    if settings.scorer is ScorerKind.SILERO:
        return SileroScorer(sample_rate, settings.frame_ms, model=model)
    return CombinedScorer(sample_rate, settings, model=model)


class Detector:
    """Turns consecutive frames of one stream into SpeechStarted / SpeechEnded events.

    Media time starts at 0 with the first frame and advances ``frame_ms`` per frame pushed,
    so replaying a recording gives identical events every run (design §6).
    """

    def __init__(self, scorer: FrameScorer, settings: VadSettings) -> None:
        if scorer.frame_ms != settings.frame_ms:
            raise ConfigError(
                f"the scorer takes {scorer.frame_ms} ms frames, the settings say "
                f"{settings.frame_ms} ms"
            )
        self._scorer = scorer
        # Silero scorers may have their windows scored in a batch with other calls' (prepare).
        self._batchable: BatchableScorer | None = (
            scorer if isinstance(scorer, SileroScorer | CombinedScorer) else None
        )
        # The combined scorer's level comes with the DC removal, from one float copy.
        self._measured = scorer if isinstance(scorer, CombinedScorer) else None
        self._frame_length = frame_length(scorer.sample_rate, settings.frame_ms)
        self._settings = settings
        self._dc = DcRemover(settings.frame_ms)
        self._state = MachineState()
        self._media_ms: MediaMs = 0
        self._voiced = False

    @property
    def media_ms(self) -> MediaMs:
        """Media time at the end of the last frame pushed."""
        return self._media_ms

    @property
    def phase(self) -> Phase:
        """Where the state machine stands."""
        return self._state.phase

    @property
    def hears_voice(self) -> bool:
        """Whether the last frame may be speech (MAYBE or SPEECH), confirmed or not.

        After the end of speech this is a possible resume ~60-80 ms before its start is
        confirmed (``start_ms`` of SPEECH frames, and Silero's rise): the end-of-turn machine
        waits on it rather than answer into the caller's next word (docs/turn-taking.md).
        """
        return self._voiced

    @property
    def waiting(self) -> SileroScorer | None:
        """After :meth:`prepare` returned None: the Silero stream whose windows need scoring."""
        return None if self._batchable is None else self._batchable.silero

    def push(self, frame: Frame) -> tuple[VadEvent, ...]:
        """Score and step one frame; the events it caused."""
        return self._step(self._scorer.evidence(self._dc.remove(frame)))

    def prepare(self, frame: Frame) -> tuple[VadEvent, ...] | None:
        """Step one frame, unless Silero windows must be scored first (then None).

        After None, score :attr:`waiting`'s queued windows (alone or batched with other
        calls', ``vad/silero_batch.py``), then :meth:`resume` steps the frame. No other frame
        may be pushed or prepared in between.
        """
        if self._batchable is None:
            return self.push(frame)
        if self._measured is not None:
            frame, level = self._dc.remove_measured(check_frame(frame, self._frame_length))
            evidence = self._measured.prepare_measured(frame, level)
        else:
            evidence = self._batchable.prepare(self._dc.remove(frame))
        return None if evidence is None else self._step(evidence)

    def resume(self) -> tuple[VadEvent, ...]:
        """Step the frame :meth:`prepare` held back, now that its windows are scored."""
        assert self._batchable is not None
        return self._step(self._batchable.scored())

    def _step(self, evidence: FrameEvidence) -> tuple[VadEvent, ...]:
        settings = self._settings
        verdict = classify(evidence, settings.speech_threshold, settings.maybe_threshold)
        start = self._media_ms
        self._media_ms = start + settings.frame_ms
        self._voiced = verdict is Verdict.MAYBE or verdict is Verdict.SPEECH
        if verdict is Verdict.SILENCE and self._state.phase is Phase.QUIET:
            return ()  # most frames of a call: the table's (quiet, silence) row stays put
        self._state, events = step(self._state, verdict, start, settings)
        return events

    def finish(self) -> tuple[VadEvent, ...]:
        """End of stream: close speech that is still open."""
        self._state, events = finish(self._state, self._media_ms)
        return events


@dataclass(frozen=True, slots=True)
class Segment:
    """One stretch of detected speech, in media ms from the start of the audio."""

    start_ms: MediaMs
    end_ms: MediaMs


def detect_segments(samples: Frame, sample_rate: int, settings: VadSettings) -> list[Segment]:
    """Run a fresh detector over a whole recording; a trailing partial frame is left out."""
    detector = Detector(build_scorer(sample_rate, settings), settings)
    events: list[VadEvent] = []
    for frame in iter_frames(samples, frame_length(sample_rate, settings.frame_ms)):
        events.extend(detector.push(frame))
    events.extend(detector.finish())
    return _pair(events)


def _pair(events: list[VadEvent]) -> list[Segment]:
    segments: list[Segment] = []
    start: MediaMs | None = None
    for event in events:
        if isinstance(event, SpeechEnded):
            if start is not None:
                segments.append(Segment(start, event.end_ms))
            start = None
        else:
            start = event.onset_ms
    return segments
