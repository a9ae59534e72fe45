"""Helpers for replay tests: reading what ``voicegate replay`` wrote."""

from __future__ import annotations

import json
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[2]
AUDIO = ROOT / "fixtures" / "audio"
WIRE = ROOT / "fixtures" / "wire"
CALLS = ROOT / "fixtures" / "calls"


@dataclass(frozen=True)
class CallWav:
    """A stereo call recording split into its channels."""

    channels: int
    sample_rate: int
    caller: npt.NDArray[np.int16]
    bot: npt.NDArray[np.int16]


def read_call_wav(path: Path) -> CallWav:
    """call.wav as written by the replay (must be 16-bit)."""
    with wave.open(str(path), "rb") as reader:
        assert reader.getsampwidth() == 2
        channels, rate = reader.getnchannels(), reader.getframerate()
        data = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2")
    frames = data.reshape(-1, channels)
    return CallWav(channels, rate, frames[:, 0].astype(np.int16), frames[:, -1].astype(np.int16))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One JSON object per line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def events(records: list[dict[str, Any]]) -> list[str]:
    """The event names, in order."""
    return [r["event"] for r in records]


def loud_ms(samples: npt.NDArray[np.int16], sample_rate: int, threshold: int = 500) -> int:
    """How many 20 ms frames of ``samples`` hold sound above ``threshold``, in ms."""
    frame = sample_rate // 50
    usable = len(samples) // frame * frame
    peaks = np.abs(samples[:usable].astype(np.int32)).reshape(-1, frame).max(axis=1)
    return int((peaks > threshold).sum()) * 20
