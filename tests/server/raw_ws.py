"""A WebSocket client by hand, over a raw TCP stream, for frames no client library would send."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from voicegate.gateway.lifecycle import Gateway

Raw = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@asynccontextmanager
async def raw_websocket(
    gateway: Gateway, path: str = "/twilio", sock: socket.socket | None = None
) -> AsyncIterator[Raw]:
    """A WebSocket opened by hand, to send frames no client library would (over ``sock``,
    a socket connected to the gateway, when given)."""
    if sock is None:
        reader, writer = await asyncio.open_connection("127.0.0.1", gateway.port)
    else:
        reader, writer = await asyncio.open_connection(sock=sock)
    key = base64.b64encode(os.urandom(16)).decode("ascii")
    writer.write(
        (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        ).encode("ascii")
    )
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    assert head.startswith(b"HTTP/1.1 101")
    try:
        yield reader, writer
    finally:
        writer.close()


def frame(opcode: int, payload: bytes, *, masked: bool = True) -> bytes:
    """One client frame (RFC 6455 §5.2), FIN set."""
    bit = 0x80 if masked else 0
    if len(payload) < 126:
        length = bytes([len(payload) | bit])
    elif len(payload) < 65536:
        length = bytes([126 | bit]) + struct.pack("!H", len(payload))
    else:
        length = bytes([127 | bit]) + struct.pack("!Q", len(payload))
    if not masked:
        return bytes([0x80 | opcode]) + length + payload
    mask = os.urandom(4)
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x80 | opcode]) + length + mask + body


async def server_close(reader: asyncio.StreamReader) -> tuple[int, str]:
    """Skip server frames up to its close frame; the code and reason in it."""
    async with asyncio.timeout(10):
        while True:
            first, second = await reader.readexactly(2)
            size = second & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", await reader.readexactly(2))
            payload = await reader.readexactly(size)
            if first & 0x0F == 0x8:
                return struct.unpack("!H", payload[:2])[0], payload[2:].decode("utf-8")
