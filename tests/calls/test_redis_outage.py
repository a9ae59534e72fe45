"""Redis stops during a call, then comes back (issue 13; docs/redis.md "When Redis is down").

A real gateway on loopback with its memory, call state and call registry on a real
redis-server. While the call's tool awaits its backend the server is stopped: ``/readyz``
turns 503 with the reason, a new call is refused with 1013 and the reason, and the running
call goes on until its next write, which fails after its bounded retries and ends the call
with 1011, a reason and a log line. Restarted, the server is seen again: ``/readyz`` answers
200 and calls are admitted.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path

import aiohttp
import pytest
from websockets.asyncio.client import connect

from tests.calls.call_kit import SLOW_BANK, cue, script_of
from tests.calls.test_call_resume import BALANCE, node, until_started
from tests.redis_kit import RedisServer, redis_server  # noqa: F401 - the fixture
from tests.server.server_kit import close_of
from voicegate.callers.driver import drive
from voicegate.callers.twilio import TwilioCaller
from voicegate.gateway.transport import CLOSE_INTERNAL_ERROR, CLOSE_NORMAL, CLOSE_TRY_AGAIN_LATER

RUNNING = "CA00000000000000000000000000000ut1"
#: The tool's backend answers after this long: the outage is checked meanwhile.
TOOL_DELAY_MS = 2500
TURNS = {
    "turns": [
        {
            "calls": [
                {"activate": {"flow_id": "check_balance"}},
                {"check_balance": {"account_id": "A-17", "delay_ms": TOOL_DELAY_MS}},
            ]
        }
    ]
}


async def readyz(base: str) -> tuple[int, dict[str, object]]:
    """GET /readyz: the status and the decoded body."""
    async with aiohttp.ClientSession() as session, session.get(base + "/readyz") as reply:
        return reply.status, await reply.json()


async def new_call(url: str, call_sid: str, tail_ms: int) -> int | None:
    """One more caller on the same node; its close code."""
    caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=tail_ms), call_sid=call_sid)
    return await drive(url, caller, speed=2.0, max_ms=10_000)


async def start_refusal(url: str, call_sid: str) -> tuple[int | None, str | None]:
    """A caller's `start` for ``call_sid``: the close code and reason the gateway answers."""
    caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=1000), call_sid=call_sid)
    async with connect(url, open_timeout=30, close_timeout=2) as socket:
        for message in caller.opening():
            await socket.send(message)
        return await close_of(socket)


async def ready_again(base: str, timeout_s: float = 20.0) -> dict[str, object]:
    """Poll /readyz until it answers 200 (the registry pings on every probe here)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while (answer := await readyz(base))[0] != 200:
        assert loop.time() < deadline, f"/readyz still answers {answer}"
        await asyncio.sleep(0.1)
    return answer[1]


async def test_redis_stopped_mid_call_then_restarted(
    tmp_path: Path,
    redis_server: RedisServer,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    project = tmp_path / "project"
    shutil.copytree(SLOW_BANK, project)
    caplog.set_level(logging.INFO, logger="voicegate")
    async with node(
        project, redis_server.url, ["check my balance"], TURNS, leases=True, timeout_s=0.2
    ) as (url, _):
        base = "http" + url.removeprefix("ws").removesuffix("/twilio")
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=30_000), call_sid=RUNNING)
        running = asyncio.create_task(drive(url, caller, speed=1.0, max_ms=40_000))
        await until_started(project)
        assert (await readyz(base))[0] == 200

        redis_server.stop()  # while the call's tool awaits its backend
        status, body = await readyz(base)
        assert status == 503
        assert str(body["reason"]).startswith("call registry unavailable: ")
        async with connect(url, open_timeout=10, close_timeout=2) as refused:
            code, reason = await close_of(refused)
        assert code == CLOSE_TRY_AGAIN_LATER
        assert str(reason).startswith("call registry unavailable: ")
        assert not running.done()  # the running call goes on meanwhile

        # Its next write (the state after the tool finished) fails after its retries: the
        # call ends with 1011 and a reason, and the log says why.
        assert await running == CLOSE_INTERNAL_ERROR
        ended = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert any(" ended: Redis state write failed" in line for line in ended), ended

        redis_server.start()  # back, empty (no persistence in tests)
        assert (await ready_again(base))["reason"] == "ready"
        assert await new_call(url, "CA00000000000000000000000000000ut2", 200) == CLOSE_NORMAL


async def test_a_store_that_cannot_claim_a_new_call_refuses_it_with_1013(
    tmp_path: Path,
    redis_server: RedisServer,  # noqa: F811
) -> None:
    project = tmp_path / "project"
    shutil.copytree(SLOW_BANK, project)
    # No call registry here: the store's claim at `start` is the first to meet the outage.
    async with node(project, redis_server.url, ["hi"], TURNS, timeout_s=0.2) as (url, _):
        redis_server.stop()
        code, reason = await start_refusal(url, "CA00000000000000000000000000000ut3")
    assert code == CLOSE_TRY_AGAIN_LATER
    assert str(reason).startswith("store unavailable: Redis claim failed")
