"""The embedded synthesiser behind the TTS port: espeak-ng, streamed, resampled, abortable.

espeak-ng speaks at 22,050 Hz; each chunk is converted to the engine's output rate as it
arrives by a soxr stream (the audio layer's resampler covers the gateway's rates, 8/16/24/48
kHz, and 22,050 is not one of them). Cancelling the consumer, or closing the iterator, stops
the synthesis on espeak's worker thread at its next chunk, so a barge-in frees the one shared
synthesiser at once for the next sentence.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import soxr

from voicegate.audio.pcm import Samples
from voicegate.clock.virtual import charge
from voicegate.errors import SpeechError
from voicegate.speech.embedded.espeak_lib import EspeakLibrary, Voice

#: Output rates the engine converts to.
MIN_RATE, MAX_RATE = 8000, 48000


class _ChunkResampler:
    """22,050 Hz chunks to the output rate, streamed (a pass-through at the same rate)."""

    def __init__(self, in_rate: int, out_rate: int) -> None:
        self._stream = (
            None if in_rate == out_rate else soxr.ResampleStream(in_rate, out_rate, 1, "int16")
        )

    def push(self, chunk: Samples) -> Samples:
        if self._stream is None:
            return chunk
        out: Samples = self._stream.resample_chunk(chunk).astype(np.int16, copy=False)
        return out

    def flush(self) -> Samples:
        if self._stream is None:
            return np.zeros(0, dtype=np.int16)
        tail: Samples = self._stream.resample_chunk(np.zeros(0, dtype=np.int16), last=True)
        return tail.astype(np.int16, copy=False)


class EspeakTextToSpeech:
    """The TTS port on espeak-ng: chunks of about 50 ms at ``sample_rate`` as they are made."""

    def __init__(self, library: EspeakLibrary, sample_rate: int, voice: Voice | None = None):
        if not MIN_RATE <= sample_rate <= MAX_RATE:
            raise SpeechError(
                f"espeak: output rate must be {MIN_RATE} to {MAX_RATE} Hz, got {sample_rate}"
            )
        self._library = library
        self._rate = sample_rate
        self._voice = voice or Voice()
        library.check_voice(self._voice)

    @property
    def sample_rate(self) -> int:
        """The rate of every chunk this engine yields."""
        return self._rate

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        """Audio for ``text`` in chunks, the first after ~50 ms of speech is synthesised."""
        if not text.strip():
            return
        job = self._library.start(text, self._voice)
        resampler = _ChunkResampler(self._library.sample_rate, self._rate)
        try:
            await charge("espeak")  # its first-chunk latency, in virtual time only (issue 19)
            while (chunk := await job.chunks()) is not None:
                converted = resampler.push(chunk)
                if len(converted):
                    yield converted
            tail = resampler.flush()
            if len(tail):
                yield tail
        finally:
            # Cancelled, closed early or failed: espeak stops at its next chunk.
            job.stop()
