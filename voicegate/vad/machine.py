"""The detector's state machine: quiet -> starting -> speaking -> stopping, pure and table-driven.

``step(state, verdict, frame_start_ms, settings) -> (state, events)`` handles one frame. All
times are media time in ms derived from frame counts (design §6): a frame that starts at
``t`` ends at ``t + frame_ms``, and that end is when anything it reveals is *detected*.

* quiet: no speech. A SOUND, MAYBE or SPEECH frame opens a run (its first frame is the
  onset).
* starting: a run of non-silent frames. SPEECH frames count towards ``start_ms``; once
  reached, SpeechStarted(onset = first frame of the run, detected = now). A SILENCE frame
  abandons the run. The onset is clamped to ``onset_lookback_ms`` (rounded up to whole
  frames) before detection, so a long run of MAYBE (steady noise the gate likes) cannot
  date a start far back.
* speaking: speech confirmed. A SILENCE or SOUND frame starts a silence.
* stopping: in a silence. ``stop_ms`` of it ends speech: SpeechEnded(end = where the
  silence began, detected = now). A MAYBE or SPEECH frame returns to speaking; SOUND does
  not (noise the cheap gate likes but Silero scored low: comfort noise switched on as the
  caller stopped held speech open for a second, tests/vad/test_comfort_noise.py).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from voicegate.types import MediaMs
from voicegate.vad.scoring import Verdict
from voicegate.vad.settings import VadSettings, frames_for


class Phase(enum.Enum):
    """Where the detector stands."""

    QUIET = "quiet"
    STARTING = "starting"
    SPEAKING = "speaking"
    STOPPING = "stopping"


@dataclass(frozen=True, slots=True)
class SpeechStarted:
    """Speech was confirmed: it began at ``onset_ms`` and was declared at ``detected_ms``."""

    onset_ms: MediaMs
    detected_ms: MediaMs


@dataclass(frozen=True, slots=True)
class SpeechEnded:
    """Speech stopped at ``end_ms``; the silence that proves it was complete at ``detected_ms``."""

    end_ms: MediaMs
    detected_ms: MediaMs


VadEvent = SpeechStarted | SpeechEnded


@dataclass(frozen=True, slots=True)
class MachineState:
    """The detector's whole memory between frames."""

    phase: Phase = Phase.QUIET
    #: First frame of the current run (starting), or the onset of the segment (speaking on).
    run_start_ms: MediaMs = 0
    #: Confirmed speech in the current run (starting).
    speech_ms: int = 0
    #: Where the current silence began (stopping).
    silence_start_ms: MediaMs = 0


Step = tuple[MachineState, tuple[VadEvent, ...]]
Transition = Callable[[MachineState, MediaMs, VadSettings], Step]


def _stay(state: MachineState, start: MediaMs, settings: VadSettings) -> Step:
    return state, ()


def _open_run(state: MachineState, start: MediaMs, settings: VadSettings) -> Step:
    return MachineState(Phase.STARTING, run_start_ms=start), ()


def _extend_run(state: MachineState, start: MediaMs, settings: VadSettings) -> Step:
    # The lookback in whole frames (rounded up) keeps the onset on a frame boundary.
    lookback_frames = frames_for(settings.onset_lookback_ms, settings.frame_ms)
    earliest = start - (lookback_frames - 1) * settings.frame_ms
    return replace(state, run_start_ms=max(state.run_start_ms, earliest)), ()


def _count_speech(state: MachineState, start: MediaMs, settings: VadSettings) -> Step:
    extended, _ = _extend_run(state, start, settings)
    speech_ms = extended.speech_ms + settings.frame_ms
    if speech_ms < settings.start_ms:
        return replace(extended, speech_ms=speech_ms), ()
    detected = start + settings.frame_ms
    speaking = MachineState(Phase.SPEAKING, run_start_ms=extended.run_start_ms)
    return speaking, (SpeechStarted(extended.run_start_ms, detected),)


def _open_run_with_speech(state: MachineState, start: MediaMs, settings: VadSettings) -> Step:
    opened, _ = _open_run(state, start, settings)
    return _count_speech(opened, start, settings)


def _abandon_run(state: MachineState, start: MediaMs, settings: VadSettings) -> Step:
    return MachineState(), ()


def _count_silence(state: MachineState, start: MediaMs, settings: VadSettings) -> Step:
    detected = start + settings.frame_ms
    if detected - state.silence_start_ms < settings.stop_ms:
        return state, ()
    return MachineState(), (SpeechEnded(state.silence_start_ms, detected),)


def _begin_silence(state: MachineState, start: MediaMs, settings: VadSettings) -> Step:
    stopping = replace(state, phase=Phase.STOPPING, silence_start_ms=start)
    return _count_silence(stopping, start, settings)


def _resume(state: MachineState, start: MediaMs, settings: VadSettings) -> Step:
    return replace(state, phase=Phase.SPEAKING, silence_start_ms=0), ()


#: The whole behaviour, one row per (phase, verdict); tests walk every row.
TRANSITIONS: Mapping[tuple[Phase, Verdict], Transition] = MappingProxyType(
    {
        (Phase.QUIET, Verdict.SILENCE): _stay,
        (Phase.QUIET, Verdict.SOUND): _open_run,
        (Phase.QUIET, Verdict.MAYBE): _open_run,
        (Phase.QUIET, Verdict.SPEECH): _open_run_with_speech,
        (Phase.STARTING, Verdict.SILENCE): _abandon_run,
        (Phase.STARTING, Verdict.SOUND): _extend_run,
        (Phase.STARTING, Verdict.MAYBE): _extend_run,
        (Phase.STARTING, Verdict.SPEECH): _count_speech,
        (Phase.SPEAKING, Verdict.SILENCE): _begin_silence,
        (Phase.SPEAKING, Verdict.SOUND): _begin_silence,
        (Phase.SPEAKING, Verdict.MAYBE): _stay,
        (Phase.SPEAKING, Verdict.SPEECH): _stay,
        (Phase.STOPPING, Verdict.SILENCE): _count_silence,
        (Phase.STOPPING, Verdict.SOUND): _count_silence,
        (Phase.STOPPING, Verdict.MAYBE): _resume,
        (Phase.STOPPING, Verdict.SPEECH): _resume,
    }
)


def step(
    state: MachineState, verdict: Verdict, frame_start_ms: MediaMs, settings: VadSettings
) -> Step:
    """Advance by one frame that starts at ``frame_start_ms``."""
    return TRANSITIONS[state.phase, verdict](state, frame_start_ms, settings)


def finish(state: MachineState, end_of_stream_ms: MediaMs) -> Step:
    """Close the stream: speech still going ends where it stands (or where its silence began)."""
    if state.phase is Phase.SPEAKING:
        return MachineState(), (SpeechEnded(end_of_stream_ms, end_of_stream_ms),)
    if state.phase is Phase.STOPPING:
        return MachineState(), (SpeechEnded(state.silence_start_ms, end_of_stream_ms),)
    return MachineState(), ()
