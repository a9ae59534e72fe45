"""The fake microphone files of the browser tests (fixtures/browser/), built from fixtures/audio.

Chromium plays one of these as its microphone (``--use-file-for-fake-audio-capture``), once,
from the moment the page opens the microphone. Rebuild after changing a placement::

    .venv/bin/python -m tests.browser.mic_files

``test_mic_files_are_built_from_the_recordings`` fails when a committed file and this builder
disagree.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voicegate.audio.pcm import Samples
from voicegate.audio.wav import read_wav, write_wav
from voicegate.speech.fakes import ToneTextToSpeech

ROOT = Path(__file__).resolve().parents[2]
AUDIO = ROOT / "fixtures" / "audio"
MIC_FILES = ROOT / "fixtures" / "browser"
RATE = 16000
#: The tone synthesiser of the browser tests; the echo file copies what it says.
TONE_MS_PER_CHAR = 40

#: "check my balance" (Festival, CC0) and "go forward ten meters" (a real speaker, CMU
#: pocketsphinx test data); labels in fixtures/audio/transcripts.tsv.
BALANCE = "synth/festival/balance_16k.wav"
GO_FORWARD = "human/pocketsphinx/goforward_16k.wav"
#: What fixtures/projects/slow_bank says after "check my balance": "Sure.", the tool's
#: announcement, then "Found it." and the balance (the tool returns 1.5 s after it starts,
#: while the announcement still plays, so the four sentences play back to back).
BOT_ANSWER = (
    "Sure.",
    "Let me check that for you, this can take a moment.",
    "Found it.",
    "Your balance is 42 dollars.",
)


@dataclass(frozen=True)
class Placed:
    """A recording placed in a microphone file, its first sample at ``at_ms``."""

    relative: str
    at_ms: int


@dataclass(frozen=True)
class MicFile:
    """One fake microphone: recordings over silence, and optionally a copy of the bot's tone."""

    name: str
    length_ms: int
    speech: tuple[Placed, ...]
    echo_at_ms: int | None = None

    @property
    def path(self) -> Path:
        """Where the file is kept."""
        return MIC_FILES / self.name


#: One second of silence, "check my balance", then "go forward ten meters" over the bot's
#: answer (its speech onset, 505 ms into the recording, lands at 3.9 s: about a second into
#: the announcement the bot starts near 2.8 s).
BARGE_IN = MicFile("barge_in.wav", 9000, (Placed(BALANCE, 1000), Placed(GO_FORWARD, 3400)))
#: "check my balance", then the bot's own answer as the microphone would pick it up from a
#: speaker with no echo cancellation: the same tone, same level, from when it starts playing.
ECHO = MicFile("echo.wav", 9000, (Placed(BALANCE, 1000),), echo_at_ms=3000)
MIC_FILE_SET = (BARGE_IN, ECHO)


def recording(relative: str) -> Samples:
    """A 16 kHz fixture recording."""
    wav = read_wav(AUDIO / relative)
    assert wav.sample_rate == RATE, f"{relative} is {wav.sample_rate} Hz"
    return wav.samples


def bot_tone() -> Samples:
    """The slow_bank answer as the test's tone synthesiser renders it, sentence after sentence."""
    tts = ToneTextToSpeech(RATE, ms_per_char=TONE_MS_PER_CHAR)

    async def render() -> list[Samples]:
        return [chunk for text in BOT_ANSWER async for chunk in tts.synthesize(text)]

    return np.concatenate(asyncio.run(render()))


def build(mic: MicFile) -> Samples:
    """The samples of ``mic``."""
    track = np.zeros(RATE * mic.length_ms // 1000, dtype=np.int32)
    parts = [(placed.at_ms, recording(placed.relative)) for placed in mic.speech]
    if mic.echo_at_ms is not None:
        parts.append((mic.echo_at_ms, bot_tone()))
    for at_ms, samples in parts:
        start = RATE * at_ms // 1000
        assert start + len(samples) <= len(track), f"{mic.name}: a part runs past the end"
        track[start : start + len(samples)] += samples
    return np.clip(track, -32768, 32767).astype(np.int16)


def main() -> None:
    """Write every microphone file."""
    for mic in MIC_FILE_SET:
        write_wav(mic.path, build(mic), RATE)
        print(mic.path.relative_to(ROOT))


if __name__ == "__main__":
    main()
