"""The speech ports: what the call session needs from speech-to-text and text-to-speech.

Design §3: speech knows nothing about turns or providers. An STT stream is fed every caller
frame at the session rate, with the VAD's speech boundaries as hints (embedded engines decode
the utterance the VAD cut; streaming services ignore the hints and endpoint themselves), and
yields interim and final transcripts. A TTS engine turns one piece of text into audio chunks at
the rate it was opened with; the consumer stops it at once by closing the iterator (barge-in).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from voicegate.audio.pcm import Samples
from voicegate.types import MediaMs

__all__ = ["Samples", "SpeechToText", "SpeechToTextStream", "TextToSpeech", "TranscriptResult"]


@dataclass(frozen=True, slots=True)
class TranscriptResult:
    """What the recogniser made of the caller's current utterance so far."""

    text: str
    final: bool
    at_ms: MediaMs


class SpeechToTextStream(Protocol):
    """One call's recogniser; pushes never block the event loop."""

    def push(self, frame: Samples, at_ms: MediaMs) -> None:
        """Feed one frame of caller audio ending at media time ``at_ms``."""
        ...

    def speech_started(self, onset_ms: MediaMs) -> None:
        """The VAD detected caller speech beginning at ``onset_ms``."""
        ...

    def speech_ended(self, at_ms: MediaMs) -> None:
        """The VAD declared the end of caller speech: a final transcript should follow."""
        ...

    def speech_paused(self, at_ms: MediaMs) -> None:
        """The caller paused after speech that stopped at ``at_ms``; the turn may be over.

        A hint for recognisers that can get a transcript of the utterance so far ready now
        (the end-of-turn rules read it, and the final may reuse it); others ignore it.
        """
        ...

    def results(self) -> AsyncIterator[TranscriptResult]:
        """Interim and final transcripts, in order, until the stream is closed."""
        ...

    async def aclose(self) -> None:
        """Release the recogniser; ``results`` ends."""
        ...


class SpeechToText(Protocol):
    """A recogniser factory: one stream per call."""

    def open(self, sample_rate: int) -> SpeechToTextStream:
        """Start recognising audio at ``sample_rate``."""
        ...


class TextToSpeech(Protocol):
    """A synthesiser: text in, audio chunks out at ``sample_rate``."""

    @property
    def sample_rate(self) -> int:
        """The rate of every chunk this engine yields."""
        ...

    def synthesize(self, text: str) -> AsyncIterator[Samples]:
        """Audio for ``text`` in chunks, the first as early as possible; cancellable at once."""
        ...
