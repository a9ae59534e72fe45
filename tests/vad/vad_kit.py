"""Shared helpers for the VAD tests: fixture paths, labels and synthetic frames."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voicegate.vad import MachineState, VadEvent, VadSettings, Verdict
from voicegate.vad.machine import step

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "audio"
HUMAN = FIXTURES / "human"
NOISE_FILES = ("human/alsa/Noise_8k.wav", "human/alsa/Noise_16k.wav")

VERDICT_CODES = {
    ".": Verdict.SILENCE,
    "s": Verdict.SOUND,
    "m": Verdict.MAYBE,
    "S": Verdict.SPEECH,
}


@dataclass(frozen=True)
class OnsetLabel:
    """One row of fixtures/audio/onsets.tsv."""

    path: str
    onset_ms: int
    offset_ms: int


def onset_labels() -> list[OnsetLabel]:
    """Every labelled human recording, in file order."""
    with (FIXTURES / "onsets.tsv").open(newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    return [OnsetLabel(r["path"], int(r["onset_ms"]), int(r["offset_ms"])) for r in rows]


def silence(sample_rate: int, frame_ms: int = 20) -> npt.NDArray[np.int16]:
    """One frame of digital silence."""
    return np.zeros(sample_rate * frame_ms // 1000, dtype=np.int16)


def white_noise(
    sample_rate: int, seconds: float, dbfs: float, seed: int = 1
) -> npt.NDArray[np.int16]:
    """Gaussian white noise at roughly ``dbfs`` RMS."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(0.0, 32768.0 * 10 ** (dbfs / 20), int(sample_rate * seconds))
    return np.clip(noise, -32768, 32767).astype(np.int16)


def run_machine(codes: str, settings: VadSettings) -> list[tuple[int, VadEvent]]:
    """Step the machine over verdict codes ('.', 'm', 'S'); (frame index, event) pairs."""
    state = MachineState()
    seen: list[tuple[int, VadEvent]] = []
    for index, code in enumerate(codes):
        state, events = step(state, VERDICT_CODES[code], index * settings.frame_ms, settings)
        seen.extend((index, event) for event in events)
    return seen
