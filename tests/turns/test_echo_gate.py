"""The echo gate, frame by frame (voicegate/turns/echo_gate.py)."""

from __future__ import annotations

import numpy as np

from voicegate.turns import echo_gate as gate
from voicegate.turns.settings import EchoGateSettings

ON = EchoGateSettings()  # margin 6 dB, evidence 40 ms


def feed(frames: list[tuple[int, bool, bool]], vad: dict[int, tuple[str, int]]) -> list[str]:
    """(start_ms, evident, echo possible) per frame; VAD events after the frame starting at t."""
    state = gate.EchoGateState()
    out: list[str] = []
    for start, evident, possible in frames:
        state, released = gate.frame(state, start, evident, possible, ON)
        if released is not None:
            out.append(f"start {released.onset_ms}@{start}")
        if start in vad:
            kind, at = vad[start]
            if kind == "start":
                state, began = gate.speech_started(state, at, ON)
                out += [] if began is None else [f"start {began.onset_ms}@{start}"]
            else:
                state, ended = gate.speech_ended(state, at)
                out += [] if ended is None else [f"end {ended.end_ms}@{start}"]
    return out


def test_without_bot_audio_the_gate_passes_speech_through() -> None:
    frames = [(t, True, False) for t in range(0, 400, 20)]
    assert feed(frames, {100: ("start", 40), 300: ("end", 260)}) == ["start 40@100", "end 260@300"]


def test_speech_the_echo_explains_is_dropped_with_its_end() -> None:
    frames = [(t, False, True) for t in range(0, 600, 20)]
    assert feed(frames, {100: ("start", 40), 500: ("end", 400)}) == []


def test_the_caller_over_the_echo_is_passed_on_from_the_first_evident_frame() -> None:
    frames = [(t, t >= 300, True) for t in range(0, 800, 20)]
    events = feed(frames, {100: ("start", 40), 700: ("end", 660)})
    assert events == ["start 300@320", "end 660@700"]  # 40 ms of evidence: frames 300, 320


def test_the_reference_dates_bot_audio_by_when_the_caller_plays_it() -> None:
    reference = gate.EchoReference(max_delay_ms=300)
    for _ in range(5):  # 100 ms released at once at t=1000 play until 1100
        reference.played(20, -20.0, 1000)
    assert reference.level_at(1080, 1100) == -20.0
    assert reference.level_at(1380, 1400) == -20.0  # 300 ms of echo path
    assert reference.level_at(1420, 1440) is None  # (asked in media-time order)
    cleared = gate.EchoReference(max_delay_ms=300)
    for _ in range(5):
        cleared.played(20, -20.0, 1000)
    cleared.flushed(1040)  # the provider dropped what it had not played by 1040
    assert cleared.level_at(1320, 1340) == -20.0
    assert cleared.level_at(1350, 1370) is None


def test_levels_in_dbfs() -> None:
    full = np.full(160, 32767, dtype=np.int16)
    assert round(gate.level_db(full)) == 0
    assert gate.level_db(np.zeros(160, dtype=np.int16)) == gate.SILENT_DB


def test_a_dc_offset_is_no_level() -> None:
    rng = np.random.default_rng(7)
    speech = rng.standard_normal(160) * 100
    assert gate.ac_level_db(np.full(160, 800, dtype=np.int16)) == gate.SILENT_DB
    assert (
        abs(
            gate.ac_level_db((speech + 800).astype(np.int16))
            - gate.ac_level_db(speech.astype(np.int16))
        )
        < 0.1
    )
    assert gate.ac_level_db(np.zeros(0, dtype=np.int16)) == gate.SILENT_DB


def test_levels_per_piece_are_each_pieces_level() -> None:
    rng = np.random.default_rng(7)
    samples = (rng.standard_normal(850) * np.repeat([8000, 0, 300, 20000, 50], 170)).astype(
        np.int16
    )
    pieces = [samples[i : i + 160] for i in range(0, 850, 160)]  # the last one 50 samples
    expected = [gate.level_db(piece) for piece in pieces]
    assert np.allclose(gate.levels_db(samples, 160), expected, atol=1e-4)
    assert gate.levels_db(np.zeros(320, dtype=np.int16), 160) == [gate.SILENT_DB] * 2


def test_the_margin_follows_the_echo_this_call_shows() -> None:
    settings = EchoGateSettings(margin_db=6.0, max_margin_db=45.0)
    weak, loud, silent = gate.EchoLoss(), gate.EchoLoss(), gate.EchoLoss()
    assert weak.margin(settings) == 6.0  # nothing measured yet: the configured start
    for t in range(0, 1400, 20):  # 0.5 s measured once LAG_MS has passed
        weak.observe(t, -40.0, -15.0)  # echo 25 dB down
        loud.observe(t, -20.0, -15.0)  # echo 5 dB down (a loud speakerphone)
        silent.observe(t, gate.SILENT_DB, -15.0)  # no echo at all
    assert weak.margin(settings) == 19.0  # 25 dB less the 6 dB of safety
    assert loud.margin(settings) == 6.0  # never below the configured margin
    assert silent.margin(settings) == 45.0  # at most max_margin_db


def test_a_frame_counts_as_echo_only_after_the_vads_delay() -> None:
    loss = gate.EchoLoss()
    for t in range(0, 1000, 20):
        loss.observe(t, gate.SILENT_DB, -15.0)
    margin = loss.margin(ON)
    for t in range(1000, 1000 + gate.EchoLoss.LAG_MS, 20):  # a quiet caller, not yet detected
        loss.observe(t, -55.0, -15.0)
    assert loss.margin(ON) == margin


def test_a_held_segment_is_echo_evidence_only_if_it_ends_as_echo() -> None:
    settings = EchoGateSettings(max_margin_db=45.0)
    caller, echo = gate.EchoLoss(), gate.EchoLoss()
    for loss in (caller, echo):
        for t in range(0, 2000, 20):
            loss.observe(t, gate.SILENT_DB, -15.0)
        loss.hold(1500)  # the VAD dated its onset late: frames from 1500 wait for the verdict
        for t in range(2000, 4000, 20):
            loss.observe(t, -45.0, -15.0)  # 30 dB under the bot
    assert caller.margin(settings) == echo.margin(settings) == 45.0
    caller.caller()
    echo.echo()
    for loss in (caller, echo):
        for t in range(4000, 4500, 20):
            loss.observe(t, gate.SILENT_DB, -15.0)
    assert caller.margin(settings) == 45.0  # the caller's frames were not echo
    assert echo.margin(settings) == 24.0  # they were: 30 dB less the 6 dB of safety


def test_evidence_is_counted_in_caller_frames_even_after_a_gap() -> None:
    # Frames with nothing to judge are not recorded (turns/tracker.py): the frame length
    # comes with each frame, not from the distance between the last two recorded ones.
    state = gate.EchoGateState()
    state, _ = gate.frame(state, 0, False, True, ON)
    state, _ = gate.frame(state, 100, True, True, ON)  # 80 ms later: one 20 ms evident frame
    state, began = gate.speech_started(state, 100, ON)
    assert began is None  # 20 ms of evidence, 40 needed
    state, began = gate.frame(state, 120, True, True, ON)
    assert began == gate.Start(100)


def test_the_tenth_percentile_is_numpys_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    for size in range(1, 151):
        gaps = list(rng.normal(20.0, 15.0, size))
        assert gate.tenth_percentile(gaps) == float(np.percentile(np.array(gaps), 10))
