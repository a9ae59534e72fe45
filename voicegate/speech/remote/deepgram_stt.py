"""The STT port on Deepgram's live streaming API (a WebSocket per call).

Protocol facts used (Deepgram "Live audio" API reference): the client connects to
``/v1/listen`` with the audio format in the query (``encoding=linear16``, ``sample_rate``,
``channels``) and ``interim_results=true``, authenticates with the header
``Authorization: Token KEY``, sends raw audio as binary messages and ``{"type":
"CloseStream"}`` to finish; the server then sends what is left and closes. Transcripts arrive
as ``{"type": "Results", "is_final", "speech_final", "start", "duration", "channel":
{"alternatives": [{"transcript"}]}}``: ``is_final`` marks a segment whose words no longer
change, ``speech_final`` the end of the caller's utterance (Deepgram's own endpointing), so the
VAD hints are not needed and are ignored.

One utterance may span several ``is_final`` segments: their words are joined, every message
before ``speech_final`` yields an interim transcript of the utterance so far, and the
``speech_final`` one yields the final. ``push`` only queues bytes; the consumer's iteration of
:meth:`DeepgramStream.results` connects, and runs the sender in a task group it owns, so the
stream leaves no task behind (design §8).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from voicegate.audio.pcm import Samples, samples_to_pcm16le
from voicegate.errors import SpeechError
from voicegate.retry import RETRY_STATUSES, RetryPolicy, retry_after_s
from voicegate.speech.ports import TranscriptResult
from voicegate.types import MediaMs

log = logging.getLogger(__name__)

DEEPGRAM_LISTEN_URL = "wss://api.deepgram.com/v1/listen"
_EXCERPT_CHARS = 200


@dataclass(frozen=True, slots=True)
class DeepgramOptions:
    """Which model and endpoint each call's stream uses."""

    model: str = "nova-2"
    url: str = DEEPGRAM_LISTEN_URL
    open_timeout_s: float = 10.0
    # After CloseStream, how long the server may take to send its last results and close.
    close_timeout_s: float = 5.0
    # Opening the stream again after a 429/5xx or a refused connection (audio waits queued).
    retry: RetryPolicy = field(default_factory=RetryPolicy)


class DeepgramSpeechToText:
    """The STT port on Deepgram: one WebSocket per call."""

    def __init__(self, api_key: str, options: DeepgramOptions | None = None) -> None:
        self._api_key = api_key
        self._options = options or DeepgramOptions()

    def open(self, sample_rate: int) -> DeepgramStream:
        """One stream per call, fed frames at ``sample_rate``."""
        if sample_rate <= 0:
            raise SpeechError(f"deepgram: invalid sample rate {sample_rate}")
        return DeepgramStream(self._api_key, self._options, sample_rate)


class DeepgramStream:
    """One call's live recogniser: queues audio, yields Deepgram's interim and final results."""

    def __init__(self, api_key: str, options: DeepgramOptions, sample_rate: int) -> None:
        self._api_key = api_key
        self._options = options
        self._rate = sample_rate
        # Unbounded so push never blocks or fails; None tells the sender to finish.
        self._outgoing: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._origin_ms: float | None = None  # media time of the first sample sent
        self._last_at_ms: MediaMs = 0
        self._finished_words: list[str] = []  # is_final segments of the current utterance
        self._closed = False

    def push(self, frame: Samples, at_ms: MediaMs) -> None:
        """Queue one frame for sending; never blocks."""
        if self._closed:
            return
        if self._origin_ms is None:
            self._origin_ms = at_ms - len(frame) * 1000 / self._rate
        self._last_at_ms = at_ms
        self._outgoing.put_nowait(samples_to_pcm16le(frame))

    def speech_started(self, onset_ms: MediaMs) -> None:
        """Ignored: Deepgram detects speech itself."""

    def speech_ended(self, at_ms: MediaMs) -> None:
        """Ignored: Deepgram endpoints utterances itself (``speech_final``)."""

    def speech_paused(self, at_ms: MediaMs) -> None:
        """Ignored: Deepgram streams interim results on its own."""

    async def results(self) -> AsyncIterator[TranscriptResult]:
        """Connect, send the queued audio, yield transcripts until the server closes."""
        if self._closed:
            return
        connection = await self._connect()
        failure: SpeechError | None = None
        # Errors are kept out of the task group's exit (which would wrap them in a group), and
        # a consumer closing us early (GeneratorExit at the yield) ends the group normally.
        async with connection, asyncio.TaskGroup() as tasks:
            sender = tasks.create_task(self._send_audio(connection))
            try:
                async for message in connection:
                    result = self._on_message(message)
                    if result is not None:
                        yield result
            except SpeechError as error:
                failure = error
            except ConnectionClosed as error:
                failure = SpeechError(f"deepgram: connection lost: {_describe_close(error)}")
            except GeneratorExit:
                return
            finally:
                sender.cancel()
        if failure is not None:
            raise failure

    async def aclose(self) -> None:
        """Finish: Deepgram sends its last results, closes, and ``results`` ends."""
        if not self._closed:
            self._closed = True
            self._outgoing.put_nowait(None)

    async def _connect(self) -> ClientConnection:
        """Open the stream, retrying 429/5xx and refused connections within the budget."""
        query = {
            "encoding": "linear16",
            "sample_rate": str(self._rate),
            "channels": "1",
            "interim_results": "true",
            "model": self._options.model,
        }
        url = f"{self._options.url}?{urlencode(query)}"
        started, attempt = time.monotonic(), 0
        while True:
            try:
                return await connect(
                    url,
                    additional_headers={"Authorization": f"Token {self._api_key}"},
                    open_timeout=self._options.open_timeout_s,
                )
            except InvalidStatus as error:
                failure, waited = self._refused(error), _retry_after(error)
                retryable = error.response.status_code in RETRY_STATUSES
            except TimeoutError as error:  # the open timeout: as slow again on a retry
                raise SpeechError(
                    f"deepgram: cannot connect to {self._options.url}: {error}"
                ) from None
            except (OSError, WebSocketException) as error:
                failure = SpeechError(f"deepgram: cannot connect to {self._options.url}: {error}")
                waited, retryable = None, True
            elapsed = time.monotonic() - started
            delay = self._options.retry.delay_s(attempt, elapsed, waited) if retryable else None
            if delay is None:
                raise failure from None
            attempt += 1
            log.warning("%s; attempt %d in %.2f s", failure, attempt + 1, delay)
            await asyncio.sleep(delay)

    def _refused(self, error: InvalidStatus) -> SpeechError:
        """The error for a refused handshake, with the status and the start of the body."""
        response = error.response
        excerpt = response.body.decode("utf-8", "replace")[:_EXCERPT_CHARS] if response.body else ""
        return SpeechError(
            f"deepgram: {self._options.url} refused the connection: "
            f"HTTP {response.status_code} {excerpt}".rstrip()
        )

    async def _send_audio(self, connection: ClientConnection) -> None:
        """Drain the queue onto the socket; after the end marker, ask Deepgram to finish."""
        try:
            while (chunk := await self._outgoing.get()) is not None:
                await connection.send(chunk)
            await connection.send(json.dumps({"type": "CloseStream"}))
            # The server normally closes first (ending the receive loop, which cancels us).
            await asyncio.sleep(self._options.close_timeout_s)
            await connection.close()
        except ConnectionClosed:
            return  # the receive loop reports why the connection ended

    def _on_message(self, message: str | bytes) -> TranscriptResult | None:
        """A transcript from one server message, or None for messages without one."""
        try:
            payload = json.loads(message)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise SpeechError(f"deepgram: malformed message: {_excerpt(message)}") from None
        if not isinstance(payload, dict) or payload.get("type") != "Results":
            return None  # Metadata, SpeechStarted, UtteranceEnd: nothing to transcribe
        text = _transcript(payload)
        at_ms = self._end_ms(payload)
        if not payload.get("is_final"):
            return self._interim(text, at_ms)
        if text:
            self._finished_words.append(text)
        if payload.get("speech_final"):
            words, self._finished_words = " ".join(self._finished_words), []
            return TranscriptResult(words, True, at_ms) if words else None
        return self._interim("", at_ms)

    def _interim(self, pending: str, at_ms: MediaMs) -> TranscriptResult | None:
        """The utterance so far: its finished segments plus the words still changing."""
        words = " ".join([*self._finished_words, pending] if pending else self._finished_words)
        return TranscriptResult(words, False, at_ms) if words else None

    def _end_ms(self, payload: Mapping[str, Any]) -> MediaMs:
        """The media time the result ends at (Deepgram counts seconds of audio received)."""
        start, duration = payload.get("start"), payload.get("duration")
        if self._origin_ms is None or not isinstance(start, int | float):
            return self._last_at_ms
        length = duration if isinstance(duration, int | float) else 0
        return round(self._origin_ms + (start + length) * 1000)


def _transcript(payload: Mapping[str, Any]) -> str:
    """The best alternative's transcript of a Results message."""
    try:
        text = payload["channel"]["alternatives"][0]["transcript"]
    except (KeyError, IndexError, TypeError):
        raise SpeechError(f"deepgram: Results without a transcript: {_excerpt(payload)}") from None
    if not isinstance(text, str):
        raise SpeechError(f"deepgram: transcript is not text: {_excerpt(payload)}")
    return text.strip()


def _excerpt(value: object) -> str:
    return repr(value)[:_EXCERPT_CHARS]


def _describe_close(error: ConnectionClosed) -> str:
    frame = error.rcvd
    if frame is None:
        return "no close frame"
    return f"code {frame.code} {frame.reason}".rstrip()


def _retry_after(error: InvalidStatus) -> float | None:
    """The refused handshake's ``Retry-After``, in seconds."""
    return retry_after_s(error.response.headers.get("Retry-After"))
