"""Noticing that a server's side of a transport has ended, between two calls.

A stdio server that dies while idle closes its stdout; the ``mcp`` client then fails the next
request with "Connection closed" without saying the session is gone. Wrapping the transport's
read stream lets a connection see the end of the stream itself and open a new session before
the next call instead of failing it (the call that was in flight still fails: it may have run).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import Any, Self

import anyio

#: Read and write streams, as an ``mcp`` transport yields them.
Streams = tuple[Any, Any]


class EndWatchingStream:
    """A transport's read stream that calls ``on_end`` when the stream ends or is closed."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        """The sender's context snapshot, when the wrapped stream keeps one (mcp duck-types it)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        """The next message; the end of the stream is reported, then raised as usual."""
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Close the wrapped stream."""
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


@asynccontextmanager
async def watched(
    transport: AbstractAsyncContextManager[Streams], on_end: Callable[[], None]
) -> AsyncIterator[Streams]:
    """``transport`` whose read stream reports its end through ``on_end``."""
    async with transport as (read_stream, write_stream):
        yield EndWatchingStream(read_stream, on_end), write_stream
