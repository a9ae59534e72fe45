"""One call's turn tracker: VAD events in, what the call sees out (voicegate/turns/tracker.py)."""

from __future__ import annotations

from concurrent.futures import Future

import numpy as np
import pytest

from voicegate.audio.g711 import samples_to_ulaw_bytes
from voicegate.audio.pcm import Samples
from voicegate.errors import AudioFormatError
from voicegate.turns.settings import EchoGateSettings, EndOfTurnSettings, TurnSettings
from voicegate.turns.tracker import TurnTracker, Voice
from voicegate.types import AudioEncoding, AudioFormat

WIRE = AudioFormat(AudioEncoding.PCMU, 8000)
QUIET = np.zeros(320, dtype=np.int16)
LOUD = (np.sin(np.arange(320) * 0.3) * 8000).astype(np.int16)


class FakeModel:
    """Answers every pause with a fixed probability (at once, unless ``slow``); or is busy."""

    def __init__(self, probability: float, *, slow: bool = False, busy: bool = False) -> None:
        self.probability = probability
        self.asked: list[int] = []
        self.futures: list[Future[float]] = []
        self._slow = slow
        self._busy = busy

    def submit(self, samples: Samples, sample_rate: int) -> Future[float] | None:
        if self._busy:
            return None
        self.asked.append(len(samples))
        future: Future[float] = Future()
        if not self._slow:
            future.set_result(self.probability)
        self.futures.append(future)
        return future


def tracker(
    model: FakeModel | None, *, gate: bool = False, reports: list[dict[str, object]] | None = None
) -> tuple[TurnTracker, list[int]]:
    pauses: list[int] = []
    settings = TurnSettings(
        EndOfTurnSettings(model="smart-turn" if model else "none"), EchoGateSettings(enabled=gate)
    )

    def report(t_ms: int, event: str, **fields: object) -> None:
        if reports is not None:
            reports.append({"t_ms": t_ms, "event": event, **fields})

    made = TurnTracker(
        settings, model, sample_rate=16000, wire=WIRE, on_pause=pauses.append, report=report
    )
    return made, pauses


def released(turns: TurnTracker, start: int, stop: int) -> list[tuple[int, Voice]]:
    """Push quiet frames from ``start`` to ``stop`` ms; when each speech event came out."""
    return [(t, v) for t in range(start, stop, 20) for v in turns.push(QUIET, t, [])]


def paused_after(text: str) -> tuple[TurnTracker, list[dict[str, object]]]:
    """A tracker whose model scores every turn complete, held in a pause after 800 ms of
    speech that was heard as ``text``; and its end-of-turn reports."""
    reports: list[dict[str, object]] = []
    turns, _ = tracker(FakeModel(0.9), reports=reports)
    turns.push(LOUD, 20, [Voice(True, 0)])
    turns.push(QUIET, 860, [Voice(False, 800)])
    turns.transcript(text, 860)
    return turns, reports


def test_a_short_utterance_is_not_scored_and_the_silence_timeout_ends_it() -> None:
    model, reports = FakeModel(0.9), []
    turns, pauses = tracker(model, reports=reports)
    turns.push(LOUD, 20, [Voice(True, 0)])
    assert turns.push(QUIET, 500, [Voice(False, 300)]) == []  # 300 ms of speech: "yes"
    assert model.asked == []
    assert pauses == [300]
    assert released(turns, 520, 900) == [(800, Voice(False, 300))]  # 500 ms of silence
    assert reports[-1]["reason"] == "silence timeout"
    assert reports[-1]["model"] == "short"


def test_a_busy_model_sheds_the_pause_to_the_silence_timeout() -> None:
    reports: list[dict[str, object]] = []
    turns, _ = tracker(FakeModel(0.9, busy=True), reports=reports)
    turns.push(LOUD, 20, [Voice(True, 0)])
    turns.push(QUIET, 1000, [Voice(False, 800)])
    assert released(turns, 1020, 1400) == [(1300, Voice(False, 800))]
    assert reports[-1]["model"] == "shed"
    assert reports[-1]["reason"] == "silence timeout"


def test_a_hold_word_cancels_an_inference_that_has_not_run() -> None:
    model, reports = FakeModel(0.9, slow=True), []
    turns, _ = tracker(model, reports=reports)
    turns.push(LOUD, 20, [Voice(True, 0)])
    turns.push(QUIET, 1000, [Voice(False, 800)])
    turns.transcript("check my balance and", 1000)  # the pause's words decide: no model needed
    assert model.futures[0].cancelled()
    assert released(turns, 1020, 3000) == [(2800, Voice(False, 800))]
    assert reports[-1]["reason"] == "hesitation timeout"
    assert reports[-1]["model"] == "hold word"


def test_speech_that_resumes_cancels_its_pauses_inference_once() -> None:
    model = FakeModel(0.9, slow=True)
    turns, _ = tracker(model)
    turns.push(LOUD, 20, [Voice(True, 0)])
    turns.push(QUIET, 1000, [Voice(False, 800)])
    turns.push(LOUD, 1100, [Voice(True, 1060)])
    assert model.futures[0].cancelled()
    assert len(model.asked) == 1


def test_a_turn_the_silence_timeout_ends_cancels_its_waiting_inference() -> None:
    model, reports = FakeModel(0.9, slow=True), []  # queued behind other calls' pauses
    turns, _ = tracker(model, reports=reports)
    turns.push(LOUD, 20, [Voice(True, 0)])
    turns.push(QUIET, 1000, [Voice(False, 800)])
    assert released(turns, 1020, 1400) == [(1300, Voice(False, 800))]
    assert reports[-1]["model"] == "asked"
    assert model.futures[0].cancelled()  # never run: the turn it was for is over


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


def test_a_complete_pause_waits_while_the_vad_hears_the_caller_going_on() -> None:
    # "Side ... left": the model scores "side" complete, but when the pause reaches pause_ms
    # the VAD already hears the next word, and confirms its start three frames later. The
    # turn is not answered into that word: the start is swallowed, one utterance goes on.
    turns, reports = paused_after("side")
    assert released(turns, 880, 960) == []  # less than pause_ms (160) of silence
    going_on = [v for t in range(960, 1060, 20) for v in turns.push(LOUD, t, [], hearing=True)]
    assert going_on == []
    assert turns.push(LOUD, 1060, [Voice(True, 960)], hearing=True) == []
    assert reports == []  # no end of turn was decided
    assert turns.push(QUIET, 1760, [Voice(False, 1700)]) == []
    turns.transcript("side left", 1760)
    assert released(turns, 1780, 2000) == [(1860, Voice(False, 1700))]


def test_a_voice_the_vad_never_confirms_holds_the_turn_only_to_the_silence_timeout() -> None:
    # Line noise Silero half believes, frame after frame: the fallback still ends the turn.
    turns, reports = paused_after("check my balance")
    ended = [(t, v) for t in range(880, 1400, 20) for v in turns.push(QUIET, t, [], hearing=True)]
    assert ended == [(1300, Voice(False, 800))]  # silence_timeout_ms (500) after the speech
    assert reports[-1]["reason"] == "model"


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


def test_a_loud_syllable_in_a_long_playout_chunk_is_its_own_echo_reference() -> None:
    # 100 ms chunks, each a 20 ms syllable then 80 ms of pause: the chunk's average is 7 dB
    # under the syllable, and the syllable's echo at -10 dB (under the 6 dB margin from the
    # syllable itself) passed for the caller against it.
    turns, _ = tracker(None, gate=True)
    syllable = (np.sin(np.arange(160) * 0.3) * 16000).astype(np.int16)
    chunk = samples_to_ulaw_bytes(np.concatenate([syllable, np.zeros(640, dtype=np.int16)]))
    echo = (LOUD * 2 * 10 ** (-10 / 20)).astype(np.int16)  # the syllable, 10 dB down
    seen = []
    for t in range(20, 1520, 20):
        if t % 100 == 20:
            turns.played(chunk, t)
        voices = [Voice(True, t - 60)] if t == 300 else []
        seen += turns.push(echo, t, voices)
    assert seen == []


def test_the_bots_echo_never_reaches_the_model() -> None:
    model = FakeModel(0.9)
    turns, pauses = tracker(model, gate=True)
    bot = samples_to_ulaw_bytes((np.sin(np.arange(160) * 0.3) * 16000).astype(np.int16))
    echo = (LOUD * 0.1).astype(np.int16)  # -20 dB: explained by the bot's audio
    seen = []
    for t in range(20, 1520, 20):
        turns.played(bot, t)
        voices = {200: [Voice(True, 140)], 1200: [Voice(False, 1000)]}.get(t, [])
        seen += turns.push(echo, t, voices)
    assert seen == []
    assert model.asked == []
    assert pauses == []


def test_the_bots_echo_in_a_held_pause_does_not_hold_the_turn() -> None:
    # The bot talks on (an utterance the caller's "uh-huh" did not interrupt) while the
    # caller pauses; its echo is what the VAD half hears: the pause ends at pause_ms, as it
    # would without the wait, not at the silence timeout.
    model = FakeModel(0.9)
    turns, _ = tracker(model, gate=True)
    turns.push(LOUD * 2, 20, [Voice(True, 0)])
    for t in range(40, 820, 20):
        turns.push(LOUD * 2, t, [])
    turns.push(QUIET, 860, [Voice(False, 800)])
    turns.transcript("check my balance", 860)
    bot = samples_to_ulaw_bytes((np.sin(np.arange(160) * 0.3) * 16000).astype(np.int16))
    echo = (LOUD * 0.1).astype(np.int16)  # -20 dB: explained by the bot's audio
    ended = []
    for t in range(880, 1400, 20):
        turns.played(bot, t)
        ended += [(t, v) for v in turns.push(echo, t, [], hearing=True)]
    assert ended == [(960, Voice(False, 800))]


def test_without_the_echo_gate_the_bots_audio_is_not_looked_at() -> None:
    # Every bot chunk released was decoded and kept for a gate that never read (or trimmed) it.
    pcm = AudioFormat(AudioEncoding.L16, 8000)
    gated = TurnTracker(
        TurnSettings(echo_gate=EchoGateSettings(enabled=True)), None, sample_rate=8000, wire=pcm
    )
    with pytest.raises(AudioFormatError):
        gated.played(b"\x00\x01\x02", 20)  # an odd PCM16 payload: it is decoded
    ungated = TurnTracker(
        TurnSettings(echo_gate=EchoGateSettings(enabled=False)), None, sample_rate=8000, wire=pcm
    )
    ungated.played(b"\x00\x01\x02", 20)
