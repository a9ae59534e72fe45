"""Engine specs: the language model, recogniser and synthesiser a setting or flag names.

Engine choices are written as specs: ``scripted:FILE`` for the scripted model and the
scripted recogniser; ``openai`` (or an empty spec) for the chat model the project's
``integrations.yml`` selects, ``openai:MODEL`` and ``openai:MODEL@BASE_URL`` to override its
model and endpoint; ``rules`` for the offline orchestrator; ``tone`` for the tone
synthesiser, ``whisper[:MODEL]`` for the embedded recogniser (MODEL: ``tiny.en``, the bundled
model, or a CTranslate2 model directory) and ``espeak[:VOICE]`` for the embedded synthesiser;
``deepgram[:MODEL]`` and ``openai-tts[:VOICE[@BASE_URL]]`` for the remote engines, whose keys
are read here from ``DEEPGRAM_API_KEY`` and ``OPENAI_API_KEY``. The gateway's object graph
that uses them is built in :mod:`voicegate.cli.wiring`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path

from threadpoolctl import threadpool_limits

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
from voicegate.engine.llm.unavailable import unavailable_factory
from voicegate.engine.project.model import Project
from voicegate.errors import ConfigError, SpeechError
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


def one_blas_thread() -> AbstractContextManager[object]:
    """numpy's BLAS (OpenBLAS) limited to one thread, process-wide, until the block exits.

    faster-whisper's feature extraction multiplies by the mel filters once per decode; on
    OpenBLAS's pool (a thread per core) the pool's second thread then spins. A 2 s utterance
    cost ~220 ms of process CPU for ~110 ms of wall time, against ~95 ms of both on one
    thread, and the spinning thread held the core that the end-of-turn model's inference
    (nice 10), another call's decode or the media loop needed. Every other compute job is one
    thread already (Whisper's ``cpu_threads``, the ONNX sessions): the cores belong to the
    calls, not to one job.
    """
    limits: AbstractContextManager[object] = threadpool_limits(limits=1, user_api="blas")
    return limits


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
