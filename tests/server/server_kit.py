"""Fakes and helpers for the server tests: a scriptable call runner and a running gateway.

The runner stands in for the call session (the unit under test is the server): it decodes
messages with the codec it was handed, answers ``start`` with ``AcceptCall`` and reports what
it saw as JSON text frames, so a test can tell which dialect a route gave it. A few text
commands make it misbehave on purpose.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import aiohttp
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from voicegate.codecs import AcceptCall, CallStarted, Codec, Hangup
from voicegate.errors import RemoteProtocolError
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.options import GatewayOptions
from voicegate.gateway.transport import CallGate, Transport

TWILIO_CONNECTED = {"event": "connected", "protocol": "Call", "version": "1.0.0"}


def twilio_start(call_sid: str = "CA1", parameters: dict[str, str] | None = None) -> str:
    """A Twilio ``start`` message (providers.md §b.1)."""
    return json.dumps(
        {
            "event": "start",
            "sequenceNumber": "1",
            "streamSid": "MZ1",
            "start": {
                "accountSid": "AC1",
                "streamSid": "MZ1",
                "callSid": call_sid,
                "tracks": ["inbound"],
                "customParameters": parameters or {},
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
            },
        }
    )


class ScriptedRunner:
    """A fake call runner; text commands: ``crash``, ``bad``, ``block``, ``hangup``."""

    def __init__(self) -> None:
        self.release = asyncio.Event()  # ends calls parked by ``block``
        self.cancelled = 0  # calls that saw CancelledError
        self.finished = 0  # calls that returned normally

    async def __call__(self, transport: Transport, codec: Codec, gate: CallGate) -> None:
        try:
            await transport.send(json.dumps({"dialect": codec.capabilities.dialect}))
            await self._serve(transport, codec, gate)
            self.finished += 1
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    async def _serve(self, transport: Transport, codec: Codec, gate: CallGate) -> None:
        while (message := await transport.receive()) is not None:
            match message:
                case "crash":
                    raise RuntimeError("the runner fell over")
                case "bad":
                    raise RemoteProtocolError("peer sent nonsense")
                case "block":
                    await self.release.wait()
                    return
                case "hangup":
                    await transport.close(1000, "bye")
                    return
            if not await self._decode(transport, codec, gate, message):
                return

    async def _decode(
        self, transport: Transport, codec: Codec, gate: CallGate, message: str | bytes
    ) -> bool:
        """Report the message's events; False if the gateway refused the call at its start."""
        for event in codec.receive(message):  # a malformed message raises RemoteProtocolError
            await transport.send(json.dumps({"event": type(event).__name__}))
            if isinstance(event, CallStarted):
                refusal = gate.started(event)
                if refusal is not None:
                    for reply in codec.send(Hangup(refusal.reason)):
                        await transport.send(reply)
                    await transport.close(refusal.code, refusal.reason)
                    return False
                report = {"call_id": event.call_id, "metadata": dict(event.metadata)}
                await transport.send(json.dumps(report))
                for reply in codec.send(AcceptCall()):
                    await transport.send(reply)
        return True


class NullTransport:
    """A transport with no peer, for registry tests that never run a call."""

    async def receive(self) -> str | bytes | None:
        return None

    async def send(self, message: str | bytes) -> None:
        return None

    async def close(self, code: int, reason: str) -> None:
        return None

    @property
    def peer_close(self) -> str | None:
        return None

    @property
    def sent_close(self) -> tuple[int, str] | None:
        return None


def loopback_options(**changes: Any) -> GatewayOptions:
    """Options for a gateway on a free loopback port."""
    return replace(GatewayOptions(port=0, shutdown_deadline_s=5.0), **changes)


@asynccontextmanager
async def running_gateway(
    runner: Callable[[Transport, Codec], Awaitable[None]], **changes: Any
) -> AsyncIterator[Gateway]:
    """A started, open gateway; drained and closed on exit."""
    async with Gateway(runner, loopback_options(**changes)) as gateway:
        yield gateway


def ws_url(gateway: Gateway, path: str) -> str:
    """The WebSocket URL of ``path`` on ``gateway``."""
    return f"ws://127.0.0.1:{gateway.port}{path}"


async def receive_json(client: ClientConnection) -> Any:
    """The next text frame, decoded."""
    message = await asyncio.wait_for(client.recv(), 10)
    assert isinstance(message, str)
    return json.loads(message)


async def close_of(client: ClientConnection) -> tuple[int | None, str | None]:
    """Read until the server closes; the code and reason it closed with (1006: no frame)."""
    with contextlib.suppress(ConnectionClosed):
        while True:
            await asyncio.wait_for(client.recv(), 10)
    return client.close_code, client.close_reason


@asynccontextmanager
async def call(gateway: Gateway, path: str) -> AsyncIterator[ClientConnection]:
    """A WebSocket client connected to ``path``."""
    async with connect(ws_url(gateway, path), open_timeout=10, close_timeout=2) as client:
        yield client


async def get_json(gateway: Gateway, path: str) -> tuple[int, Any]:
    """GET ``path``; the status and the decoded JSON body."""
    async with aiohttp.ClientSession() as session, session.get(gateway.base_url + path) as reply:
        return reply.status, await reply.json()


async def eventually(condition: Callable[[], bool], what: str) -> None:
    """Wait (boundedly) for a condition another task makes true."""
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")
