"""The seam between the server (sockets) and a call session (protocol and dialogue).

The server adapts each accepted WebSocket to a :class:`Transport` and hands it, with a fresh
codec for the route's dialect, to a :class:`CallRunner`, which runs the call to its end. The
session never sees aiohttp; tests and the replay tool can drive a session over any transport.
"""

from __future__ import annotations

from typing import Protocol

from voicegate.codecs import Codec

#: WebSocket close codes (RFC 6455 §7.4.1) the gateway uses.
CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001  # the gateway is shutting down
CLOSE_PROTOCOL_ERROR = 1002  # the peer sent a malformed message (RemoteProtocolError)
CLOSE_INTERNAL_ERROR = 1011  # the call crashed; other calls are untouched
CLOSE_TRY_AGAIN_LATER = 1013  # the gateway is at capacity


class Transport(Protocol):
    """One peer's message channel: text frames as ``str``, binary frames as ``bytes``."""

    async def receive(self) -> str | bytes | None:
        """The next message, or None once the peer has closed the connection."""
        ...

    async def send(self, message: str | bytes) -> None:
        """Send one message (a no-op once the connection is closed)."""
        ...

    async def close(self, code: int, reason: str) -> None:
        """Close the connection with a WebSocket close code and a human-readable reason."""
        ...


class CallRunner(Protocol):
    """Runs one call over a transport with a codec until the call ends."""

    async def __call__(self, transport: Transport, codec: Codec) -> None:
        """Return when the call is over; raise only for a bug (the server logs and closes)."""
        ...
