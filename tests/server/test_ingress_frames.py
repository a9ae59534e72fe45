"""Issue 15 #3, #4 and #7 over raw sockets: bad frames, silent peers, forged headers.

Each attack runs beside a healthy call on the same gateway, which must complete normally.
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from websockets.asyncio.client import ClientConnection

from tests.server.raw_ws import frame, raw_websocket, server_close
from tests.server.server_kit import (
    ScriptedRunner,
    call,
    close_of,
    eventually,
    receive_json,
    running_gateway,
    twilio_start,
)
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.limits import Limits
from voicegate.gateway.options import TwilioOptions
from voicegate.gateway.websocket import UNMASKED_FRAME, MaskScanner


@asynccontextmanager
async def healthy_call(gateway: Gateway) -> AsyncIterator[ClientConnection]:
    """A started call that must still end normally after the attack."""
    async with call(gateway, "/twilio") as client:
        assert await receive_json(client) == {"dialect": "twilio"}
        await client.send(twilio_start("CA-HEALTHY"))
        assert await receive_json(client) == {"event": "CallStarted"}
        await receive_json(client)
        yield client


async def ends_normally(client: ClientConnection) -> None:
    """The healthy call hangs up and is closed 1000."""
    await client.send("hangup")
    assert await close_of(client) == (1000, "bye")


async def test_an_unmasked_client_frame_is_failed_with_1002_and_a_reason() -> None:
    async with running_gateway(ScriptedRunner()) as gateway, healthy_call(gateway) as healthy:
        async with raw_websocket(gateway) as (reader, writer):
            writer.write(frame(0x1, b'{"event":"connected"}'))  # masked: accepted
            writer.write(frame(0x1, b'{"event":"connected"}', masked=False))
            assert await server_close(reader) == (1002, UNMASKED_FRAME)
        await ends_normally(healthy)


async def test_library_closes_say_why() -> None:
    limits = Limits(max_frame_bytes=1000)
    async with (
        running_gateway(ScriptedRunner(), limits=limits) as gateway,
        healthy_call(gateway) as healthy,
    ):
        async with raw_websocket(gateway) as (reader, writer):
            writer.write(frame(0x1, b"\xff\xfe not UTF-8"))
            code, reason = await server_close(reader)
            assert (code, reason) == (1007, "Invalid UTF-8 text message")
        async with raw_websocket(gateway) as (reader, writer):
            writer.write(frame(0x2, b"\x00" * 2000))
            code, reason = await server_close(reader)
            assert code == 1009
            assert "exceeds limit 1000" in reason
        async with raw_websocket(gateway) as (reader, writer):
            writer.write(bytes([0x83, 0x80]) + os.urandom(4))  # reserved opcode 3
            assert await server_close(reader) == (1002, "Unexpected opcode=3")
        await ends_normally(healthy)


async def test_a_close_with_a_code_no_peer_may_send_is_failed_with_1002(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """RFC 6455 §7.4: 1006 must never be sent and codes from 5000 up are undefined; both are
    failed with 1002 like the codes aiohttp refuses itself, and the call is recorded so."""
    caplog.set_level(logging.INFO, logger="voicegate.gateway.server")
    async with running_gateway(ScriptedRunner()) as gateway, healthy_call(gateway) as healthy:
        for code in (1006, 5000, 65535):
            async with raw_websocket(gateway) as (reader, writer):
                writer.write(frame(0x8, struct.pack("!H", code) + b"bye"))
                assert await server_close(reader) == (1002, f"Invalid close code: {code}")
        for payload in (b"", struct.pack("!H", 4000)):  # no code (§5.5.1); a private code
            async with raw_websocket(gateway) as (reader, writer):
                writer.write(frame(0x8, payload))
                assert await server_close(reader) == (1000, "")
        await ends_normally(healthy)
    ended = [
        r.getMessage().split(" ", 3)[-1] for r in caplog.records if " ended: " in r.getMessage()
    ]
    assert ended.count("1002 websocket: Invalid close code: 5000") == 1
    assert ended.count("1002 websocket: Invalid close code: 1006") == 1


async def test_a_ping_flood_is_closed_with_1008_while_a_healthy_call_goes_on() -> None:
    """aiohttp answers every ping, without a limit and without yielding to other calls while
    pings are buffered: the peer's pings now count as messages without audio."""
    limits = Limits(control_messages_burst=50, control_messages_per_s=10)
    async with (
        running_gateway(ScriptedRunner(), limits=limits) as gateway,
        healthy_call(gateway) as healthy,
    ):
        async with raw_websocket(gateway) as (reader, writer):
            await asyncio.wait_for(reader.readexactly(23), 10)  # {"dialect": "twilio"}
            writer.write(frame(0x9, b"ping") * 40)  # within the burst: answered
            for _ in range(40):
                assert await asyncio.wait_for(reader.readexactly(6), 10) == b"\x8a\x04ping"
            writer.write(frame(0x9, b"ping") * 1000)
            reason = (
                "more than 50 pings at once, or over 10 a second (limits.control_messages_per_s)"
            )
            assert await server_close(reader) == (1008, reason)
        await ends_normally(healthy)


async def test_a_peer_gone_while_its_pings_are_answered_is_a_lost_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The pong to a peer that has just reset the connection raised out of aiohttp's
    receive(): the call was logged as crashed (1011) instead of as a lost connection."""
    caplog.set_level(logging.INFO, logger="voicegate.gateway")
    async with running_gateway(ScriptedRunner()) as gateway:
        for _ in range(3):
            async with raw_websocket(gateway) as (reader, writer):
                await asyncio.wait_for(reader.readexactly(23), 10)  # {"dialect": "twilio"}
                writer.write(frame(0x9, b"p" * 125) * 100)
                writer.transport.abort()
        await eventually(lambda: not gateway.calls.active, "the calls to end")
    ended = [
        r.getMessage().split(" ", 3)[-1] for r in caplog.records if " ended: " in r.getMessage()
    ]
    assert ended == ["1006 the connection was lost"] * 3
    assert not [r for r in caplog.records if "crashed" in r.getMessage()]


async def test_a_half_open_websocket_is_dropped_by_the_heartbeat() -> None:
    limits = Limits(heartbeat_s=0.5)
    async with (
        running_gateway(ScriptedRunner(), limits=limits) as gateway,
        healthy_call(gateway) as healthy,
    ):
        async with raw_websocket(gateway) as (reader, _):
            # The peer never answers the pings: the gateway drops the connection.
            async with asyncio.timeout(10):
                while await reader.read(1024):
                    pass
        await eventually(lambda: len(gateway.calls.active) == 1, "the silent peer to go")
        await ends_normally(healthy)


async def answer_pings(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
    """Answer each server ping with a pong and send nothing else; the pings, once closed."""
    pings = 0
    while header := await reader.read(2):
        first, second = header[0], header[1]
        payload = await reader.readexactly(second & 0x7F)
        if first & 0x0F == 0x9:
            pings += 1
            writer.write(frame(0xA, payload))
    return pings


async def test_a_silent_peer_that_answers_pings_is_kept() -> None:
    # The heartbeat only sends a ping when nothing came in since the last one, and any data
    # (the pong) after it keeps the connection (gateway/websocket.py).
    limits = Limits(heartbeat_s=0.3)
    async with (
        running_gateway(ScriptedRunner(), limits=limits) as gateway,
        raw_websocket(gateway) as (reader, writer),
    ):
        answering = asyncio.create_task(answer_pings(reader, writer))
        await asyncio.sleep(2.0)  # six heartbeats of silence but for the pongs
        assert not answering.done()
        assert len(gateway.calls.active) == 1
        writer.close()
        assert await asyncio.wait_for(answering, 10) >= 2  # it was pinged, and answered


async def test_a_peer_that_streams_is_not_pinged() -> None:
    # Media every 20 ms proves the peer is there: no ping per heartbeat, however long.
    limits = Limits(heartbeat_s=0.2)
    async with (
        running_gateway(ScriptedRunner(), limits=limits) as gateway,
        raw_websocket(gateway) as (reader, writer),
    ):
        for _ in range(50):  # one second
            writer.write(frame(0x1, b'{"event":"connected"}'))
            await asyncio.sleep(0.02)
        writer.close()
        sent = await asyncio.wait_for(reader.read(), 10)
    assert 0x9 not in opcodes(sent)


def opcodes(data: bytes) -> list[int]:
    """The opcodes of the server frames (unmasked, RFC 6455 §5.2) in ``data``."""
    found, at = [], 0
    while at + 2 <= len(data):
        found.append(data[at] & 0x0F)
        size, at = data[at + 1] & 0x7F, at + 2
        if size == 126:
            size, at = struct.unpack("!H", data[at : at + 2])[0], at + 2
        at += size
    return found


async def test_idle_and_half_sent_http_connections_are_closed() -> None:
    limits = Limits(http_idle_timeout_s=0.5)
    async with (
        running_gateway(ScriptedRunner(), limits=limits) as gateway,
        healthy_call(gateway) as healthy,
    ):
        silent = await asyncio.open_connection("127.0.0.1", gateway.port)
        half = await asyncio.open_connection("127.0.0.1", gateway.port)
        half[1].write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        for reader, writer in (silent, half):
            async with asyncio.timeout(10):
                assert await reader.read() == b""  # closed by the gateway
            writer.close()
        await ends_normally(healthy)


async def test_a_webhook_body_sent_a_byte_at_a_time_is_refused_with_408() -> None:
    """The headers came in time, the body trickles (a slowloris on the body): it gets
    http_idle_timeout_s like the headers, where it used to hold its handler indefinitely."""
    limits = Limits(http_idle_timeout_s=0.5)
    async with (
        running_gateway(ScriptedRunner(), limits=limits, twilio=TwilioOptions()) as gateway,
        healthy_call(gateway) as healthy,
    ):
        reader, writer = await asyncio.open_connection("127.0.0.1", gateway.port)
        writer.write(
            b"POST /twilio/voice HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n"
        )

        async def trickle() -> None:
            for _ in range(100):  # 10 s at most
                writer.write(b"a")
                await asyncio.sleep(0.1)

        dripping = asyncio.create_task(trickle())
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n"), 10)
        finally:
            dripping.cancel()
            writer.close()
        assert head == b"HTTP/1.1 408 Request Timeout\r\n"
        await ends_normally(healthy)


async def test_a_non_ascii_signature_is_refused_with_403() -> None:
    twilio = TwilioOptions(auth_token="s3cret")
    async with running_gateway(ScriptedRunner(), twilio=twilio) as gateway:
        reader, writer = await asyncio.open_connection("127.0.0.1", gateway.port)
        body = b"CallSid=CA1"
        writer.write(
            b"POST /twilio/voice HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n"
            b"X-Twilio-Signature: \xc3\xa9\xff\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode("ascii")
            + body
        )
        status = await asyncio.wait_for(reader.readline(), 10)
        writer.close()
    assert status.startswith(b"HTTP/1.1 403")


def test_the_mask_scanner_follows_frames_split_anywhere() -> None:
    stream = frame(0x1, b"a" * 300) + frame(0x2, b"b" * 5) + frame(0x1, b"c", masked=False)
    for cut in range(1, len(stream)):
        scanner = MaskScanner()
        ok = scanner.scan(stream[:cut]) and scanner.scan(stream[cut:])
        assert not ok
    clean = frame(0x1, b"a" * 300) + frame(0x2, b"b" * 5)
    for cut in range(1, len(clean)):
        scanner = MaskScanner()
        assert scanner.scan(clean[:cut])
        assert scanner.scan(clean[cut:])


@pytest.mark.parametrize("size", [0, 1, 125, 126, 300, 65535, 65536])
def test_the_mask_scanner_judges_one_whole_frame_per_read_like_any_other(size: int) -> None:
    # A read holding exactly one frame takes a shortcut (the usual media message); it must
    # agree with the general walk on every length encoding (7-bit, 16-bit, 64-bit).
    payload = b"x" * size
    assert MaskScanner().scan(frame(0x1, payload))
    assert not MaskScanner().scan(frame(0x1, payload, masked=False))
    assert not MaskScanner().scan(frame(0x1, payload) + frame(0x1, b"y", masked=False))
    scanner = MaskScanner()
    assert scanner.scan(frame(0x1, payload)[:-1])  # cut short: the rest follows
    assert not scanner.scan(frame(0x1, payload)[-1:] + frame(0x2, b"z", masked=False))
