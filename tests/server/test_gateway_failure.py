"""A gateway (one worker) whose own serving code fails closes its calls with 1011 and a reason,
and GET /workers reports the one process of a gateway that runs alone."""

from __future__ import annotations

import asyncio
import os

import pytest

from tests.server.server_kit import (
    ScriptedRunner,
    call,
    close_of,
    eventually,
    get_json,
    loopback_options,
    receive_json,
    twilio_start,
)
from voicegate.gateway.calls import Admission
from voicegate.gateway.lifecycle import CRASH_REASON, Gateway, serve


class BreakableGateway(Gateway):
    """A gateway whose loop-lag monitor can be made to fail (a bug in the worker itself)."""

    broken = False

    def record_lag(self, lag_ms: float) -> None:
        """Record the sample, or fail once broken."""
        if self.broken:
            raise RuntimeError("the loop monitor fell over")
        super().record_lag(lag_ms)


async def test_a_failing_gateway_closes_its_calls_with_1011_and_a_reason() -> None:
    gateway = BreakableGateway(ScriptedRunner(), loopback_options())
    served = asyncio.create_task(serve(gateway, handle_signals=False))
    await eventually(lambda: gateway.calls.admission is Admission.OPEN, "the gateway to open")
    async with call(gateway, "/twilio") as client:
        await receive_json(client)
        await client.send("block")
        await eventually(lambda: len(gateway.calls.active) == 1, "the call to run")
        gateway.broken = True
        assert await close_of(client) == (1011, CRASH_REASON)
    with pytest.raises(ExceptionGroup):
        await served


async def test_workers_reports_the_gateway_alone() -> None:
    gateway = Gateway(ScriptedRunner(), loopback_options(capacity=7))
    stop = asyncio.Event()
    served = asyncio.create_task(serve(gateway, stop=stop, handle_signals=False))
    await eventually(lambda: gateway.calls.admission is Admission.OPEN, "the gateway to open")
    async with call(gateway, "/twilio") as client:
        await receive_json(client)
        await client.send(twilio_start("CA1"))  # a call holds a place from its start on
        assert await receive_json(client) == {"event": "CallStarted"}
        await eventually(lambda: len(gateway.calls.active) == 1, "the call to run")
        status, body = await get_json(gateway, "/workers")
    stop.set()
    await served
    assert (status, body["capacity"], body["active_calls"]) == (200, 7, 1)
    (worker,) = body["workers"]
    assert (worker["pid"], worker["alive"], worker["restarts"]) == (os.getpid(), True, 0)
    assert (worker["active_calls"], worker["calls_total"]) == (1, 1)
