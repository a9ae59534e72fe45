"""`voicegate serve` as a process: it listens, drains on SIGTERM/SIGINT/SIGHUP and exits 0."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.server.serve_with_echo import HEAP_QUERY, echo_runner
from tests.server.server_kit import close_of
from voicegate.cli.main import build_parser, main
from voicegate.cli.serve_command import serve_main

SCRIPT = Path(__file__).with_name("serve_with_echo.py")


@asynccontextmanager
async def serve_process(
    config: Path, *, own_session: bool = False
) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """A running `voicegate serve` (echo runner) and its base URL, read from its stdout.

    ``own_session``: in a session (and process group) of its own, as under a terminal.
    """
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SCRIPT),
        "--config",
        str(config),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=own_session,
    )
    try:
        assert process.stdout is not None
        first_line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", first_line)
        assert found, f"unexpected first line: {first_line!r}"
        yield process, found.group(1)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def write_config(tmp_path: Path, extra: str = "", deadline_s: float = 0.5) -> Path:
    config = tmp_path / "voicegate.yml"
    text = f"server:\n  port: 0\n  shutdown_deadline_s: {deadline_s}\n" + extra
    config.write_text(text, encoding="utf-8")
    return config


@pytest.mark.parametrize("workers", [1, 2])
async def test_the_startup_heap_is_frozen_before_calls_are_served(
    tmp_path: Path, workers: int
) -> None:
    # gateway/heap.py: a full GC pass over the startup heap stalled every call's playout.
    config = write_config(tmp_path, f"  workers: {workers}\n")
    async with serve_process(config) as (process, base):
        ws_base = "ws" + base.removeprefix("http")
        async with connect(ws_base + "/browser", open_timeout=10) as client:
            await client.send(HEAP_QUERY)
            assert int(await asyncio.wait_for(client.recv(), 10)) > 1000
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0


async def test_sigterm_closes_running_calls_after_the_deadline_and_exits_0(
    tmp_path: Path,
) -> None:
    async with serve_process(write_config(tmp_path)) as (process, base):
        async with aiohttp.ClientSession() as session, session.get(base + "/readyz") as reply:
            assert reply.status == 200
        ws_base = "ws" + base.removeprefix("http")
        async with connect(ws_base + "/browser", open_timeout=10) as client:
            await client.send("ping")
            assert await asyncio.wait_for(client.recv(), 10) == "ping"
            process.send_signal(signal.SIGTERM)
            assert await close_of(client) == (1001, "the gateway is shutting down")
        assert await asyncio.wait_for(process.wait(), 30) == 0
        assert process.stderr is not None
        log = (await process.stderr.read()).decode()
    assert "drained: 0 finished, 1 closed" in log


@asynccontextmanager
async def a_call_on(
    config: Path, *, own_session: bool = False
) -> AsyncIterator[tuple[asyncio.subprocess.Process, ClientConnection]]:
    """A running `voicegate serve` (echo runner) holding one answered /browser call."""
    async with serve_process(config, own_session=own_session) as (process, base):
        ws_base = "ws" + base.removeprefix("http")
        async with connect(ws_base + "/browser", open_timeout=10) as client:
            await client.send("ping")
            assert await asyncio.wait_for(client.recv(), 10) == "ping"
            yield process, client


@pytest.mark.parametrize("workers", [1, 2])
async def test_a_terminal_hang_up_drains_like_sigterm(tmp_path: Path, workers: int) -> None:
    """SIGHUP to the whole process group (the terminal closed) drains the calls, which get
    1001 and the reason; it killed every process at once, cutting calls with no close frame."""
    config = write_config(tmp_path, f"  workers: {workers}\n")
    async with a_call_on(config, own_session=True) as (process, client):
        os.killpg(process.pid, signal.SIGHUP)
        assert await close_of(client) == (1001, "the gateway is shutting down")
        assert await asyncio.wait_for(process.wait(), 30) == 0


async def test_sigterm_to_every_process_is_one_stop_that_keeps_the_deadline(
    tmp_path: Path,
) -> None:
    """systemd stops a service with SIGTERM to each of its processes: a worker gets it
    directly and again from the supervisor. That is one stop; it was taken for a second one,
    which skips the drain's deadline, and the calls were closed at once."""
    config = write_config(tmp_path, "  workers: 2\n", deadline_s=60)
    async with a_call_on(config, own_session=True) as (process, client):
        os.killpg(process.pid, signal.SIGTERM)
        assert process.stderr is not None
        await logged(process.stderr, "draining: 1 call(s) running")
        await client.send("still here")  # the call goes on while the gateway drains
        assert await asyncio.wait_for(client.recv(), 10) == "still here"
        await client.close()  # the caller hangs up: the drain has nothing left to wait for
        assert await asyncio.wait_for(process.wait(), 30) == 0
        assert "drained: 1 finished, 0 closed" in (await process.stderr.read()).decode()


async def test_a_second_stop_skips_the_workers_deadline(tmp_path: Path) -> None:
    config = write_config(tmp_path, "  workers: 2\n", deadline_s=60)
    async with a_call_on(config) as (process, client):
        process.send_signal(signal.SIGTERM)
        assert process.stderr is not None
        await logged(process.stderr, "draining: 1 call(s) running")
        process.send_signal(signal.SIGINT)  # Ctrl-C again: close the calls now
        assert await close_of(client) == (1001, "the gateway is shutting down")
        assert await asyncio.wait_for(process.wait(), 30) == 0


async def logged(stream: asyncio.StreamReader, text: str) -> None:
    """Read the process's log until a line holds ``text`` (bounded)."""
    async with asyncio.timeout(30):
        while text not in (await stream.readline()).decode():
            pass


async def test_sigint_without_calls_exits_0(tmp_path: Path) -> None:
    async with serve_process(write_config(tmp_path)) as (process, _):
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 30) == 0


def test_serve_refuses_an_unknown_language_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", "0", "--llm", "nonsense:x"]) == 1
    assert "engine.llm: 'nonsense:x' is not available" in capsys.readouterr().err


def test_serve_reports_a_bad_settings_file_with_the_key_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "voicegate.yml"
    config.write_text("server:\n  capacity: lots\n", encoding="utf-8")
    assert main(["serve", "--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert f"{config}: server.capacity: expected a whole number, got str 'lots'" in err


def test_serve_checks_command_line_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", "70000"]) == 1
    assert "command line: port must be between 0 and 65535" in capsys.readouterr().err


def test_serve_reports_a_port_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        arguments = build_parser().parse_args(["serve", "--port", str(port)])
        assert serve_main(arguments, runner_builder=echo_runner) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
