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
    DEFAULT_PLIVO_FIELDS,
    DEFAULT_VONAGE_FIELDS,
    DEFAULT_WEBHOOK_FIELDS,
    BrowserOptions,
    GatewayOptions,
    PlivoOptions,
    TelnyxOptions,
    TwilioOptions,
    VonageOptions,
    telnyx_format,
)
from voicegate.vad.settings import SUPPORTED_RATES as VAD_SAMPLE_RATES
from voicegate.vad.settings import VadSettings

#: More worker processes than this is a typo, not a deployment (each loads the models).
MAX_WORKERS = 256
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_URL_SCHEMES = ("http", "https", "ws", "wss")


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """``server``: where to listen, how many calls to take, and in how many processes."""

    host: str = "127.0.0.1"
    port: int = 8080
    public_url: str | None = None
    capacity: int = 100
    shutdown_deadline_s: float = 30.0
    workers: int = 0  # worker processes sharing the port; 0: one per CPU core
    uvloop: bool = True  # run the event loops on uvloop (libuv) rather than asyncio's own

    def __post_init__(self) -> None:
        if not self.host:
            raise ConfigError("host must not be empty")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port must be between 0 and 65535, got {self.port}")
        if self.capacity < 1:
            raise ConfigError(f"capacity must be at least 1, got {self.capacity}")
        if not 0 <= self.workers <= MAX_WORKERS:
            raise ConfigError(f"workers must be between 0 and {MAX_WORKERS}, got {self.workers}")
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
class TelnyxSettings:
    """``providers.telnyx``: the TeXML webhook and the Media Streaming route."""

    enabled: bool = True
    public_key_env: str = ""
    stream_auth_token_env: str = ""
    bidirectional_codec: str = "PCMU"
    bidirectional_sampling_rate: int = 8000
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    webhook_fields: tuple[str, ...] = DEFAULT_WEBHOOK_FIELDS

    def __post_init__(self) -> None:
        for key in ("public_key_env", "stream_auth_token_env"):
            name = getattr(self, key)
            if name and not _ENV_NAME.fullmatch(name):
                raise ConfigError(f"{key} must name an environment variable, got {name!r}")
        telnyx_format(self.bidirectional_codec, self.bidirectional_sampling_rate)
        if any(not name for name in self.parameters):
            raise ConfigError("parameters must not have an empty name")

    def secret_env_names(self) -> dict[str, str]:
        """Key path -> environment variable, for the secrets this section names."""
        names = {
            "providers.telnyx.public_key_env": self.public_key_env,
            "providers.telnyx.stream_auth_token_env": self.stream_auth_token_env,
        }
        return {path: name for path, name in names.items() if name and self.enabled}

    def options(self, secrets: Mapping[str, str]) -> TelnyxOptions:
        """The server's Telnyx options, with the secrets the CLI resolved."""
        return TelnyxOptions(
            parameters=self.parameters,
            webhook_fields=self.webhook_fields,
            bidirectional_codec=self.bidirectional_codec,
            bidirectional_sampling_rate=self.bidirectional_sampling_rate,
            public_key=secrets.get("providers.telnyx.public_key_env"),
            stream_auth_token=secrets.get("providers.telnyx.stream_auth_token_env"),
        )


@dataclass(frozen=True, slots=True)
class PlivoSettings:
    """``providers.plivo``: the answer webhook and the Audio Streams route."""

    enabled: bool = True
    auth_token_env: str = ""
    content_type: str = "audio/x-mulaw;rate=8000"
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    webhook_fields: tuple[str, ...] = DEFAULT_PLIVO_FIELDS

    def __post_init__(self) -> None:
        if self.auth_token_env and not _ENV_NAME.fullmatch(self.auth_token_env):
            raise ConfigError(
                f"auth_token_env must name an environment variable, got {self.auth_token_env!r}"
            )
        self.options({})  # the options' own checks: content_type, extraHeaders characters

    def secret_env_names(self) -> dict[str, str]:
        """Key path -> environment variable, for the secret this section names."""
        if self.enabled and self.auth_token_env:
            return {"providers.plivo.auth_token_env": self.auth_token_env}
        return {}

    def options(self, secrets: Mapping[str, str]) -> PlivoOptions:
        """The server's Plivo options, with the secret the CLI resolved."""
        return PlivoOptions(
            parameters=self.parameters,
            webhook_fields=self.webhook_fields,
            content_type=self.content_type,
            auth_token=secrets.get("providers.plivo.auth_token_env"),
        )


@dataclass(frozen=True, slots=True)
class VonageSettings:
    """``providers.vonage``: the answer webhook (NCCO) and the websocket route."""

    enabled: bool = True
    signature_secret_env: str = ""
    content_type: str = "audio/l16;rate=16000"
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    webhook_fields: tuple[str, ...] = DEFAULT_VONAGE_FIELDS

    def __post_init__(self) -> None:
        name = self.signature_secret_env
        if name and not _ENV_NAME.fullmatch(name):
            raise ConfigError(
                f"signature_secret_env must name an environment variable, got {name!r}"
            )
        self.options({})  # the options' own checks (content_type)

    def secret_env_names(self) -> dict[str, str]:
        """Key path -> environment variable, for the secret this section names."""
        if self.enabled and self.signature_secret_env:
            return {"providers.vonage.signature_secret_env": self.signature_secret_env}
        return {}

    def options(self, secrets: Mapping[str, str]) -> VonageOptions:
        """The server's Vonage options, with the secret the CLI resolved."""
        return VonageOptions(
            parameters=self.parameters,
            webhook_fields=self.webhook_fields,
            content_type=self.content_type,
            signature_secret=secrets.get("providers.vonage.signature_secret_env"),
        )


@dataclass(frozen=True, slots=True)
class ProvidersSettings:
    """``providers``: one section per provider dialect."""

    twilio: TwilioSettings = field(default_factory=TwilioSettings)
    browser: BrowserSettings = field(default_factory=BrowserSettings)
    telnyx: TelnyxSettings = field(default_factory=TelnyxSettings)
    plivo: PlivoSettings = field(default_factory=PlivoSettings)
    vonage: VonageSettings = field(default_factory=VonageSettings)


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
    playout: PlayoutSettings = field(default_factory=PlayoutSettings)
    speech: SpeechSettings = field(default_factory=SpeechSettings)
    engine: EngineSettings = field(default_factory=EngineSettings)
    store: StoreSettings = field(default_factory=StoreSettings)

    def secret_env_names(self) -> dict[str, str]:
        """Key path -> environment variable name, for every secret the CLI must resolve."""
        providers = self.providers
        names = {
            **providers.telnyx.secret_env_names(),
            **providers.plivo.secret_env_names(),
            **providers.vonage.secret_env_names(),
        }
        twilio = self.providers.twilio
        if twilio.enabled and twilio.auth_token_env:
            names["providers.twilio.auth_token_env"] = twilio.auth_token_env
        return names

    def gateway_options(
        self,
        *,
        twilio_auth_token: str | None = None,
        secrets: Mapping[str, str] = MappingProxyType({}),
    ) -> GatewayOptions:
        """The server's options; secrets (key path -> value) are resolved by the CLI."""
        twilio, browser = self.providers.twilio, self.providers.browser
        telnyx, plivo, vonage = self.providers.telnyx, self.providers.plivo, self.providers.vonage
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
            telnyx=telnyx.options(secrets) if telnyx.enabled else None,
            plivo=plivo.options(secrets) if plivo.enabled else None,
            vonage=vonage.options(secrets) if vonage.enabled else None,
        )
