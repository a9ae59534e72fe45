"""The OpenAI-compatible client against a local server speaking Chat Completions streaming."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Sequence
from contextlib import aclosing

import pytest

from tests.llm.chat_server import (
    ChatServer,
    Reply,
    call_arguments,
    call_start,
    chunk,
    sse,
    text_chunks,
)
from voicegate.engine.llm.openai_chat import OpenAIChatLLM
from voicegate.engine.llm.port import (
    AssistantMessage,
    Message,
    StreamItem,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from voicegate.engine.llm.selection import ChatModelSettings
from voicegate.engine.tools.schema import ToolSpec
from voicegate.errors import LLMError

KEY = "sk-test-5ecret-key"
HELLO = [UserMessage("hello")]
BALANCE_TOOL = ToolSpec(
    "check_balance",
    "Look up a balance",
    {
        "type": "object",
        "properties": {"account_id": {"type": "string"}},
        "required": ["account_id"],
        "additionalProperties": False,
    },
)


def client(server: ChatServer, read_timeout_s: float = 30.0) -> OpenAIChatLLM:
    settings = ChatModelSettings(
        "test-model", server.base_url, "TEST_KEY", read_timeout_s=read_timeout_s
    )
    return OpenAIChatLLM(settings, KEY)


async def items_of(
    llm: OpenAIChatLLM, messages: Sequence[Message] = HELLO, tools: Sequence[ToolSpec] = ()
) -> list[StreamItem]:
    return [item async for item in llm.stream(messages, tools)]


def text_of(items: Sequence[StreamItem]) -> str:
    return "".join(item.text for item in items if isinstance(item, TextDelta))


async def test_text_streams_in_many_small_chunks() -> None:
    text = "Hello there. Your café bill is 3 €, and that's all!"
    reply = Reply(sse([*text_chunks(text, 2), chunk({}, "stop")]), piece_bytes=5)
    async with ChatServer.replying(reply) as server:
        items = await items_of(client(server))
    assert all(isinstance(item, TextDelta) for item in items)
    assert len(items) == len(range(0, len(text), 2))  # one delta per content chunk
    assert text_of(items) == text


async def test_two_parallel_tool_calls_assemble_across_chunks() -> None:
    payloads = [
        chunk({"role": "assistant", "content": None}),
        call_start(0, "call_a", "check_balance", '{"acc'),
        call_start(1, "call_b", "get_rates"),
        call_arguments(0, 'ount_id": "A-'),
        call_arguments(1, '{"currency": "E'),
        call_arguments(0, '17"}'),
        call_arguments(1, 'UR", "days": 3, "exact": tr'),
        call_arguments(1, "ue}"),
        chunk({}, "tool_calls"),
    ]
    async with ChatServer.replying(Reply(sse(payloads), piece_bytes=7)) as server:
        items = await items_of(client(server), tools=[BALANCE_TOOL])
    assert items == [
        ToolCall("call_a", "check_balance", {"account_id": "A-17"}),
        ToolCall("call_b", "get_rates", {"currency": "EUR", "days": 3, "exact": True}),
    ]


async def test_text_then_a_tool_call() -> None:
    payloads = [
        *text_chunks("Sure, one moment.", 4),
        call_start(0, "call_1", "check_balance"),
        call_arguments(0, '{"account_id"'),
        call_arguments(0, ': "B-42"}'),
        chunk({}, "tool_calls"),
    ]
    async with ChatServer.replying(Reply(sse(payloads), piece_bytes=11)) as server:
        items = await items_of(client(server), tools=[BALANCE_TOOL])
    deltas, calls = items[:-1], items[-1:]
    assert text_of(deltas) == "Sure, one moment."
    assert len(deltas) == 5
    assert calls == [ToolCall("call_1", "check_balance", {"account_id": "B-42"})]


async def test_the_server_gets_the_mapped_request() -> None:
    messages: list[Message] = [
        SystemMessage("You are a bank."),
        UserMessage("balance of A-17?"),
        AssistantMessage(
            "Let me look.", (ToolCall("call_1", "check_balance", {"account_id": "A-17"}),)
        ),
        ToolResultMessage("call_1", "check_balance", '{"balance": 1250.75}'),
        AssistantMessage("It is 1250.75."),
        UserMessage("thanks"),
    ]
    reply = Reply(sse([*text_chunks("Bye.", 10), chunk({}, "stop")]))
    async with ChatServer.replying(reply) as server:
        settings = ChatModelSettings(
            "test-model", server.base_url, "TEST_KEY", options={"temperature": 0.2, "stream": False}
        )
        await items_of(OpenAIChatLLM(settings, KEY), messages, [BALANCE_TOOL])
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.body["model"] == "test-model"
    assert request.body["stream"] is True  # an entry's options never switch streaming off
    assert request.body["temperature"] == 0.2
    assert request.body["messages"] == [
        {"role": "system", "content": "You are a bank."},
        {"role": "user", "content": "balance of A-17?"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "check_balance", "arguments": '{"account_id": "A-17"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"balance": 1250.75}'},
        {"role": "assistant", "content": "It is 1250.75."},
        {"role": "user", "content": "thanks"},
    ]
    assert request.body["tools"] == [
        {"type": "function", "function": BALANCE_TOOL.as_json()},
    ]


async def test_no_tools_and_no_key_leave_both_out() -> None:
    reply = Reply(sse([*text_chunks("Hi.", 10), chunk({}, "stop")]))
    async with ChatServer.replying(reply) as server:
        settings = ChatModelSettings("local", server.base_url, api_key_env="")
        await items_of(OpenAIChatLLM(settings))
    (request,) = server.requests
    assert "tools" not in request.body
    assert "Authorization" not in request.headers


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}, "API key was refused"),
        (429, {"error": {"message": "Rate limit reached for requests"}}, "Rate limit reached"),
        (500, {"error": {"message": "The server had an error"}}, "The server had an error"),
        (503, "upstream overloaded, try later", "upstream overloaded"),
        (400, {"error": {"message": "context too long"}}, "request was refused: context too"),
    ],
)
async def test_error_statuses_become_llm_errors(status: int, body: object, expected: str) -> None:
    text = body if isinstance(body, str) else json.dumps(body)
    kind = "text/plain" if isinstance(body, str) else "application/json"
    reply = Reply(text.encode(), status, kind)
    async with ChatServer(lambda body: reply) as server:  # the same answer to every retry
        with pytest.raises(LLMError) as raised:
            await items_of(client(server))
    message = str(raised.value)
    assert f"HTTP {status}" in message
    assert expected in message
    assert KEY not in message
    if status == 401:
        assert "[api key]" in message
        assert "$TEST_KEY" in message


async def test_a_connection_dropped_mid_stream_is_an_llm_error() -> None:
    broken = Reply(sse(text_chunks("Your balance", 4), done=False), abort=True)
    async with ChatServer.replying(broken) as server:
        received: list[StreamItem] = []

        async def consume() -> None:
            async for item in client(server).stream(HELLO, []):
                received.append(item)

        with pytest.raises(LLMError, match="chat/completions failed: "):
            await consume()
    assert text_of(received) == "Your balance"  # what came before the break was streamed


async def test_a_refused_connection_is_an_llm_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    llm = OpenAIChatLLM(ChatModelSettings("m", f"http://127.0.0.1:{port}/v1"), KEY)
    with pytest.raises(LLMError, match=rf"127\.0\.0\.1:{port}/v1/chat/completions failed"):
        await items_of(llm)


async def test_a_silent_server_times_out() -> None:
    async with ChatServer.replying(Reply(delay_headers=True)) as server:
        with pytest.raises(LLMError, match="timed out"):
            await items_of(client(server, read_timeout_s=0.2))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"data: {not json\n\n", "not JSON: {not json"),
        (b'data: ["a list"]\n\n', "stream chunk in the model's stream is not a JSON object"),
        (sse([chunk({"content": "Hi"})], done=False), "ended early"),
        (
            sse(
                [
                    call_start(0, "c1", "check_balance", '{"account_id": "A-1'),
                    chunk({}, "tool_calls"),
                ]
            ),
            "'check_balance' with arguments that are not valid JSON",
        ),
        (
            sse([call_start(0, "c1", "check_balance", '["A-17"]'), chunk({}, "tool_calls")]),
            "not a JSON object",
        ),
        (sse([call_arguments(0, "{}"), chunk({}, "tool_calls")]), "has no function name"),
        (sse(['{"error": {"message": "model overloaded"}}']), "mid-stream: model overloaded"),
        (
            sse([call_start(0, "c1", "check_balance", '{"acc'), chunk({}, "length")]),
            "output token limit",
        ),
        (sse([chunk({"content": "Well"}), chunk({}, "content_filter")]), "content filter"),
        (b"data: \xff\xfe\n\n", "not UTF-8"),
    ],
)
async def test_malformed_streams_become_llm_errors(body: bytes, expected: str) -> None:
    async with ChatServer.replying(Reply(body, piece_bytes=3)) as server:
        with pytest.raises(LLMError) as raised:
            await items_of(client(server), tools=[BALANCE_TOOL])
    assert expected in str(raised.value)


async def test_a_json_answer_instead_of_a_stream_is_explained() -> None:
    body = json.dumps({"choices": [{"message": {"content": "Hi"}}]}).encode()
    async with ChatServer.replying(Reply(body, content_type="application/json")) as server:
        with pytest.raises(LLMError, match="answered with JSON, not an event stream"):
            await items_of(client(server))


async def test_a_stream_without_done_but_with_a_finish_reason_is_complete() -> None:
    body = sse([*text_chunks("Fine.", 2), chunk({}, "stop")], done=False)
    async with ChatServer.replying(Reply(body)) as server:
        assert text_of(await items_of(client(server))) == "Fine."


async def test_a_cancelled_turn_drops_the_connection_at_once() -> None:
    endless = Reply(sse(text_chunks("Let me think ", 4), done=False), endless=True, pause=0.01)
    async with ChatServer.replying(endless) as server:
        received: list[StreamItem] = []
        got_text = asyncio.Event()

        async def consume() -> None:
            async with aclosing(client(server).stream(HELLO, [])) as stream:
                async for item in stream:
                    received.append(item)
                    if len(received) >= 6:
                        got_text.set()

        task = asyncio.create_task(consume())
        await got_text.wait()  # text arrives while the response is still streaming
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(server.disconnected.wait(), timeout=5)  # a deadline, not a measure
    assert server.completed == 0
    assert text_of(received).startswith("Let me think and ")


async def test_closing_the_generator_early_drops_the_connection() -> None:
    endless = Reply(sse(text_chunks("Hmm ", 4), done=False), endless=True, pause=0.01)
    async with ChatServer.replying(endless) as server:
        async with aclosing(client(server).stream(HELLO, [])) as stream:
            async for item in stream:
                assert item == TextDelta("Hmm ")
                break
        await asyncio.wait_for(server.disconnected.wait(), timeout=5)
    assert server.completed == 0
