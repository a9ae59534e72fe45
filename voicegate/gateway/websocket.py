"""The :class:`~voicegate.gateway.transport.Transport` over an aiohttp server-side WebSocket.

aiohttp 3.14 leaves two RFC 6455 duties undone on the server side, which
:class:`GatewayWebSocket` adds:

- closes it makes itself (1002 bad frame, 1007 invalid UTF-8, 1009 too big) carry no reason;
  here they carry the parser's own message (RFC 6455 §7.1.6 allows a reason on every close);
- it answers a peer's close frame with 1000 whatever its code. RFC 6455 §7.4.1 forbids
  1005, 1006 and 1015 in a close frame and §7.4.2 defines no code below 1000 or from 5000 up;
  aiohttp fails most such closes with 1002 (999, 1004, 1005, 1015, 2999), as the Autobahn
  test suite expects of a server (its case 7.9), but takes 1006 and everything from 5000 up:
  those get 1002 here too, and the call records the protocol error;
- it accepts unmasked client frames; RFC 6455 §5.1 says a server MUST close the connection
  on one. aiohttp's reader has no switch for it, so a small scanner in front of the reader
  follows frame boundaries and fails the first unmasked frame with 1002. The scanner is
  installed through ``_post_start``, aiohttp's private hook (checked by
  tests/server/test_ingress_frames.py).

Its close waits for everything queued before the close frame to be sent, without a bound:
behind a peer that reads nothing (so the kernel's and asyncio's send buffers are full) the
call never ended, and asyncio kept the socket open as long as data waited in its buffer. Such
a connection is failed instead (RFC 6455 §7.1.7: the TCP connection dropped), since no close
frame could reach the peer anyway; a closed connection still holding unsent data is dropped
at once for the same reason.

aiohttp answers every ping inside ``receive()``, without yielding while pings are buffered
and without any limit: one socket flooding empty pings made the event loop, every call's media
with it, late by 0.53 s at the 99th percentile of a 10 ms ticker (median of three runs; 90 ms
with 125-byte pings), and a pong to a peer that had just left raised out of ``receive()``, so
the call was logged as crashed (1011). Here a peer's pings share a token bucket with the
limits of other messages without audio (``limits.control_messages_per_s``; a flood ends the
call with 1008), and a pong that finds the peer gone leaves the next read to report the lost
connection. The same flood now costs 68 ms (40 ms) at the 99th percentile: the closing
handshake still reads, and drops, what the peer sends for up to its 5 s timeout.

It also makes aiohttp's heartbeat cheap per message. aiohttp re-arms the ping timer after
every read, through a ``call_soon`` and a timer computation, on every frame of every call:
2-8 µs of the server's 30-40 µs per media message with it on against off (100 connections
each sending 50 messages a second, three alternating runs). Here a read only sets a flag; the
timer, when it fires, sends no ping if anything came in since the last one, and when a ping's
answer is due, any data that came in (the pong included) keeps the connection: 1.8-3 µs less
per message than aiohttp's own in three of four alternating runs (median ~2 µs, ~6 %). A
half-open peer is dropped as before, after at most two and a half heartbeats of silence
instead of one and a half.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import WebSocketError, WSCloseCode, WSMsgType, web
from aiohttp._websocket.reader import WebSocketDataQueue, WebSocketReader
from aiohttp.helpers import DEFAULT_CHUNK_SIZE
from aiohttp.http import WS_CLOSED_MESSAGE

from voicegate.errors import PolicyViolationError, RemoteProtocolError
from voicegate.gateway.ratelimit import TokenBucket
from voicegate.gateway.transport import CLOSE_ABNORMAL, CONNECTION_LOST

#: RFC 6455 §5.5: a close frame's payload is at most 125 bytes, 2 of them the status code.
MAX_CLOSE_REASON_BYTES = 123
UNMASKED_FRAME = "client frame not masked (RFC 6455 section 5.1)"
#: Said when a library-made close has no message of its own.
_LIBRARY_REASONS = {
    WSCloseCode.PROTOCOL_ERROR: "malformed WebSocket frame",
    WSCloseCode.INVALID_TEXT: "text frame is not valid UTF-8",
    WSCloseCode.MESSAGE_TOO_BIG: "message too big",
}


#: Codes a peer may put in a close frame below 3000 (RFC 6455 §7.4.1 and the IANA registry
#: it opens; 1004 is reserved, 1005, 1006 and 1015 must never be sent). 0 is aiohttp's value
#: for a close frame without a code, which §5.5.1 allows.
_SENDABLE_CLOSE_CODES = frozenset({0, *range(1000, 1004), *range(1007, 1015)})


def close_code_valid(code: int) -> bool:
    """Whether a peer may close with ``code`` (RFC 6455 §7.4): else it fails with 1002."""
    return code in _SENDABLE_CLOSE_CODES or 3000 <= code <= 4999


def invalid_close_code(code: int) -> str:
    """The reason a close with ``code`` is failed (aiohttp's words for the codes it refuses)."""
    return f"Invalid close code: {code}"


def close_reason(reason: str) -> bytes:
    """``reason`` as printable UTF-8 cut to fit a close frame, never mid-character.

    Peer text can hold lone surrogates or control characters (issue 15 #2): both are
    replaced, so any reason can be sent.
    """
    printable = "".join(c if c.isprintable() else "?" for c in reason[:MAX_CLOSE_REASON_BYTES])
    encoded = printable.encode("utf-8", errors="replace")[:MAX_CLOSE_REASON_BYTES]
    return encoded.decode("utf-8", errors="ignore").encode("utf-8")


class MaskScanner:
    """Follows client frame boundaries and reports the first unmasked frame (RFC 6455 §5.1)."""

    def __init__(self) -> None:
        self._skip = 0  # payload (and mask) bytes of the current frame still to pass
        self._header = b""  # a frame header split across reads

    def scan(self, data: bytes) -> bool:
        """Account for ``data``; False once a frame without the mask bit starts."""
        if not self._skip and not self._header and _one_masked_frame(data):
            return True  # the usual read: one whole frame (a provider's 20 ms media message)
        pos = min(self._skip, len(data))
        self._skip -= pos
        if self._header:
            data, pos, self._header = self._header + data[pos:], 0, b""
        size = len(data)
        while pos < size:
            second = data[pos + 1] if size - pos >= 2 else None
            if second is None:
                self._header = data[pos:]
                return True
            if not second & 0x80:
                return False
            frame = _frame_size(data, pos, second & 0x7F)
            if frame is None:
                self._header = data[pos:]
                return True
            if size - pos < frame:
                self._skip = frame - (size - pos)
                return True
            pos += frame
        return True


def _one_masked_frame(data: bytes) -> bool:
    """Whether ``data`` is exactly one masked frame of under 64 KiB, start to end.

    What nearly every read of a media stream holds: checked in a few operations instead of
    the general walk (one read per 20 ms frame per call, issue 12).
    """
    size = len(data)
    if size < 6 or not data[1] & 0x80:
        return False
    length = data[1] & 0x7F
    if length < 126:
        return size == 6 + length
    return length == 126 and size >= 8 and size == 8 + int.from_bytes(data[2:4], "big")


#: Extra length bytes after the 7-bit length field's marker values (RFC 6455 §5.2).
_EXTENDED_LENGTH_BYTES = {126: 2, 127: 8}


def _frame_size(data: bytes, pos: int, length: int) -> int | None:
    """A masked frame's total size from its header at ``pos``, or None if cut short."""
    extra = _EXTENDED_LENGTH_BYTES.get(length, 0)
    if len(data) - pos < 2 + extra:
        return None
    if extra:
        length = int.from_bytes(data[pos + 2 : pos + 2 + extra], "big")
    return 2 + extra + 4 + length


class _MaskedOnly:
    """aiohttp's frame reader behind a :class:`MaskScanner`."""

    def __init__(self, reader: Any, queue: WebSocketDataQueue) -> None:
        self._reader = reader
        self._queue = queue
        self._scanner = MaskScanner()
        self._failed = False

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        """Pass ``data`` on, or fail the connection at an unmasked frame."""
        if self._failed:
            return True, b""
        if not self._scanner.scan(bytes(data)):
            self._failed = True
            self._queue.set_exception(WebSocketError(WSCloseCode.PROTOCOL_ERROR, UNMASKED_FRAME))
            return True, b""
        result: tuple[bool, bytes] = self._reader.feed_data(data)
        return result

    def feed_eof(self) -> None:
        """The peer closed the TCP connection."""
        self._reader.feed_eof()


class GatewayWebSocket(web.WebSocketResponse):
    """aiohttp's WebSocket response that refuses unmasked frames and explains its closes."""

    _data_seen = False  # anything read since the heartbeat last looked
    _wire: asyncio.Transport | None = None  # the TCP connection, once upgraded
    _pings: tuple[TokenBucket, str] | None = None  # the peer's pings, and the flood's reason

    def limit_pings(self, per_s: float, burst: int) -> None:
        """Let the peer ping ``per_s`` times a second, ``burst`` at once; more ends the call."""
        loop = asyncio.get_running_loop()
        reason = (
            f"more than {burst} pings at once, or over {per_s:g} a second"
            " (limits.control_messages_per_s)"
        )
        self._pings = TokenBucket(per_s, burst, loop.time()), reason

    async def pong(self, message: bytes = b"") -> None:
        """Answer a peer's ping (aiohttp's ``receive()`` calls this for each one)."""
        if self._pings is not None and self._loop is not None:
            bucket, reason = self._pings
            if not bucket.take(self._loop.time()):
                raise PolicyViolationError(reason)  # out of receive(): the call ends, 1008
        try:
            await super().pong(message)
        except ConnectionError:
            return  # the peer is gone: the next read reports the lost connection

    def _on_data_received(self) -> None:
        # aiohttp calls this on every read while a heartbeat is set (its own re-arms the timer).
        self._data_seen = True

    def _send_heartbeat(self) -> None:
        if not self._data_seen:
            super()._send_heartbeat()  # a ping, and the pong's deadline
            return
        self._data_seen = False
        self._heartbeat_cb = None  # this timer has fired: aiohttp's reset arms the next one
        self._reset_heartbeat()

    def _pong_not_received(self) -> None:
        if not self._data_seen:
            super()._pong_not_received()  # silent since the ping: half-open, dropped
            return
        self._data_seen = False
        self._reset_heartbeat()  # clears the fired pong deadline, arms the next heartbeat

    def _post_start(self, request: Any, protocol: str | None, writer: Any) -> None:
        # aiohttp's own _post_start (3.14), with the scanner put in front of the frame reader
        # before any byte after the handshake is parsed. Private API: pinned by the test.
        self._ws_protocol = protocol
        self._writer = writer
        self._reset_heartbeat()
        assert self._loop is not None
        self._reader = WebSocketDataQueue(request._protocol, DEFAULT_CHUNK_SIZE, loop=self._loop)
        self._parser = WebSocketReader(
            self._reader,
            self._max_msg_size,
            compress=bool(self._compress),
            decode_text=self._decode_text,
        )
        callback = None if self._heartbeat is None else self._on_data_received
        guarded = _MaskedOnly(self._parser, self._reader)
        request.protocol.set_parser(guarded, data_received_cb=callback)
        request.protocol.keep_alive(False)  # no HTTP keep-alive on a WebSocket
        self._wire = request.transport

    async def close(self, *, code: int = 1000, message: bytes = b"", drain: bool = True) -> bool:
        """Close, waiting for the peer's close frame; a close aiohttp makes on a bad frame
        says what was wrong."""
        if self._writer is None and self._payload_writer is not None:
            # The peer left while the 101 was being written (prepare raised ConnectionError,
            # server.py returns this response): no WebSocket to close. aiohttp's own close
            # raises RuntimeError here, which its server logged as an unhandled error.
            return False
        if not message and code in _LIBRARY_REASONS:
            message = close_reason(self._library_reason(code))
        if not message and (peer := self._invalid_peer_close()) is not None:
            code, message = WSCloseCode.PROTOCOL_ERROR, invalid_close_code(peer).encode()
        if self.peer_reads_nothing():
            return self._fail_connection()
        await self._stop_other_reader()
        closed = await super().close(code=code, message=message, drain=drain)
        if self._wire is not None and self._wire.get_write_buffer_size():
            self._wire.abort()  # closed, but asyncio would hold it open until the peer reads
        return closed

    def peer_reads_nothing(self) -> bool:
        """Whether more than the high-water mark waits to be sent: the peer stopped reading."""
        wire = self._wire
        if wire is None or wire.is_closing():
            return False
        return wire.get_write_buffer_size() > wire.get_write_buffer_limits()[1]

    def _fail_connection(self) -> bool:
        """Drop the TCP connection without a closing handshake (RFC 6455 §7.1.7).

        aiohttp's close would wait for the unread data to drain, forever; worse, the drain
        waiter it shares may be one a cancelled send left cancelled, which raised
        CancelledError into the call closing it (recorded as "call cancelled").
        """
        assert self._wire is not None
        self._set_closed()
        self._close_code = WSCloseCode.ABNORMAL_CLOSURE
        self._wire.abort()
        return True

    def _invalid_peer_close(self) -> int | None:
        """The peer's close code when this close answers one no peer may send (RFC 6455 §7.4)."""
        peer = self.close_code  # set to the peer's code by aiohttp before its automatic answer
        if self._closing and peer is not None and not close_code_valid(peer):
            return peer
        return None

    async def _stop_other_reader(self) -> None:
        # When another task is inside receive(), aiohttp's close breaks that read and then
        # drops the TCP connection at once, without the peer's close frame (RFC 6455 §7.1.1
        # wants the server to close TCP after the closing handshake). Audio the peer sent
        # meanwhile is still unread, so the kernel resets the connection, and a peer can
        # lose our close frame to the reset: Chromium reported 1006 instead of 1001 on a
        # drain. So the other reader is handed a "closed" message first, and aiohttp's
        # close, reading alone, waits for the peer's close frame (up to its timeout).
        while self._waiting and not self._closed and self._reader is not None:
            assert self._loop is not None
            self._close_wait = self._loop.create_future()
            self._reader.feed_data(WS_CLOSED_MESSAGE, 0)
            try:
                await self._close_wait  # set by the reader as its receive() returns
            finally:
                self._close_wait = None

    def _library_reason(self, code: int) -> str:
        error = self._reader.exception() if self._reader is not None else None
        if isinstance(error, WebSocketError) and str(error):
            return str(error)
        return _LIBRARY_REASONS[WSCloseCode(code)]


class WebSocketTransport:
    """One accepted WebSocket as a message channel (text as ``str``, binary as ``bytes``)."""

    def __init__(self, socket: GatewayWebSocket, send_timeout_s: float = 10.0) -> None:
        self._socket = socket
        self._send_timeout_s = send_timeout_s
        # A send timed out: later ones are dropped. aiohttp's drain waiter, cancelled by the
        # timeout, stays in place and would raise CancelledError into the next sender.
        self._stalled = False
        self._closing = False  # this side started the close
        self._close_over = asyncio.Event()  # that close has finished (handshake or timeout)
        self._sent_close: tuple[int, str] | None = None
        self._peer_close: str | None = None

    @property
    def peer_close(self) -> str | None:
        """How the peer ended the connection, if it did (see ``Transport.peer_close``)."""
        return self._peer_close

    @property
    def sent_close(self) -> tuple[int, str] | None:
        """The code and reason this side closed with first (see ``Transport.sent_close``)."""
        return self._sent_close

    @property
    def closed(self) -> bool:
        """True once either side has closed the connection."""
        return self._socket.closed

    async def receive(self) -> str | bytes | None:
        """The next message, or None once the connection is closed or closing."""
        if self._socket.closed or self._closing:
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
            case WSMsgType.CLOSE if not close_code_valid(message.data):
                # Already answered with 1002 (GatewayWebSocket.close): a protocol error.
                raise RemoteProtocolError(f"websocket: {invalid_close_code(message.data)}")
            case WSMsgType.CLOSE:  # the peer's close frame (RFC 6455 §5.5.1): its hang-up
                reason = f": {message.extra}" if message.extra else ""
                self._peer_close = f"the peer closed the connection ({message.data}{reason})"
            case WSMsgType.CLOSED | WSMsgType.ERROR if not self._closing:
                self._peer_close = CONNECTION_LOST
        return None  # CLOSE, CLOSING, CLOSED, or the connection was lost

    async def send(self, message: str | bytes) -> None:
        """Send one frame; a no-op once the connection is closing, closed, lost or stalled."""
        if self._socket.closed or self._closing or self._stalled:
            return
        try:
            if not self._socket.peer_reads_nothing():
                await self._send(message)
                return
            # A send now waits for the peer to read (aiohttp's flow control): a peer that
            # reads nothing at all would hold it, and the call's media loop, forever.
            async with asyncio.timeout(self._send_timeout_s):
                await self._send(message)
        except ConnectionError:
            # The peer vanished mid-send; the next receive() reports the end of the call.
            return
        except TimeoutError:
            self._stalled = True
            seconds = self._send_timeout_s
            raise PolicyViolationError(
                f"the peer read nothing of what it was sent for {seconds:g} s"
                " (limits.send_timeout_s)"
            ) from None

    async def _send(self, message: str | bytes) -> None:
        if isinstance(message, str):
            await self._socket.send_str(message)
        else:
            await self._socket.send_bytes(message)

    async def close(self, code: int, reason: str) -> None:
        """Close with a status code and a reason.

        The first close wins. A later one waits until that close is over: the call's own end
        after a drain closed it must not let the server drop the TCP connection in the middle
        of the closing handshake.
        """
        if self._closing:
            await self._close_over.wait()
            return
        self._closing = True
        self._sent_close = (code, reason)
        try:
            if not self._socket.closed and code != CLOSE_ABNORMAL:  # 1006 is never sent
                await self._socket.close(code=code, message=close_reason(reason))
        finally:
            self._close_over.set()
