"""The gateway's settings: frozen dataclasses mirroring ``config/voicegate.yml`` (design §7).

Every section is a dataclass whose defaults are the documented defaults of the file; the
``vad`` and ``barge_in`` sections are the VAD layer's :class:`VadSettings` and the barge-in
machine's :class:`BargeInPolicy` themselves, so a field added there is a key here. Secrets
appear only as names of environment variables (``auth_token_env``); the CLI resolves them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from urllib.parse import urlsplit

from voicegate.codecs.browser import SAMPLE_RATES as BROWSER_SAMPLE_RATES
from voicegate.errors import ConfigError
from voicegate.gateway.bargein import BargeInPolicy
from voicegate.gateway.options import (
    DEFAULT_WEBHOOK_FIELDS,
    BrowserOptions,
    GatewayOptions,
    TwilioOptions,
)
from voicegate.turns.settings import TurnSettings
from voicegate.vad.settings import SUPPORTED_RATES as VAD_SAMPLE_RATES
from voicegate.vad.settings import VadSettings

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_URL_SCHEMES = ("http", "https", "ws", "wss")


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """``server``: where to listen and how many calls to take."""

    host: str = "127.0.0.1"
    port: int = 8080
    public_url: str | None = None
    capacity: int = 100
    shutdown_deadline_s: float = 30.0

    def __post_init__(self) -> None:
        if not self.host:
            raise ConfigError("host must not be empty")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port must be between 0 and 65535, got {self.port}")
        if self.capacity < 1:
            raise ConfigError(f"capacity must be at least 1, got {self.capacity}")
        if self.shutdown_deadline_s < 0:
            raise ConfigError(
                f"shutdown_deadline_s must not be negative: {self.shutdown_deadline_s}"
            )
        if self.public_url is not None:
            _check_public_url(self.public_url)


def _check_public_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in _URL_SCHEMES or not parts.netloc:
        raise ConfigError(f"public_url must be an absolute http(s) or ws(s) URL, got {url!r}")
    if parts.query or parts.fragment:
        raise ConfigError(f"public_url must have no query or fragment, got {url!r}")


@dataclass(frozen=True, slots=True)
class AudioSettings:
    """``audio``: the rate every call is resampled to for VAD and speech recognition."""

    session_sample_rate: int = 16000

    def __post_init__(self) -> None:
        if self.session_sample_rate not in VAD_SAMPLE_RATES:
            raise ConfigError(
                f"session_sample_rate must be one of {VAD_SAMPLE_RATES}, "
                f"got {self.session_sample_rate}"
            )


@dataclass(frozen=True, slots=True)
class TwilioSettings:
    """``providers.twilio``: the voice webhook and the Media Streams route."""

    enabled: bool = True
    auth_token_env: str = ""
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    webhook_fields: tuple[str, ...] = DEFAULT_WEBHOOK_FIELDS

    def __post_init__(self) -> None:
        if self.auth_token_env and not _ENV_NAME.fullmatch(self.auth_token_env):
            raise ConfigError(
                f"auth_token_env must name an environment variable, got {self.auth_token_env!r}"
            )
        if any(not name for name in self.parameters):
            raise ConfigError("parameters must not have an empty name")
        clashes = sorted(set(self.parameters) & set(self.webhook_fields))
        if clashes:
            raise ConfigError(
                f"webhook_fields repeats names set in parameters: {', '.join(clashes)}; keep one"
            )


@dataclass(frozen=True, slots=True)
class BrowserSettings:
    """``providers.browser``: the browser dialect route."""

    enabled: bool = True
    output_sample_rate: int = 16000

    def __post_init__(self) -> None:
        if self.output_sample_rate not in BROWSER_SAMPLE_RATES:
            raise ConfigError(
                f"output_sample_rate must be one of {BROWSER_SAMPLE_RATES}, "
                f"got {self.output_sample_rate}"
            )


@dataclass(frozen=True, slots=True)
class ProvidersSettings:
    """``providers``: one section per provider dialect."""

    twilio: TwilioSettings = field(default_factory=TwilioSettings)
    browser: BrowserSettings = field(default_factory=BrowserSettings)


@dataclass(frozen=True, slots=True)
class PlayoutSettings:
    """``playout``: how far ahead of real time bot audio is sent."""

    send_ahead_ms: int = 100


@dataclass(frozen=True, slots=True)
class SpeechSettings:
    """``speech``: which STT and TTS engines to use (``whisper``, ``espeak``, ``scripted:FILE``,
    ``tone``; cli/wiring.py builds them)."""

    stt: str = "whisper"
    tts: str = "espeak"


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """``engine``: the agent project and the language model that drives it."""

    project_dir: Path = Path("config/agent")
    llm: str = "scripted:config/agent/conversation.yml"


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """``store``: where durable state (the memory store) lives."""

    data_dir: Path = Path("data")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything in ``config/voicegate.yml``."""

    server: ServerSettings = field(default_factory=ServerSettings)
    audio: AudioSettings = field(default_factory=AudioSettings)
    providers: ProvidersSettings = field(default_factory=ProvidersSettings)
    vad: VadSettings = field(default_factory=VadSettings)
    barge_in: BargeInPolicy = field(default_factory=BargeInPolicy)
    turns: TurnSettings = field(default_factory=TurnSettings)
    playout: PlayoutSettings = field(default_factory=PlayoutSettings)
    speech: SpeechSettings = field(default_factory=SpeechSettings)
    engine: EngineSettings = field(default_factory=EngineSettings)
    store: StoreSettings = field(default_factory=StoreSettings)

    def secret_env_names(self) -> dict[str, str]:
        """Key path -> environment variable name, for every secret the CLI must resolve."""
        twilio = self.providers.twilio
        if twilio.enabled and twilio.auth_token_env:
            return {"providers.twilio.auth_token_env": twilio.auth_token_env}
        return {}

    def gateway_options(self, *, twilio_auth_token: str | None = None) -> GatewayOptions:
        """The server's options; secrets are passed in already resolved by the CLI."""
        twilio, browser = self.providers.twilio, self.providers.browser
        return GatewayOptions(
            host=self.server.host,
            port=self.server.port,
            public_url=self.server.public_url,
            capacity=self.server.capacity,
            shutdown_deadline_s=self.server.shutdown_deadline_s,
            twilio=TwilioOptions(
                parameters=twilio.parameters,
                webhook_fields=twilio.webhook_fields,
                auth_token=twilio_auth_token,
            )
            if twilio.enabled
            else None,
            browser=BrowserOptions(browser.output_sample_rate) if browser.enabled else None,
        )
