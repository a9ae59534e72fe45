"""The public Python API: run voicegate inside your own program (docs/api.md).

Three ways in, from settings (``config/voicegate.yml`` as a :class:`~voicegate.config.Settings`):

- :func:`open_gateway`: a whole gateway listening on its own port, as ``voicegate serve``
  runs one worker, for as long as the ``async with`` block lasts;
- :func:`mount`: the same routes added to an aiohttp application you already have, started
  and drained with it;
- either one with ``engine=``: your own dialogue engine instead of the agent project, as a
  plain ``reply`` function (:class:`~voicegate.engine.simple.FunctionEngine`) or any object
  with the streaming turn seam's four methods (``voicegate.DialogueEngine``).

Everything is built explicitly from the settings; nothing is global, so several gateways can
live in one process (tests do).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from voicegate.audio.resample import convert
from voicegate.audio.wav import read_wav
from voicegate.callers.driver import drive
from voicegate.callers.script import CallerScript, Cue
from voicegate.callers.twilio import TwilioCaller
from voicegate.cli import wiring
from voicegate.cli.demo import default_config, resolve_demo
from voicegate.cli.serve_command import apply_overrides, gateway_options
from voicegate.codecs import Codec
from voicegate.config import DEFAULT_CONFIG_PATH, Settings
from voicegate.config import load_settings as _load_file
from voicegate.engine.seam import DialogueEngine
from voicegate.engine.simple import FunctionEngine, Reply
from voicegate.errors import ConfigError
from voicegate.gateway.calllog import CLOSED, CallLogOptions
from voicegate.gateway.callviews import read_records, summaries
from voicegate.gateway.dialogue import DialoguePlane, ThreadedEngine
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.transport import CallGate, CallRunner, Transport

TWILIO_RATE = 8000
#: How often call_timeline looks at a call's log while waiting for its end.
POLL_S = 0.05
#: What ``engine=`` takes: an engine object, or a ``reply`` function.
EngineLike = DialogueEngine | Reply


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Settings from a ``voicegate.yml`` (None: ``./config/voicegate.yml`` if present, else
    the demo's), with ``voicegate serve``'s overrides (host, port, project, llm, workers);
    without a settings file of yours, the demo project shipped in the package stands in
    when ``config/agent`` is not here."""
    chosen = default_config() if path is None else Path(path)
    settings = Settings() if chosen is None else _load_file(chosen)
    settings = apply_overrides(settings, **overrides)
    # Only without a settings file of the user's: never a demo in place of a missing project.
    return resolve_demo(settings) if path is None and chosen != DEFAULT_CONFIG_PATH else settings


def as_engine(engine: EngineLike) -> DialogueEngine:
    """``engine`` itself, or a ``reply`` function wrapped as a :class:`FunctionEngine`."""
    if all(hasattr(engine, name) for name in ("open", "turn", "heard", "close")):
        return engine  # type: ignore[return-value]
    if callable(engine):
        return FunctionEngine(engine)
    raise ConfigError(f"engine must be a reply function or a DialogueEngine, got {engine!r}")


@asynccontextmanager
async def open_runner(
    settings: Settings,
    engine: EngineLike | None = None,
    environ: Mapping[str, str] = os.environ,
) -> AsyncIterator[CallRunner]:
    """The call runner: the agent project of the settings, or ``engine``; on a dialogue plane
    (a thread of its own), so the media loop never waits on the engine (design §10)."""
    if engine is None:
        async with wiring.open_runner(settings, environ) as runner:
            yield runner
        return
    plane = DialoguePlane()
    plane.start()
    try:
        yield wiring.call_runner(settings, ThreadedEngine(as_engine(engine), plane), environ)
    finally:
        plane.stop()


@asynccontextmanager
async def open_gateway(
    settings: Settings | None = None,
    *,
    engine: EngineLike | None = None,
    environ: Mapping[str, str] = os.environ,
) -> AsyncIterator[Gateway]:
    """A gateway listening on ``settings.server`` (port 0: a free one, see ``base_url``) and
    taking calls until the block ends; then it drains its calls and stops."""
    settings = load_settings() if settings is None else settings
    options = gateway_options(settings, environ)
    async with (
        open_runner(settings, engine, environ) as runner,
        Gateway(runner, options) as gateway,
    ):
        yield gateway


class _LateRunner:
    """A runner whose routes exist before the real runner does (aiohttp routes are fixed
    before the application starts; the runner is opened in its startup)."""

    def __init__(self) -> None:
        self.runner: CallRunner | None = None

    async def __call__(self, transport: Transport, codec: Codec, gate: CallGate) -> None:
        if self.runner is None:
            raise RuntimeError("voicegate is mounted but its application has not started")
        await self.runner(transport, codec, gate)


def mount(
    app: web.Application,
    settings: Settings | None = None,
    *,
    engine: EngineLike | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Gateway:
    """Add voicegate's routes (``/twilio``, ``/browser``, ``/calls``, ...) to ``app``.

    The engine and its runner start with ``app`` and calls are admitted once it runs; at
    its cleanup running calls are drained (``server.shutdown_deadline_s``). Your own routes
    and middlewares stay as they are; ``server.host``/``port`` are not used (``app``'s own
    runner listens).
    """
    settings = load_settings() if settings is None else settings
    options = gateway_options(settings, environ)
    late = _LateRunner()
    gateway = Gateway(late, options, app=app)

    async def lifetime(app: web.Application) -> AsyncIterator[None]:
        runner: AbstractAsyncContextManager[CallRunner] = open_runner(settings, engine, environ)
        async with runner as opened:
            late.runner = opened
            gateway.open()
            try:
                yield
            finally:
                await gateway.drain()
                await gateway.close()

    app.cleanup_ctx.append(lifetime)
    return gateway


async def call_twilio(
    url: str,
    recording: str | Path,
    *,
    at_ms: int = 300,
    tail_ms: int = 3000,
    speed: float = 1.0,
    call_sid: str = "CA00000000000000000000000000000042",
    channel: int | None = None,
) -> int | None:
    """Call ``url`` (a gateway's ``ws://.../twilio``) as Twilio would, playing ``recording``
    (a WAV file, any rate) ``at_ms`` into the call and hanging up ``tail_ms`` after it; the
    WebSocket close code. ``speed`` > 1 needs ``limits.media_max_speed`` at least as high.
    ``channel`` (1-based) plays one channel of a multi-channel file, e.g. the caller's side
    of a dual-channel call recording; None plays their mix."""
    audio = read_wav(recording, channel)
    samples = convert(audio.samples, audio.sample_rate, TWILIO_RATE)
    script = CallerScript([Cue(samples, at_ms=at_ms)], TWILIO_RATE, tail_ms=tail_ms)
    caller = TwilioCaller(script, call_sid=call_sid)
    return await drive(url, caller, speed=speed, max_ms=at_ms + len(samples) // 8 + tail_ms)


def recent_calls(gateway: Gateway) -> list[dict[str, Any]]:
    """What ``GET /calls?format=json`` lists: the newest calls of the gateway's call logs."""
    return summaries(_log_options(gateway))


async def call_timeline(
    gateway: Gateway, call_id: str, *, timeout_s: float = 10.0
) -> list[dict[str, Any]]:
    """A call's whole timeline from its log (docs/timeline.md), by the gateway's or the
    provider's id, once the log has its ``call_closed`` record (waits up to ``timeout_s``:
    the gateway closes a call shortly after its caller hung up)."""
    options = _log_options(gateway)
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        records = await asyncio.to_thread(_log_of, options, call_id)
        if records and records[-1].get("event") == CLOSED:
            return records
        if asyncio.get_running_loop().time() > deadline:
            raise ConfigError(f"no ended call log for {call_id!r} after {timeout_s} s")
        await asyncio.sleep(POLL_S)


def _log_of(options: CallLogOptions, call_id: str) -> list[dict[str, Any]]:
    """Every record of a call's log so far (blocking)."""
    found = [c for c in summaries(options) if call_id in (c["call_id"], c["provider_call_id"])]
    path = options.path(found[0]["call_id"]) if found else None
    records: list[dict[str, Any]] = []
    offset = 0
    while path is not None and (chunk := read_records(path, offset)) is not None:
        if chunk["offset"] == offset:
            break
        records += chunk["records"]
        offset = chunk["offset"]
    return records


def _log_options(gateway: Gateway) -> CallLogOptions:
    if gateway.options.call_logs is None:
        raise ConfigError("this gateway keeps no call logs (store.call_logs is false)")
    return gateway.options.call_logs
