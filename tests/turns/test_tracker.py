"""One call's turn tracker: VAD events in, what the call sees out (voicegate/turns/tracker.py)."""

from __future__ import annotations

from concurrent.futures import Future

import numpy as np

from voicegate.audio.g711 import samples_to_ulaw_bytes
from voicegate.audio.pcm import Samples
from voicegate.turns.settings import EchoGateSettings, EndOfTurnSettings, TurnSettings
from voicegate.turns.tracker import TurnTracker, Voice
from voicegate.types import AudioEncoding, AudioFormat

WIRE = AudioFormat(AudioEncoding.PCMU, 8000)
QUIET = np.zeros(320, dtype=np.int16)
LOUD = (np.sin(np.arange(320) * 0.3) * 8000).astype(np.int16)


class FakeModel:
    """Answers every pause with a fixed probability, at once; keeps what it was asked."""

    def __init__(self, probability: float) -> None:
        self.probability = probability
        self.asked: list[int] = []

    def submit(self, samples: Samples, sample_rate: int) -> Future[float]:
        self.asked.append(len(samples))
        future: Future[float] = Future()
        future.set_result(self.probability)
        return future


def tracker(model: FakeModel | None, *, gate: bool = False) -> tuple[TurnTracker, list[int]]:
    pauses: list[int] = []
    settings = TurnSettings(
        EndOfTurnSettings(model="smart-turn" if model else "none"), EchoGateSettings(enabled=gate)
    )
    made = TurnTracker(settings, model, sample_rate=16000, wire=WIRE, on_pause=pauses.append)
    return made, pauses


def test_a_complete_pause_ends_the_turn_once_the_transcript_is_in() -> None:
    model = FakeModel(0.9)
    turns, pauses = tracker(model)
    assert turns.push(LOUD, 20, [Voice(True, 0)]) == [Voice(True, 0)]
    assert turns.push(QUIET, 1000, [Voice(False, 800)]) == []  # the pause: held, scored
    assert pauses == [800]
    assert model.asked == [640]  # every frame from the onset (less pre-roll) to the pause
    turns.transcript("check my balance", 1000)
    assert turns.push(QUIET, 1020, []) == [Voice(False, 800)]


def test_speech_after_a_pause_is_the_same_turn() -> None:
    turns, _ = tracker(FakeModel(0.1))
    turns.push(LOUD, 20, [Voice(True, 0)])
    turns.push(QUIET, 1000, [Voice(False, 800)])
    assert turns.push(LOUD, 1100, [Voice(True, 1060)]) == []
    out = [turns.push(QUIET, t, []) for t in range(1120, 2400, 20)]
    assert [v for step in out for v in step] == []  # speech still going: nothing to release
    assert turns.push(QUIET, 2420, [Voice(False, 2200)]) == []
    released = [v for t in range(2440, 3300, 20) for v in turns.push(QUIET, t, [])]
    assert released == [Voice(False, 2200)]  # scored incomplete: 1000 ms after the end


def test_without_a_model_events_pass_straight_through() -> None:
    turns, pauses = tracker(None)
    assert turns.push(LOUD, 20, [Voice(True, 0)]) == [Voice(True, 0)]
    assert turns.push(QUIET, 600, [Voice(False, 100)]) == [Voice(False, 100)]
    assert pauses == []


def test_the_bots_echo_is_not_speech_but_the_caller_over_it_is() -> None:
    turns, _ = tracker(None, gate=True)
    bot = samples_to_ulaw_bytes((np.sin(np.arange(160) * 0.3) * 16000).astype(np.int16))
    echo = (LOUD * 0.1).astype(np.int16)  # -20 dB
    seen = []
    for t in range(20, 1020, 20):
        turns.played(bot, t)
        voices = [Voice(True, t - 60)] if t == 200 else []
        seen += turns.push(echo if t < 600 else LOUD * 2, t, voices)
    assert seen == [Voice(True, 580)]  # dated at the first frame louder than any echo
