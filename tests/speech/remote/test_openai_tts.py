"""OpenAI-compatible TTS against a local HTTP server speaking ``POST /v1/audio/speech``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from voicegate.audio.resample import resample_all
from voicegate.errors import SpeechError
from voicegate.speech.remote.openai_tts import OpenAISpeechOptions, OpenAITextToSpeech

KEY = "sk-secret-key"
BODY_CHUNK = 1001  # odd: samples split across chunks must be rejoined


def voice_signal(count: int) -> np.ndarray[Any, np.dtype[np.int16]]:
    """A 24 kHz test signal: two tones, well inside every output rate's band."""
    t = np.arange(count) / 24000
    wave = 8000 * np.sin(2 * np.pi * 440 * t) + 4000 * np.sin(2 * np.pi * 1800 * t)
    return np.rint(wave).astype(np.int16)


@dataclass
class FakeSpeechServer:
    """Checks each request and streams ``audio`` as PCM16 in small, slow chunks."""

    audio: np.ndarray[Any, np.dtype[np.int16]]
    requests: list[Any] = field(default_factory=list)
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)

    async def speech(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {KEY}":
            return web.json_response({"error": {"message": "Incorrect API key"}}, status=401)
        self.requests.append(await request.json())
        reply = web.StreamResponse(headers={"Content-Type": "audio/pcm"})
        await reply.prepare(request)
        body = self.audio.astype("<i2").tobytes()
        try:
            for start in range(0, len(body), BODY_CHUNK):
                await reply.write(body[start : start + BODY_CHUNK])
                await asyncio.sleep(0.002)  # streamed as a synthesiser would, not all at once
            await reply.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            self.disconnected.set()
            raise
        return reply


async def serve(fake: FakeSpeechServer) -> TestServer:
    app = web.Application()
    app.router.add_post("/v1/audio/speech", fake.speech)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return server


@pytest.fixture
async def short_speech() -> AsyncIterator[tuple[FakeSpeechServer, str]]:
    fake = FakeSpeechServer(voice_signal(12007))  # ~0.5 s, not a multiple of 3 samples
    server = await serve(fake)
    yield fake, f"http://127.0.0.1:{server.port}/v1"
    await server.close()


async def synthesize_all(tts: OpenAITextToSpeech, text: str) -> list[np.ndarray[Any, Any]]:
    async with asyncio.timeout(10):  # a hang guard, not a timing assertion
        return [chunk async for chunk in tts.synthesize(text)]


async def test_chunks_are_resampled_to_the_engine_rate(
    short_speech: tuple[FakeSpeechServer, str],
) -> None:
    fake, base_url = short_speech
    options = OpenAISpeechOptions(base_url=base_url, model="tts-1-hd", voice="nova")
    tts = OpenAITextToSpeech(KEY, 8000, options)
    chunks = await synthesize_all(tts, "Hello there.")
    assert fake.requests == [
        {"model": "tts-1-hd", "input": "Hello there.", "voice": "nova", "response_format": "pcm"}
    ]
    assert len(chunks) > 1
    assert all(chunk.dtype == np.int16 for chunk in chunks)
    audio = np.concatenate(chunks)
    assert len(audio) == 12007 // 3
    assert np.array_equal(audio, resample_all(fake.audio, 24000, 8000))


async def test_same_rate_passes_the_audio_through(
    short_speech: tuple[FakeSpeechServer, str],
) -> None:
    fake, base_url = short_speech
    tts = OpenAITextToSpeech(KEY, 24000, OpenAISpeechOptions(base_url=base_url))
    assert np.array_equal(np.concatenate(await synthesize_all(tts, "Hi.")), fake.audio)


async def test_blank_text_sends_no_request(short_speech: tuple[FakeSpeechServer, str]) -> None:
    fake, base_url = short_speech
    tts = OpenAITextToSpeech(KEY, 8000, OpenAISpeechOptions(base_url=base_url))
    assert await synthesize_all(tts, "  ") == []
    assert fake.requests == []


async def test_closing_the_consumer_closes_the_connection() -> None:
    fake = FakeSpeechServer(voice_signal(24000 * 20))  # far longer than the test listens
    server = await serve(fake)
    try:
        base_url = f"http://127.0.0.1:{server.port}/v1"
        tts = OpenAITextToSpeech(KEY, 16000, OpenAISpeechOptions(base_url=base_url))
        async with asyncio.timeout(10), aclosing(tts.synthesize("A long answer.")) as audio:
            await anext(audio)
        async with asyncio.timeout(10):
            await fake.disconnected.wait()
    finally:
        await server.close()


async def test_cancelling_the_consumer_closes_the_connection() -> None:
    fake = FakeSpeechServer(voice_signal(24000 * 20))
    server = await serve(fake)
    try:
        base_url = f"http://127.0.0.1:{server.port}/v1"
        tts = OpenAITextToSpeech(KEY, 8000, OpenAISpeechOptions(base_url=base_url))
        started = asyncio.Event()

        async def play() -> None:
            async for _ in tts.synthesize("A long answer."):
                started.set()

        player = asyncio.create_task(play())
        async with asyncio.timeout(10):
            await started.wait()
            player.cancel()
            with pytest.raises(asyncio.CancelledError):
                await player
            await fake.disconnected.wait()
    finally:
        await server.close()


async def test_rejected_key_raises_speech_error_without_the_key(
    short_speech: tuple[FakeSpeechServer, str],
) -> None:
    _, base_url = short_speech
    tts = OpenAITextToSpeech("sk-wrong", 8000, OpenAISpeechOptions(base_url=base_url))
    with pytest.raises(SpeechError, match="HTTP 401") as caught:
        await synthesize_all(tts, "Hello.")
    assert "Incorrect API key" in str(caught.value)
    assert "sk-wrong" not in str(caught.value)


async def test_unreachable_service_raises_speech_error() -> None:
    options = OpenAISpeechOptions(base_url="http://127.0.0.1:9/v1")  # nothing listens there
    with pytest.raises(SpeechError, match=r"request to .* failed"):
        await synthesize_all(OpenAITextToSpeech(KEY, 8000, options), "Hello.")


def test_unsupported_rate_is_refused() -> None:
    with pytest.raises(SpeechError, match="44100"):
        OpenAITextToSpeech(KEY, 44100)
