"""The TTS port on an OpenAI-compatible ``POST {base}/audio/speech`` endpoint, streamed.

Protocol facts used (OpenAI API reference, "Create speech"): the request is JSON with
``model``, ``input``, ``voice`` and ``response_format``; with ``"pcm"`` the body is raw
24 kHz signed 16-bit little-endian mono samples, sent as they are synthesised. The key goes in
``Authorization: Bearer KEY`` (left out when empty, for local servers that need none).

Body chunks are converted to the engine's rate as they arrive by the audio layer's streaming
resampler, whose leading latency is trimmed so the output is exactly ``floor(n * rate /
24000)`` samples for ``n`` received. Closing or cancelling the consumer closes the response
(and its connection) at once, so a barge-in stops the download.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp

from voicegate.audio.pcm import Samples, pcm16le_to_samples
from voicegate.audio.resample import SUPPORTED_RATES, StreamResampler
from voicegate.errors import SpeechError
from voicegate.retry import RetryPolicy, post_retrying

OPENAI_BASE_URL = "https://api.openai.com/v1"
#: The rate of ``response_format: "pcm"`` audio.
PCM_RATE = 24000
_EXCERPT_CHARS = 200


@dataclass(frozen=True, slots=True)
class OpenAISpeechOptions:
    """Which endpoint, model and voice the synthesiser uses."""

    base_url: str = OPENAI_BASE_URL
    model: str = "tts-1"
    voice: str = "alloy"
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 30.0  # longest silence between body chunks


class OpenAITextToSpeech:
    """The TTS port on an OpenAI-compatible speech endpoint, one HTTP request per text."""

    def __init__(
        self,
        api_key: str,
        sample_rate: int,
        options: OpenAISpeechOptions | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        """``retry``: how 429, 5xx and connection failures are retried before any audio
        (default: :class:`~voicegate.retry.RetryPolicy`'s)."""
        if sample_rate not in SUPPORTED_RATES:
            raise SpeechError(
                f"openai-tts: cannot convert to {sample_rate} Hz "
                f"(supported: {sorted(SUPPORTED_RATES)})"
            )
        self._api_key = api_key
        self._rate = sample_rate
        self._options = options or OpenAISpeechOptions()
        self._retry = RetryPolicy() if retry is None else retry

    @property
    def sample_rate(self) -> int:
        """The rate of every chunk this engine yields."""
        return self._rate

    @property
    def url(self) -> str:
        """The speech endpoint requests go to."""
        return f"{self._options.base_url.rstrip('/')}/audio/speech"

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        """Audio for ``text`` in chunks as the body arrives; closing stops the download."""
        if not text.strip():
            return
        timeout = aiohttp.ClientTimeout(
            total=None,
            sock_connect=self._options.connect_timeout_s,
            sock_read=self._options.read_timeout_s,
        )
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session:
                reply = await post_retrying(
                    session,
                    self.url,
                    self._retry,
                    json=self._request(text),
                    headers=self._headers(),
                )
                try:
                    await self._check(reply)
                    async for chunk in self._samples(reply):
                        yield chunk
                finally:
                    reply.close()  # at once, also when a barge-in closes this stream
        except (aiohttp.ClientError, TimeoutError) as error:
            detail = str(error) or type(error).__name__
            raise SpeechError(f"openai-tts: request to {self.url} failed: {detail}") from None

    def _request(self, text: str) -> dict[str, str]:
        return {
            "model": self._options.model,
            "input": text,
            "voice": self._options.voice,
            "response_format": "pcm",
        }

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    async def _check(self, reply: aiohttp.ClientResponse) -> None:
        """Raise a ``SpeechError`` with the status and an excerpt of the body unless 200."""
        if reply.status == 200:
            return
        body = (await reply.content.read(_EXCERPT_CHARS)).decode("utf-8", "replace")
        raise SpeechError(f"openai-tts: {self.url} answered HTTP {reply.status}: {body}".rstrip())

    async def _samples(self, reply: aiohttp.ClientResponse) -> AsyncIterator[Samples]:
        """The body as int16 chunks at the engine's rate (a split sample waits for its half)."""
        resampler = StreamResampler(PCM_RATE, self._rate)
        to_trim = resampler.delay_samples  # the resampler's leading silence
        carry = b""
        async for data in reply.content.iter_any():
            joined = carry + data
            usable = len(joined) - len(joined) % 2
            whole, carry = joined[:usable], joined[usable:]
            converted = resampler.push(pcm16le_to_samples(whole))
            converted, to_trim = converted[to_trim:], max(0, to_trim - len(converted))
            if len(converted):
                yield converted
        if carry:
            raise SpeechError("openai-tts: the audio ended in the middle of a sample")
        tail = resampler.flush()[to_trim:]
        if len(tail):
            yield tail
