"""The detector state machine: every transition, exact timestamps, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.vad.vad_kit import VERDICT_CODES, run_machine
from voicegate.vad import MachineState, Phase, SpeechEnded, SpeechStarted, VadSettings, Verdict
from voicegate.vad.machine import TRANSITIONS, Step, finish, step

SET = VadSettings(frame_ms=20, start_ms=60, stop_ms=100, onset_lookback_ms=300)
QUIET = MachineState()
SILENCE, SOUND, MAYBE, SPEECH = Verdict.SILENCE, Verdict.SOUND, Verdict.MAYBE, Verdict.SPEECH


def starting(run_start: int, speech_ms: int = 0) -> MachineState:
    return MachineState(Phase.STARTING, run_start_ms=run_start, speech_ms=speech_ms)


def speaking(onset: int) -> MachineState:
    return MachineState(Phase.SPEAKING, run_start_ms=onset)


def stopping(onset: int, silence_start: int) -> MachineState:
    return MachineState(Phase.STOPPING, run_start_ms=onset, silence_start_ms=silence_start)


# (state before, verdict, frame start ms, expected (state after, events)), one per table row.
ROWS: list[tuple[MachineState, Verdict, int, Step]] = [
    (QUIET, SILENCE, 40, (QUIET, ())),
    (QUIET, SOUND, 40, (starting(40), ())),
    (QUIET, MAYBE, 40, (starting(40), ())),
    (QUIET, SPEECH, 40, (starting(40, speech_ms=20), ())),
    (starting(40, 20), SILENCE, 60, (QUIET, ())),
    (starting(40, 20), SOUND, 60, (starting(40, 20), ())),
    (starting(40, 20), MAYBE, 60, (starting(40, 20), ())),
    (starting(40, 20), SPEECH, 60, (starting(40, 40), ())),
    (speaking(40), SILENCE, 200, (stopping(40, 200), ())),
    (speaking(40), SOUND, 200, (stopping(40, 200), ())),
    (speaking(40), MAYBE, 200, (speaking(40), ())),
    (speaking(40), SPEECH, 200, (speaking(40), ())),
    (stopping(40, 200), SILENCE, 240, (stopping(40, 200), ())),
    (stopping(40, 200), SOUND, 240, (stopping(40, 200), ())),
    (stopping(40, 200), MAYBE, 240, (speaking(40), ())),
    (stopping(40, 200), SPEECH, 240, (speaking(40), ())),
]


def test_the_table_has_one_row_per_phase_and_verdict() -> None:
    assert set(TRANSITIONS) == {(phase, verdict) for phase in Phase for verdict in Verdict}
    assert {(row[0].phase, row[1]) for row in ROWS} == set(TRANSITIONS)


@pytest.mark.parametrize(("before", "verdict", "start", "expected"), ROWS)
def test_every_transition(
    before: MachineState, verdict: Verdict, start: int, expected: Step
) -> None:
    assert step(before, verdict, start, SET) == expected


def test_enough_speech_confirms_with_the_onset_of_the_run() -> None:
    after, events = step(starting(40, speech_ms=40), SPEECH, 100, SET)
    assert after == speaking(40)
    assert events == (SpeechStarted(onset_ms=40, detected_ms=120),)


def test_enough_silence_ends_speech_where_the_silence_began() -> None:
    after, events = step(stopping(40, 200), SILENCE, 280, SET)
    assert after == QUIET
    assert events == (SpeechEnded(end_ms=200, detected_ms=300),)


def test_one_frame_confirms_at_once_when_start_fits_in_a_frame() -> None:
    short = VadSettings(frame_ms=20, start_ms=20, stop_ms=100)
    assert step(QUIET, SPEECH, 40, short) == (speaking(40), (SpeechStarted(40, 60),))


def test_one_frame_ends_at_once_when_stop_fits_in_a_frame() -> None:
    short = VadSettings(frame_ms=20, start_ms=60, stop_ms=20)
    assert step(speaking(0), SILENCE, 200, short) == (QUIET, (SpeechEnded(200, 220),))


def test_a_sequence_gives_exact_media_times() -> None:
    # frames: 0 1 2 3 4 5 6 7 8 9 10 11 (20 ms each)
    assert run_machine("..mmSSS.....", SET) == [
        (6, SpeechStarted(onset_ms=40, detected_ms=140)),
        (11, SpeechEnded(end_ms=140, detected_ms=240)),
    ]


def test_a_silent_frame_abandons_a_starting_run() -> None:
    assert run_machine("mS.SSS", SET) == [(5, SpeechStarted(onset_ms=60, detected_ms=120))]


def test_a_short_silence_does_not_end_speech() -> None:
    assert run_machine("SSS..SS.....", SET) == [
        (2, SpeechStarted(0, 60)),
        (11, SpeechEnded(end_ms=140, detected_ms=240)),
    ]


def test_maybe_frames_keep_speech_going() -> None:
    assert run_machine("SSS.mmmm.....", SET) == [
        (2, SpeechStarted(0, 60)),
        (12, SpeechEnded(end_ms=160, detected_ms=260)),
    ]


def test_speech_need_not_be_contiguous_within_a_run() -> None:
    assert run_machine("SmmSmS", SET) == [(5, SpeechStarted(0, 120))]


def test_the_onset_never_goes_further_back_than_the_lookback() -> None:
    events = run_machine("m" * 20 + "SSS", SET)
    assert events == [(22, SpeechStarted(onset_ms=160, detected_ms=460))]


def test_a_lookback_between_frames_rounds_up_to_whole_frames() -> None:
    odd = VadSettings(frame_ms=20, start_ms=40, stop_ms=100, onset_lookback_ms=50)
    assert run_machine("mmmmSS", odd) == [(5, SpeechStarted(onset_ms=60, detected_ms=120))]


def test_two_utterances_give_two_segments() -> None:
    assert run_machine("SSS.....mSSS.....", SET) == [
        (2, SpeechStarted(0, 60)),
        (7, SpeechEnded(60, 160)),
        (11, SpeechStarted(160, 240)),
        (16, SpeechEnded(240, 340)),
    ]


@pytest.mark.parametrize(
    ("state", "expected_events"),
    [
        (QUIET, ()),
        (starting(40, 40), ()),
        (speaking(40), (SpeechEnded(end_ms=500, detected_ms=500),)),
        (stopping(40, 460), (SpeechEnded(end_ms=460, detected_ms=500),)),
    ],
)
def test_finish_closes_open_speech(state: MachineState, expected_events: tuple[object]) -> None:
    assert finish(state, 500) == (QUIET, expected_events)


# --- properties over random verdict sequences -------------------------------------------


def _frames_for(ms: int, frame_ms: int) -> int:
    return -(-ms // frame_ms)


def _expected_onset(codes: str, k: int, begin: int, cfg: VadSettings) -> int:
    run_start = k  # a run starts after a silence frame, or right after the last end
    while run_start > begin and codes[run_start - 1] != ".":
        run_start -= 1
    lookback = _frames_for(cfg.onset_lookback_ms, cfg.frame_ms)
    return max(run_start, k - lookback + 1) * cfg.frame_ms


def _first_confirmation(codes: str, begin: int, cfg: VadSettings) -> int | None:
    speech = 0
    for k in range(begin, len(codes)):
        speech = 0 if codes[k] == "." else speech + (codes[k] == "S") * cfg.frame_ms
        if codes[k] == "S" and speech >= cfg.start_ms:
            return k
    return None


def _first_end(codes: str, begin: int, cfg: VadSettings) -> int | None:
    quiet = 0
    for k in range(begin, len(codes)):
        quiet = quiet + cfg.frame_ms if codes[k] in ".s" else 0  # sound is silence once speaking
        if quiet >= cfg.stop_ms:
            return k
    return None


def _spec_events(codes: str, cfg: VadSettings) -> list[tuple[int, object]]:
    """The behaviour the module docstring promises, written as a plain scan."""
    events: list[tuple[int, object]] = []
    begin = 0
    while (k := _first_confirmation(codes, begin, cfg)) is not None:
        detected = (k + 1) * cfg.frame_ms
        events.append((k, SpeechStarted(_expected_onset(codes, k, begin, cfg), detected)))
        end = _first_end(codes, k + 1, cfg)
        if end is None:
            break
        silence_frames = _frames_for(cfg.stop_ms, cfg.frame_ms)
        end_ms = (end - silence_frames + 1) * cfg.frame_ms
        events.append((end, SpeechEnded(end_ms, (end + 1) * cfg.frame_ms)))
        begin = end + 1
    return events


@settings(max_examples=300, deadline=None)
@given(
    codes=st.text(alphabet=".smS", max_size=80),
    frame_ms=st.sampled_from([10, 20, 30]),
    start_frames=st.integers(1, 5),
    stop_frames=st.integers(1, 8),
    extra_lookback=st.integers(0, 200),
)
def test_random_sequences_follow_the_documented_rules(
    codes: str, frame_ms: int, start_frames: int, stop_frames: int, extra_lookback: int
) -> None:
    cfg = VadSettings(
        frame_ms=frame_ms,
        start_ms=start_frames * frame_ms,
        stop_ms=stop_frames * frame_ms,
        onset_lookback_ms=start_frames * frame_ms + extra_lookback,
    )
    assert run_machine(codes, cfg) == _spec_events(codes, cfg)


def test_verdict_codes_cover_every_verdict() -> None:
    assert set(VERDICT_CODES.values()) == set(Verdict)
