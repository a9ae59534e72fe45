"""The end-of-turn machine: is a pause in the caller's speech the end of their turn?

Pure, on media time (design §6). The VAD reports a *pause* after ``ask_after_ms`` of silence;
the machine holds that speech end back from the barge-in machine and the recogniser while it
waits for evidence, and releases it as the end of the turn when

* the end-of-turn model scored the audio up to the pause at or above ``threshold``, the
  silence reached ``pause_ms`` and the transcript of the pause has arrived (or
  ``transcript_wait_ms`` passed without one), unless
  that transcript ends on a hold word ("and", "um"): then only ``hesitation_timeout_ms``
  of silence ends it;
* or the model scored it incomplete and the silence reached ``incomplete_timeout_ms``;
* or the model has not answered and the silence reached ``silence_timeout_ms`` (the
  fallback: the VAD-only rule of before, so a slow model never makes the answer later);
* in both of those cases, sooner, once the silence reached ``sentence_end_timeout_ms``, if
  the transcript of the pause ends a sentence ("Two.", "Goodbye!"): the recogniser's
  punctuation weighs against a model that scores short answers low;
* or no model is configured: the pause itself ends the turn.

Speech resuming before then makes the pause part of the turn: the new speech start is
swallowed, so downstream sees one utterance. This is Pipecat's Smart Turn flow (VAD stop
0.2 s, then the model, with a silence fallback) plus LiveKit's transcript-aware hold.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from voicegate.turns.settings import EndOfTurnSettings
from voicegate.types import MediaMs


@dataclass(frozen=True, slots=True)
class Pause:
    """A speech end the VAD reported that is not yet known to be the end of the turn."""

    end_ms: MediaMs
    score: float | None = None
    scored_ms: MediaMs | None = None
    words: str | None = None
    #: What became of the model's verdict: ``asked``, ``scored``, or why it was not (or no
    #: longer) wanted: ``short`` speech, ``shed`` (the model was busy), ``hold word``.
    model: str = "asked"


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """The held pause is the end of the turn: release its speech end downstream."""

    end_ms: MediaMs
    reason: str
    silence_ms: int
    score: float | None
    words: str | None
    model: str


@dataclass(frozen=True, slots=True)
class EndOfTurnState:
    """The pause being judged, if any."""

    pause: Pause | None = None


def paused(state: EndOfTurnState, end_ms: MediaMs) -> EndOfTurnState:
    """The VAD saw ``pause_ms`` of silence after speech that ended at ``end_ms``."""
    return EndOfTurnState(Pause(end_ms))


def unscored(state: EndOfTurnState, why: str) -> EndOfTurnState:
    """The model will not score the held pause (``why``): the other rules decide it."""
    pause = state.pause
    return state if pause is None else EndOfTurnState(replace(pause, model=why))


def resumed(state: EndOfTurnState) -> tuple[EndOfTurnState, bool]:
    """Speech started again; True if it continues a held pause (swallow the start)."""
    return EndOfTurnState(), state.pause is not None


def scored(state: EndOfTurnState, end_ms: MediaMs, score: float, now_ms: MediaMs) -> EndOfTurnState:
    """The model's probability that the turn ended at ``end_ms``."""
    pause = state.pause
    if pause is None or pause.end_ms != end_ms:
        return state  # a late score for a pause that speech already resumed
    return EndOfTurnState(replace(pause, score=score, scored_ms=now_ms, model="scored"))


def heard(state: EndOfTurnState, text: str, covers_ms: MediaMs) -> EndOfTurnState:
    """A transcript of the caller's audio up to ``covers_ms``."""
    pause = state.pause
    if pause is None or covers_ms < pause.end_ms:
        return state
    return EndOfTurnState(replace(pause, words=text))


def decide(
    state: EndOfTurnState,
    now_ms: MediaMs,
    settings: EndOfTurnSettings,
    *,
    hearing_voice: bool = False,
) -> tuple[EndOfTurnState, TurnEnd | None]:
    """Release the held pause as the end of the turn, or keep waiting.

    ``hearing_voice``: the VAD takes the latest frame for possible speech that it has not
    confirmed as a start yet. A caller going on after a pause is heard that way 40-80 ms
    before the start is confirmed (``vad.start_ms`` of speech frames, and Silero's rise),
    so no rule but the silence timeout ends the turn then (``wait_while_voiced``).
    """
    pause = state.pause
    if pause is None:
        return state, None
    reason = _reason(pause, now_ms, settings)
    if reason is None:
        return state, None
    silence = now_ms - pause.end_ms
    if hearing_voice and settings.wait_while_voiced and silence < settings.silence_timeout_ms:
        return state, None
    end = TurnEnd(pause.end_ms, reason, silence, pause.score, pause.words, pause.model)
    return EndOfTurnState(), end


def held_by_words(state: EndOfTurnState, settings: EndOfTurnSettings) -> bool:
    """Whether the held pause's transcript already decides it (a hold word): no model needed."""
    pause = state.pause
    return (
        pause is not None and pause.words is not None and ends_on_hold_word(pause.words, settings)
    )


def ends_on_hold_word(text: str, settings: EndOfTurnSettings) -> bool:
    """Whether the last word of ``text`` says more is coming ("and", "um", "...")."""
    stripped = text.strip()
    if stripped.endswith(("...", "…", ",")):
        return True
    words = stripped.lower().split()
    return bool(words) and words[-1].strip(".,!?;:-…") in settings.hold_words


def _reason(pause: Pause, now_ms: MediaMs, settings: EndOfTurnSettings) -> str | None:
    silence = now_ms - pause.end_ms
    if not settings.uses_model:
        return "pause"
    if pause.words is not None and ends_on_hold_word(pause.words, settings):
        return "hesitation timeout" if silence >= settings.hesitation_timeout_ms else None
    if pause.score is None or pause.score < settings.threshold:
        return _timeout_reason(pause, silence, settings)
    if silence < settings.pause_ms:
        return None  # asked early (ask_after_ms) so the verdict is in by now, not to act sooner
    assert pause.scored_ms is not None
    waited = now_ms - pause.scored_ms
    if pause.words is not None or waited >= settings.transcript_wait_ms:
        return "model"
    return None


def _timeout_reason(pause: Pause, silence: int, settings: EndOfTurnSettings) -> str | None:
    """No complete verdict: a timeout ends the turn, shorter if the words end a sentence."""
    if pause.score is None:
        reason, timeout = "silence timeout", settings.silence_timeout_ms
    else:
        reason, timeout = "incomplete timeout", settings.incomplete_timeout_ms
    # The recogniser closed the sentence ("Two.", "Goodbye!") where the model did not score
    # it complete: Smart Turn scores lone words and short answers on a phone line low
    # (bench/turn_taking.py); Whisper leaves many fragments unpunctuated ("All circuit",
    # "He might even have been"), though not all (docs/turn-taking.md).
    finished = pause.words is not None and ends_a_sentence(pause.words)
    if finished and settings.sentence_end_timeout_ms < timeout:
        reason, timeout = "sentence end", settings.sentence_end_timeout_ms
    return reason if silence >= timeout else None


def ends_a_sentence(text: str) -> bool:
    """Whether ``text`` ends with a full stop, question or exclamation mark (not "...")."""
    stripped = text.strip()
    return stripped.endswith((".", "?", "!")) and not stripped.endswith(("...", "…"))
