"""`voicegate serve`: run the gateway until SIGTERM/SIGINT, then drain and exit 0.

This is the edge where the object graph is built, explicitly (design §3, §7): settings from
the file and the command line, secrets from the environment, the call runner, the gateway.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

from voicegate.cli import wiring
from voicegate.config import DEFAULT_CONFIG_PATH, Settings, load_settings
from voicegate.errors import ConfigError
from voicegate.gateway import server
from voicegate.gateway.lifecycle import Gateway, serve
from voicegate.gateway.options import GatewayOptions
from voicegate.gateway.server import BROWSER_PATH, TWILIO_STREAM_PATH, TWILIO_WEBHOOK_PATH
from voicegate.gateway.transport import CallRunner

#: Opens the one runner every call is handed to (see :func:`build_runner`).
RunnerBuilder = Callable[[Settings], AbstractAsyncContextManager[CallRunner]]


def add_parser(subparsers: Any) -> None:
    """Register ``voicegate serve``."""
    parser = subparsers.add_parser(
        "serve",
        help="run the gateway (HTTP and WebSockets on one port)",
        description="Run the gateway until SIGTERM or SIGINT, then drain calls and exit.",
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
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """The ``serve`` handler."""
    return serve_main(args)


def build_runner(settings: Settings) -> AbstractAsyncContextManager[CallRunner]:
    """The call runner every accepted WebSocket is handed to, with the project's MCP servers
    connected for as long as it is open (cli/wiring.py builds it)."""
    return wiring.open_runner(settings)


def serve_main(
    args: argparse.Namespace,
    *,
    runner_builder: RunnerBuilder = build_runner,
    environ: Mapping[str, str] = os.environ,
) -> int:
    """Build everything from ``args`` and serve until a signal; the exit code."""
    settings = apply_overrides(
        read_settings(args.config),
        host=args.host,
        port=args.port,
        project=args.project,
        llm=args.llm,
    )
    secrets = resolve_secrets(settings, environ)
    options = settings.gateway_options(
        twilio_auth_token=secrets.get("providers.twilio.auth_token_env"), secrets=secrets
    )
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        asyncio.run(_serve(runner_builder(settings), options))
    except OSError as error:  # e.g. the port is taken
        print(
            f"voicegate serve: cannot listen on {options.host}:{options.port}: {error}",
            file=sys.stderr,
        )
        return 1
    return 0


async def _serve(runner: AbstractAsyncContextManager[CallRunner], options: GatewayOptions) -> None:
    """Open the runner (MCP servers start), serve until a signal, close it (they stop)."""
    async with runner as call_runner:
        await serve(Gateway(call_runner, options), on_listening=announce)


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
) -> Settings:
    """Command-line options over the file's values (checked like the file's)."""
    server, engine = settings.server, settings.engine
    try:
        server = replace(
            server,
            host=server.host if host is None else host,
            port=server.port if port is None else port,
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
    base = gateway.base_url
    ws = "ws" + base.removeprefix("http")
    lines = [f"voicegate listening on {base}"]
    if gateway.options.public_url is not None:
        lines.append(f"  public URL (in TwiML): {gateway.options.public_url}")
    if gateway.options.twilio is not None:
        lines.append(f"  twilio:  webhook POST {base}{TWILIO_WEBHOOK_PATH}")
        lines.append(f"           media stream {ws}{TWILIO_STREAM_PATH}")
    if gateway.options.browser is not None:
        lines.append(f"  browser: open {base}/ (the page), or connect to {ws}{BROWSER_PATH}")
    lines += provider_lines(gateway.options, base, ws)
    if gateway.options.twilio is not None:
        lines.append(
            "  try:     .venv/bin/voicegate replay fixtures/audio/synth/festival/balance_16k.wav"
            f" --url {ws}{TWILIO_STREAM_PATH}"
        )
    lines.append("  health:  /healthz, /readyz; stop with Ctrl-C or SIGTERM")
    print("\n".join(lines), flush=True)


def provider_lines(options: GatewayOptions, base: str, ws: str) -> list[str]:
    """The Telnyx, Plivo and Vonage routes of the banner (docs/protocols/NAME.md)."""
    routes = [
        ("telnyx", options.telnyx, server.TELNYX_WEBHOOK_PATH, server.TELNYX_STREAM_PATH),
        ("plivo", options.plivo, server.PLIVO_WEBHOOK_PATH, server.PLIVO_STREAM_PATH),
        ("vonage", options.vonage, server.VONAGE_WEBHOOK_PATH, server.VONAGE_STREAM_PATH),
    ]
    return [
        f"  {name + ':':8} webhook {base}{webhook}, media stream {ws}{stream}"
        for name, enabled, webhook, stream in routes
        if enabled is not None
    ]
