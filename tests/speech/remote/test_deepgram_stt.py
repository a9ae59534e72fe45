"""Deepgram live STT against a local WebSocket server speaking Deepgram's listen protocol."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from aiohttp import WSMsgType, web
from aiohttp.test_utils import TestServer

from voicegate.errors import SpeechError
from voicegate.speech.ports import TranscriptResult
from voicegate.speech.remote.deepgram_stt import (
    DeepgramOptions,
    DeepgramSpeechToText,
    DeepgramStream,
)

KEY = "dg-secret-key"
RATE = 16000
FRAME = 320  # 20 ms at 16 kHz
FRAME_BYTES = FRAME * 2


def results_message(text: str, *, start: float, is_final: bool, speech_final: bool) -> Any:
    """A Deepgram Results message as the live API sends it."""
    return {
        "type": "Results",
        "start": start,
        "duration": 0.2,
        "is_final": is_final,
        "speech_final": speech_final,
        "channel": {"alternatives": [{"transcript": text, "confidence": 0.9}]},
    }


@dataclass
class FakeDeepgram:
    """Sends each scripted message once it has received that many audio bytes."""

    script: list[tuple[int, Any]]
    audio: bytearray = field(default_factory=bytearray)
    queries: list[dict[str, str]] = field(default_factory=list)
    close_stream_seen: bool = False
    audio_arrived: asyncio.Event = field(default_factory=asyncio.Event)
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)

    async def listen(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Token {KEY}":
            return web.json_response({"err_msg": "Invalid credentials."}, status=401)
        self.queries.append(dict(request.query))
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        pending = list(self.script)
        async for message in socket:
            if message.type == WSMsgType.BINARY:
                self.audio.extend(message.data)
                self.audio_arrived.set()
                while pending and pending[0][0] <= len(self.audio):
                    await socket.send_json(pending.pop(0)[1])
            elif json.loads(message.data) == {"type": "CloseStream"}:
                self.close_stream_seen = True
                break
        await socket.close()
        self.disconnected.set()
        return socket


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeDeepgram, str]]:
    deepgram = FakeDeepgram(
        [
            (0, {"type": "Metadata", "request_id": "r1"}),
            (
                6 * FRAME_BYTES,
                results_message("hello", start=0.0, is_final=False, speech_final=False),
            ),
            (
                8 * FRAME_BYTES,
                results_message("hello there", start=0.0, is_final=True, speech_final=False),
            ),
            (
                12 * FRAME_BYTES,
                results_message("general", start=0.4, is_final=False, speech_final=False),
            ),
            (
                16 * FRAME_BYTES,
                results_message("general kenobi", start=0.4, is_final=True, speech_final=True),
            ),
        ]
    )
    app = web.Application()
    app.router.add_get("/v1/listen", deepgram.listen)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield deepgram, f"ws://127.0.0.1:{server.port}/v1/listen"
    finally:
        await server.close()


def frames(count: int) -> list[np.ndarray[Any, np.dtype[np.int16]]]:
    """Distinct 20 ms frames, so the test can check the bytes arrive in order."""
    return [np.full(FRAME, index * 100 - 900, dtype=np.int16) for index in range(count)]


async def collect(stream: DeepgramStream, count: int) -> list[TranscriptResult]:
    """The first ``count`` results, then close the stream and drain it."""
    collected: list[TranscriptResult] = []
    async with asyncio.timeout(10):  # a hang guard, not a timing assertion
        async for result in stream.results():
            collected.append(result)
            if len(collected) == count:
                await stream.aclose()
    return collected


async def test_interims_and_final_are_mapped_from_results(fake: tuple[FakeDeepgram, str]) -> None:
    deepgram, url = fake
    stream = DeepgramSpeechToText(KEY, DeepgramOptions(model="nova-3", url=url)).open(RATE)
    sent = frames(20)
    for index, frame in enumerate(sent):
        stream.push(frame, 1000 + 20 * (index + 1))  # the first frame spans 1000-1020 ms
    assert await collect(stream, 4) == [
        TranscriptResult("hello", False, 1200),
        TranscriptResult("hello there", False, 1200),
        TranscriptResult("hello there general", False, 1600),
        TranscriptResult("hello there general kenobi", True, 1600),
    ]
    assert deepgram.queries == [
        {
            "encoding": "linear16",
            "sample_rate": "16000",
            "channels": "1",
            "interim_results": "true",
            "model": "nova-3",
        }
    ]
    assert bytes(deepgram.audio) == b"".join(frame.astype("<i2").tobytes() for frame in sent)
    assert deepgram.close_stream_seen


async def test_aclose_ends_results_after_the_server_finishes(
    fake: tuple[FakeDeepgram, str],
) -> None:
    deepgram, url = fake
    stream = DeepgramSpeechToText(KEY, DeepgramOptions(url=url)).open(RATE)
    stream.push(frames(1)[0], 20)
    consumer = asyncio.create_task(collect(stream, 99))
    async with asyncio.timeout(10):
        await deepgram.audio_arrived.wait()
    await stream.aclose()
    stream.push(frames(1)[0], 40)  # ignored after close
    assert await consumer == []
    assert len(deepgram.audio) == FRAME_BYTES
    assert deepgram.close_stream_seen


async def test_closed_before_iterating_never_connects(fake: tuple[FakeDeepgram, str]) -> None:
    deepgram, url = fake
    stream = DeepgramSpeechToText(KEY, DeepgramOptions(url=url)).open(RATE)
    stream.push(frames(1)[0], 20)
    await stream.aclose()
    assert await collect(stream, 1) == []
    assert deepgram.queries == []


async def test_rejected_key_raises_speech_error_without_the_key(
    fake: tuple[FakeDeepgram, str],
) -> None:
    _, url = fake
    stream = DeepgramSpeechToText("wrong-key", DeepgramOptions(url=url)).open(RATE)
    with pytest.raises(SpeechError, match="HTTP 401") as caught:
        await collect(stream, 1)
    assert "wrong-key" not in str(caught.value)
    assert "Invalid credentials" in str(caught.value)


async def test_malformed_message_raises_speech_error() -> None:
    async def listen(request: web.Request) -> web.StreamResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        await socket.send_str("not json")
        await socket.receive()
        return socket

    app = web.Application()
    app.router.add_get("/v1/listen", listen)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        url = f"ws://127.0.0.1:{server.port}/v1/listen"
        stream = DeepgramSpeechToText(KEY, DeepgramOptions(url=url)).open(RATE)
        with pytest.raises(SpeechError, match="malformed message"):
            await collect(stream, 1)
    finally:
        await server.close()


async def test_unreachable_service_raises_speech_error() -> None:
    options = DeepgramOptions(url="ws://127.0.0.1:9/v1/listen")  # discard port: nothing listens
    stream = DeepgramSpeechToText(KEY, options).open(RATE)
    with pytest.raises(SpeechError, match="cannot connect"):
        await collect(stream, 1)


async def test_consumer_leaving_early_closes_the_connection(
    fake: tuple[FakeDeepgram, str],
) -> None:
    deepgram, url = fake
    stream = DeepgramSpeechToText(KEY, DeepgramOptions(url=url)).open(RATE)
    for index, frame in enumerate(frames(20)):
        stream.push(frame, 20 * (index + 1))
    async with asyncio.timeout(10), aclosing(stream.results()) as results:
        first = await anext(results)
    assert first == TranscriptResult("hello", False, 200)
    async with asyncio.timeout(10):
        await deepgram.disconnected.wait()
    assert not deepgram.close_stream_seen


async def test_abnormal_close_raises_speech_error() -> None:
    async def listen(request: web.Request) -> web.StreamResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        await socket.receive()
        await socket.close(code=1011, message=b"internal failure")
        return socket

    app = web.Application()
    app.router.add_get("/v1/listen", listen)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        url = f"ws://127.0.0.1:{server.port}/v1/listen"
        stream = DeepgramSpeechToText(KEY, DeepgramOptions(url=url)).open(RATE)
        stream.push(frames(1)[0], 20)
        with pytest.raises(SpeechError, match="connection lost: code 1011 internal failure"):
            await collect(stream, 1)
    finally:
        await server.close()
