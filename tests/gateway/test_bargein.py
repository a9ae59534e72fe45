"""The barge-in machine (design §5): every phase change and every policy knob."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from voicegate.gateway.bargein import (
    Action,
    AgentFirst,
    BargeInPolicy,
    BargeInState,
    CancelTurn,
    Candidate,
    Dtmf,
    Event,
    PausePlayout,
    Phase,
    PlayoutDrained,
    PlayoutStarted,
    ResumePlayout,
    SpeechEnded,
    SpeechStarted,
    StartTurn,
    Tick,
    Transcript,
    TurnEnded,
    count_words,
    needs_tick,
    step,
)

POLICY = BargeInPolicy(min_speech_ms=200, false_interruption_timeout_ms=1000)


def run(
    events: Iterable[Event],
    policy: BargeInPolicy = POLICY,
    state: BargeInState | None = None,
) -> tuple[BargeInState, list[Action]]:
    """Feed events in order; return the final state and every action emitted."""
    state = state or BargeInState()
    actions: list[Action] = []
    for event in events:
        state, emitted = step(state, event, policy)
        actions.extend(emitted)
    return state, actions


def caller_turn(text: str = "check my balance", at: int = 0) -> list[Event]:
    """A caller utterance from ``at`` ms that ends with a final transcript."""
    return [
        SpeechStarted(now_ms=at + 60, onset_ms=at),
        SpeechEnded(now_ms=at + 900),
        Transcript(now_ms=at + 950, text=text, final=True),
    ]


def speaking_bot() -> BargeInState:
    """A bot that is playing interruptible audio while its turn is still running."""
    state, _ = run([*caller_turn(), PlayoutStarted(now_ms=1200)])
    assert state.phase is Phase.BOT_SPEAKING
    return state


def test_final_transcript_after_speech_starts_a_turn() -> None:
    state, actions = run(caller_turn("check my balance"))
    assert actions == [StartTurn(text="check my balance")]
    assert state.phase is Phase.BOT_THINKING
    assert state.turn_running


def test_final_transcript_while_still_speaking_waits_for_end_of_speech() -> None:
    events: list[Event] = [
        SpeechStarted(now_ms=60, onset_ms=0),
        Transcript(now_ms=500, text="check my", final=True),
    ]
    state, actions = run(events)
    assert actions == []
    state, actions = run([SpeechEnded(now_ms=900)], state=state)
    assert actions == [StartTurn(text="check my")]


def test_interim_transcripts_never_start_a_turn() -> None:
    events: list[Event] = [
        SpeechStarted(now_ms=60, onset_ms=0),
        Transcript(now_ms=300, text="check", final=False),
        SpeechEnded(now_ms=900),
    ]
    assert run(events)[1] == []


def test_turn_end_returns_to_idle_and_playout_moves_through_speaking() -> None:
    state, _ = run(caller_turn())
    state, _ = run([PlayoutStarted(now_ms=1100)], state=state)
    assert state.phase is Phase.BOT_SPEAKING
    state, _ = run([TurnEnded(now_ms=1200)], state=state)
    assert state.phase is Phase.BOT_SPEAKING
    state, _ = run([PlayoutDrained(now_ms=3000)], state=state)
    assert state.phase is Phase.IDLE


def test_audio_after_turn_end_still_counts_as_bot_speaking() -> None:
    state, _ = run([*caller_turn(), TurnEnded(now_ms=1000), PlayoutStarted(now_ms=1100)])
    assert state.phase is Phase.BOT_SPEAKING


def test_speech_while_thinking_is_confirmed_after_min_speech() -> None:
    state, _ = run(caller_turn())
    state, actions = run(
        [SpeechStarted(now_ms=1560, onset_ms=1500), Tick(now_ms=1680)], state=state
    )
    assert actions == []
    state, actions = run([Tick(now_ms=1700)], state=state)
    assert actions == [
        CancelTurn(epoch=1, onset_ms=1500, confirmed_ms=1700, reason="caller speech")
    ]
    assert state.phase is Phase.USER_SPEAKING
    assert state.epoch == 1
    assert not state.turn_running


def test_the_interrupting_utterance_starts_the_next_turn() -> None:
    state, _ = run(caller_turn())
    state, actions = run(
        [
            SpeechStarted(now_ms=1560, onset_ms=1500),
            Tick(now_ms=1800),
            SpeechEnded(now_ms=2300),
            Transcript(now_ms=2400, text="actually no", final=True),
        ],
        state=state,
    )
    assert [type(a) for a in actions] == [CancelTurn, StartTurn]
    assert actions[-1] == StartTurn(text="actually no")
    assert state.phase is Phase.BOT_THINKING


def test_thinking_interruptions_can_be_disabled() -> None:
    policy = BargeInPolicy(interrupt_while_thinking=False)
    state, _ = run(caller_turn(), policy)
    _, actions = run([SpeechStarted(now_ms=1560, onset_ms=1500), Tick(now_ms=3000)], policy, state)
    assert actions == []


def test_speech_while_speaking_pauses_then_confirms() -> None:
    state, actions = run([SpeechStarted(now_ms=2060, onset_ms=2000)], state=speaking_bot())
    assert actions == [PausePlayout(flush=True)]
    assert state.phase is Phase.PAUSED
    state, actions = run([Tick(now_ms=2200)], state=state)
    assert actions == [
        CancelTurn(epoch=1, onset_ms=2000, confirmed_ms=2200, reason="caller speech")
    ]
    assert not state.playing


def test_short_blip_while_speaking_resumes_playout_at_once() -> None:
    state, _ = run([SpeechStarted(now_ms=2060, onset_ms=2000)], state=speaking_bot())
    state, actions = run([SpeechEnded(now_ms=2120)], state=state)
    assert actions == [ResumePlayout()]
    assert state.phase is Phase.BOT_SPEAKING
    assert state.candidate is None


def test_speech_short_of_words_resumes_after_false_interruption_timeout() -> None:
    policy = BargeInPolicy(min_speech_ms=200, min_words=2, false_interruption_timeout_ms=1000)
    state, _ = run([SpeechStarted(now_ms=2060, onset_ms=2000)], policy, speaking_bot())
    state, actions = run(
        [SpeechEnded(now_ms=2500), Transcript(now_ms=2600, text="yeah", final=True)], policy, state
    )
    assert actions == []
    assert state.phase is Phase.PAUSED
    state, actions = run([Tick(now_ms=3499)], policy, state)
    assert actions == []
    state, actions = run([Tick(now_ms=3500)], policy, state)
    assert actions == [ResumePlayout()]
    assert state.phase is Phase.BOT_SPEAKING
    assert state.pending_text == ()


def test_late_transcript_with_enough_words_confirms() -> None:
    policy = BargeInPolicy(min_speech_ms=200, min_words=2)
    state, _ = run([SpeechStarted(now_ms=2060, onset_ms=2000)], policy, speaking_bot())
    state, actions = run([SpeechEnded(now_ms=2500), Tick(now_ms=2600)], policy, state)
    assert actions == []
    _, actions = run([Transcript(now_ms=2700, text="stop right there", final=True)], policy, state)
    assert [type(a) for a in actions] == [CancelTurn, StartTurn]
    assert actions[-1] == StartTurn(text="stop right there")


@pytest.mark.parametrize("text", ["uh-huh", "yeah okay", "mhm, right."])
def test_backchannels_never_interrupt(text: str) -> None:
    policy = BargeInPolicy(min_speech_ms=200, min_words=1)
    state, _ = run([SpeechStarted(now_ms=2060, onset_ms=2000)], policy, speaking_bot())
    _, actions = run(
        [Transcript(now_ms=2300, text=text, final=False), Tick(now_ms=2400)], policy, state
    )
    assert actions == []


def test_word_counting_ignores_backchannels_and_punctuation() -> None:
    assert count_words("Yeah, no. Stop!", POLICY) == 2
    assert count_words("", POLICY) == 0


def test_uninterruptible_audio_is_not_interrupted() -> None:
    state, _ = run([*caller_turn(), PlayoutStarted(now_ms=1200, interruptible=False)])
    state, actions = run(
        [SpeechStarted(now_ms=1560, onset_ms=1500), Tick(now_ms=5000)], state=state
    )
    assert actions == []
    assert state.phase is Phase.BOT_SPEAKING


def test_speaking_interruptions_can_be_disabled() -> None:
    policy = BargeInPolicy(interrupt_while_speaking=False)
    state, _ = run([*caller_turn(), PlayoutStarted(now_ms=1200)], policy)
    _, actions = run([SpeechStarted(now_ms=1560, onset_ms=1500), Tick(now_ms=5000)], policy, state)
    assert actions == []


def test_echo_guard_needs_more_speech_right_after_bot_audio_starts() -> None:
    policy = BargeInPolicy(min_speech_ms=200, echo_guard_ms=300)
    state, _ = run([*caller_turn(), PlayoutStarted(now_ms=1200)], policy)
    state, _ = run([SpeechStarted(now_ms=1300, onset_ms=1250), Tick(now_ms=1450)], policy, state)
    assert state.phase is Phase.PAUSED
    _, actions = run([Tick(now_ms=1749)], policy, state)
    assert actions == []
    _, actions = run([Tick(now_ms=1750)], policy, state)
    assert [type(a) for a in actions] == [CancelTurn]


def test_playout_that_starts_while_the_caller_talks_is_paused() -> None:
    state, _ = run([*caller_turn(), SpeechStarted(now_ms=1060, onset_ms=1000)])
    state, actions = run([PlayoutStarted(now_ms=1100)], state=state)
    assert actions == [PausePlayout(flush=True)]
    assert state.phase is Phase.PAUSED


def test_a_second_burst_keeps_the_first_onset() -> None:
    policy = BargeInPolicy(min_speech_ms=200, min_words=1)
    state, _ = run([SpeechStarted(now_ms=2060, onset_ms=2000)], policy, speaking_bot())
    state, actions = run(
        [SpeechEnded(now_ms=2300), SpeechStarted(now_ms=2460, onset_ms=2400)], policy, state
    )
    assert actions == []
    assert state.phase is Phase.PAUSED
    _, actions = run([Transcript(now_ms=2500, text="stop now", final=False)], policy, state)
    assert actions == [
        CancelTurn(epoch=1, onset_ms=2000, confirmed_ms=2500, reason="caller speech")
    ]


def test_dtmf_while_idle_starts_a_turn() -> None:
    state, actions = run([Dtmf(now_ms=100, digits="5")])
    assert actions == [StartTurn(dtmf="5")]
    assert state.phase is Phase.BOT_THINKING


def test_an_agent_that_speaks_first_starts_the_calls_first_turn() -> None:
    state, actions = run([AgentFirst(now_ms=0, text="/session_start")])
    assert actions == [StartTurn(text="/session_start")]
    assert state.phase is Phase.BOT_THINKING
    assert state.turn_running
    # The greeting is a turn like any other: the caller can talk over it.
    state, actions = run([PlayoutStarted(now_ms=300), *caller_turn(at=500)], state=state)
    assert isinstance(actions[1], CancelTurn)
    assert actions[-1] == StartTurn(text="check my balance")


def test_a_caller_who_talks_first_keeps_the_floor() -> None:
    talking, _ = run([SpeechStarted(now_ms=60, onset_ms=0)])
    state, actions = run([AgentFirst(now_ms=80, text="/session_start")], state=talking)
    assert actions == []
    assert state == talking


def test_dtmf_while_speaking_interrupts_and_starts_a_turn() -> None:
    state, actions = run([Dtmf(now_ms=2000, digits="#")], state=speaking_bot())
    assert actions == [
        CancelTurn(epoch=1, onset_ms=2000, confirmed_ms=2000, reason="dtmf"),
        StartTurn(dtmf="#"),
    ]
    assert state.phase is Phase.BOT_THINKING
    assert state.epoch == 1


def test_epoch_counts_every_confirmed_interruption() -> None:
    state = speaking_bot()
    for n in (1, 2):
        state, _ = run(
            [Dtmf(now_ms=2000 * n, digits="1"), PlayoutStarted(now_ms=2000 * n + 1)], state=state
        )
        assert state.epoch == n


def test_noise_after_turn_end_and_drain_is_just_the_caller_speaking() -> None:
    state, _ = run([*caller_turn(), TurnEnded(now_ms=1000)])
    assert state.phase is Phase.IDLE
    state, actions = run(
        [SpeechStarted(now_ms=1560, onset_ms=1500), Tick(now_ms=3000)], state=state
    )
    assert actions == []
    assert state.phase is Phase.USER_SPEAKING


@pytest.mark.parametrize("phase", list(Phase))
@pytest.mark.parametrize("candidate", [None, Candidate(onset_ms=100)])
@pytest.mark.parametrize("playing", [False, True])
def test_a_tick_the_session_skips_would_have_changed_nothing(
    phase: Phase, candidate: Candidate | None, playing: bool
) -> None:
    state = BargeInState(phase=phase, candidate=candidate, playing=playing, turn_running=True)
    for now in (120, 400, 5000):
        if not needs_tick(state):
            assert step(state, Tick(now), POLICY) == (state, [])
