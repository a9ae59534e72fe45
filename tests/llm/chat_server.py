"""A local HTTP server that speaks the Chat Completions streaming protocol, for the tests.

It records every request (headers and JSON body) and answers each with a :class:`Reply`:
a status, a body written in pieces of a chosen size (so SSE lines, JSON and UTF-8 characters
are cut anywhere), optionally paced, optionally endless (text chunks until the client goes
away). It notes when a client drops the connection in the middle of a response.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from aiohttp import web


def chunk(delta: Mapping[str, Any], finish_reason: str | None = None, index: int = 0) -> str:
    """One ``chat.completion.chunk`` payload."""
    choice = {"index": index, "delta": dict(delta), "finish_reason": finish_reason}
    return json.dumps(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "test-model",
            "choices": [choice],
        }
    )


def text_chunks(text: str, size: int) -> list[str]:
    """``text`` as content deltas of ``size`` characters, the first one carrying the role."""
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    return [chunk({"role": "assistant", "content": ""})] + [
        chunk({"content": piece}) for piece in pieces
    ]


def call_start(index: int, call_id: str, name: str, arguments: str = "") -> str:
    """The first piece of a tool call: its id and name (and maybe the start of its arguments)."""
    piece = {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    return chunk({"tool_calls": [piece]})


def call_arguments(index: int, fragment: str) -> str:
    """A later piece of a tool call: a fragment of its arguments string."""
    return chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})


def sse(payloads: Iterable[str], done: bool = True) -> bytes:
    """Payloads as server-sent events, ended by ``data: [DONE]``."""
    body = "".join(f"data: {payload}\n\n" for payload in payloads)
    return (body + ("data: [DONE]\n\n" if done else "")).encode()


@dataclass
class Reply:
    """How the server answers one request."""

    body: bytes = b""
    status: int = 200
    content_type: str = "text/event-stream"
    piece_bytes: int = 0  # write the body in pieces this big (0: at once)
    pause: float = 0.0  # seconds between pieces
    endless: bool = False  # after the body, stream text chunks until the client goes away
    delay_headers: bool = False  # hold the response back until the server closes
    abort: bool = False  # after the body, drop the connection instead of ending the response
    think_s: float = 0.0  # seconds before the headers (a slow first token), unless dropped
    hold: bool = False  # after the body, keep the response open until the client goes away
    filler: bytes = b""  # what an endless reply repeats (default: a text chunk "and ")
    headers: Mapping[str, str] = field(default_factory=dict)  # e.g. Retry-After


@dataclass
class Recorded:
    """A request the server got."""

    headers: Mapping[str, str]
    body: dict[str, Any]
    path: str


@dataclass
class ChatServer:
    """Answers ``POST /v1/chat/completions`` with the replies ``answer`` picks."""

    answer: Callable[[dict[str, Any]], Reply]
    requests: list[Recorded] = field(default_factory=list)
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)
    requested: asyncio.Event = field(default_factory=asyncio.Event)  # a request came in
    completed: int = 0  # responses written to their end
    _closing: asyncio.Event = field(default_factory=asyncio.Event)
    _runner: web.AppRunner | None = None
    port: int = 0

    @classmethod
    def replying(cls, *replies: Reply) -> ChatServer:
        """A server answering its n-th request with the n-th reply."""
        queue = list(replies)
        return cls(lambda body: queue.pop(0))

    @property
    def base_url(self) -> str:
        """The ``api_base`` to give the client."""
        return f"http://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(Recorded(dict(request.headers), body, request.path))
        self.requested.set()
        reply = self.answer(body)
        if reply.delay_headers:
            await self._closing.wait()
        if reply.think_s and await self._dropped(request, reply.think_s):
            self.disconnected.set()
            return web.Response()
        response = web.StreamResponse(status=reply.status, headers=dict(reply.headers))
        response.content_type = reply.content_type
        await response.prepare(request)
        try:
            await self._write(response, reply)
            if reply.abort and request.transport is not None:
                request.transport.close()
                return response
            if reply.hold and await self._dropped(request, float("inf")):
                self.disconnected.set()
                return response
            await response.write_eof()
        except ConnectionResetError:  # the client went away mid-response
            self.disconnected.set()
            return response
        except asyncio.CancelledError:  # aiohttp cancelled the handler on the drop
            self.disconnected.set()
            raise
        self.completed += 1
        return response

    async def _write(self, response: web.StreamResponse, reply: Reply) -> None:
        size = reply.piece_bytes or max(len(reply.body), 1)
        for start in range(0, len(reply.body), size):
            await response.write(reply.body[start : start + size])
            await asyncio.sleep(reply.pause)
        filler = reply.filler or sse([chunk({"content": "and "})], done=False)
        while reply.endless and not self._closing.is_set():
            await response.write(filler)
            await asyncio.sleep(reply.pause or 0.01)

    async def _dropped(self, request: web.Request, seconds: float) -> bool:
        """Wait up to ``seconds`` (or until the server closes); whether the client went away.

        aiohttp does not cancel a handler when its client leaves, so the socket is looked at.
        """
        loop = asyncio.get_running_loop()
        until = loop.time() + seconds
        while loop.time() < until and not self._closing.is_set():
            if request.transport is None or request.transport.is_closing():
                return True
            await asyncio.sleep(0.02)
        return False
