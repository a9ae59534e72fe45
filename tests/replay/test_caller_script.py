"""The caller script's shortcuts give what the plain computation gives, frame by frame."""

from __future__ import annotations

import numpy as np
import pytest

from voicegate.callers.script import CallerScript, Cue, EncodedScript
from voicegate.callers.telephone import encode
from voicegate.types import AudioEncoding

RATE = 8000
FRAME_MS = 20


def _script() -> CallerScript:
    rng = np.random.default_rng(7)
    noise = rng.integers(-12000, 12000, size=RATE // 2 + 37, dtype=np.int16)
    quiet = np.zeros(RATE // 10, dtype=np.int16)
    cues = [
        Cue(noise, at_ms=100, label="fixed"),
        Cue(noise[:999], after_bot_speech=1, delay_ms=30, label="relative"),
        Cue(quiet, at_ms=900, label="zeros"),
    ]
    return CallerScript(cues, RATE, tail_ms=200)


@pytest.mark.parametrize("encoding", list(AudioEncoding))
def test_encoded_frames_are_the_encoded_samples(encoding: AudioEncoding) -> None:
    script = _script()
    frames = EncodedScript(script, lambda samples: encode(samples, encoding), FRAME_MS)
    bot_started: list[int] = []
    for now_ms in range(0, 2000, FRAME_MS):
        if now_ms == 300:
            bot_started.append(now_ms)  # the relative cue starts at 330 ms
        expected = encode(script.frame(now_ms, FRAME_MS, bot_started), encoding)
        assert frames.frame(now_ms, bot_started) == expected, now_ms


def test_finished_only_after_every_cue_and_the_tail() -> None:
    script = _script()
    ends = []
    for bot_started in ([], [300], [1500]):
        done = [ms for ms in range(3000) if script.finished(ms, bot_started, 10_000)]
        ends.append(done[0] if done else None)
    # fixed cues end at 100 + 567 and 900 + 100 ms; the relative one at start + 124 ms
    assert ends == [None, 1000 + 200, 1530 + 124 + 200]
    assert script.finished(0, [], deadline_ms=0)
