"""``voicegate serve --workers N``: a supervisor process and N worker processes on one port.

The supervisor reserves the port (a bound, never listening SO_REUSEPORT socket, so the port
stays ours while a worker restarts; with port 0 it picks the port first), creates the shared
scoreboard, and spawns the workers. Each worker is a whole gateway that binds the same port
with SO_REUSEPORT: the kernel spreads new connections over the listening workers, and a
worker's calls live and die with it. The supervisor:

- prints nothing itself until every worker listens, then calls ``on_listening(base_url)``;
- restarts a worker that exits, after a back-off that grows while it keeps dying young, and
  zeroes its slot on the scoreboard so its dead calls stop counting against the capacity;
  the call logs the dead worker left open get their ``call_closed`` (1006, and why it ended);
- on SIGTERM/SIGINT/SIGHUP forwards SIGTERM to every worker, each of which drains as a single
  gateway does (a second signal sends them ``HURRY_SIGNAL``: skip the drain's deadline), and
  returns once they have all exited (killing any still alive after ``stop_timeout_s``).

What runs inside a worker is gateway/worker.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

from prometheus_client.multiprocess import mark_process_dead

from voicegate.gateway.calllog import close_lost_logs
from voicegate.gateway.lifecycle import STOP_SIGNALS, base_url
from voicegate.gateway.scoreboard import Scoreboard
from voicegate.gateway.worker import (
    HURRY_SIGNAL,
    StartReport,
    WorkerEntry,
    WorkerLaunch,
    readable,
)

log = logging.getLogger(__name__)

#: A worker that lived this long before exiting was healthy: its next restart is immediate-ish.
STABLE_AFTER_S = 30.0
#: Restart delays: the first after a healthy life, doubling per young death, capped.
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 30.0
#: prometheus-client's multiprocess mode is switched on by this variable, read when a worker
#: imports the library (its documented contract; it has no other way to be told).
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


@dataclass(frozen=True, slots=True)
class SupervisorOptions:
    """How many workers, where they listen, and how long a stop may take."""

    workers: int
    host: str
    port: int  # 0: the supervisor picks a free one before spawning
    capacity: int
    stop_timeout_s: float  # after SIGTERM, when still-running workers are killed
    call_logs: Path | None = None  # the workers' call-log directory (None: no call logs)


def backoff_s(young_deaths: int) -> float:
    """Delay before a restart, after ``young_deaths`` exits in a row of short-lived workers."""
    if young_deaths <= 0:
        return BACKOFF_FIRST_S
    return min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2.0**young_deaths)


def reserve_port(host: str, port: int) -> socket.socket:
    """A bound, not listening, SO_REUSEPORT socket holding ``host:port`` (0: a free port).

    A plain bind first, so a port another program listens on is refused here (SO_REUSEPORT
    alone would let us join another voicegate's group on it). Raises ``OSError``.
    """
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(address)
        chosen = probe.getsockname()[1]
    reserved = socket.socket(family, kind, proto)
    try:
        reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        reserved.bind((address[0], chosen, *address[2:]))
    except BaseException:
        reserved.close()
        raise
    return reserved


class _Worker:
    """One spawned worker process and the pipe its start report arrives on."""

    def __init__(self, index: int, process: BaseProcess, reports: Connection) -> None:
        self.index = index
        self.process = process
        self._reports = reports

    @property
    def pid(self) -> int:
        """The worker's process id."""
        return self.process.pid or 0

    async def started(self) -> str | None:
        """None once it listens; else why it could not start (also when it just died)."""
        try:
            await readable(self._reports.fileno())
            message: str | None = self._reports.recv()
        except EOFError:
            code = await self.exited()
            return f"worker {self.index} exited ({describe_exit(code)}) before listening"
        finally:
            self._reports.close()
        return message

    async def exited(self) -> int:
        """Wait for the process to end; its exit code (negative: the signal that ended it)."""
        if self.process.exitcode is None:
            await readable(self.process.sentinel)
        self.process.join()
        return self.process.exitcode if self.process.exitcode is not None else 0

    def signal(self, number: signal.Signals) -> None:
        """Send ``number`` if the process still runs."""
        if self.process.exitcode is None and self.process.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, number)


def describe_exit(code: int) -> str:
    """``code 1`` or ``killed by SIGKILL``, for the logs."""
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"code {code}"


class Supervisor:
    """Spawns, watches, restarts and stops the worker processes (see the module docstring)."""

    def __init__(self, entry: WorkerEntry, plan: object, options: SupervisorOptions) -> None:
        self._entry = entry
        self._plan = plan
        self._options = options
        self._context = multiprocessing.get_context("spawn")  # no fork of a running loop
        self._workers: dict[int, _Worker] = {}
        self._stop = asyncio.Event()
        self._failure: str | None = None
        self._listening = 0
        self._metrics_dir: Path | None = None

    async def run(self, on_listening: Callable[[str], None]) -> str | None:
        """Serve until SIGTERM/SIGINT/SIGHUP; None, or why the workers could not start.

        Raises ``OSError`` when the port cannot be reserved.
        """
        options = self._options
        with reserve_port(options.host, options.port) as reserved, metrics_directory() as metrics:
            self._metrics_dir = metrics
            port = int(reserved.getsockname()[1])
            board = Scoreboard.create(options.workers, options.capacity)
            try:
                with _forwarding_signals(self):
                    await self._supervise(
                        board, port, lambda: on_listening(base_url(options.host, port))
                    )
            finally:
                self.signal_all(signal.SIGKILL)  # only if something above failed midway
                board.close()
        return self._failure

    def request_stop(self) -> None:
        """First call: stop (workers drain); later calls: workers skip their deadline."""
        if self._stop.is_set():
            log.info("second stop request: workers close their calls now")
            self.signal_all(HURRY_SIGNAL)
        self._stop.set()

    def signal_all(self, number: signal.Signals) -> None:
        """Send ``number`` to every worker process still running."""
        for worker in self._workers.values():
            worker.signal(number)

    async def _supervise(self, board: Scoreboard, port: int, announce: Callable[[], None]) -> None:
        """One keeper task per worker slot; on stop, SIGTERM them all and wait."""
        async with asyncio.TaskGroup() as tasks:
            keepers = [
                tasks.create_task(self._keep(index, board, port, announce), name=f"keep-{index}")
                for index in range(self._options.workers)
            ]
            await self._stop.wait()
            log.info("stopping %d worker(s)", len(keepers))
            self.signal_all(signal.SIGTERM)
            _, running = await asyncio.wait(keepers, timeout=self._options.stop_timeout_s)
            if running:
                log.error(
                    "workers still running %.0f s after SIGTERM: killing them",
                    self._options.stop_timeout_s,
                )
                self.signal_all(signal.SIGKILL)

    async def _keep(
        self, index: int, board: Scoreboard, port: int, announce: Callable[[], None]
    ) -> None:
        """Run worker ``index`` until the stop, restarting it when it exits."""
        young_deaths = 0
        first = True
        lost_calls = 0  # taken by dead workers, not yet counted by a replacement
        while not self._stop.is_set():
            worker = self._spawn(index, board, port, lost_calls)
            failure = await worker.started()
            if failure is None:
                lost_calls = 0  # counted in its metrics as it started
            if first:
                first = False
                self._first_start(failure, announce)
            elif failure is None:
                log.info("worker %d restarted (pid %d)", index, worker.pid)
            born, born_wall = time.monotonic(), time.time()
            code = await worker.exited()
            lost_calls += board.active_calls_of(index)  # before exited() zeroes them
            board.exited(index)
            await self._close_lost_calls(worker, code, born_wall)
            if self._metrics_dir is not None:
                # Its live gauges (calls active) stop counting; its counters are kept.
                mark_process_dead(worker.pid, str(self._metrics_dir))  # type: ignore[no-untyped-call]
            if self._stop.is_set():
                log.info("worker %d (pid %d) exited (%s)", index, worker.pid, describe_exit(code))
                return
            young_deaths = young_deaths + 1 if time.monotonic() - born < STABLE_AFTER_S else 0
            delay = backoff_s(young_deaths)
            log.warning(
                "worker %d (pid %d) exited (%s); its calls ended with it; restarting in %.1f s",
                index, worker.pid, describe_exit(code), delay,
            )  # fmt: skip
            if await _wait_for(self._stop, delay):
                return
            board.restarted(index)

    async def _close_lost_calls(self, worker: _Worker, code: int, since: float) -> None:
        """Close the call logs of the calls a dead worker took with it (if it had calls)."""
        directory = self._options.call_logs
        if directory is None or code == 0:  # a worker that exits 0 drained its calls
            return
        reason = f"worker {worker.index} (pid {worker.pid}) exited ({describe_exit(code)})"
        closed = await asyncio.to_thread(close_lost_logs, directory, worker.pid, reason, since)
        if closed:
            log.warning("%s: %d call(s) ended with it", reason, closed)

    def _first_start(self, failure: str | None, announce: Callable[[], None]) -> None:
        """Announce once every worker listens; stop them all if one could not start."""
        if self._stop.is_set():
            return  # stopping already: a worker cut short while starting is no news
        if failure is not None:
            log.error("%s", failure)
            self._failure = failure
            self._stop.set()
            return
        self._listening += 1
        if self._listening == self._options.workers:
            announce()

    def _spawn(self, index: int, board: Scoreboard, port: int, lost_calls: int) -> _Worker:
        """Start worker ``index`` on a cleared slot; it counts ``lost_calls`` (its dead
        predecessors' calls) in the metrics."""
        assert board.path is not None  # the supervisor created the board
        reports, report_end = self._context.Pipe(duplex=False)
        launch = WorkerLaunch(
            index,
            port,
            board.path,
            StartReport(report_end),
            self._plan,
            self._metrics_dir,
            lost_calls=lost_calls if self._metrics_dir is not None else 0,
        )
        process = self._context.Process(
            target=self._entry, args=(launch,), name=f"voicegate-worker-{index}"
        )
        board.reset(index)  # before it runs, so a fresh worker's first call is never erased
        process.start()
        report_end.close()  # the worker holds its own copy; EOF here then means it died
        worker = _Worker(index, process, reports)
        self._workers[index] = worker
        board.spawned(index, worker.pid)
        log.info("worker %d started (pid %d)", index, worker.pid)
        return worker


@contextlib.contextmanager
def metrics_directory() -> Iterator[Path]:
    """A fresh directory for this run's metric files, named to the workers it spawns (through
    :data:`MULTIPROC_ENV`, which spawned processes inherit); removed with its files at exit.

    Fresh per run: files of an earlier run would add its counts to this one's.
    """
    path = Path(tempfile.mkdtemp(prefix="voicegate-metrics-"))
    previous = os.environ.get(MULTIPROC_ENV)
    os.environ[MULTIPROC_ENV] = str(path)
    try:
        yield path
    finally:
        if previous is None:
            os.environ.pop(MULTIPROC_ENV, None)
        else:
            os.environ[MULTIPROC_ENV] = previous
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def _forwarding_signals(supervisor: Supervisor) -> Iterator[None]:
    """While inside, the stop signals (SIGTERM, SIGINT, SIGHUP) ask ``supervisor`` to stop."""
    loop = asyncio.get_running_loop()
    signals = STOP_SIGNALS
    for number in signals:
        loop.add_signal_handler(number, supervisor.request_stop)
    try:
        yield
    finally:
        for number in signals:
            loop.remove_signal_handler(number)


async def _wait_for(event: asyncio.Event, timeout_s: float) -> bool:
    """Whether ``event`` was set within ``timeout_s``."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), timeout_s)
    return event.is_set()
