"""The object graph of a running gateway, built explicitly from settings (design §3, §7).

``serve`` and ``replay`` both build their call runner here, so the gateway a replay starts in
process is the one ``voicegate serve`` runs. The engines it wires in are named by specs
(``scripted:FILE``, ``whisper``, ``espeak``, ...), read in :mod:`voicegate.cli.engines`.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from voicegate.cli.engines import build_llm, build_stt, build_tts, one_blas_thread
from voicegate.cli.stores import Stores, open_stores, redis_url
from voicegate.config import Settings
from voicegate.config.settings import StoreBackend
from voicegate.engine.llm.timed import timed_factory
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.project.loader import load_project
from voicegate.engine.project.model import Project
from voicegate.engine.seam import DialogueEngine
from voicegate.engine.tools.catalog import ToolCatalog
from voicegate.engine.tools.isolation import ToolLoops
from voicegate.gateway.call_ending import CallControlCredentials, ProviderCallControl
from voicegate.gateway.dialogue import DialoguePlane, ThreadedEngine
from voicegate.gateway.media import MediaFactory
from voicegate.gateway.metrics import GatewayMetrics, TimedTextToSpeech
from voicegate.gateway.redis_registry import RedisCallRegistry, RegistryOptions
from voicegate.gateway.session import CallServices, SessionRunner, SessionSettings
from voicegate.gateway.transport import CallLeases
from voicegate.mcp.declared import declared_servers
from voicegate.mcp.imports import project_catalog, project_imports
from voicegate.speech.embedded.whisper_stt import StreamOptions
from voicegate.speech.ports import SpeechToText, TextToSpeech
from voicegate.turns.settings import TurnSettings
from voicegate.turns.smart_turn import SmartTurnModel, bundled_model_path
from voicegate.turns.tracker import TurnFactory

#: Whisper's interim interval where interims decide something (:func:`whisper_interim_ms`).
DECIDING_INTERIM_MS = StreamOptions().interim_interval_ms


def build_runner(
    settings: Settings,
    environ: Mapping[str, str] = os.environ,
    *,
    project: Project | None = None,
    catalog: ToolCatalog | None = None,
    stores: Stores | None = None,
    tool_loops: ToolLoops | None = None,
    plane: DialoguePlane | None = None,
    metrics: GatewayMetrics | None = None,
    leases: CallLeases | None = None,
    inline: bool = False,
    speech: SpeechEngines | None = None,
) -> SessionRunner:
    """The call runner: engine, speech engines, media and barge-in policy from settings.

    ``catalog`` carries the project's tools including the MCP tools it imports (see
    :func:`open_runner`); without it the engine offers the project's local tools only.
    Project tools run on ``tool_loops`` (a fresh set when not given), never on the loop that
    carries the calls' media; with a started ``plane`` the engine runs there too (issue 12).
    With ``metrics``, the model, the synthesiser and every call's timeline feed them.
    ``inline`` runs the tools on the calling loop instead: only for virtual time, where the
    one loop's clock must see every timer (clock/virtual.py, docs/replay.md). ``speech``:
    engines already loaded (:func:`build_speech`), else they are loaded here.
    """
    project = project or load_project(settings.engine.project_dir)
    llm = build_llm(settings.engine.llm, project, environ)
    if metrics is not None:
        model_failed = metrics.errors.labels("model").inc
        llm = timed_factory(llm, metrics.model_first_token.observe, model_failed)
    stores = stores or open_store(settings, environ, project)
    if not inline:
        tool_loops = tool_loops or ToolLoops()
    project_engine = ProjectEngine(
        project,
        llm,
        stores.memory,
        catalog=catalog,
        tool_loops=tool_loops,
        resume=stores.resume,
    )
    engine: DialogueEngine = (
        project_engine if plane is None else ThreadedEngine(project_engine, plane)
    )
    return call_runner(settings, engine, environ, metrics=metrics, leases=leases, speech=speech)


@dataclass(frozen=True, slots=True)
class SpeechEngines:
    """What every call shares that takes a while to load: models and their sessions."""

    stt: SpeechToText
    tts: TextToSpeech
    media: MediaFactory
    turns: TurnFactory


def build_speech(
    settings: Settings,
    environ: Mapping[str, str] = os.environ,
    metrics: GatewayMetrics | None = None,
) -> SpeechEngines:
    """The recogniser, synthesiser, VAD and end-of-turn model (blocking: models load here)."""
    rate = settings.audio.session_sample_rate
    tts = build_tts(settings.speech.tts, rate, environ)
    if metrics is not None:
        tts = TimedTextToSpeech(tts, metrics.tts_first_chunk.observe)
    vad = settings.vad
    if settings.turns.end_of_turn.uses_model:
        # The VAD's silence only makes a pause; the end-of-turn layer decides the rest.
        vad = replace(vad, stop_ms=settings.turns.end_of_turn.ask_after_ms)
    return SpeechEngines(
        stt=build_stt(
            settings.speech.stt,
            environ,
            interim_ms=whisper_interim_ms(settings),
            whisper_window_s=settings.speech.whisper_window_s,
        ),
        tts=tts,
        media=MediaFactory(sample_rate=rate, frame_ms=vad.frame_ms, vad=vad),
        turns=build_turns(settings.turns),
    )


def call_runner(
    settings: Settings,
    engine: DialogueEngine,
    environ: Mapping[str, str] = os.environ,
    *,
    metrics: GatewayMetrics | None = None,
    leases: CallLeases | None = None,
    speech: SpeechEngines | None = None,
) -> SessionRunner:
    """The call runner around any dialogue engine: speech, media and barge-in from settings."""
    speech = speech or build_speech(settings, environ, metrics)
    services = CallServices(
        engine=engine,
        stt=speech.stt,
        tts=speech.tts,
        media=speech.media,
        turns=speech.turns,
        observer=None if metrics is None else metrics.call_listener,
        leases=leases,
        call_control=build_call_control(settings, environ),
    )
    session = SessionSettings(
        frame_ms=settings.vad.frame_ms,
        send_ahead_ms=settings.playout.send_ahead_ms,
        chunk_ms=settings.playout.chunk_ms,
        barge_in=settings.barge_in,
        limits=settings.limits,
        error_response=settings.engine.error_response,
    )
    return SessionRunner(services, session)


def whisper_interim_ms(settings: Settings) -> int:
    """``speech.interim_ms``, or by default an interim every 500 ms only where one decides.

    Each interim re-decodes the whole utterance so far (a full Whisper window of CPU): three
    of four decodes of a call at 500 ms. Their words decide an interruption only through
    ``barge_in.min_words``; the end of the turn reads the pause's own decode, whose text the
    final reuses. Without an end-of-turn model there is no pause decode, and an interim
    that reaches the speech end is what spares the final a decode of its own.
    """
    if settings.speech.interim_ms is not None:
        return settings.speech.interim_ms
    needed = settings.barge_in.min_words > 0 or not settings.turns.end_of_turn.uses_model
    return DECIDING_INTERIM_MS if needed else 0


def build_call_control(settings: Settings, environ: Mapping[str, str]) -> ProviderCallControl:
    """Hang-up and transfer through the providers' APIs, with the secrets config names."""
    section, providers = settings.call_control, settings.providers

    def secret(name: str) -> str:
        return environ.get(name, "") if name else ""

    credentials = CallControlCredentials(
        twilio_auth_token=secret(providers.twilio.auth_token_env),
        telnyx_api_key=secret(section.telnyx_api_key_env),
        plivo_auth_id=secret(section.plivo_auth_id_env),
        plivo_auth_token=secret(providers.plivo.auth_token_env),
        vonage_private_key=secret(section.vonage_private_key_env).encode(),
    )
    return ProviderCallControl(section, credentials)


def build_turns(settings: TurnSettings) -> TurnFactory:
    """The end-of-turn model, loaded once for every call, with the turn-taking settings."""
    eot = settings.end_of_turn
    if not eot.uses_model:
        return TurnFactory(settings)
    model = SmartTurnModel(
        eot.model_path(bundled_model_path()),
        workers=eot.workers,
        max_queue=eot.max_queue,
        cpu_share=eot.cpu_share,
    )
    return TurnFactory(settings, model)


def connected_tools(
    root: Path, project: Project, environ: Mapping[str, str]
) -> AbstractAsyncContextManager[ToolCatalog]:
    """The project's tools with its MCP servers connected (contract §10.2); stops them.

    A server that cannot be started, connected or listed fails on entry, naming itself.
    """
    servers = declared_servers(root, environ)
    if not project_imports(project):
        # No skill imports an MCP tool, so no server would start: the local tools alone, and
        # the mcp package (about a second of imports, most of a scripted replay's) stays unloaded.
        return nullcontext(project_catalog(project, {}))
    from voicegate.mcp.connection import LaunchOptions
    from voicegate.mcp.runtime import project_tools

    # Server logs go to the process's real stderr (sys.stderr may be a capture without a fd).
    return project_tools(project, servers, LaunchOptions(root.resolve(), stderr=sys.__stderr__))


@asynccontextmanager
async def open_runner(
    settings: Settings,
    environ: Mapping[str, str] = os.environ,
    *,
    metrics: GatewayMetrics | None = None,
    inline: bool = False,
) -> AsyncIterator[SessionRunner]:
    """The call runner with the project's MCP servers connected (contract §10); stops them.

    The engine, its model clients and the MCP sessions live on a dialogue plane (a thread with
    its own event loop), project tools on tool loops: the loop carrying the calls' media never
    waits on them (design §10, issue 12). A server that cannot be started, connected,
    authenticated or listed stops startup with an ``McpServerError`` naming it.

    ``inline``: no dialogue plane and no tool loops; the engine, its tools and MCP sessions
    run on the calling loop, as a virtual-time replay needs (docs/replay.md, issue 19).
    """
    with one_blas_thread():
        async with _runner(settings, environ, metrics=metrics, inline=inline) as runner:
            yield runner


@asynccontextmanager
async def _runner(
    settings: Settings,
    environ: Mapping[str, str],
    *,
    metrics: GatewayMetrics | None,
    inline: bool,
) -> AsyncIterator[SessionRunner]:
    root = settings.engine.project_dir
    project = load_project(root)
    # Before the models' thread: this imports the mcp package when a skill imports MCP tools
    # (a second of CPU), which would otherwise share the interpreter with the loading.
    tools = connected_tools(root, project, environ)
    stores = open_store(settings, environ, project)
    # The speech models load on a thread (a second or more with Whisper and Smart Turn) while
    # the MCP servers start (a stdio server's interpreter imports the mcp package: ~1 s).
    loading = asyncio.get_running_loop().run_in_executor(
        None, build_speech, settings, environ, metrics
    )
    try:
        async with (
            dialogue_host(tools, inline=inline) as host,
            call_leases(settings, environ, project) as leases,
        ):
            catalog, tool_loops, plane = host
            speech = await loading
            yield build_runner(
                settings,
                environ,
                project=project,
                catalog=catalog,
                stores=stores,
                tool_loops=tool_loops,
                plane=plane,
                metrics=metrics,
                leases=leases,
                inline=inline,
                speech=speech,
            )
    finally:
        stores.close()  # every write was already committed; this releases the file
        await _settled(loading)


async def _settled(job: asyncio.Future[Any]) -> None:
    """Wait for a thread's job that may have lost its reader (its failure is not news)."""
    await asyncio.wait({job})
    if not job.cancelled():
        job.exception()


Host = tuple[ToolCatalog, ToolLoops | None, DialoguePlane | None]


@asynccontextmanager
async def dialogue_host(
    tools: AbstractAsyncContextManager[ToolCatalog], *, inline: bool
) -> AsyncIterator[Host]:
    """Where the engine runs: a dialogue plane and tool loops (issue 12), or, ``inline``,
    the calling loop; yields the tool catalog ``tools`` opens there, the loops and the plane."""
    if inline:
        async with tools as catalog:
            yield catalog, None, None
        return
    tool_loops = ToolLoops()
    plane = DialoguePlane()
    plane.start()
    try:
        async with plane.hosting(tools) as catalog:
            yield catalog, tool_loops, plane
    finally:
        plane.stop()
        tool_loops.close()


@asynccontextmanager
async def call_leases(
    settings: Settings, environ: Mapping[str, str], project: Project
) -> AsyncIterator[RedisCallRegistry | None]:
    """With ``store.backend: redis``, the registry of live calls shared by every node.

    One live session per provider call id across nodes and a global ``server.capacity``
    (issue 13); this node's leases are renewed until it stops (a lost node's lapse).
    """
    if settings.store.backend is not StoreBackend.REDIS:
        yield None
        return
    namespace = f"{settings.store.key_prefix}:{project_name(project)}:calls"
    store = settings.store
    options = RegistryOptions(
        namespace, settings.server.capacity, lease_s=store.lease_s, timeout_s=store.timeout_s
    )
    registry = RedisCallRegistry(redis_url(settings.store, environ), options)
    try:
        async with asyncio.TaskGroup() as tasks:
            renewing = tasks.create_task(registry.keep_alive(), name="call leases")
            try:
                yield registry
            finally:
                renewing.cancel()
    finally:
        await registry.aclose()


def open_store(settings: Settings, environ: Mapping[str, str], project: Project) -> Stores:
    """Memory and call state, in SQLite or Redis per ``store.backend`` (issue 13).

    Redis keys are namespaced by the project's ``agent_id``, or its folder's name.
    """
    return open_stores(settings.store, environ, project_name(project))


def project_name(project: Project) -> str:
    """What Redis keys are namespaced by: the project's ``agent_id``, or its folder's name."""
    return project.agent.agent_id or (project.root.name if project.root else "project")
