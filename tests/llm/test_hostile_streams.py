"""The chat client against an endpoint that stalls, never finishes, or floods (a real server).

Every case must end: with the answer, or with an LLMError that says why, and with the
connection dropped so the server stops too. ``asyncio.wait_for`` bounds each case only so that
a regression fails instead of hanging the suite; no test measures time.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

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
from voicegate.engine.llm.openai_chat.client import MAX_BODY_BYTES, MAX_IDLE_BYTES
from voicegate.engine.llm.openai_chat.deltas import MAX_TOOL_CALLS, MAX_TOOL_CHARS
from voicegate.engine.llm.openai_chat.sse import MAX_EVENT_BYTES
from voicegate.engine.llm.port import StreamItem, TextDelta, ToolCall, UserMessage
from voicegate.engine.llm.selection import ChatModelSettings
from voicegate.errors import LLMError
from voicegate.retry import RetryPolicy

HELLO = [UserMessage("hello")]
#: Generous: a regression hangs; a pass takes a fraction of a second.
DEADLINE_S = 20.0
FAST = RetryPolicy(attempts=2, base_s=0.01, max_s=0.02, budget_s=5.0, rng=random.Random(3))


def client(server: ChatServer, read_timeout_s: float = 30.0) -> OpenAIChatLLM:
    settings = ChatModelSettings("m", server.base_url, "", read_timeout_s=read_timeout_s)
    return OpenAIChatLLM(settings, retry=FAST)


async def items_of(llm: OpenAIChatLLM) -> list[StreamItem]:
    async def collect() -> list[StreamItem]:
        return [item async for item in llm.stream(HELLO, ())]

    return await asyncio.wait_for(collect(), DEADLINE_S)


def text_of(items: Sequence[StreamItem]) -> str:
    return "".join(item.text for item in items if isinstance(item, TextDelta))


async def test_a_finished_answer_on_a_connection_held_open_ends_without_waiting() -> None:
    # finish_reason came, then neither [DONE] nor the end of the body: the answer is whole.
    payloads = [
        *text_chunks("One moment.", 4),
        call_start(0, "call_1", "check_balance", '{"account_id": "A-17"}'),
        chunk({}, "tool_calls"),
    ]
    held = Reply(sse(payloads, done=False), hold=True)
    async with ChatServer.replying(held) as server:
        items = await items_of(client(server, read_timeout_s=15.0))
        await asyncio.wait_for(server.disconnected.wait(), DEADLINE_S)
    assert text_of(items) == "One moment."
    assert items[-1] == ToolCall("call_1", "check_balance", {"account_id": "A-17"})


@pytest.mark.parametrize(
    "filler",
    [
        b": keep-alive\n\n",  # SSE comments, as proxies send
        sse([chunk({"content": ""})], done=False),  # empty deltas
        sse([chunk({"role": "assistant"})], done=False),  # role-only chunks
        sse(['{"id": "x", "choices": []}'], done=False),  # chunks without choices
        b"<p>still loading</p>\n",  # not an event stream at all
    ],
    ids=["comments", "empty-deltas", "role-only", "no-choices", "html"],
)
async def test_a_stream_of_nothing_times_out_and_drops_the_connection(filler: bytes) -> None:
    # Bytes keep coming, so no socket timeout fires; nothing in them is an answer.
    stalled = Reply(sse(text_chunks("Let me see. ", 4), done=False), endless=True, filler=filler)
    async with ChatServer.replying(stalled) as server:
        received: list[StreamItem] = []

        async def consume() -> None:
            async for item in client(server, read_timeout_s=0.5).stream(HELLO, ()):
                received.append(item)

        with pytest.raises(LLMError, match="timed out"):
            await asyncio.wait_for(consume(), DEADLINE_S)
        await asyncio.wait_for(server.disconnected.wait(), DEADLINE_S)
    assert text_of(received) == "Let me see. "  # what came before the stall was streamed
    assert server.completed == 0


async def test_a_flood_of_padding_is_refused_long_before_the_read_timeout() -> None:
    padding = sse(['{"choices": [], "padding": "' + "x" * 60_000 + '"}'] * 16, done=False)
    flood = Reply(sse(text_chunks("Hm. ", 4), done=False), endless=True, filler=padding)
    flood.pause = 0.001
    async with ChatServer.replying(flood) as server:
        with pytest.raises(LLMError, match=f"over {MAX_IDLE_BYTES} bytes with no text"):
            await items_of(client(server, read_timeout_s=60.0))
        await asyncio.wait_for(server.disconnected.wait(), DEADLINE_S)


async def test_padding_beside_each_piece_of_text_is_bounded_too() -> None:
    padded = chunk({"content": "a"})[:-1] + ', "padding": "' + "x" * 60_000 + '"}'
    flood = Reply(b"", endless=True, filler=sse([padded] * 16, done=False), pause=0.001)
    async with ChatServer.replying(flood) as server:
        with pytest.raises(LLMError, match=f"response passed {MAX_BODY_BYTES} bytes"):
            await items_of(client(server))
        await asyncio.wait_for(server.disconnected.wait(), DEADLINE_S)


async def test_an_answer_that_keeps_streaming_is_not_cut_by_the_read_timeout() -> None:
    # Each piece comes within the timeout, the whole answer takes longer than it.
    payloads = [*text_chunks("Fine, thanks.", 1), chunk({}, "stop")]
    slow = Reply(sse(payloads), piece_bytes=len(sse(payloads)) // len(payloads) + 1, pause=0.1)
    async with ChatServer.replying(slow) as server:
        items = await items_of(client(server, read_timeout_s=0.8))
    assert text_of(items) == "Fine, thanks."


async def test_an_event_that_never_ends_is_refused() -> None:
    # data: lines, each short, and never the blank line that ends the event.
    endless = Reply(b"", endless=True, filler=b"data: " + b"x" * 4000 + b"\n", pause=0.001)
    async with ChatServer.replying(endless) as server:
        with pytest.raises(LLMError, match=f"event longer than {MAX_EVENT_BYTES} bytes"):
            await items_of(client(server))
        await asyncio.wait_for(server.disconnected.wait(), DEADLINE_S)


async def test_an_endless_tool_argument_is_refused() -> None:
    start = sse([call_start(0, "call_1", "check_balance", '{"note": "')], done=False)
    more = sse([call_arguments(0, "blah " * 400)], done=False)
    endless = Reply(start, endless=True, filler=more, pause=0.001)
    async with ChatServer.replying(endless) as server:
        with pytest.raises(LLMError, match=f"passed {MAX_TOOL_CHARS} characters"):
            await items_of(client(server))
        await asyncio.wait_for(server.disconnected.wait(), DEADLINE_S)


async def test_too_many_parallel_tool_calls_are_refused() -> None:
    calls = [call_start(i, f"call_{i}", "check_balance", "{}") for i in range(MAX_TOOL_CALLS + 1)]
    async with ChatServer.replying(Reply(sse([*calls, chunk({}, "tool_calls")]))) as server:
        with pytest.raises(LLMError, match=f"more than {MAX_TOOL_CALLS} tool calls"):
            await items_of(client(server))


async def test_a_tool_call_index_that_jumps_keeps_both_calls_in_order() -> None:
    payloads = [
        call_start(7, "call_b", "second", '{"n": '),
        call_start(0, "call_a", "first", "{}"),
        call_arguments(7, "2}"),
        chunk({}, "tool_calls"),
    ]
    async with ChatServer.replying(Reply(sse(payloads), piece_bytes=13)) as server:
        items = await items_of(client(server))
    assert items == [ToolCall("call_a", "first", {}), ToolCall("call_b", "second", {"n": 2})]


@pytest.mark.parametrize("retry_after", ["-3", "soon", "1e9"])
async def test_a_retry_after_that_makes_no_sense_falls_back_to_the_backoff(
    retry_after: str,
) -> None:
    busy = Reply(b"busy", 429, "text/plain", headers={"Retry-After": retry_after})
    answer = Reply(sse([*text_chunks("Hi.", 3), chunk({}, "stop")]))
    async with ChatServer.replying(busy, answer) as server:
        assert text_of(await items_of(client(server))) == "Hi."
    assert len(server.requests) == 2


async def test_a_redirect_is_not_followed() -> None:
    # An endpoint must not send the request (and its key) somewhere else.
    moved = Reply(b"", 307, "text/plain", headers={"Location": "http://127.0.0.1:1/v1/x"})
    async with ChatServer.replying(moved) as server:
        with pytest.raises(LLMError, match="HTTP 307"):
            await items_of(client(server))
    assert len(server.requests) == 1


async def test_an_html_page_instead_of_a_stream_is_an_error() -> None:
    page = b"<html><body><h1>502 Bad Gateway</h1>\n<p>nginx</p></body></html>\n"
    async with ChatServer.replying(Reply(page, content_type="text/html")) as server:
        with pytest.raises(LLMError, match="ended early"):
            await items_of(client(server))


async def test_an_answer_with_no_content_at_all_is_empty() -> None:
    async with ChatServer.replying(Reply(sse([chunk({}, "stop")]))) as server:
        assert await items_of(client(server)) == []


async def test_tool_arguments_sent_as_an_object_reach_the_tool() -> None:
    piece = {"index": 0, "id": "c1", "function": {"name": "activate", "arguments": {"n": 1}}}
    payloads = [chunk({"tool_calls": [piece]}), chunk({}, "tool_calls")]
    async with ChatServer.replying(Reply(sse(payloads))) as server:
        assert await items_of(client(server)) == [ToolCall("c1", "activate", {"n": 1})]


def impatient(base_url: str) -> OpenAIChatLLM:
    """A client that gives the headers and an error body 0.2 + 0.5 + 0.1 s in all."""
    settings = ChatModelSettings("m", base_url, "", connect_timeout_s=0.2, read_timeout_s=0.5)
    return OpenAIChatLLM(settings, retry=RetryPolicy(attempts=1, budget_s=0.1))


async def test_an_error_body_trickled_a_byte_at_a_time_times_out() -> None:
    trickle = Reply(b"x" * 4096, 400, "text/plain", piece_bytes=1, pause=0.05)
    async with ChatServer.replying(trickle) as server:
        with pytest.raises(LLMError, match="timed out"):
            await asyncio.wait_for(items_of(impatient(server.base_url)), DEADLINE_S)
        await asyncio.wait_for(server.disconnected.wait(), DEADLINE_S)


async def test_headers_trickled_a_byte_at_a_time_time_out() -> None:
    gone = asyncio.Event()

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        try:
            while True:  # one byte of a header that never ends, until the client leaves
                writer.write(b"a")
                await writer.drain()
                await asyncio.sleep(0.02)
        except ConnectionError:
            gone.set()
        finally:
            writer.close()

    server = await asyncio.start_server(trickle, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(LLMError, match="timed out"):
            await asyncio.wait_for(items_of(impatient(f"http://127.0.0.1:{port}/v1")), DEADLINE_S)
        await asyncio.wait_for(gone.wait(), DEADLINE_S)  # the client dropped the connection
