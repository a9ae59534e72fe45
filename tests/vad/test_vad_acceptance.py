"""Issue 2 acceptance: `voicegate vad` finds exactly one segment in every human recording,
starting within 60 ms of its labelled onset, and none in the noise recordings.

The onsets were labelled once from the waveform (fixtures/audio/README.md), not from this VAD.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.vad.vad_kit import FIXTURES, HUMAN, NOISE_FILES, OnsetLabel, onset_labels
from voicegate.cli.main import main

ONSET_TOLERANCE_MS = 60
LABELS = onset_labels()


def vad_json(path: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, int]]:
    assert main(["vad", str(FIXTURES / path), "--json"]) == 0
    out = capsys.readouterr().out
    document = json.loads(out)
    assert list(document) == ["segments"]
    return list(document["segments"])


def test_every_human_recording_is_labelled() -> None:
    recordings = {
        str(path.relative_to(FIXTURES))
        for path in HUMAN.rglob("*.wav")
        if not path.name.startswith("Noise_")
    }
    assert {label.path for label in LABELS} == recordings
    assert len(recordings) == 45
    assert any(path.endswith("_8k.wav") for path in recordings)
    assert any(path.startswith("human/asterisk/") for path in recordings)  # 8 kHz originals


@pytest.mark.parametrize("label", LABELS, ids=[label.path for label in LABELS])
def test_one_segment_starting_at_the_labelled_onset(
    label: OnsetLabel, capsys: pytest.CaptureFixture[str]
) -> None:
    segments = vad_json(label.path, capsys)
    assert len(segments) == 1, segments
    (segment,) = segments
    assert set(segment) == {"start_ms", "end_ms"}
    assert abs(segment["start_ms"] - label.onset_ms) <= ONSET_TOLERANCE_MS, segment
    # The one segment spans the utterance rather than just its first sound.
    assert segment["end_ms"] > (label.onset_ms + label.offset_ms) // 2, segment


@pytest.mark.parametrize("path", NOISE_FILES)
def test_no_segment_in_noise(path: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert vad_json(path, capsys) == []


def test_the_console_command_prints_only_the_json() -> None:
    label = next(label for label in LABELS if label.path.endswith("digit-7.wav"))
    result = subprocess.run(
        [sys.executable, "-m", "voicegate", "vad", str(FIXTURES / label.path), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    document = json.loads(result.stdout)
    assert result.stdout == json.dumps(document) + "\n"
    (segment,) = document["segments"]
    assert abs(segment["start_ms"] - label.onset_ms) <= ONSET_TOLERANCE_MS
