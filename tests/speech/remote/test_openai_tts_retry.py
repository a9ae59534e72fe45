"""OpenAI-compatible TTS retries 429/5xx before any audio, within its budget (issue 18)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from voicegate.errors import SpeechError
from voicegate.retry import RetryPolicy
from voicegate.speech.remote.openai_tts import OpenAISpeechOptions, OpenAITextToSpeech

FAST = RetryPolicy(attempts=3, base_s=0.01, max_s=0.02, budget_s=5.0, rng=random.Random(3))


async def tts_against(statuses: list[int]) -> tuple[list[int], list[int] | SpeechError]:
    """Serve ``statuses`` in turn (200: a little audio); the statuses served and the result."""
    served: list[int] = []

    async def speech(request: web.Request) -> web.StreamResponse:
        status = statuses[min(len(served), len(statuses) - 1)]
        served.append(status)
        if status != 200:
            return web.json_response({"error": {"message": "busy"}}, status=status)
        return web.Response(body=np.zeros(240, dtype="<i2").tobytes())

    app = web.Application()
    app.router.add_post("/v1/audio/speech", speech)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    options = OpenAISpeechOptions(base_url=f"http://127.0.0.1:{server.port}/v1")
    tts = OpenAITextToSpeech("", 24000, options, retry=FAST)
    try:
        result: list[int] | SpeechError = [len(chunk) async for chunk in tts.synthesize("Hello.")]
    except SpeechError as error:
        result = error
    finally:
        await server.close()
    return served, result


async def test_a_busy_service_is_retried_and_the_audio_comes() -> None:
    served, result = await tts_against([503, 429, 200])
    assert served == [503, 429, 200]
    assert isinstance(result, list)
    assert sum(result) == 240


async def test_attempts_are_bounded_then_the_error_is_raised() -> None:
    served, result = await tts_against([502])
    assert served == [502] * FAST.attempts
    assert isinstance(result, SpeechError)
    assert "HTTP 502" in str(result)


@pytest.mark.parametrize("status", [400, 401])
async def test_a_refused_request_is_not_retried(status: int) -> None:
    served, result = await tts_against([status, 200])
    assert served == [status]
    assert isinstance(result, SpeechError)
