"""The end-of-turn machine, event by event on media time (voicegate/turns/end_of_turn.py)."""

from __future__ import annotations

import pytest

from voicegate.errors import ConfigError
from voicegate.turns import end_of_turn as eot
from voicegate.turns.settings import EndOfTurnSettings

MODEL = EndOfTurnSettings()  # threshold 0.5; 500 ms without a verdict, 1000 if incomplete
SILENCE_ONLY = EndOfTurnSettings(model="none")


def run(events: list[tuple[str, int, object]], settings: EndOfTurnSettings) -> list[str]:
    """Feed (kind, now_ms, value) events; the decisions, as 'reason@now' strings."""
    state = eot.EndOfTurnState()
    out: list[str] = []
    for kind, now, value in events:
        match kind:
            case "pause":
                state = eot.paused(state, int(value))  # type: ignore[call-overload]
            case "resume":
                state, swallowed = eot.resumed(state)
                out.append(f"swallowed@{now}" if swallowed else f"started@{now}")
            case "score":
                state = eot.scored(state, 1000, float(value), now)  # type: ignore[arg-type]
            case "words":
                state = eot.heard(state, str(value), now)
        state, end = eot.decide(state, now, settings)
        if end is not None:
            out.append(f"{end.reason}@{now}")
    return out


def test_without_a_model_the_pause_is_the_end_of_the_turn() -> None:
    assert run([("pause", 1500, 1000)], SILENCE_ONLY) == ["pause@1500"]


def test_a_complete_score_with_the_transcript_ends_the_turn_at_once() -> None:
    events = [("pause", 1200, 1000), ("score", 1260, 0.93), ("words", 1300, "front center")]
    assert run(events, MODEL) == ["model@1300"]


def test_a_complete_score_waits_a_bounded_time_for_the_transcript() -> None:
    events = [("pause", 1200, 1000), ("score", 1260, 0.93), ("tick", 1540, None)]
    events += [("tick", 1560, None)]
    assert run(events, MODEL) == ["model@1560"]  # 300 ms after the score


def test_an_incomplete_score_waits_longer_for_more_speech() -> None:
    events = [("pause", 1200, 1000), ("score", 1260, 0.2), ("words", 1300, "my card number is")]
    events += [("tick", 1980, None), ("tick", 2000, None)]
    assert run(events, MODEL) == ["incomplete timeout@2000"]


def test_an_incomplete_score_on_a_finished_sentence_waits_only_the_sentence_end_timeout() -> None:
    # Smart Turn scores a lone "Two." low; the recogniser closed the sentence.
    events = [("pause", 1100, 1000), ("score", 1170, 0.02), ("words", 1190, "Two.")]
    events += [("tick", 1480, None), ("tick", 1500, None)]
    assert run(events, MODEL) == ["sentence end@1500"]  # not the 1,000 ms incomplete timeout


def test_a_fragment_without_a_full_stop_keeps_the_incomplete_timeout() -> None:
    for words in (
        "He might even have been",
        "Please enter the number you wish",
        "Your call cannot be",
    ):
        events = [("pause", 1100, 1000), ("score", 1170, 0.1), ("words", 1190, words)]
        events += [("tick", 1300, None), ("tick", 1980, None), ("tick", 2000, None)]
        assert run(events, MODEL) == ["incomplete timeout@2000"], words


def test_an_unscored_short_answer_that_ends_a_sentence_ends_at_the_sentence_end_timeout() -> None:
    # Too short for the model (min_speech_ms): the silence timeout, or sooner on "Yes."
    settings = EndOfTurnSettings(sentence_end_timeout_ms=300)
    state = eot.unscored(eot.paused(eot.EndOfTurnState(), 1000), "short")
    state = eot.heard(state, "Yes.", 1000)
    state, end = eot.decide(state, 1299, settings)
    assert end is None
    _, end = eot.decide(state, 1300, settings)
    assert end is not None
    assert (end.reason, end.model) == ("sentence end", "short")


def test_the_sentence_end_timeout_never_undercuts_a_complete_verdict() -> None:
    with pytest.raises(ConfigError, match="sentence_end_timeout_ms"):
        EndOfTurnSettings(pause_ms=200, sentence_end_timeout_ms=150)


def test_a_model_that_has_not_answered_falls_back_to_the_vad_rule() -> None:
    events = [("pause", 1200, 1000), ("tick", 1480, None), ("tick", 1500, None)]
    assert run(events, MODEL) == ["silence timeout@1500"]


def test_a_trailing_hold_word_outweighs_a_complete_score() -> None:
    events = [("pause", 1200, 1000), ("score", 1260, 0.97), ("words", 1300, "my balance and")]
    events += [("tick", 2000, None), ("tick", 2980, None), ("tick", 3000, None)]
    assert run(events, MODEL) == ["hesitation timeout@3000"]


def test_filler_and_trailing_ellipsis_hold_too() -> None:
    assert eot.ends_on_hold_word("I want, um", MODEL)
    assert eot.ends_on_hold_word("I lost my card...", MODEL)
    assert not eot.ends_on_hold_word("I lost my card.", MODEL)


def test_speech_resuming_in_a_pause_continues_the_turn() -> None:
    events = [("pause", 1200, 1000), ("resume", 1300, None), ("tick", 2500, None)]
    assert run(events, MODEL) == ["swallowed@1300"]
    assert run([("resume", 100, None)], MODEL) == ["started@100"]


def test_a_score_or_transcript_for_an_older_pause_is_ignored() -> None:
    state = eot.paused(eot.EndOfTurnState(), 2000)
    assert eot.scored(state, 1000, 0.99, 2300) == state
    assert eot.heard(state, "front", 1900) == state


def test_a_verdict_asked_early_ends_the_turn_only_once_pause_ms_of_silence_passed() -> None:
    # The VAD reports the pause after ask_after_ms (60) of silence; the model and the words
    # are in 90 ms later, 150 ms after the speech: the turn ends at pause_ms (160), not before.
    events = [("pause", 1060, 1000), ("score", 1130, 0.93), ("words", 1150, "front center")]
    events += [("tick", 1160, None)]
    assert run(events, MODEL) == ["model@1160"]


def test_ask_after_ms_must_come_no_later_than_the_pause() -> None:
    with pytest.raises(ConfigError, match="ask_after_ms"):
        EndOfTurnSettings(pause_ms=200, ask_after_ms=250)
    with pytest.raises(ConfigError, match="ask_after_ms"):
        EndOfTurnSettings(ask_after_ms=10)
