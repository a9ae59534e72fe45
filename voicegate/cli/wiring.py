"""The object graph of a running gateway, built explicitly from settings (design §3, §7).

``serve`` and ``replay`` both build their call runner here, so the gateway a replay starts in
process is the one ``voicegate serve`` runs. Engine choices are written as specs:
``scripted:FILE`` for the scripted model and the scripted recogniser, ``tone`` for the tone
synthesiser, ``whisper[:MODEL]`` for the embedded recogniser (MODEL: ``tiny.en``, the bundled
model, or a CTranslate2 model directory) and ``espeak[:VOICE]`` for the embedded synthesiser.
"""

from __future__ import annotations

from pathlib import Path

from voicegate.config import Settings
from voicegate.engine.llm.port import LLMFactory, LLMPort
from voicegate.engine.llm.script import load_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore
from voicegate.engine.project.loader import load_project
from voicegate.errors import ConfigError, SpeechError
from voicegate.gateway.media import MediaFactory
from voicegate.gateway.session import CallServices, SessionRunner, SessionSettings
from voicegate.speech.embedded.espeak_lib import Voice, espeak_library
from voicegate.speech.embedded.espeak_tts import EspeakTextToSpeech
from voicegate.speech.embedded.whisper_model import (
    BUNDLED_MODEL,
    WhisperOptions,
    WhisperRecognizer,
)
from voicegate.speech.embedded.whisper_stt import WhisperSpeechToText
from voicegate.speech.fakes import ScriptedSpeechToText, ToneTextToSpeech
from voicegate.speech.ports import SpeechToText, TextToSpeech


def split_spec(spec: str, key: str) -> tuple[str, str]:
    """``kind:argument`` -> (kind, argument)."""
    kind, _, argument = spec.partition(":")
    if not kind:
        raise ConfigError(f"{key}: empty engine spec")
    return kind, argument


def build_llm(spec: str) -> LLMFactory:
    """The language model a spec names (``scripted:FILE``)."""
    kind, argument = split_spec(spec, "engine.llm")
    if kind == "scripted" and argument:
        script = load_script(Path(argument))

        def scripted(call_id: str) -> LLMPort:
            return ScriptedLLM(script)

        return scripted
    raise ConfigError(
        f"engine.llm: {spec!r} is not available; use scripted:FILE "
        "(real model providers are not built yet)"
    )


def build_stt(spec: str) -> SpeechToText:
    """The recogniser a spec names, loaded here (Whisper: once per process).

    ``scripted:FILE`` (one transcript per line), ``whisper`` or ``whisper:tiny.en`` (the
    bundled model), ``whisper:DIR`` (a CTranslate2 Whisper model directory).
    """
    kind, argument = split_spec(spec, "speech.stt")
    if kind == "scripted" and argument:
        lines = Path(argument).read_text(encoding="utf-8").splitlines()
        return ScriptedSpeechToText([line.strip() for line in lines if line.strip()])
    if kind == "whisper":
        return WhisperSpeechToText(load_whisper(argument))
    raise ConfigError(
        f"speech.stt: unknown engine {spec!r} (try whisper, whisper:tiny.en, whisper:DIR "
        "or scripted:FILE)"
    )


def load_whisper(model: str) -> WhisperRecognizer:
    """Whisper from ``model`` (empty or ``tiny.en``: the bundled model; else a directory)."""
    model_dir = None if model in ("", BUNDLED_MODEL) else Path(model)
    try:
        recognizer = WhisperRecognizer(WhisperOptions(model_dir=model_dir))
    except SpeechError as error:
        raise ConfigError(f"speech.stt: {error}") from None
    recognizer.warm_up()
    return recognizer


def build_tts(spec: str, sample_rate: int) -> TextToSpeech:
    """The synthesiser a spec names: ``tone``, ``espeak`` or ``espeak:VOICE`` (e.g. en-us)."""
    kind, argument = split_spec(spec, "speech.tts")
    if spec == "tone":
        return ToneTextToSpeech(sample_rate)
    if kind == "espeak":
        return build_espeak(argument or Voice().name, sample_rate)
    raise ConfigError(f"speech.tts: unknown engine {spec!r} (try espeak, espeak:VOICE or tone)")


def build_espeak(voice: str, sample_rate: int, words_per_minute: int | None = None) -> TextToSpeech:
    """espeak-ng speaking ``voice`` at ``sample_rate``, on this process's one espeak library."""
    chosen = Voice(voice, words_per_minute or Voice().words_per_minute)
    try:
        return EspeakTextToSpeech(espeak_library(), sample_rate, chosen)
    except SpeechError as error:
        raise ConfigError(f"speech.tts: {error}") from None


def build_runner(settings: Settings) -> SessionRunner:
    """The call runner: engine, speech engines, media and barge-in policy from settings."""
    if not settings.engine.llm:
        raise ConfigError("engine.llm: no language model configured; use --llm scripted:FILE")
    store = SqliteMemoryStore(settings.store.data_dir / "memory.sqlite3")
    engine = ProjectEngine(
        load_project(settings.engine.project_dir), build_llm(settings.engine.llm), store
    )
    rate = settings.audio.session_sample_rate
    services = CallServices(
        engine=engine,
        stt=build_stt(settings.speech.stt),
        tts=build_tts(settings.speech.tts, rate),
        media=MediaFactory(sample_rate=rate, frame_ms=settings.vad.frame_ms, vad=settings.vad),
    )
    session = SessionSettings(
        frame_ms=settings.vad.frame_ms,
        send_ahead_ms=settings.playout.send_ahead_ms,
        barge_in=settings.barge_in,
    )
    return SessionRunner(services, session)
