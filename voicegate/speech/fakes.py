"""Deterministic speech engines for tests and scripted demos.

``ScriptedSpeechToText`` answers each utterance the VAD cut with the next transcript from a
list (the labels beside the fixtures the caller plays, fixtures/audio/transcripts.tsv), so a
replayed call is transcribed the same way every run. ``ToneTextToSpeech`` renders text as a
tone whose length is proportional to the text, so playout, marks and "what was heard" can be
checked without a real synthesiser.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterable

import numpy as np

from voicegate.speech.ports import Samples, SpeechToTextStream, TranscriptResult
from voicegate.types import MediaMs


class ScriptedSpeechToText:
    """Recognises the n-th utterance as the n-th transcript of a script."""

    def __init__(self, transcripts: Iterable[str], *, interim_words: bool = True) -> None:
        self._transcripts = tuple(transcripts)
        self._interim_words = interim_words

    def open(self, sample_rate: int) -> SpeechToTextStream:
        """One stream per call; each call walks the script from the start."""
        return _ScriptedStream(deque(self._transcripts), self._interim_words)


class _ScriptedStream:
    def __init__(self, script: deque[str], interim_words: bool) -> None:
        self._script = script
        self._interim_words = interim_words
        self._queue: asyncio.Queue[TranscriptResult | None] = asyncio.Queue()
        self._current: str | None = None
        self._frames = 0

    def push(self, frame: Samples, at_ms: MediaMs) -> None:
        # Reveal the labelled words one by one while the caller speaks (one word per 200 ms),
        # so barge-in rules that count words see them arrive as a streaming STT would send them.
        if self._current is None or not self._interim_words:
            return
        self._frames += 1
        words = self._current.split()
        shown = min(len(words), self._frames // 10)
        if shown and self._frames % 10 == 0:
            self._queue.put_nowait(TranscriptResult(" ".join(words[:shown]), False, at_ms))

    def speech_started(self, onset_ms: MediaMs) -> None:
        if self._current is None and self._script:
            self._current = self._script.popleft()
            self._frames = 0

    def speech_paused(self, at_ms: MediaMs) -> None:
        # Like a recogniser decoding at the pause: the whole label so far, covering ``at_ms``.
        if self._current is not None:
            self._queue.put_nowait(TranscriptResult(self._current, False, at_ms))

    def speech_ended(self, at_ms: MediaMs) -> None:
        if self._current is not None:
            self._queue.put_nowait(TranscriptResult(self._current, True, at_ms))
            self._current = None

    async def results(self) -> AsyncIterator[TranscriptResult]:
        while (result := await self._queue.get()) is not None:
            yield result

    async def aclose(self) -> None:
        self._queue.put_nowait(None)


class ToneTextToSpeech:
    """Speaks text as a quiet tone of ``ms_per_char`` milliseconds per character."""

    def __init__(
        self,
        sample_rate: int = 8000,
        *,
        ms_per_char: int = 60,
        chunk_ms: int = 100,
        frequency_hz: float = 440.0,
    ) -> None:
        self._rate = sample_rate
        self._ms_per_char = ms_per_char
        self._chunk_ms = chunk_ms
        self._frequency = frequency_hz
        # A whole number of hertz repeats every second: compute that second once and slice it
        # (a sine per sample per chunk was ~0.4 ms of CPU per second of speech at 16 kHz).
        self._period = sample_rate if float(frequency_hz).is_integer() else None
        self._cycle = self._compute(0, self._period) if self._period else None

    @property
    def sample_rate(self) -> int:
        """The rate of the chunks."""
        return self._rate

    def duration_ms(self, text: str) -> int:
        """How long ``text`` takes to say."""
        return len(text.strip()) * self._ms_per_char

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        """The tone in ``chunk_ms`` pieces, yielding to the loop between them."""
        total = self._rate * self.duration_ms(text) // 1000
        step = self._rate * self._chunk_ms // 1000
        for start in range(0, total, step):
            await asyncio.sleep(0)
            yield self._tone(start, min(step, total - start))

    def _tone(self, start: int, count: int) -> Samples:
        if self._cycle is None or self._period is None:
            return self._compute(start, count)
        return np.take(self._cycle, np.arange(start, start + count) % self._period)

    def _compute(self, start: int, count: int) -> Samples:
        t = np.arange(start, start + count, dtype=np.float64) / self._rate
        return (4000 * np.sin(2 * np.pi * self._frequency * t)).astype(np.int16)
