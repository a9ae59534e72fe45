"""Shared helpers of the speech tests: labelled recordings, the phone path, feeding streams."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voicegate.audio.framing import Reframer
from voicegate.audio.g711 import samples_to_ulaw_bytes
from voicegate.audio.pcm import Samples
from voicegate.audio.resample import resample_all
from voicegate.audio.wav import read_wav
from voicegate.gateway.media import decode
from voicegate.speech.ports import SpeechToTextStream, TranscriptResult
from voicegate.types import AudioEncoding

AUDIO = Path(__file__).parents[2] / "fixtures" / "audio"
HUMAN = AUDIO / "human"
SESSION_RATE = 16000
PHONE_RATE = 8000
FRAME_MS = 20


@dataclass(frozen=True, slots=True)
class Recording:
    """A labelled speech file."""

    path: Path
    transcript: str


def human_recordings() -> list[Recording]:
    """Every real human speech recording under fixtures/audio/human, with its label.

    transcripts.tsv labels the 16 kHz version of the alsa files; their 8 kHz twins say the
    same words. The alsa ``Noise`` files hold no speech and have no label.
    """
    labels: dict[str, str] = {}
    with (AUDIO / "transcripts.tsv").open(encoding="utf-8") as table:
        for row in csv.DictReader(table, delimiter="\t"):
            if row["kind"] == "human":
                labels[row["path"]] = row["transcript"]
                labels[row["path"].replace("_16k.wav", "_8k.wav")] = row["transcript"]
    found = sorted(p.relative_to(AUDIO).as_posix() for p in HUMAN.rglob("*.wav"))
    speech = [name for name in found if "Noise_" not in name]
    missing = [name for name in speech if name not in labels]
    assert not missing, f"recordings without a label: {missing}"
    return [Recording(AUDIO / name, labels[name]) for name in speech]


def phone_payload(path: Path) -> bytes:
    """A recording as a caller's phone sends it: 8 kHz G.711 μ-law bytes."""
    audio = read_wav(path)
    samples = audio.samples
    if audio.sample_rate != PHONE_RATE:
        samples = resample_all(samples, audio.sample_rate, PHONE_RATE)
    return samples_to_ulaw_bytes(samples)


def session_frames(payload: bytes, rate: int = SESSION_RATE) -> list[Samples]:
    """μ-law bytes decoded and resampled as the session does, in 20 ms frames at ``rate``."""
    samples = decode(payload, AudioEncoding.PCMU)
    if rate != PHONE_RATE:
        samples = resample_all(samples, PHONE_RATE, rate)
    padded = np.concatenate([samples, np.zeros(rate * FRAME_MS // 1000, dtype=np.int16)])
    return Reframer.for_rate(rate, FRAME_MS).push(padded)


def say_utterance(stream: SpeechToTextStream, frames: list[Samples], start_ms: int = 0) -> int:
    """Push ``frames`` as one utterance (speech from the first frame); its end time in ms."""
    stream.speech_started(start_ms)
    now = start_ms
    for frame in frames:
        now += FRAME_MS
        stream.push(frame, now)
    stream.speech_ended(now)
    return now


async def next_final(stream: SpeechToTextStream) -> TranscriptResult:
    """Read results until the first final one."""
    async for result in stream.results():
        if result.final:
            return result
    raise AssertionError("the stream ended without a final transcript")
