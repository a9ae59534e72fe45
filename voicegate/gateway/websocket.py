"""The :class:`~voicegate.gateway.transport.Transport` over an aiohttp server-side WebSocket."""

from __future__ import annotations

from aiohttp import WebSocketError, WSMsgType, web

from voicegate.errors import RemoteProtocolError

#: RFC 6455 §5.5: a close frame's payload is at most 125 bytes, 2 of them the status code.
MAX_CLOSE_REASON_BYTES = 123


def close_reason(reason: str) -> bytes:
    """``reason`` as UTF-8 cut to fit a close frame, never in the middle of a character."""
    encoded = reason.encode("utf-8")[:MAX_CLOSE_REASON_BYTES]
    return encoded.decode("utf-8", errors="ignore").encode("utf-8")


class WebSocketTransport:
    """One accepted WebSocket as a message channel (text as ``str``, binary as ``bytes``)."""

    def __init__(self, socket: web.WebSocketResponse) -> None:
        self._socket = socket

    @property
    def closed(self) -> bool:
        """True once either side has closed the connection."""
        return self._socket.closed

    async def receive(self) -> str | bytes | None:
        """The next message, or None once the connection is closed."""
        if self._socket.closed:
            return None
        message = await self._socket.receive()
        match message.type:
            case WSMsgType.TEXT:
                return str(message.data)
            case WSMsgType.BINARY:
                return bytes(message.data)
            case WSMsgType.ERROR if isinstance(message.data, WebSocketError):
                # A malformed frame or an oversized message; aiohttp already closed the socket
                # with the matching code (e.g. 1009), this says why to the session.
                raise RemoteProtocolError(f"websocket: {message.data}")
        return None  # CLOSE, CLOSING, CLOSED, or the connection was lost

    async def send(self, message: str | bytes) -> None:
        """Send one frame; a no-op once the connection is closed or lost."""
        if self._socket.closed:
            return
        try:
            if isinstance(message, str):
                await self._socket.send_str(message)
            else:
                await self._socket.send_bytes(message)
        except ConnectionError:
            # The peer vanished mid-send; the next receive() reports the end of the call.
            return

    async def close(self, code: int, reason: str) -> None:
        """Close with a status code and a reason (the first close wins; later ones are no-ops)."""
        if not self._socket.closed:
            await self._socket.close(code=code, message=close_reason(reason))
