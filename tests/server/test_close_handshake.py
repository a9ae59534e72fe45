"""The gateway's close waits for the peer's close frame before it drops the TCP connection.

RFC 6455 §7.1.1: the server closes the TCP connection after the closing handshake. Closing it
right after sending its own close frame, with the peer's audio still unread, makes the kernel
reset the connection, and a peer can lose the close frame (and its reason) to the reset:
Chromium showed 1006 instead of 1001 when the gateway drained. Both tests close a call from
another task than the one reading it, as a drain and a bot hang-up do.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from unittest import mock

import pytest
from aiohttp.http_writer import StreamWriter
from aiohttp.test_utils import make_mocked_request

from tests.server.raw_ws import Raw, frame, raw_websocket, server_close
from tests.server.server_kit import ScriptedRunner, eventually, running_gateway
from voicegate.codecs.base import Codec
from voicegate.gateway.calls import DrainResult
from voicegate.gateway.limits import Limits
from voicegate.gateway.transport import CallGate, Transport
from voicegate.gateway.websocket import GatewayWebSocket

SHUTTING_DOWN = "the gateway is shutting down"
CLOSE = 0x8
TEXT = 0x1
#: How long the peer keeps the gateway waiting for its close frame: long next to a loopback
#: round trip, in which the gateway would drop the connection if it did not wait.
PEER_DELAY_S = 0.3


async def answers_late(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A peer slow to answer the close: audio still in flight, then its close frame.

    The connection must stay up until the answer, then end in an orderly EOF (no reset).
    """
    writer.write(frame(TEXT, b'{"event":"media"}'))  # sent before the peer saw the close
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(reader.read(1), PEER_DELAY_S)  # nothing: no EOF, no reset
    writer.write(frame(CLOSE, (1001).to_bytes(2, "big")))
    assert await asyncio.wait_for(reader.read(), 10) == b""


async def started_call(raw: Raw) -> None:
    """Wait for the scripted runner's greeting: the call is running and reading."""
    reader, _ = raw
    first, size = await asyncio.wait_for(reader.readexactly(2), 10)
    assert first & 0x0F == TEXT
    assert json.loads(await reader.readexactly(size & 0x7F)) == {"dialect": "twilio"}


async def test_a_drain_waits_for_the_peers_close_frame() -> None:
    async with (
        running_gateway(ScriptedRunner()) as gateway,
        raw_websocket(gateway) as (reader, writer),
    ):
        await started_call((reader, writer))
        drain = asyncio.create_task(gateway.drain(0))
        assert await server_close(reader) == (1001, SHUTTING_DOWN)
        await answers_late(reader, writer)
        assert await asyncio.wait_for(drain, 10) == DrainResult(finished=0, closed=1)


async def hangs_up_from_another_task(transport: Transport, codec: Codec, gate: CallGate) -> None:
    """A runner shaped like a session: one task reads, the dialogue side hangs up."""
    await transport.send(json.dumps({"dialect": codec.capabilities.dialect}))

    async def read_until_closed() -> None:
        while await transport.receive() is not None:
            pass

    async with asyncio.TaskGroup() as group:
        group.create_task(read_until_closed())
        await asyncio.sleep(0.05)  # the reader is now waiting inside receive()
        await transport.close(1000, "the agent ended the call")


async def test_a_hang_up_beside_a_reader_waits_for_the_peers_close_frame() -> None:
    async with running_gateway(hangs_up_from_another_task) as gateway:
        async with raw_websocket(gateway) as (reader, writer):
            await started_call((reader, writer))
            assert await server_close(reader) == (1000, "the agent ended the call")
            await answers_late(reader, writer)
        await eventually(lambda: not gateway.calls.active, "the call to end")


async def test_a_peer_gone_during_the_upgrade_leaves_nothing_to_close() -> None:
    """The peer resets the connection while the 101 is written: prepare() fails with a
    ConnectionError, the route returns the response, and aiohttp's server then prepares and
    ends it. That ending must not raise (it was logged as an unhandled error, with a trace,
    for every abandoned upgrade)."""
    transport = mock.Mock()
    transport.is_closing.return_value = True  # the reset arrived: writes fail
    protocol = mock.Mock(transport=transport)
    writer = StreamWriter(protocol, asyncio.get_running_loop())
    headers = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
    }
    request = make_mocked_request(
        "GET", "/twilio", headers, writer=writer, protocol=protocol, transport=transport
    )
    socket = GatewayWebSocket()
    with pytest.raises(ConnectionError):
        await socket.prepare(request)
    # What aiohttp's finish_response does with the returned response:
    await socket.prepare(request)
    await socket.write_eof()
    assert not await socket.close()


async def test_a_peer_that_reads_nothing_is_dropped_when_its_call_is_closed() -> None:
    """A peer that stopped reading (here it floods pings and reads none of the pongs, so the
    send buffers fill and the call's reader waits on them) cannot complete a closing
    handshake: closing its call drops the TCP connection (RFC 6455 §7.1.7). It used to wait
    for the unread data to drain, so the drain, and the gateway's shutdown, never ended."""
    pings = Limits(control_messages_burst=1_000_000, control_messages_per_s=1_000_000)
    async with running_gateway(ScriptedRunner(), limits=pings) as gateway:
        peer = socket.socket()
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a deaf peer's window
        peer.setblocking(False)
        await asyncio.get_running_loop().sock_connect(peer, ("127.0.0.1", gateway.port))
        async with raw_websocket(gateway, sock=peer) as (reader, writer):
            await started_call((reader, writer))
            writer.transport.pause_reading()
            writer.write(frame(0x9, b"p" * 125) * 50_000)  # 6 MB of pongs to read, unread
            await asyncio.sleep(1)  # the gateway answered until its send buffers filled
            drain = await asyncio.wait_for(gateway.drain(0), 10)
            assert drain == DrainResult(finished=0, closed=1)
            await eventually(lambda: not gateway.calls.active, "the call to end")
            writer.transport.resume_reading()
            with pytest.raises(ConnectionResetError):  # dropped, not closed in order
                await asyncio.wait_for(read_to_the_end(reader), 10)


async def read_to_the_end(reader: asyncio.StreamReader) -> None:
    """Read until EOF (raises if the connection was reset)."""
    while await reader.read(1 << 20):
        pass


async def talks_on(transport: Transport, codec: Codec, gate: CallGate) -> None:
    """A runner that sends audio as fast as the socket takes it, as a long bot turn would."""
    while True:  # until the gateway ends the call
        await transport.send(b"\0" * 65536)
        await asyncio.sleep(0)  # as the media loop yields between frames


async def test_a_send_to_a_peer_that_reads_nothing_ends_its_call_with_a_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Without marks to miss (Jambonz, FreeSWITCH, Genesys), a peer that stops reading is
    seen when a send waits on it: after limits.send_timeout_s its call ends (1008). The send
    used to wait forever, and the call with it."""
    caplog.set_level(logging.INFO, logger="voicegate.gateway")
    async with running_gateway(talks_on, limits=Limits(send_timeout_s=0.5)) as gateway:
        peer = socket.socket()
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        peer.setblocking(False)
        await asyncio.get_running_loop().sock_connect(peer, ("127.0.0.1", gateway.port))
        async with raw_websocket(gateway, sock=peer) as (_, writer):
            writer.transport.pause_reading()  # reads nothing from here on
            await eventually(lambda: not gateway.calls.active, "the call to end")
    ended = [
        r.getMessage().split(" ", 3)[-1] for r in caplog.records if " ended: " in r.getMessage()
    ]
    assert ended == [
        "1008 the peer read nothing of what it was sent for 0.5 s (limits.send_timeout_s)"
    ]
