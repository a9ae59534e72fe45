"""`voicegate serve --workers 2` as a user starts it: real processes, real Twilio callers.

The gateway runs the deterministic configuration (fixtures/config/deterministic.yml: the demo
project, scripted recogniser, tone synthesiser). Callers are emulated Twilio streams over
real WebSockets (voicegate/callers/), each speaking once and staying on the line until the
test hangs up. Every wait is bounded; nothing asserts on timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from voicegate.audio.wav import read_wav
from voicegate.callers.script import CallerScript, Cue
from voicegate.callers.twilio import TwilioCaller
from voicegate.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DETERMINISTIC = ROOT / "fixtures" / "config" / "deterministic.yml"
BALANCE = ROOT / "fixtures" / "audio" / "synth" / "festival" / "balance_8k.wav"
STARTUP_S = 180.0  # spawning workers on a loaded 2-core machine can be slow
WAIT_S = 60.0


@dataclass
class Server:
    """A running `voicegate serve` process and where it listens."""

    process: asyncio.subprocess.Process
    base: str

    @property
    def stream_url(self) -> str:
        """The Twilio media stream WebSocket."""
        return "ws" + self.base.removeprefix("http") + "/twilio"

    async def get(self, path: str) -> tuple[int, Any]:
        """GET on a new connection, so the kernel may pick any worker."""
        connector = aiohttp.TCPConnector(force_close=True)
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            session.get(self.base + path) as reply,
        ):
            return reply.status, await reply.json()

    async def metrics(self) -> str:
        """``GET /metrics``: the text format, summed over every worker."""
        connector = aiohttp.TCPConnector(force_close=True)
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            session.get(self.base + "/metrics") as reply,
        ):
            assert reply.status == 200
            return await reply.text()

    async def workers(self) -> list[dict[str, Any]]:
        """``GET /workers``' worker list."""
        status, body = await self.get("/workers")
        assert status == 200
        return list(body["workers"])

    async def stderr(self) -> str:
        """Everything the process logged (once it has exited)."""
        assert self.process.stderr is not None
        return (await self.process.stderr.read()).decode()


def write_config(tmp_path: Path, capacity: int) -> Path:
    """The deterministic settings on a free port, with a small capacity and deadline."""
    config = tmp_path / "voicegate.yml"
    server = f"server:\n  port: 0\n  capacity: {capacity}\n  shutdown_deadline_s: 1.0\n"
    store = f"store:\n  data_dir: {tmp_path / 'data'}\n"
    config.write_text(DETERMINISTIC.read_text(encoding="utf-8") + server + store, "utf-8")
    return config


@asynccontextmanager
async def serving(*arguments: str) -> AsyncIterator[Server]:
    """`python -m voicegate serve ARGUMENTS`, its URL read from the banner's first line."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "voicegate",
        "serve",
        *arguments,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        first_line = (await asyncio.wait_for(process.stdout.readline(), STARTUP_S)).decode()
        found = re.search(r"voicegate listening on (http://127\.0\.0\.1:\d+)", first_line)
        assert found, f"unexpected first line: {first_line!r}"
        yield Server(process, found.group(1))
    finally:
        if process.returncode is None:
            process.kill()  # its workers notice and drain by themselves
            await process.wait()


class HeldCall:
    """A Twilio caller that says "check my balance" and stays on until :meth:`hang_up`."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._hang_up = asyncio.Event()
        audio = read_wav(BALANCE).samples
        sid = uuid.uuid4().hex
        script = CallerScript([Cue(audio, at_ms=400)], 8000, tail_ms=600_000)
        self.caller = TwilioCaller(script, call_sid=f"CA{sid}", stream_sid=f"MZ{sid}")

    def hang_up(self) -> None:
        """Send Twilio's ``stop`` and close, as a caller hanging up."""
        self._hang_up.set()

    async def run(self) -> tuple[int | None, str | None]:
        """The call, to its end; the close code and reason the client saw."""
        async with connect(self._url, open_timeout=WAIT_S, close_timeout=5) as socket:
            with contextlib.suppress(ConnectionClosed):  # a refused call is closed at once
                for message in self.caller.opening():
                    await socket.send(message)
            async with asyncio.TaskGroup() as tasks:
                listener = tasks.create_task(self._listen(socket))
                await self._speak(socket, listener)
                if not listener.done():
                    with contextlib.suppress(ConnectionClosed):
                        await socket.send(self.caller.closing())
                    await socket.close()
            return socket.close_code, socket.close_reason

    async def _speak(self, socket: ClientConnection, listener: asyncio.Task[None]) -> None:
        while not self._hang_up.is_set() and not listener.done():
            try:
                for message in self.caller.tick():
                    await socket.send(message)
            except ConnectionClosed:
                return
            await asyncio.sleep(0.02)

    async def _listen(self, socket: ClientConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for message in socket:
                for answer in self.caller.receive(message):
                    await socket.send(answer)


async def eventually(check: Callable[[], Awaitable[Any]], what: str) -> Any:
    """Poll an async ``check`` until it returns something truthy (bounded)."""
    async with asyncio.timeout(WAIT_S):
        while not (result := await check()):  # noqa: ASYNC110 - another process changes it
            await asyncio.sleep(0.1)
    assert result, what
    return result


async def calls_per_worker(server: Server) -> list[int]:
    """Active calls of each worker, by index."""
    return [worker["active_calls"] for worker in await server.workers()]


Held = tuple[HeldCall, "asyncio.Task[tuple[int | None, str | None]]"]


async def one_call_on_each_worker(server: Server, tasks: asyncio.TaskGroup) -> list[Held]:
    """Start calls until each of the two workers runs exactly one (the kernel picks the worker
    per connection, so a call that lands beside the other is hung up and tried again).

    Which call runs on which worker is not observable from outside, only the counts are.
    """
    held: list[Held] = []
    for _ in range(30):
        call = HeldCall(server.stream_url)
        held.append((call, tasks.create_task(call.run())))
        admitted = await eventually(lambda: _total_of(server, len(held)), "the call's admission")
        if admitted == [1, 1]:
            return held
        if len(held) == 2:  # both on one worker: let the newest go and try again
            call, task = held.pop()
            call.hang_up()
            assert (await task)[0] == 1000
            await eventually(lambda: _total_is(server, 1), "the call to be released")
    raise AssertionError("the kernel never gave the two workers one call each")


async def _total_is(server: Server, total: int) -> bool:
    return sum(await calls_per_worker(server)) == total


async def _total_of(server: Server, total: int) -> list[int] | None:
    """The calls per worker once they add up to ``total``."""
    per = await calls_per_worker(server)
    return per if sum(per) == total else None


async def _any_done(tasks: list[asyncio.Task[Any]]) -> bool:
    return any(task.done() for task in tasks)


async def test_two_workers_share_calls_capacity_and_survive_a_killed_worker(
    tmp_path: Path,
) -> None:
    async with (
        serving("--workers", "2", "--config", str(write_config(tmp_path, 2))) as server,
        asyncio.TaskGroup() as tasks,
    ):
        before = await server.workers()
        assert [w["index"] for w in before] == [0, 1]
        assert all(w["alive"] and w["restarts"] == 0 for w in before)
        assert len({w["pid"] for w in before}) == 2

        # Two workers serve calls concurrently: each runs one.
        held = await one_call_on_each_worker(server, tasks)
        workers = await server.workers()
        assert [(w["active_calls"], w["calls_total"] >= 1) for w in workers] == [(1, True)] * 2

        # Capacity (2) counts the calls of both workers, whichever worker answers.
        for _ in range(4):
            status, body = await server.get("/readyz")
            assert (status, body["reason"], body["active_calls"]) == (
                503,
                "at capacity (2 calls)",
                2,
            )
        refused = HeldCall(server.stream_url)
        assert await refused.run() == (1013, "at capacity (2 calls)")

        # SIGKILL worker 0: its call is cut, the other worker's call goes on; it is restarted.
        sids = [call.caller.call_id for call, _ in held]
        await eventually(lambda: started_logs(tmp_path, sids), "both calls' logs written")
        killed = workers[0]["pid"]
        os.kill(killed, signal.SIGKILL)

        async def restarted() -> dict[str, Any] | None:
            slot = (await server.workers())[0]
            serving = slot["loop_lag"]["samples"] > 0  # its loop monitor runs once it listens
            return slot if slot["restarts"] == 1 and slot["pid"] != killed and serving else None

        await eventually(restarted, "worker 0 to be restarted")
        await eventually(lambda: _any_done([task for _, task in held]), "the killed call's end")
        cut = [task for _, task in held if task.done()]
        going = [(call, task) for call, task in held if not task.done()]
        assert len(cut) == 1
        assert len(going) == 1
        assert cut[0].result()[0] == 1006  # the connection died with its worker
        assert await calls_per_worker(server) == [0, 1]  # the dead worker's slot is zeroed
        # The call the dead worker took with it is in the metrics: its replacement counted it.
        assert "voicegate_calls_lost_total 1.0" in (await server.metrics()).splitlines()

        # The survivor ends normally when its caller hangs up.
        survivor, task = going[0]
        survivor.hang_up()
        assert (await task)[0] == 1000
        # Its session is released after the close frame; count the last call on an empty gateway.
        await eventually(lambda: _total_is(server, 0), "the survivor's call to be released")

        # SIGTERM drains every worker (a running call is closed at the deadline), exit 0.
        last = HeldCall(server.stream_url)
        last_task = tasks.create_task(last.run())
        await eventually(lambda: _total_is(server, 1), "the last call to be admitted")
        server.process.send_signal(signal.SIGTERM)
        assert await last_task == (1001, "the gateway is shutting down")
        assert await asyncio.wait_for(server.process.wait(), WAIT_S) == 0
        log = await server.stderr()
    assert f"worker 0 (pid {killed}) exited (killed by SIGKILL)" in log
    assert "worker 0 restarted" in log
    assert "drained: 0 finished, 1 closed" in log
    # The killed worker's call is closed in its log with why (it got no close frame).
    lost = [close for close in last_records(tmp_path / "data" / "calls") if close["code"] == 1006]
    reason = f"worker 0 (pid {killed}) exited (killed by SIGKILL)"
    assert [(close["event"], close["reason"]) for close in lost] == [("call_closed", reason)]


async def started_logs(tmp_path: Path, call_sids: list[str]) -> bool:
    """Whether the calls' logs hold their start (the log writer gathers for 0.25 s)."""
    logs = [path.read_text() for path in (tmp_path / "data" / "calls").glob("*.jsonl")]
    return all(any(f'"call_id": "{sid}"' in text for text in logs) for sid in call_sids)


def last_records(directory: Path) -> list[dict[str, Any]]:
    """The last record of every call log in ``directory``."""
    return [json.loads(p.read_text().splitlines()[-1]) for p in directory.glob("*.jsonl")]


async def test_one_worker_reports_itself(tmp_path: Path) -> None:
    async with serving("--workers", "1", "--config", str(write_config(tmp_path, 5))) as server:
        (worker,) = await server.workers()
        assert (worker["index"], worker["pid"], worker["alive"]) == (0, server.process.pid, True)
        status, body = await server.get("/readyz")
        assert (status, body["capacity"]) == (200, 5)
        server.process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(server.process.wait(), WAIT_S) == 0


def test_a_worker_that_cannot_start_stops_the_supervisor_with_its_reason(
    capsys: Any,
) -> None:
    arguments = ["serve", "--workers", "2", "--port", "0", "--llm", "nonsense:x"]
    assert main(arguments) == 1
    assert "voicegate serve: engine.llm: 'nonsense:x' is not available" in capsys.readouterr().err
