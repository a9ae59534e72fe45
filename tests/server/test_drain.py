"""Graceful stop: refuse new calls, let running ones finish, close the rest at the deadline.

The drain is driven directly (no signals to the pytest process); test_serve_process.py sends
a real SIGTERM to a `voicegate serve` subprocess.
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from tests.server.server_kit import (
    ScriptedRunner,
    call,
    close_of,
    eventually,
    get_json,
    loopback_options,
    receive_json,
    running_gateway,
)
from voicegate.gateway.calls import Admission, DrainResult
from voicegate.gateway.lifecycle import Gateway, serve

SHUTTING_DOWN = "the gateway is shutting down"


async def test_draining_refuses_new_calls_and_lets_running_ones_finish() -> None:
    runner = ScriptedRunner()
    async with running_gateway(runner) as gateway, call(gateway, "/twilio") as running:
        await receive_json(running)
        await running.send("block")
        drain = asyncio.create_task(gateway.drain(deadline_s=60))
        await eventually(lambda: gateway.calls.admission is Admission.DRAINING, "draining")

        status, body = await get_json(gateway, "/readyz")
        assert (status, body["ready"], body["reason"]) == (503, False, SHUTTING_DOWN)
        async with call(gateway, "/browser") as late:
            assert await receive_json(late) == {"type": "stop", "reason": SHUTTING_DOWN}
            assert await close_of(late) == (1001, SHUTTING_DOWN)
        async with aiohttp.ClientSession() as session:
            webhook = gateway.base_url + "/twilio/voice"
            async with session.post(webhook, data={"CallSid": "CA1"}) as reply:
                assert reply.status == 503
        assert not drain.done()

        runner.release.set()  # the running call ends by itself, well before the deadline
        assert await close_of(running) == (1000, "call ended")
        assert await asyncio.wait_for(drain, 10) == DrainResult(finished=1, closed=0)
    assert runner.cancelled == 0


async def test_calls_still_running_at_the_deadline_are_closed_with_1001() -> None:
    runner = ScriptedRunner()
    async with (
        running_gateway(runner) as gateway,
        call(gateway, "/twilio") as stuck,
        call(gateway, "/browser") as idle,
    ):
        await receive_json(stuck)
        await receive_json(idle)
        await stuck.send("block")  # parked on an event that is never set
        result = await asyncio.wait_for(gateway.drain(deadline_s=0.2), 10)
        assert result == DrainResult(finished=0, closed=2)
        assert await close_of(stuck) == (1001, SHUTTING_DOWN)
        assert await close_of(idle) == (1001, SHUTTING_DOWN)
        assert gateway.calls.active == ()
    # The parked runner was cancelled; the idle one either saw the close or the cancel.
    assert runner.cancelled >= 1
    assert runner.cancelled + runner.finished == 2


async def test_hurry_ends_the_wait_before_the_deadline() -> None:
    runner = ScriptedRunner()
    hurry = asyncio.Event()
    async with running_gateway(runner) as gateway, call(gateway, "/twilio") as client:
        await receive_json(client)
        await client.send("block")
        drain = asyncio.create_task(gateway.drain(deadline_s=3600, hurry=hurry))
        await eventually(lambda: gateway.calls.admission is Admission.DRAINING, "draining")
        hurry.set()
        assert await asyncio.wait_for(drain, 10) == DrainResult(finished=0, closed=1)
        assert await close_of(client) == (1001, SHUTTING_DOWN)


async def test_draining_an_idle_gateway_returns_at_once() -> None:
    async with running_gateway(ScriptedRunner()) as gateway:
        assert await asyncio.wait_for(gateway.drain(deadline_s=3600), 10) == DrainResult(0, 0)


async def test_serve_warms_up_then_serves_until_stopped() -> None:
    gateway = Gateway(ScriptedRunner(), loopback_options(shutdown_deadline_s=0.2))
    stop = asyncio.Event()
    seen: list[tuple[int, str]] = []

    async def warm_up() -> None:
        status, body = await get_json(gateway, "/readyz")
        seen.append((status, body["reason"]))

    served = asyncio.create_task(serve(gateway, warm_up=warm_up, stop=stop, handle_signals=False))
    await eventually(lambda: gateway.calls.admission is Admission.OPEN, "the gateway to open")
    assert seen == [(503, "the gateway is starting, try again")]
    async with call(gateway, "/browser") as client:
        await receive_json(client)
        stop.set()
        assert await close_of(client) == (1001, SHUTTING_DOWN)
    assert await asyncio.wait_for(served, 10) == DrainResult(finished=0, closed=1)
    with pytest.raises(aiohttp.ClientConnectionError):
        await get_json(gateway, "/healthz")  # no longer listening
