"""The object graph of a running gateway, built explicitly from settings (design §3, §7).

``serve`` and ``replay`` both build their call runner here, so the gateway a replay starts in
process is the one ``voicegate serve`` runs. Engine choices are written as specs:
``scripted:FILE`` for the scripted model and the scripted recogniser; ``openai`` (or an empty
spec) for the chat model the project's ``integrations.yml`` selects, ``openai:MODEL`` and
``openai:MODEL@BASE_URL`` to override its model and endpoint; ``tone`` for the tone
synthesiser, ``whisper[:MODEL]`` for the embedded recogniser (MODEL: ``tiny.en``, the bundled
model, or a CTranslate2 model directory) and ``espeak[:VOICE]`` for the embedded synthesiser;
``deepgram[:MODEL]`` and ``openai-tts[:VOICE[@BASE_URL]]`` for the remote engines, whose keys
are read here from ``DEEPGRAM_API_KEY`` and ``OPENAI_API_KEY``.
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

from voicegate.cli.stores import Stores, open_stores, redis_url
from voicegate.config import Settings
from voicegate.config.settings import StoreBackend
from voicegate.engine.llm.openai_chat import OpenAIChatLLM
from voicegate.engine.llm.port import LLMFactory, LLMPort
from voicegate.engine.llm.rules import rules_factory
from voicegate.engine.llm.script import load_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.llm.selection import (
    ChatModelSettings,
    UnsupportedProviderError,
    select_chat_model,
)
from voicegate.engine.llm.timed import timed_factory
from voicegate.engine.llm.unavailable import unavailable_factory
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.project.loader import load_project
from voicegate.engine.project.model import Project
from voicegate.engine.seam import DialogueEngine
from voicegate.engine.tools.catalog import ToolCatalog
from voicegate.engine.tools.isolation import ToolLoops
from voicegate.errors import ConfigError, SpeechError
from voicegate.gateway.call_ending import CallControlCredentials, ProviderCallControl
from voicegate.gateway.dialogue import DialoguePlane, ThreadedEngine
from voicegate.gateway.media import MediaFactory
from voicegate.gateway.metrics import GatewayMetrics, TimedTextToSpeech
from voicegate.gateway.redis_registry import RedisCallRegistry, RegistryOptions
from voicegate.gateway.session import CallServices, SessionRunner, SessionSettings
from voicegate.gateway.transport import CallLeases
from voicegate.mcp.declared import declared_servers
from voicegate.mcp.imports import project_catalog, project_imports
from voicegate.speech.embedded.espeak_lib import Voice, espeak_library
from voicegate.speech.embedded.espeak_tts import EspeakTextToSpeech
from voicegate.speech.embedded.whisper_model import (
    BUNDLED_MODEL,
    WhisperOptions,
    WhisperRecognizer,
)
from voicegate.speech.embedded.whisper_stt import StreamOptions, WhisperSpeechToText
from voicegate.speech.embedded.whisper_window import DEFAULT_WINDOW_S
from voicegate.speech.fakes import ScriptedSpeechToText, ToneTextToSpeech
from voicegate.speech.ports import SpeechToText, TextToSpeech
from voicegate.speech.remote.deepgram_stt import DeepgramOptions, DeepgramSpeechToText
from voicegate.speech.remote.openai_tts import OpenAISpeechOptions, OpenAITextToSpeech
from voicegate.turns.settings import TurnSettings
from voicegate.turns.smart_turn import SmartTurnModel, bundled_model_path
from voicegate.turns.tracker import TurnFactory

#: Whisper's interim interval where interims decide something (:func:`whisper_interim_ms`).
DECIDING_INTERIM_MS = StreamOptions().interim_interval_ms


def split_spec(spec: str, key: str) -> tuple[str, str]:
    """``kind:argument`` -> (kind, argument)."""
    kind, _, argument = spec.partition(":")
    if not kind:
        raise ConfigError(f"{key}: empty engine spec")
    return kind, argument


def build_llm(spec: str, project: Project, environ: Mapping[str, str]) -> LLMFactory:
    """The language model a spec names: ``scripted:FILE``, ``rules``, or ``openai`` (empty spec
    too), ``openai:MODEL``, ``openai:MODEL@BASE_URL`` (the API key is read from ``environ``)."""
    kind, argument = split_spec(spec or "openai", "engine.llm")
    if kind == "scripted" and argument:
        script = load_script(Path(argument))

        def scripted(call_id: str) -> LLMPort:
            return ScriptedLLM(script)

        return scripted
    if kind == "rules" and not argument:
        return rules_factory(project)  # the offline orchestrator (docs/rules-llm.md)
    if kind == "openai":
        try:
            settings, api_key = openai_model(argument, project, environ)
        except UnsupportedProviderError as error:
            # Fail at the first model call, not at load (issue 17): the project still loads.
            return unavailable_factory(str(error))

        def chat(call_id: str) -> LLMPort:
            return OpenAIChatLLM(settings, api_key)

        return chat
    raise ConfigError(
        f"engine.llm: {spec!r} is not available; use scripted:FILE, openai, openai:MODEL "
        "or openai:MODEL@BASE_URL (or rules)"
    )


def openai_model(
    argument: str, project: Project, environ: Mapping[str, str]
) -> tuple[ChatModelSettings, str]:
    """The chat model and its API key for ``openai[:MODEL[@BASE_URL]]``.

    The project's ``integrations.yml`` selection is the base; MODEL and BASE_URL replace its
    model and endpoint (with no selection, MODEL on OpenAI's API). The variable the selection
    names must be set, except with a BASE_URL given here (a local server may need no key).
    """
    model, base_url = split_model_spec(argument)
    try:
        settings = _selected_model(project, model)
        settings = replace(
            settings, model=model or settings.model, base_url=base_url or settings.base_url
        )
    except ConfigError as error:
        raise type(error)(f"engine.llm: {error}") from None  # keeps UnsupportedProviderError
    api_key = environ.get(settings.api_key_env, "") if settings.api_key_env else ""
    if settings.api_key_env and not api_key and not base_url:
        raise ConfigError(
            f"engine.llm: the model's API key comes from the environment variable "
            f"{settings.api_key_env}, which is unset"
        )
    return settings, api_key


def _selected_model(project: Project, model: str) -> ChatModelSettings:
    """The project's selection; a MODEL named on the command line replaces an unsupported one
    (or a missing one) with that model on OpenAI's API."""
    if not project.integrations.llm and model:
        return ChatModelSettings(model)
    try:
        return select_chat_model(project.integrations)
    except UnsupportedProviderError:
        if model:
            return ChatModelSettings(model)
        raise


def split_model_spec(argument: str) -> tuple[str, str]:
    """``MODEL@BASE_URL`` -> (MODEL, BASE_URL); an ``@`` not followed by a URL is the model's."""
    model, at, base_url = argument.rpartition("@")
    if at and base_url.startswith(("http://", "https://")):
        return model, base_url
    return argument, ""


def build_stt(
    spec: str,
    environ: Mapping[str, str] = os.environ,
    *,
    interim_ms: int | None = None,
    whisper_window_s: float = DEFAULT_WINDOW_S,
) -> SpeechToText:
    """The recogniser a spec names, loaded here (Whisper: once per process).

    ``scripted:FILE`` (one transcript per line), ``whisper`` or ``whisper:tiny.en`` (the
    bundled model), ``whisper:DIR`` (a CTranslate2 Whisper model directory), ``deepgram`` or
    ``deepgram:MODEL`` (Deepgram's live API, key from ``DEEPGRAM_API_KEY`` in ``environ``).
    ``interim_ms``: Whisper's interim interval (None: the stream's default);
    ``whisper_window_s``: its encoder window for short utterances (``speech.whisper_window_s``).
    """
    kind, argument = split_spec(spec, "speech.stt")
    if kind == "scripted" and argument:
        lines = Path(argument).read_text(encoding="utf-8").splitlines()
        return ScriptedSpeechToText([line.strip() for line in lines if line.strip()])
    if kind == "whisper":
        stream = None if interim_ms is None else StreamOptions(interim_interval_ms=interim_ms)
        return WhisperSpeechToText(load_whisper(argument, whisper_window_s), stream)
    if kind == "deepgram":
        api_key = required_key(environ, "DEEPGRAM_API_KEY", "speech.stt")
        options = DeepgramOptions(model=argument) if argument else DeepgramOptions()
        return DeepgramSpeechToText(api_key, options)
    raise ConfigError(
        f"speech.stt: unknown engine {spec!r} (try whisper, whisper:tiny.en, whisper:DIR, "
        "deepgram, deepgram:MODEL or scripted:FILE)"
    )


def required_key(environ: Mapping[str, str], variable: str, key: str) -> str:
    """The API key in ``environ[variable]``; a ``ConfigError`` naming the variable if unset."""
    api_key = environ.get(variable, "")
    if not api_key:
        raise ConfigError(
            f"{key}: the API key comes from the environment variable {variable}, which is unset"
        )
    return api_key


def load_whisper(model: str, window_s: float = DEFAULT_WINDOW_S) -> WhisperRecognizer:
    """Whisper from ``model`` (empty or ``tiny.en``: the bundled model; else a directory)."""
    model_dir = None if model in ("", BUNDLED_MODEL) else Path(model)
    try:
        recognizer = WhisperRecognizer(WhisperOptions(model_dir=model_dir, window_s=window_s))
    except SpeechError as error:
        raise ConfigError(f"speech.stt: {error}") from None
    recognizer.warm_up()
    return recognizer


def build_tts(spec: str, sample_rate: int, environ: Mapping[str, str] = os.environ) -> TextToSpeech:
    """The synthesiser a spec names: ``tone``, ``espeak`` or ``espeak:VOICE`` (e.g. en-us),
    ``openai-tts``, ``openai-tts:VOICE`` or ``openai-tts:VOICE@BASE_URL`` (an OpenAI-compatible
    speech endpoint; key from ``OPENAI_API_KEY``, optional with a BASE_URL given)."""
    kind, argument = split_spec(spec, "speech.tts")
    if spec == "tone":
        return ToneTextToSpeech(sample_rate)
    if kind == "espeak":
        return build_espeak(argument or Voice().name, sample_rate)
    if kind == "openai-tts":
        return build_openai_tts(argument, sample_rate, environ)
    raise ConfigError(
        f"speech.tts: unknown engine {spec!r} (try espeak, espeak:VOICE, openai-tts, "
        "openai-tts:VOICE[@BASE_URL] or tone)"
    )


def build_openai_tts(argument: str, sample_rate: int, environ: Mapping[str, str]) -> TextToSpeech:
    """An OpenAI-compatible synthesiser for ``VOICE[@BASE_URL]`` (both optional)."""
    voice, base_url = split_model_spec(argument)
    defaults = OpenAISpeechOptions()
    options = OpenAISpeechOptions(
        base_url=base_url or defaults.base_url, voice=voice or defaults.voice
    )
    if base_url:
        api_key = environ.get("OPENAI_API_KEY", "")  # a local server may need no key
    else:
        api_key = required_key(environ, "OPENAI_API_KEY", "speech.tts")
    try:
        return OpenAITextToSpeech(api_key, sample_rate, options)
    except SpeechError as error:
        raise ConfigError(f"speech.tts: {error}") from None


def build_espeak(voice: str, sample_rate: int, words_per_minute: int | None = None) -> TextToSpeech:
    """espeak-ng speaking ``voice`` at ``sample_rate``, on this process's one espeak library."""
    chosen = Voice(voice, words_per_minute or Voice().words_per_minute)
    try:
        return EspeakTextToSpeech(espeak_library(), sample_rate, chosen)
    except SpeechError as error:
        raise ConfigError(f"speech.tts: {error}") from None


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
