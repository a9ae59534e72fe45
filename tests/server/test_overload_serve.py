"""`voicegate serve` sheds new calls while its media loop is behind, and keeps the calls it has.

The worker process is stalled from outside with SIGSTOP/SIGCONT, as a starved CPU stalls it:
its loop monitor then sees every wake-up late. Nothing asserts on timing; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from tests.server.test_workers import HeldCall, Server, eventually, serving, write_config


async def _stall(pid: int, stop: asyncio.Event) -> None:
    """Stop the process for 150 ms out of every 170 ms until ``stop``."""
    try:
        while not stop.is_set():
            os.kill(pid, signal.SIGSTOP)
            await asyncio.sleep(0.15)
            os.kill(pid, signal.SIGCONT)
            await asyncio.sleep(0.02)
    finally:
        os.kill(pid, signal.SIGCONT)


async def _readiness(server: Server) -> tuple[int, str]:
    status, body = await server.get("/readyz")
    return status, str(body["reason"])


async def test_a_worker_behind_refuses_new_calls_and_keeps_its_call(tmp_path: Path) -> None:
    config = write_config(tmp_path, 10)
    with config.open("a", encoding="utf-8") as settings:
        settings.write("limits:\n  shed_min_calls: 1\n")  # one call is enough to shed here
    async with serving("--workers", "1", "--config", str(config)) as server:
        worker = (await server.workers())[0]["pid"]
        held = HeldCall(server.stream_url)
        async with asyncio.TaskGroup() as tasks:
            held_task = tasks.create_task(held.run())

            async def admitted() -> bool:
                return bool((await server.workers())[0]["active_calls"] == 1)

            await eventually(admitted, "the first call to be admitted")

            stop = asyncio.Event()
            stalling = tasks.create_task(_stall(worker, stop))

            async def shedding() -> bool:
                status, reason = await _readiness(server)
                return status == 503 and reason.startswith("overloaded")

            await eventually(shedding, "/readyz to say the worker is overloaded")
            code, reason = await HeldCall(server.stream_url).run()
            assert code == 1013
            assert reason is not None
            assert reason.startswith("overloaded: this worker carries 1 call, its media loop")

            stop.set()
            await stalling

            async def ready() -> bool:
                return await _readiness(server) == (200, "ready")

            await eventually(ready, "the worker to take calls again once it caught up")
            assert not held_task.done()  # the call already up was kept throughout
            later = HeldCall(server.stream_url)
            later_task = tasks.create_task(later.run())

            async def both() -> bool:
                return bool((await server.workers())[0]["active_calls"] == 2)

            await eventually(both, "a new call to be admitted again")
            held.hang_up()
            later.hang_up()
        assert held_task.result()[0] == 1000
        assert later_task.result()[0] == 1000
