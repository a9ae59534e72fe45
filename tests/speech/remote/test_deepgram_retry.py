"""Deepgram: a busy service is asked again before the stream opens; audio waits queued."""

from __future__ import annotations

import random

from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.speech.remote.test_deepgram_stt import (
    FRAME_BYTES,
    KEY,
    RATE,
    FakeDeepgram,
    collect,
    frames,
    results_message,
)
from voicegate.retry import RetryPolicy
from voicegate.speech.remote.deepgram_stt import DeepgramOptions, DeepgramSpeechToText

FAST = RetryPolicy(attempts=3, base_s=0.01, max_s=0.02, budget_s=5.0, rng=random.Random(5))


async def test_a_busy_service_is_retried_and_no_audio_is_lost() -> None:
    final = results_message("hello", start=0.0, is_final=True, speech_final=True)
    deepgram = FakeDeepgram([(4 * FRAME_BYTES, final)])
    refused: list[int] = []

    async def listen(request: web.Request) -> web.StreamResponse:
        if not refused:
            refused.append(503)
            return web.Response(status=503, headers={"Retry-After": "0"}, text="busy")
        return await deepgram.listen(request)

    app = web.Application()
    app.router.add_get("/v1/listen", listen)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        options = DeepgramOptions(url=f"ws://127.0.0.1:{server.port}/v1/listen", retry=FAST)
        stream = DeepgramSpeechToText(KEY, options).open(RATE)
        sent = frames(6)
        for index, frame in enumerate(sent):
            stream.push(frame, (index + 1) * 20)
        (result,) = await collect(stream, 1)
    finally:
        await server.close()
    assert refused == [503]
    assert result.text == "hello"
    assert bytes(deepgram.audio[: 6 * FRAME_BYTES]) == b"".join(
        f.astype("<i2").tobytes() for f in sent
    )
