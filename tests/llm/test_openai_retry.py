"""The OpenAI-compatible client retries 429, 5xx and connection failures, within a budget."""

from __future__ import annotations

import random
import socket
from datetime import UTC, datetime

import pytest

from tests.llm.chat_server import ChatServer, Reply, chunk, sse, text_chunks
from voicegate.engine.llm.openai_chat import OpenAIChatLLM
from voicegate.engine.llm.port import TextDelta, UserMessage
from voicegate.engine.llm.selection import ChatModelSettings
from voicegate.errors import LLMError
from voicegate.retry import RetryPolicy, retry_after_s

FAST = RetryPolicy(attempts=3, base_s=0.01, max_s=0.02, budget_s=5.0, rng=random.Random(1))
HELLO = [UserMessage("hello")]
ANSWER = Reply(sse([*text_chunks("Hi there.", 3), chunk({}, "stop")]))


def busy(status: int = 503, **headers: str) -> Reply:
    return Reply(
        b'{"error": {"message": "overloaded"}}', status, "application/json", headers=headers
    )


async def text_from(base_url: str, retry: RetryPolicy = FAST) -> str:
    llm = OpenAIChatLLM(ChatModelSettings("m", base_url, ""), retry=retry)
    items = [item async for item in llm.stream(HELLO, ())]
    return "".join(item.text for item in items if isinstance(item, TextDelta))


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
async def test_a_passing_failure_is_retried_and_the_answer_streams(status: int) -> None:
    async with ChatServer.replying(busy(status), ANSWER) as server:
        assert await text_from(server.base_url) == "Hi there."
    assert len(server.requests) == 2


async def test_retry_after_is_honoured() -> None:
    async with ChatServer.replying(busy(429, **{"Retry-After": "0"}), ANSWER) as server:
        assert await text_from(server.base_url) == "Hi there."


async def test_a_retry_after_beyond_the_budget_fails_at_once_with_the_cause(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with ChatServer.replying(busy(429, **{"Retry-After": "120"}), ANSWER) as server:
        with pytest.raises(LLMError, match="HTTP 429"):
            await text_from(server.base_url)
    assert len(server.requests) == 1  # the caller hears the apology now, not in two minutes


async def test_attempts_are_bounded_and_each_retry_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with ChatServer(lambda body: busy(503)) as server:
        with pytest.raises(LLMError, match="HTTP 503"):
            await text_from(server.base_url)
    assert len(server.requests) == FAST.attempts
    retries = [r.getMessage() for r in caplog.records if "attempt" in r.getMessage()]
    assert len(retries) == FAST.attempts - 1
    assert "HTTP 503" in retries[0]


async def test_a_request_error_is_not_retried() -> None:
    async with ChatServer(lambda body: busy(400)) as server:
        with pytest.raises(LLMError, match="HTTP 400"):
            await text_from(server.base_url)
    assert len(server.requests) == 1


async def test_a_refused_connection_is_retried_then_reported() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(LLMError, match="failed"):
        await text_from(f"http://127.0.0.1:{port}/v1")


def test_backoff_grows_with_jitter_and_respects_the_budget() -> None:
    policy = RetryPolicy(attempts=5, base_s=1.0, max_s=4.0, budget_s=10.0, rng=random.Random(7))
    first, second, third = (policy.delay_s(n, 0.0, None) for n in range(3))
    assert first is not None
    assert 0.5 <= first <= 1.0
    assert second is not None
    assert 1.0 <= second <= 2.0
    assert third is not None
    assert 2.0 <= third <= 4.0
    assert policy.delay_s(4, 0.0, None) is None  # the fifth attempt was the last
    assert policy.delay_s(0, 9.9, None) is None  # no time left
    assert policy.delay_s(0, 0.0, 3.0) == 3.0  # Retry-After wins over a shorter backoff


def test_retry_after_takes_seconds_or_an_http_date() -> None:
    now = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_s("7") == 7.0
    assert retry_after_s("Tue, 01 Dec 2026 12:00:05 GMT", now) == 5.0
    assert retry_after_s("soon") is None
    assert retry_after_s(None) is None
