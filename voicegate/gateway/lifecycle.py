"""A gateway's life: listen, open for calls, drain on SIGTERM/SIGINT/SIGHUP, stop.

:class:`Gateway` is what the CLI, the replay tool and the tests drive; :func:`serve` adds the
signal handling of a long-running process. Draining (issue 4, "graceful stop") refuses new
calls at once (``/readyz`` turns 503, upgrades are closed with 1001), lets running calls finish
until ``shutdown_deadline_s``, then closes the rest with 1001 and a reason. A second signal
during the drain skips the rest of the deadline.

A gateway is one worker: alone (a private scoreboard) or one of ``voicegate serve --workers
N`` (a seat on the supervisor's shared scoreboard, gateway/supervisor.py), where admission counts
the calls of every worker. While it serves, it records its media-loop lag on its slot.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Self

from aiohttp import web

from voicegate.gateway.calllog import CallLogs
from voicegate.gateway.calls import CallRegistry, DrainResult
from voicegate.gateway.loopwatch import watch_loop
from voicegate.gateway.metrics import GatewayMetrics
from voicegate.gateway.options import GatewayOptions
from voicegate.gateway.overload import LoadGuard
from voicegate.gateway.scoreboard import Scoreboard, SharedCapacityGate
from voicegate.gateway.server import build_app
from voicegate.gateway.session import SessionRunner
from voicegate.gateway.transport import CLOSE_INTERNAL_ERROR, CallRunner

log = logging.getLogger(__name__)

#: Once calls are drained, how long aiohttp waits for other open HTTP requests on cleanup.
HTTP_SHUTDOWN_TIMEOUT_S = 2.0
#: The signals that stop a gateway: the first drains, the next skips the drain's deadline.
#: SIGHUP is the terminal hanging up (a closed window, a dropped SSH session): its default
#: action killed the gateway at once, every call cut without a close frame or a reason.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
CRASH_REASON = "the gateway worker failed"


def base_url(host: str, port: int) -> str:
    """``http://host:port`` (an IPv6 host in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class Gateway:
    """One voicegate server: its routes, its registry of calls, and its listening socket."""

    def __init__(
        self,
        runner: CallRunner,
        options: GatewayOptions,
        *,
        board: Scoreboard | None = None,
        worker: int = 0,
        reuse_port: bool = False,
        metrics: GatewayMetrics | None = None,
        app: web.Application | None = None,
        unix_path: str | None = None,
    ) -> None:
        """``board`` and ``worker``: this worker's slot (default: a private one-slot board);
        ``reuse_port``: share the port with the other workers (SO_REUSEPORT); ``metrics``:
        served at ``/metrics`` and fed with the calls and the loop lag; ``app``: an
        application of your own to add the routes to (docs/api.md); ``unix_path``: listen on
        that Unix socket instead of TCP (virtual-time replays, docs/replay.md)."""
        self.options = options
        self.board = Scoreboard.private(options.capacity) if board is None else board
        self.worker = worker
        # With a call registry shared by the nodes (Redis), admission and /readyz consult it.
        leases = runner.services.leases if isinstance(runner, SessionRunner) else None
        limits = options.limits
        self.load = LoadGuard(limits.shed_late_share, min_calls=limits.shed_min_calls)
        self.calls = CallRegistry(
            SharedCapacityGate(self.board, worker),
            options.limits.max_waiting_for_start,
            leases,
            self.load,
            waiting_per_client=options.limits.waiting_for_start_per_ip,
        )
        self.metrics = metrics
        logs = options.call_logs
        # Owned here: its writer thread stops in close(), after the calls have drained.
        self.call_logs = None if logs is None else CallLogs(logs)
        self.app = build_app(
            runner,
            options,
            self.calls,
            board=self.board,
            metrics=metrics,
            call_logs=self.call_logs,
            app=app,
        )
        self._reuse_port = reuse_port
        self._unix_path = unix_path
        self._app_runner: web.AppRunner | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        """The bound TCP port (the chosen one when ``options.port`` is 0)."""
        if self._port is None:
            raise RuntimeError("the gateway is not listening; await start() first")
        return self._port

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the listening socket (WebSockets: replace http by ws)."""
        return base_url(self.options.host, self.port)

    async def start(self) -> None:
        """Listen; calls are refused as "starting" until :meth:`open`."""
        # keepalive_timeout also closes silent sockets and half-sent headers (issue 15 #4):
        # aiohttp arms it at connect and drops the connection if no request has completed.
        app_runner = web.AppRunner(
            self.app,
            shutdown_timeout=HTTP_SHUTDOWN_TIMEOUT_S,
            keepalive_timeout=self.options.limits.http_idle_timeout_s,
        )
        await app_runner.setup()
        site: web.BaseSite = (
            web.UnixSite(app_runner, self._unix_path)
            if self._unix_path
            else web.TCPSite(
                app_runner,
                self.options.host,
                self.options.port,
                reuse_port=self._reuse_port or None,
            )
        )
        try:
            await site.start()
        except BaseException:
            await app_runner.cleanup()
            raise
        self._app_runner = app_runner
        self._port = 0 if self._unix_path else int(app_runner.addresses[0][1])

    def open(self) -> None:
        """Start admitting calls."""
        self.calls.open()

    def record_lag(self, lag_ms: float) -> None:
        """One media-loop lag sample, onto this worker's slot."""
        self.board.record_lag(self.worker, lag_ms)
        self.load.record(lag_ms)
        if self.metrics is not None:
            self.metrics.record_lag(lag_ms)

    async def drain(
        self, deadline_s: float | None = None, *, hurry: asyncio.Event | None = None
    ) -> DrainResult:
        """Refuse new calls; wait for running ones up to the deadline; close the rest."""
        deadline = self.options.shutdown_deadline_s if deadline_s is None else deadline_s
        return await self.calls.drain(deadline, hurry=hurry)

    async def close(self) -> None:
        """Stop listening and release the server (after :meth:`drain`)."""
        if self._app_runner is not None:
            await self._app_runner.cleanup()
            self._app_runner = None
        if self.call_logs is not None:
            await asyncio.to_thread(self.call_logs.close)

    async def __aenter__(self) -> Self:
        await self.start()
        self.open()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            await self.drain()
        finally:
            await self.close()


async def serve(
    gateway: Gateway,
    *,
    warm_up: Callable[[], Awaitable[None]] | None = None,
    on_listening: Callable[[Gateway], None] | None = None,
    stop: asyncio.Event | None = None,
    handle_signals: bool = True,
    signals: tuple[signal.Signals, ...] = STOP_SIGNALS,
    hurry_signals: tuple[signal.Signals, ...] | None = None,
) -> DrainResult:
    """Run ``gateway`` until one of ``signals`` (or ``stop`` is set), then drain and close it.

    A second of ``signals`` skips the drain's deadline; with ``hurry_signals``, only those do
    (a worker: its supervisor forwards SIGTERM, which may reach it directly too).

    ``warm_up`` runs after the socket is bound and before calls are admitted, so probes see
    ``/healthz`` alive and ``/readyz`` "starting" meanwhile. The loop-lag monitor runs from
    the bind to the close. If serving itself fails, running calls are closed with 1011.
    """
    stop = asyncio.Event() if stop is None else stop
    hurry = asyncio.Event()
    await gateway.start()
    try:
        with _signals_set(stop, hurry, signals if handle_signals else (), hurry_signals):
            async with asyncio.TaskGroup() as tasks:
                monitor = tasks.create_task(watch_loop(gateway.record_lag), name="loop-lag")
                result = await _serve_until(gateway, stop, hurry, warm_up, on_listening)
                monitor.cancel()
            return result
    except Exception:
        log.exception("the gateway failed; closing its calls")
        await gateway.calls.abort(CLOSE_INTERNAL_ERROR, CRASH_REASON)
        raise
    finally:
        await gateway.close()


async def _serve_until(
    gateway: Gateway,
    stop: asyncio.Event,
    hurry: asyncio.Event,
    warm_up: Callable[[], Awaitable[None]] | None,
    on_listening: Callable[[Gateway], None] | None,
) -> DrainResult:
    """Announce, warm up, admit calls until ``stop``, then drain."""
    if on_listening is not None:
        on_listening(gateway)
    if warm_up is not None:
        await warm_up()
    gateway.open()
    await stop.wait()
    log.info("draining: %d call(s) running", len(gateway.calls.active))
    result = await gateway.drain(hurry=hurry)
    log.info("drained: %d finished, %d closed", result.finished, result.closed)
    return result


@contextmanager
def _signals_set(
    stop: asyncio.Event,
    hurry: asyncio.Event,
    signals: tuple[signal.Signals, ...],
    hurry_signals: tuple[signal.Signals, ...] | None,
) -> Iterator[None]:
    """While inside, the first of ``signals`` sets ``stop`` and the next one ``hurry`` (with
    ``hurry_signals``, those set ``hurry`` and ``signals`` only ``stop``)."""
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        (hurry if stop.is_set() and hurry_signals is None else stop).set()

    def on_hurry() -> None:
        stop.set()
        hurry.set()

    handlers = {number: on_signal for number in signals}
    handlers.update({number: on_hurry for number in hurry_signals or ()})
    for number, handler in handlers.items():
        loop.add_signal_handler(number, handler)
    try:
        yield
    finally:
        for number in handlers:
            loop.remove_signal_handler(number)
