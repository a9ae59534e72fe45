"""`voicegate serve`: run the gateway until SIGTERM/SIGINT/SIGHUP, then drain and exit 0.

This is the edge where the object graph is built, explicitly (design §3, §7): settings from
the file and the command line, secrets from the environment, the call runner, the gateway.
With one worker the gateway runs in this process; with more, this process supervises worker
processes (gateway/supervisor.py), each of which builds the same graph from the same
:class:`ServePlan` in :func:`serve_worker` (gateway/worker.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import uvloop

from voicegate.cli import logs, wiring
from voicegate.cli.demo import default_config, resolve_demo
from voicegate.config import DEFAULT_CONFIG_PATH, Settings, load_settings, parse_settings
from voicegate.errors import ConfigError, VoicegateError
from voicegate.gateway import server
from voicegate.gateway.calls import CANCEL_GRACE_S
from voicegate.gateway.heap import freeze_startup_heap
from voicegate.gateway.lifecycle import HTTP_SHUTDOWN_TIMEOUT_S, Gateway, serve
from voicegate.gateway.metrics import GatewayMetrics
from voicegate.gateway.options import GatewayOptions
from voicegate.gateway.server import BROWSER_PATH, TWILIO_STREAM_PATH, TWILIO_WEBHOOK_PATH
from voicegate.gateway.supervisor import Supervisor, SupervisorOptions
from voicegate.gateway.transport import CallRunner
from voicegate.gateway.worker import WorkerLaunch, ignore_terminal_interrupts, run_worker

#: Opens the one runner every call is handed to, feeding the metrics (:func:`build_runner`).
RunnerBuilder = Callable[[Settings, GatewayMetrics], AbstractAsyncContextManager[CallRunner]]
#: After SIGTERM, how long workers get beyond the drain deadline before they are killed.
STOP_MARGIN_S = 10.0


def add_parser(subparsers: Any) -> None:
    """Register ``voicegate serve``."""
    parser = subparsers.add_parser(
        "serve",
        help="run the gateway (HTTP and WebSockets on one port)",
        description="Run the gateway until SIGTERM, SIGINT or SIGHUP, then drain calls and exit.",
    )
    parser.add_argument(
        "--config",
        type=Path,
        help=f"settings file (default: {DEFAULT_CONFIG_PATH}, or built-in defaults if absent)",
    )
    parser.add_argument("--project", type=Path, help="agent project directory (engine.project_dir)")
    parser.add_argument("--llm", metavar="SPEC", help="language model, e.g. scripted:FILE")
    parser.add_argument("--host", help="listen address (server.host)")
    parser.add_argument("--port", type=int, help="listen port, 0 for a free one (server.port)")
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="worker processes sharing the port; 0: one per CPU core (server.workers)",
    )
    parser.add_argument(
        "--no-uvloop",
        action="store_true",
        help="run on asyncio's own event loop instead of uvloop (server.uvloop: false)",
    )
    parser.add_argument(
        "--log-level",
        choices=logs.LEVELS,
        help=f"log level (default: ${logs.LEVEL_ENV}, else info)",
    )
    parser.add_argument(
        "--log-format",
        choices=logs.FORMATS,
        help=f"text, or json: one object per line (default: ${logs.FORMAT_ENV}, else text)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """The ``serve`` handler."""
    return serve_main(args)


def build_runner(
    settings: Settings, metrics: GatewayMetrics
) -> AbstractAsyncContextManager[CallRunner]:
    """The call runner every accepted WebSocket is handed to, with the project's MCP servers
    connected for as long as it is open (cli/wiring.py builds it)."""
    return wiring.open_runner(settings, metrics=metrics)


@dataclass(frozen=True, slots=True)
class ServePlan:
    """What to serve, as picklable data: each worker process rebuilds the settings from it.

    The settings file's text is read once, so every worker (and every restart) serves the
    same settings even if the file changes meanwhile.
    """

    config_text: str | None  # None: built-in defaults
    config_source: str
    overrides: dict[str, Any]
    runner_builder: RunnerBuilder
    logging: logs.LogOptions = field(default_factory=logs.LogOptions)
    #: No settings file of the user's: the demo project comes from the package if need be.
    demo: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace, runner_builder: RunnerBuilder) -> ServePlan:
        """The plan for ``voicegate serve`` with these arguments."""
        path = args.config
        if path is None:
            path = default_config()  # ./config/voicegate.yml, else the packaged demo's
        demo = args.config is None and path != DEFAULT_CONFIG_PATH
        text = None if path is None else _read_text(path)
        overrides = {
            "host": args.host,
            "port": args.port,
            "project": args.project,
            "llm": args.llm,
            "workers": getattr(args, "workers", None),
            "uvloop": False if getattr(args, "no_uvloop", False) else None,
        }
        return cls(text, str(path), overrides, runner_builder, demo=demo)

    def settings(self) -> Settings:
        """The settings: the file's text, then the command line's overrides."""
        settings = (
            Settings()
            if self.config_text is None
            else parse_settings(self.config_text, self.config_source)
        )
        settings = apply_overrides(settings, **self.overrides)
        return resolve_demo(settings) if self.demo else settings


def serve_main(
    args: argparse.Namespace,
    *,
    runner_builder: RunnerBuilder = build_runner,
    environ: Mapping[str, str] = os.environ,
) -> int:
    """Build everything from ``args`` and serve until a signal; the exit code."""
    plan = ServePlan.from_args(args, runner_builder)
    settings = plan.settings()
    plan = replace(plan, logging=log_options(args, settings, environ))
    logs.configure(plan.logging)
    options = gateway_options(settings, environ)
    workers = worker_count(settings.server.workers)
    try:
        if workers == 1:
            metrics = GatewayMetrics()
            run_loop(settings, _serve(runner_builder(settings, metrics), options, metrics))
            return 0
        failure = asyncio.run(_supervise(plan, options, workers))
    except OSError as error:  # e.g. the port is taken
        print(
            f"voicegate serve: cannot listen on {options.host}:{options.port}: {error}",
            file=sys.stderr,
        )
        return 1
    if failure is not None:
        print(f"voicegate serve: {failure}", file=sys.stderr)
        return 1
    return 0


def log_options(
    args: argparse.Namespace, settings: Settings, environ: Mapping[str, str]
) -> logs.LogOptions:
    """The flags over the environment; the settings' secrets and secret-looking variables are
    redacted from every line."""
    named = [environ.get(name, "") for name in settings.secret_env_names().values()]
    return logs.resolve_log_options(
        getattr(args, "log_level", None), getattr(args, "log_format", None), environ, named
    )


def gateway_options(settings: Settings, environ: Mapping[str, str]) -> GatewayOptions:
    """The gateway's options, with the secrets the settings name read from ``environ``."""
    secrets = resolve_secrets(settings, environ)
    settings.check_exposure()
    return settings.gateway_options(secrets=secrets)


def worker_count(configured: int) -> int:
    """``server.workers``, 0 meaning one per CPU core this process may run on."""
    return configured or len(os.sched_getaffinity(0)) or 1


def run_loop(settings: Settings, main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on a new event loop: uvloop unless ``server.uvloop`` is false."""
    factory = uvloop.new_event_loop if settings.server.uvloop else None
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main)


async def _serve(
    runner: AbstractAsyncContextManager[CallRunner],
    options: GatewayOptions,
    metrics: GatewayMetrics,
) -> None:
    """Open the runner (MCP servers start), serve until a signal, close it (they stop)."""
    async with runner as call_runner:
        freeze_startup_heap()  # everything the process keeps is built (gateway/heap.py)
        await serve(Gateway(call_runner, options, metrics=metrics), on_listening=announce)


async def _supervise(plan: ServePlan, options: GatewayOptions, workers: int) -> str | None:
    """Run ``workers`` worker processes until a signal; None, or why they could not start."""
    supervisor_options = SupervisorOptions(
        workers=workers,
        host=options.host,
        port=options.port,
        capacity=options.capacity,
        stop_timeout_s=options.shutdown_deadline_s
        + CANCEL_GRACE_S
        + HTTP_SHUTDOWN_TIMEOUT_S
        + STOP_MARGIN_S,
        call_logs=None if options.call_logs is None else options.call_logs.directory,
    )
    supervisor = Supervisor(serve_worker, plan, supervisor_options)
    return await supervisor.run(lambda base: announce_at(base, options, workers))


def serve_worker(launch: WorkerLaunch) -> None:
    """One worker process of ``voicegate serve --workers N`` (the multiprocessing target)."""
    ignore_terminal_interrupts()
    plan = launch.plan
    assert isinstance(plan, ServePlan)
    logs.configure(plan.logging, who=f"w{launch.index}")
    try:
        settings = plan.settings()
        options = gateway_options(settings, os.environ)
        metrics = GatewayMetrics(launch.metrics_dir)
        metrics.calls_lost_by_predecessor(launch.lost_calls)
        runner = plan.runner_builder(settings, metrics)
        run_loop(settings, run_worker(launch, runner, options, metrics))
    except VoicegateError as error:
        launch.report.failed(str(error))
        raise SystemExit(1) from None
    except OSError as error:
        launch.report.failed(f"worker {launch.index}: cannot listen: {error}")
        raise SystemExit(1) from None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read the settings file: {error}") from None


def read_settings(path: Path | None) -> Settings:
    """The named file; without one, the default file if it exists, else built-in defaults."""
    if path is not None:
        return load_settings(path)
    return load_settings(DEFAULT_CONFIG_PATH) if DEFAULT_CONFIG_PATH.exists() else Settings()


def apply_overrides(
    settings: Settings,
    *,
    host: str | None = None,
    port: int | None = None,
    project: Path | None = None,
    llm: str | None = None,
    workers: int | None = None,
    uvloop: bool | None = None,
) -> Settings:
    """Command-line options over the file's values (checked like the file's)."""
    server, engine = settings.server, settings.engine
    try:
        server = replace(
            server,
            host=server.host if host is None else host,
            port=server.port if port is None else port,
            workers=server.workers if workers is None else workers,
            uvloop=server.uvloop if uvloop is None else uvloop,
        )
    except ConfigError as error:
        raise ConfigError(f"command line: {error}") from None
    engine = replace(
        engine,
        project_dir=engine.project_dir if project is None else project,
        llm=engine.llm if llm is None else llm,
    )
    return replace(settings, server=server, engine=engine)


def resolve_secrets(settings: Settings, environ: Mapping[str, str]) -> dict[str, str]:
    """Key path -> secret value, read from the environment variables the settings name."""
    secrets: dict[str, str] = {}
    for key_path, name in settings.secret_env_names().items():
        value = environ.get(name, "")
        if not value:
            raise ConfigError(f"{key_path} names the environment variable {name}, which is unset")
        secrets[key_path] = value
    return secrets


def announce(gateway: Gateway) -> None:
    """Tell the operator where to connect (stdout, one line per route)."""
    announce_at(gateway.base_url, gateway.options, 1)


def announce_at(base: str, options: GatewayOptions, workers: int) -> None:
    """The banner for a gateway listening at ``base`` (tests and benches parse line one)."""
    ws = "ws" + base.removeprefix("http")
    lines = [f"voicegate listening on {base}"]
    if workers > 1:
        lines.append(f"  workers: {workers} processes sharing the port")
    if options.public_url is not None:
        lines.append(f"  public URL (in TwiML): {options.public_url}")
    if options.twilio is not None:
        lines.append(f"  twilio:  webhook POST {base}{TWILIO_WEBHOOK_PATH}")
        lines.append(f"           media stream {ws}{TWILIO_STREAM_PATH}")
    if options.browser is not None:
        lines.append(f"  browser: open {base}/ (the page), or connect to {ws}{BROWSER_PATH}")
    lines += provider_lines(options, base, ws)
    if options.twilio is not None:
        lines.append(
            "  try:     .venv/bin/voicegate replay fixtures/audio/synth/festival/balance_16k.wav"
            f" --url {ws}{TWILIO_STREAM_PATH}"
        )
    if options.call_logs is not None:
        lines.append(f"  calls:   {base}/calls (live and recent calls, their timelines)")
    lines.append("  health:  /healthz, /readyz, /workers, /metrics; stop with Ctrl-C or SIGTERM")
    print("\n".join(lines), flush=True)


def provider_lines(options: GatewayOptions, base: str, ws: str) -> list[str]:
    """The routes of the providers added after Twilio, for the banner (docs/protocols/NAME.md)."""
    routes = [
        ("telnyx", options.telnyx, server.TELNYX_WEBHOOK_PATH, server.TELNYX_STREAM_PATH),
        ("plivo", options.plivo, server.PLIVO_WEBHOOK_PATH, server.PLIVO_STREAM_PATH),
        ("vonage", options.vonage, server.VONAGE_WEBHOOK_PATH, server.VONAGE_STREAM_PATH),
        ("exotel", options.exotel, server.EXOTEL_WEBHOOK_PATH, server.EXOTEL_STREAM_PATH),
        ("jambonz", options.jambonz, server.JAMBONZ_WEBHOOK_PATH, server.JAMBONZ_STREAM_PATH),
    ]
    lines = [
        f"  {name + ':':8} webhook {base}{webhook}, media stream {ws}{stream}"
        for name, enabled, webhook, stream in routes
        if enabled is not None
    ]
    if options.freeswitch is not None:  # no webhook: the dialplan's uuid_audio_fork names it
        lines.append(f"  freeswitch: mod_audio_fork stream {ws}{server.FREESWITCH_STREAM_PATH}")
    if options.genesys is not None:  # no webhook: the integration names the socket
        lines.append(f"  genesys: AudioHook stream {ws}{server.GENESYS_STREAM_PATH}")
    if options.asterisk is not None:  # no webhook: websocket_client.conf names the socket
        lines.append(f"  asterisk: chan_websocket stream {ws}{server.ASTERISK_STREAM_PATH}")
    return lines
