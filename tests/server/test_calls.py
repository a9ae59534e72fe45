"""Admission against capacity, crash isolation and protocol-error closes, over real sockets."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import struct
from pathlib import Path

import pytest

from tests.server.server_kit import (
    NullTransport,
    ScriptedRunner,
    call,
    close_of,
    eventually,
    get_json,
    receive_json,
    running_gateway,
    twilio_start,
)
from voicegate.codecs import Codec
from voicegate.errors import RemoteProtocolError
from voicegate.gateway.calllog import CallLogOptions
from voicegate.gateway.calls import CallRegistry
from voicegate.gateway.transport import CallGate, Refusal, Transport
from voicegate.gateway.websocket import MAX_CLOSE_REASON_BYTES, close_reason


async def test_a_call_over_capacity_is_refused_with_1013_and_a_reason() -> None:
    async with running_gateway(ScriptedRunner(), capacity=1) as gateway:
        async with call(gateway, "/twilio") as first:
            assert await receive_json(first) == {"dialect": "twilio"}
            # A connection takes its slot at `start`, not at the upgrade (issue 15 #4).
            assert (await get_json(gateway, "/readyz"))[0] == 200
            await first.send(twilio_start("CA1"))
            assert await receive_json(first) == {"event": "CallStarted"}
            status, body = await get_json(gateway, "/readyz")
            assert (status, body["reason"], body["active_calls"]) == (
                503,
                "at capacity (1 calls)",
                1,
            )
            async with call(gateway, "/twilio") as second:
                # Refused at the upgrade while full, before any message.
                assert await close_of(second) == (1013, "at capacity (1 calls)")
            # The admitted call is unaffected by the refusal.
            await first.send("hangup")
            assert await close_of(first) == (1000, "bye")
        await eventually(lambda: not gateway.calls.active, "the first call to be released")
        async with call(gateway, "/twilio") as third:
            assert await receive_json(third) == {"dialect": "twilio"}


async def test_a_refused_browser_gets_a_stop_message_with_the_reason_before_the_close() -> None:
    async with (
        running_gateway(ScriptedRunner(), capacity=1) as gateway,
        call(gateway, "/browser") as first,
        call(gateway, "/browser") as second,
    ):
        await receive_json(first)
        await receive_json(second)
        await first.send(json.dumps({"type": "start", "sampleRate": 16000}))
        assert await receive_json(first) == {"event": "CallStarted"}
        await receive_json(first)  # the runner's report
        # The second connection was let in before the first started; its start is refused.
        await second.send(json.dumps({"type": "start", "sampleRate": 16000}))
        assert await receive_json(second) == {"event": "CallStarted"}
        stop = {"type": "stop", "reason": "at capacity (1 calls)"}
        assert await receive_json(second) == stop
        assert await close_of(second) == (1013, "at capacity (1 calls)")


async def test_a_crashing_call_closes_with_1011_and_the_other_call_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = ScriptedRunner()
    async with (
        running_gateway(runner) as gateway,
        call(gateway, "/twilio") as doomed,
        call(gateway, "/twilio") as survivor,
    ):
        await receive_json(doomed)
        await receive_json(survivor)
        with caplog.at_level(logging.ERROR, logger="voicegate.gateway.calls"):
            await doomed.send("crash")
            code, reason = await close_of(doomed)
        assert code == 1011
        call_id = reason.removeprefix("internal error in call ")
        assert call_id.startswith("twilio-")
        crash_logs = [r for r in caplog.records if "crashed" in r.getMessage()]
        assert len(crash_logs) == 1
        assert call_id in crash_logs[0].getMessage()
        assert crash_logs[0].exc_info is not None  # the traceback is logged
        # The other call still decodes messages and ends normally.
        await survivor.send(twilio_start("CA2"))
        assert await receive_json(survivor) == {"event": "CallStarted"}
        await survivor.send("hangup")
        assert await close_of(survivor) == (1000, "bye")
    assert runner.finished == 1


async def test_a_protocol_error_closes_with_1002_and_its_message() -> None:
    async with running_gateway(ScriptedRunner()) as gateway:
        async with call(gateway, "/twilio") as client:
            await receive_json(client)
            await client.send("bad")
            assert await close_of(client) == (1002, "peer sent nonsense")
        async with call(gateway, "/browser") as client:
            await receive_json(client)
            await client.send(b"\x00\x01")  # audio before start: the codec's own error
            code, reason = await close_of(client)
        assert code == 1002
        assert "before 'start'" in reason


async def test_a_protocol_error_inside_a_task_group_still_closes_with_1002() -> None:
    async def runner(transport: Transport, codec: Codec, gate: CallGate) -> None:
        async def bad_reader() -> None:
            await transport.receive()
            raise RemoteProtocolError("unexpected frame")

        async with asyncio.TaskGroup() as group:
            group.create_task(bad_reader())

    async with running_gateway(runner) as gateway, call(gateway, "/browser") as client:
        await client.send("anything")
        assert await close_of(client) == (1002, "unexpected frame")


async def test_a_runner_that_returns_closes_the_socket_normally() -> None:
    async def runner(transport: Transport, codec: Codec, gate: CallGate) -> None:
        await transport.send("only this")

    async with running_gateway(runner) as gateway, call(gateway, "/browser") as client:
        assert await client.recv() == "only this"
        assert await close_of(client) == (1000, "call ended")


def test_close_reasons_fit_a_close_frame_without_splitting_characters() -> None:
    assert close_reason("short") == b"short"
    long = "é" * 100  # 200 bytes of UTF-8
    cut = close_reason(long)
    assert len(cut) <= MAX_CLOSE_REASON_BYTES
    assert cut.decode("utf-8") == "é" * (MAX_CLOSE_REASON_BYTES // 2)


async def test_the_registry_admits_up_to_capacity_and_frees_slots() -> None:
    registry = CallRegistry(capacity=2)
    transport = NullTransport()
    assert registry.admit("a", "twilio", transport) == Refusal(
        1013, "the gateway is starting, try again"
    )
    registry.open()
    first = registry.admit("a", "twilio", transport)
    second = registry.admit("b", "browser", transport)
    assert not isinstance(first, Refusal)
    assert not isinstance(second, Refusal)
    # Connections waiting for `start` hold no slot, but at most `waiting` (= capacity) of them.
    assert registry.admit("c", "twilio", transport) == Refusal(1013, "2 connections await start")
    assert registry.start(first, "CA1") is None
    assert registry.start(second, "CA1") == Refusal(
        1008, "a stream for this call id is already live"
    )
    assert registry.start(second, "CA2") is None
    assert registry.readiness().active_calls == 2
    assert registry.admit("c", "twilio", transport) == Refusal(1013, "at capacity (2 calls)")
    registry.release(first)
    third = registry.admit("c", "twilio", transport)
    assert not isinstance(third, Refusal)
    assert registry.start(third, "CA1") is None  # the released call id is free again
    assert [c.call_id for c in registry.active] == ["b", "c"]


async def test_a_call_whose_connection_drops_is_recorded_as_1006_not_a_normal_end(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A caller reset mid-call (no close frame) is logged, counted and kept in its call log
    as 1006 "the connection was lost" (RFC 6455 §7.1.5), not as 1000 "call ended"."""
    caplog.set_level(logging.INFO, logger="voicegate.gateway.server")
    logs = CallLogOptions(tmp_path)
    async with running_gateway(ScriptedRunner(), call_logs=logs) as gateway:
        async with call(gateway, "/twilio") as client:
            assert await receive_json(client) == {"dialect": "twilio"}
            await client.send(twilio_start("CA-RESET"))
            assert await receive_json(client) == {"event": "CallStarted"}
            sock = client.transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.transport.abort()  # SO_LINGER 0: the kernel sends a reset
        await eventually(lambda: not gateway.calls.active, "the call to end")
    ended = [r.getMessage() for r in caplog.records if " ended: " in r.getMessage()]
    assert [line.split(": ", 1)[1] for line in ended] == ["1006 the connection was lost"]
    last = last_record(tmp_path)
    assert (last["event"], last["code"], last["reason"]) == (
        "call_closed",
        1006,
        "the connection was lost",
    )


def last_record(directory: Path) -> dict[str, object]:
    """The last record of the one call log in ``directory``."""
    (log_file,) = directory.glob("*.jsonl")
    record: dict[str, object] = json.loads(log_file.read_text().splitlines()[-1])
    return record
