"""The embedded recogniser behind the STT port: Whisper decodes the utterances the VAD cuts.

Per call, a :class:`WhisperStream` buffers the utterance between ``speech_started`` and
``speech_ended`` (with pre-roll, :mod:`.utterance`). While the caller speaks it asks for an
interim transcript every ``interim_interval_ms`` of speech, made by re-decoding the utterance
so far (barge-in rules that count words read them); after ``speech_ended`` it decodes the
whole utterance once more for the final transcript. All decoding runs on the process's
shared :class:`DecodePool`; ``push`` and the VAD hints only update the buffer and never
block the event loop. The consumer's iteration of :meth:`WhisperStream.results` drives the
decodes, so the stream starts no task of its own (the session owns every task, design §8).

At a pause (``speech_paused``, the end-of-turn layer's hint) an interim is decoded at once,
unless the interim decoding at that moment already reaches the pause. When the utterance then
ends, an interim whose audio already reached the speech end is the
final: its text is reused and no second decode of the same audio runs (issue 14 §2), so the
final is ready as soon as the turn ends.

Within one stream decodes run one at a time, in order, so an interim never follows its
utterance's final. An interim still waiting when the utterance ends is dropped (stale), and
an interim decodes the freshest audio when its turn comes, not the audio of when it was due.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from voicegate.audio.pcm import Samples
from voicegate.audio.resample import SUPPORTED_RATES
from voicegate.errors import AudioFormatError, SpeechError
from voicegate.speech.embedded.decode_pool import DecodePool
from voicegate.speech.embedded.utterance import Segment, UtteranceBuffer
from voicegate.speech.ports import TranscriptResult
from voicegate.types import MediaMs

log = logging.getLogger(__name__)


class Transcriber(Protocol):
    """A blocking whole-utterance recogniser, such as ``WhisperRecognizer``.

    ``transcribe`` must be safe to call from ``workers`` threads at once.
    """

    @property
    def workers(self) -> int:
        """How many decodes it runs in parallel."""
        ...

    def transcribe(self, samples: Samples, sample_rate: int) -> str:
        """The text of one utterance; raises ``SpeechError`` on failure."""
        ...


@dataclass(frozen=True, slots=True)
class StreamOptions:
    """How each call's stream cuts and re-decodes utterances."""

    interim_interval_ms: int = 500  # 0: finals only
    preroll_ms: int = 300
    lookback_ms: int = 500  # how far before its detection the VAD may date an onset
    max_utterance_ms: int = 30000  # Whisper's window

    def __post_init__(self) -> None:
        if self.interim_interval_ms < 0 or self.max_utterance_ms < 1000:
            raise SpeechError(
                "whisper: interim_interval_ms must not be negative and max_utterance_ms must be "
                f"at least 1000, got {self.interim_interval_ms} and {self.max_utterance_ms}"
            )


class WhisperSpeechToText:
    """The STT port on one loaded Whisper model and one decode pool shared by every call."""

    def __init__(self, recognizer: Transcriber, options: StreamOptions | None = None) -> None:
        self._recognizer = recognizer
        self._options = options or StreamOptions()
        self._pool = DecodePool(recognizer.workers, name="whisper")

    def open(self, sample_rate: int) -> WhisperStream:
        """One stream per call, fed frames at ``sample_rate``."""
        if sample_rate not in SUPPORTED_RATES:
            raise AudioFormatError(
                f"whisper: cannot recognise audio at {sample_rate} Hz "
                f"(supported: {sorted(SUPPORTED_RATES)})"
            )
        return WhisperStream(self._recognizer, self._pool, sample_rate, self._options)

    def close(self) -> None:
        """Stop the decode threads (after the decodes in flight)."""
        self._pool.close()


@dataclass(frozen=True, slots=True)
class _Job:
    segment: Segment
    final: bool


@dataclass(frozen=True, slots=True)
class _Decoded:
    """The text of the open utterance's audio up to ``end_ms`` (the latest interim)."""

    text: str
    end_ms: MediaMs


class WhisperStream:
    """One call's recogniser: buffers utterances, yields interim and final transcripts."""

    def __init__(
        self,
        recognizer: Transcriber,
        pool: DecodePool,
        sample_rate: int,
        options: StreamOptions,
    ) -> None:
        self._recognizer = recognizer
        self._pool = pool
        self._rate = sample_rate
        self._interval_ms = options.interim_interval_ms
        self._buffer = UtteranceBuffer(
            sample_rate,
            preroll_ms=options.preroll_ms,
            lookback_ms=options.lookback_ms,
            max_ms=options.max_utterance_ms,
        )
        self._finals: deque[Segment] = deque()
        self._interim_due = False
        self._next_interim_ms = 0
        self._closed = False
        self._wake = asyncio.Event()
        self._latest: _Decoded | None = None
        # While an interim decodes: resolved when a pause or the utterance's end makes it
        # stale; and the end of the audio it decodes.
        self._overtaken: asyncio.Future[None] | None = None
        self._decoding_end_ms: MediaMs = 0
        self._pause_due = False

    def push(self, frame: Samples, at_ms: MediaMs) -> None:
        """Buffer one frame; ask for an interim every ``interim_interval_ms`` of speech."""
        if self._closed:
            return
        cut = self._buffer.push(frame, at_ms)
        if cut is not None:
            self._latest = None  # the cut final was never covered by an interim in full
            self._queue_final(cut)
            self._next_interim_ms = self._interval_ms
        elif self._interim_falls_due():
            self._interim_due = True
            self._wake.set()

    def speech_started(self, onset_ms: MediaMs) -> None:
        """Open an utterance at the VAD's onset (with pre-roll)."""
        if self._closed or self._buffer.speaking:
            return
        self._buffer.start(onset_ms)
        self._latest = None
        self._next_interim_ms = max(self._interval_ms, self._buffer.duration_ms)

    def speech_ended(self, at_ms: MediaMs) -> None:
        """Close the utterance: its final transcript follows."""
        if self._closed:
            return
        segment = self._buffer.end(at_ms)
        if segment is not None:
            self._queue_final(segment)
            self._overtake(segment.end_ms)

    def speech_paused(self, at_ms: MediaMs) -> None:
        """Decode the utterance so far now: the turn may be over, its final may reuse it."""
        if self._closed or not self._buffer.speaking or self._in_flight_covers(at_ms):
            return
        self._interim_due = self._pause_due = True
        self._wake.set()
        self._overtake(at_ms)

    def _in_flight_covers(self, speech_end_ms: MediaMs) -> bool:
        """Whether the interim decoding now already holds all speech up to ``speech_end_ms``.

        Then it is the pause's decode: its text covers the pause (the end of turn reads it)
        and the final reuses it. A second decode of the same words plus some silence would
        only make the final wait for it, and take a slot from other calls.
        """
        overtaken = self._overtaken
        in_flight = overtaken is not None and not overtaken.done()
        return in_flight and self._decoding_end_ms >= speech_end_ms

    def _overtake(self, speech_end_ms: MediaMs) -> None:
        """Stop waiting for an interim in flight: newer audio must be decoded now.

        The pause's decode is what the end of the turn waits for; queued behind an interim
        that started earlier (one every ``interim_interval_ms`` of speech) it came up to a
        whole decode later. It takes another slot of the pool instead; the stale decode
        finishes on its thread and its text is dropped.
        """
        overtaken = self._overtaken
        stale = self._decoding_end_ms < speech_end_ms
        if overtaken is not None and not overtaken.done() and stale:
            overtaken.set_result(None)

    async def results(self) -> AsyncIterator[TranscriptResult]:
        """Interim and final transcripts in order, until :meth:`aclose`."""
        while not self._closed:
            if not self._has_work():
                self._wake.clear()
                await self._wake.wait()
                continue
            result = await self._decode_next()
            if result is not None and not self._closed:
                yield result

    async def aclose(self) -> None:
        """Stop: ``results`` ends after the decode in flight, pending work is dropped."""
        self._closed = True
        self._finals.clear()
        self._wake.set()

    def _interim_falls_due(self) -> bool:
        """Whether another ``interim_interval_ms`` of speech has been buffered."""
        if not (self._interval_ms and self._buffer.speaking):
            return False
        if self._buffer.duration_ms < self._next_interim_ms:
            return False
        self._next_interim_ms += self._interval_ms
        return True

    def _queue_final(self, segment: Segment) -> None:
        self._finals.append(segment)
        self._interim_due = self._pause_due = False  # an interim still waiting is stale now
        self._wake.set()

    def _has_work(self) -> bool:
        return bool(self._finals) or (self._interim_due and self._buffer.speaking)

    def _take_job(self) -> _Job | None:
        """What to decode now that a slot is free: a final first, else the freshest interim."""
        if self._finals:
            return _Job(self._finals.popleft(), final=True)
        if self._interim_due:
            self._interim_due = self._pause_due = False
            snapshot = self._buffer.snapshot()
            return None if snapshot is None else _Job(snapshot, final=False)
        return None

    def _reuse(self) -> TranscriptResult | None:
        """The next final from the latest interim, if that interim heard all of its speech."""
        latest = self._latest
        if not self._finals or latest is None or latest.end_ms < self._finals[0].end_ms:
            return None
        segment = self._finals.popleft()
        self._latest = None
        return TranscriptResult(latest.text, True, segment.end_ms)

    def _urgent(self) -> bool:
        """A final, or the decode of a pause (the end of the turn may wait for it), goes first."""
        return bool(self._finals) or self._pause_due

    async def _outlasts(self, decoding: asyncio.Future[str], end_ms: MediaMs) -> bool:
        """Wait for an interim's decode; False if a pause or the end overtook it first."""
        overtaken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._overtaken = overtaken
        self._decoding_end_ms = end_ms
        try:
            await asyncio.wait((decoding, overtaken), return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._overtaken = None
            overtaken.cancel()
        return decoding.done()

    async def _decode_next(self) -> TranscriptResult | None:
        if (reused := self._reuse()) is not None:
            return reused
        async with self._pool.slot(urgent=self._urgent) as lease:
            job = self._take_job()
            if job is None:
                return None
            samples, rate = job.segment.samples, self._rate
            decoding = lease.start(lambda: self._recognizer.transcribe(samples, rate))
            if not job.final and not await self._outlasts(decoding, job.segment.end_ms):
                return None  # overtaken by a pause or the end: decode the newer audio now
            try:
                text = await decoding
            except SpeechError as error:
                # A failed decode loses this utterance's words, not the call: the final still
                # arrives (empty) so the turn logic is not left waiting for it.
                log.error("whisper: decoding failed: %s", error)
                if not job.final:
                    return None
                text = ""
        if not job.final:
            self._latest = _Decoded(text, job.segment.end_ms)
        else:
            self._latest = None
        if not job.final and (not text or self._finals):
            # No words tell the barge-in rules nothing; and once the utterance has ended
            # while this interim was decoding, its final is next and the interim is stale.
            return None
        return TranscriptResult(text, job.final, job.segment.end_ms)
