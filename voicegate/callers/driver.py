"""Drive an emulated caller over a real WebSocket, paced on its media clock.

The caller ticks every 20 ms of media time; ``speed`` divides the wall-clock pause between
ticks (speed 4 replays a 60 s call in 15 s). Gateway messages are taken as they arrive, so
marks and clears are answered the way the provider would answer them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol


class EmulatedCaller(Protocol):
    """A provider emulation: opening messages, a tick per 20 ms, answers to gateway messages."""

    @property
    def now_ms(self) -> int:
        """Media time of the next tick."""
        ...

    def opening(self) -> list[str]:
        """Messages that open the stream."""
        ...

    def tick(self) -> list[str | bytes]:
        """Advance 20 ms of media time."""
        ...

    def receive(self, message: str | bytes) -> list[str]:
        """Take a gateway message; messages to send back at once."""
        ...

    def closing(self) -> str | None:
        """The message that ends the stream (None: the provider just closes the socket)."""
        ...

    def finished(self, deadline_ms: int) -> bool:
        """Nothing more to say or hear."""
        ...


@dataclass(frozen=True, slots=True)
class Closed:
    """How the connection ended: the close code (None without a close frame) and reason."""

    code: int | None
    reason: str


async def drive(
    url: str,
    caller: EmulatedCaller,
    *,
    speed: float = 1.0,
    max_ms: int = 60_000,
    subprotocols: Sequence[str] = (),
    headers: Mapping[str, str] | None = None,
    unix_path: str | None = None,
) -> int | None:
    """Run one call to its end; the WebSocket close code (None if it never closed cleanly).

    ``subprotocols``: what the provider asks for in its upgrade (Jambonz's audio.jambonz.org);
    credentials in the URL's user-info go as HTTP Basic (Exotel, Jambonz wsAuth); ``headers``
    are added to the upgrade (Genesys's ids, API key and signature). With ``unix_path`` the
    WebSocket for ``url`` goes over that Unix socket (virtual-time replays).
    """
    closed = await drive_to_close(
        url,
        caller,
        speed=speed,
        max_ms=max_ms,
        subprotocols=subprotocols,
        headers=headers,
        unix_path=unix_path,
    )
    return closed.code


async def drive_to_close(
    url: str,
    caller: EmulatedCaller,
    *,
    speed: float = 1.0,
    max_ms: int = 60_000,
    subprotocols: Sequence[str] = (),
    headers: Mapping[str, str] | None = None,
    unix_path: str | None = None,
) -> Closed:
    """:func:`drive`, keeping the close reason too: over a telephone dialect it is all the
    caller learns of why a gateway ended a call (a broken limit, a refusal)."""
    offered = [Subprotocol(name) for name in subprotocols] or None
    extra = dict(headers) if headers else None
    options: dict[str, Any] = {
        "max_size": 2**20,
        "subprotocols": offered,
        "additional_headers": extra,
    }
    opened = unix_connect(unix_path, url, **options) if unix_path else connect(url, **options)
    async with opened as socket:
        for message in caller.opening():
            await socket.send(message)
        async with asyncio.TaskGroup() as tasks:
            listener = tasks.create_task(_listen(socket, caller))
            await _speak(socket, caller, speed=speed, max_ms=max_ms, listener=listener)
            if not listener.done():
                if (closing := caller.closing()) is not None:
                    # The gateway may hang up in the same instant (the agent's goodbye): its
                    # close then ended the call, and the listener reports it.
                    with contextlib.suppress(ConnectionClosed):
                        await socket.send(closing)
                await socket.close()
        return listener.result()


async def _speak(
    socket: ClientConnection,
    caller: EmulatedCaller,
    *,
    speed: float,
    max_ms: int,
    listener: asyncio.Task[Closed],
) -> None:
    # The loop's clock, not time.monotonic: on a virtual-time loop the caller's 20 ms ticks
    # are virtual too, and the whole call runs on one timeline (clock/virtual.py).
    loop = asyncio.get_running_loop()
    started = loop.time()
    while not caller.finished(max_ms) and not listener.done():
        for message in caller.tick():
            try:
                await socket.send(message)
            except ConnectionClosed:
                return
        due = started + caller.now_ms / 1000 / speed
        await asyncio.sleep(max(0.0, due - loop.time()))


async def _listen(socket: ClientConnection, caller: EmulatedCaller) -> Closed:
    """Answer gateway messages until the connection closes; how it closed."""
    try:
        async for message in socket:
            for answer in caller.receive(message):
                await socket.send(answer)
    except ConnectionClosed:
        pass
    return Closed(socket.close_code, socket.close_reason or "")
