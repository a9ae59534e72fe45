"""A gateway's life: listen, open for calls, drain on SIGTERM/SIGINT, stop.

:class:`Gateway` is what the CLI, the replay tool and the tests drive; :func:`serve` adds the
signal handling of a long-running process. Draining (issue 4, "graceful stop") refuses new
calls at once (``/readyz`` turns 503, upgrades are closed with 1001), lets running calls finish
until ``shutdown_deadline_s``, then closes the rest with 1001 and a reason. A second signal
during the drain skips the rest of the deadline.
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

from voicegate.gateway.calls import CallRegistry, DrainResult
from voicegate.gateway.options import GatewayOptions
from voicegate.gateway.server import build_app
from voicegate.gateway.transport import CallRunner

log = logging.getLogger(__name__)

#: Once calls are drained, how long aiohttp waits for other open HTTP requests on cleanup.
HTTP_SHUTDOWN_TIMEOUT_S = 2.0


class Gateway:
    """One voicegate server: its routes, its registry of calls, and its listening socket."""

    def __init__(self, runner: CallRunner, options: GatewayOptions) -> None:
        self.options = options
        self.calls = CallRegistry(options.capacity, options.limits.max_waiting_for_start)
        self.app = build_app(runner, options, self.calls)
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
        host = self.options.host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}"

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
        site = web.TCPSite(app_runner, self.options.host, self.options.port)
        try:
            await site.start()
        except BaseException:
            await app_runner.cleanup()
            raise
        self._app_runner = app_runner
        self._port = int(app_runner.addresses[0][1])

    def open(self) -> None:
        """Start admitting calls."""
        self.calls.open()

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
) -> DrainResult:
    """Run ``gateway`` until SIGTERM/SIGINT (or ``stop`` is set), then drain and close it.

    ``warm_up`` runs after the socket is bound and before calls are admitted, so probes see
    ``/healthz`` alive and ``/readyz`` "starting" meanwhile.
    """
    stop = asyncio.Event() if stop is None else stop
    hurry = asyncio.Event()
    await gateway.start()
    try:
        with _signals_set(stop, hurry, enabled=handle_signals):
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
    finally:
        await gateway.close()


@contextmanager
def _signals_set(stop: asyncio.Event, hurry: asyncio.Event, *, enabled: bool) -> Iterator[None]:
    """While inside, the first SIGTERM/SIGINT sets ``stop`` and the next one ``hurry``."""
    if not enabled:
        yield
        return
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)

    def on_signal() -> None:
        (hurry if stop.is_set() else stop).set()

    for number in signals:
        loop.add_signal_handler(number, on_signal)
    try:
        yield
    finally:
        for number in signals:
            loop.remove_signal_handler(number)
