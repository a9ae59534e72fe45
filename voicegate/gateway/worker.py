"""Inside a worker process of ``voicegate serve --workers N`` (gateway/supervisor.py).

A worker is a whole gateway on the port the supervisor reserved, bound with SO_REUSEPORT, with
its slot on the shared scoreboard. It tells the supervisor once that it listens (or why it
could not start), drains on SIGTERM, ignores SIGINT and SIGHUP (a terminal's Ctrl-C and
hang-up reach the whole process group; the supervisor alone decides and forwards SIGTERM),
and drains by itself if the supervisor disappears. A repeated SIGTERM does not cut the drain
short (systemd stops a service by sending SIGTERM to every process of it, and the supervisor
forwards its own: a worker gets two); the supervisor's :data:`HURRY_SIGNAL` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import signal
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path

from voicegate.gateway.heap import freeze_startup_heap
from voicegate.gateway.lifecycle import Gateway, serve
from voicegate.gateway.metrics import GatewayMetrics
from voicegate.gateway.options import GatewayOptions
from voicegate.gateway.scoreboard import Scoreboard
from voicegate.gateway.transport import CallRunner

log = logging.getLogger(__name__)

#: What the supervisor sends its workers at a second stop request: skip the drain's deadline.
HURRY_SIGNAL = signal.SIGUSR1


class StartReport:
    """The worker's one message to the supervisor: listening, or why it could not start."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._sent = False

    def listening(self) -> None:
        """Tell the supervisor this worker accepts connections."""
        self._send(None)

    def failed(self, reason: str) -> None:
        """Tell the supervisor why this worker could not start (it then stops them all)."""
        self._send(reason)

    def _send(self, message: str | None) -> None:
        if not self._sent:
            self._sent = True
            self._connection.send(message)
            self._connection.close()


@dataclass(frozen=True, slots=True)
class WorkerLaunch:
    """What a worker process is started with (pickled into it by multiprocessing)."""

    index: int
    port: int
    board_path: Path
    report: StartReport
    plan: object  # the caller's own description of what to serve (cli: settings and flags)
    metrics_dir: Path | None = None  # this run's prometheus-client multiprocess directory
    #: Calls the workers this one replaces took with them when they died: they never reached
    #: the metrics (the supervisor cannot write them), so this worker counts them.
    lost_calls: int = 0


#: The worker processes' entry point: a module-level function, so it can be pickled.
WorkerEntry = Callable[[WorkerLaunch], None]


async def readable(fd: int) -> None:
    """Wait until ``fd`` is readable (data, EOF, or an exited process's sentinel)."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)


def ignore_terminal_interrupts() -> None:
    """Leave Ctrl-C and a terminal's hang-up to the supervisor, which forwards SIGTERM (first
    thing in a worker; SIGHUP's default action would kill the worker and cut its calls, as
    :data:`HURRY_SIGNAL`'s would while the worker starts)."""
    for number in (signal.SIGINT, signal.SIGHUP, HURRY_SIGNAL):
        signal.signal(number, signal.SIG_IGN)


async def run_worker(
    launch: WorkerLaunch,
    runner: AbstractAsyncContextManager[CallRunner],
    options: GatewayOptions,
    metrics: GatewayMetrics | None = None,
) -> None:
    """Serve as worker ``launch.index``: a gateway on the shared port and scoreboard, until
    SIGTERM (or the supervisor is gone), then drain. Startup errors propagate."""
    board = Scoreboard.attach(launch.board_path)
    stop = asyncio.Event()
    try:
        with _stop_when_orphaned(stop, launch.board_path):
            async with runner as call_runner:
                # Everything the worker keeps is built: keep it out of full GC passes.
                freeze_startup_heap()
                gateway = Gateway(
                    call_runner,
                    replace(options, port=launch.port),
                    board=board,
                    worker=launch.index,
                    reuse_port=True,
                    metrics=metrics,
                )
                await serve(
                    gateway,
                    stop=stop,
                    signals=(signal.SIGTERM,),
                    hurry_signals=(HURRY_SIGNAL,),
                    on_listening=lambda _: launch.report.listening(),
                )
    finally:
        board.close()


@contextlib.contextmanager
def _stop_when_orphaned(stop: asyncio.Event, board_path: Path) -> Iterator[None]:
    """While inside, set ``stop`` if the supervisor process ends (its sentinel turns readable),
    and remove the scoreboard's file, which nobody else will (the mapping stays valid)."""
    parent = multiprocessing.parent_process()
    if parent is None:
        yield
        return
    loop = asyncio.get_running_loop()

    def orphaned() -> None:
        loop.remove_reader(parent.sentinel)
        log.warning("the supervisor is gone: draining")
        board_path.unlink(missing_ok=True)
        stop.set()

    loop.add_reader(parent.sentinel, orphaned)
    try:
        yield
    finally:
        loop.remove_reader(parent.sentinel)
