"""The gateway's settings: frozen dataclasses mirroring ``config/voicegate.yml`` (design §7).

Every section is a dataclass whose defaults are the documented defaults of the file; the
``vad`` and ``barge_in`` sections are the VAD layer's :class:`VadSettings` and the barge-in
machine's :class:`BargeInPolicy` themselves, so a field added there is a key here. Secrets
appear only as names of environment variables (``auth_token_env``); the CLI resolves them.
"""

from __future__ import annotations

import enum
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar
from urllib.parse import urlsplit

from voicegate.codecs.browser import SAMPLE_RATES as BROWSER_SAMPLE_RATES
from voicegate.errors import ConfigError
from voicegate.gateway.bargein import BargeInPolicy
from voicegate.gateway.call_ending import CallControlSettings
from voicegate.gateway.calllog import CallLogOptions
from voicegate.gateway.limits import Limits
from voicegate.gateway.options import (
    DEFAULT_EXOTEL_FIELDS,
    DEFAULT_PLIVO_FIELDS,
    DEFAULT_VONAGE_FIELDS,
    DEFAULT_WEBHOOK_FIELDS,
    AsteriskOptions,
    BrowserOptions,
    ExotelOptions,
    FreeSwitchOptions,
    GatewayOptions,
    GenesysOptions,
    JambonzOptions,
    PlivoOptions,
    TelnyxOptions,
    TwilioOptions,
    VonageOptions,
    telnyx_format,
)
from voicegate.speech.embedded.whisper_window import (
    DEFAULT_WINDOW_S,
    FULL_WINDOW_S,
    MIN_TRAILING_S,
)
from voicegate.turns.settings import TurnSettings
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
    # GET /metrics wants this bearer token (named environment variable); "": no token.
    metrics_token_env: str = ""
    # /calls wants this token (named environment variable); "": this machine's clients only.
    calls_token_env: str = ""
    # Honour X-Forwarded-Proto/Host from the proxy in front (TwiML then says wss://).
    trusted_proxy: bool = False

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


def _loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _check_public_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in _URL_SCHEMES or not parts.netloc:
        raise ConfigError(f"public_url must be an absolute http(s) or ws(s) URL, got {url!r}")
    if parts.query or parts.fragment:
        raise ConfigError(f"public_url must have no query or fragment, got {url!r}")


@dataclass(frozen=True, slots=True)
class AudioSettings:
    """``audio``: the widest rate calls are resampled to for VAD and speech recognition."""

    session_sample_rate: int = 16000

    def __post_init__(self) -> None:
        if self.session_sample_rate not in VAD_SAMPLE_RATES:
            raise ConfigError(
                f"session_sample_rate must be one of {VAD_SAMPLE_RATES}, "
                f"got {self.session_sample_rate}"
            )


_RELAY_ATTRIBUTE = re.compile(r"[A-Za-z][A-Za-z0-9]*")


@dataclass(frozen=True, slots=True)
class ConversationRelaySettings:
    """``providers.twilio.conversationrelay``: the ConversationRelay (text) routes."""

    enabled: bool = True
    attributes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        for name in self.attributes:
            if not _RELAY_ATTRIBUTE.fullmatch(name) or name == "url":
                raise ConfigError(
                    f"attributes: {name!r} is not a <ConversationRelay> attribute name "
                    "(letters and digits; url is the gateway's)"
                )


@dataclass(frozen=True, slots=True)
class TwilioSettings:
    """``providers.twilio``: the voice webhook and the Media Streams route."""

    enabled: bool = True
    auth_token_env: str = ""
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    webhook_fields: tuple[str, ...] = DEFAULT_WEBHOOK_FIELDS
    stream_secret_env: str = ""
    stream_token_ttl_s: float = 300.0
    allow_unauthenticated: bool = False
    conversationrelay: ConversationRelaySettings = field(default_factory=ConversationRelaySettings)

    def __post_init__(self) -> None:
        for name in ("auth_token_env", "stream_secret_env"):
            value = getattr(self, name)
            if value and not _ENV_NAME.fullmatch(value):
                raise ConfigError(f"{name} must name an environment variable, got {value!r}")
        if not self.stream_token_ttl_s > 0:
            raise ConfigError(f"stream_token_ttl_s must be positive: {self.stream_token_ttl_s}")
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
    allowed_origins: tuple[str, ...] = ()
    api_key_env: str = ""
    allow_unauthenticated: bool = False

    def __post_init__(self) -> None:
        if self.api_key_env and not _ENV_NAME.fullmatch(self.api_key_env):
            raise ConfigError(
                f"api_key_env must name an environment variable: {self.api_key_env!r}"
            )
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
    allow_unauthenticated: bool = False

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

    def exposure_problem(self) -> str | None:
        """What this route lacks to be served beyond loopback (check_exposure), if anything."""
        signed = self.public_key_env and self.stream_auth_token_env
        if not self.enabled or self.allow_unauthenticated or signed:
            return None
        return "providers.telnyx needs public_key_env and stream_auth_token_env"

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
    allow_unauthenticated: bool = False

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

    def exposure_problem(self) -> str | None:
        """What this route lacks to be served beyond loopback (check_exposure), if anything."""
        if not self.enabled or self.allow_unauthenticated or self.auth_token_env:
            return None
        return "providers.plivo needs auth_token_env"

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
    allow_unauthenticated: bool = False

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

    def exposure_problem(self) -> str | None:
        """What this route lacks to be served beyond loopback (check_exposure), if anything."""
        if not self.enabled or self.allow_unauthenticated or self.signature_secret_env:
            return None
        return "providers.vonage needs signature_secret_env"

    def options(self, secrets: Mapping[str, str]) -> VonageOptions:
        """The server's Vonage options, with the secret the CLI resolved."""
        return VonageOptions(
            parameters=self.parameters,
            webhook_fields=self.webhook_fields,
            content_type=self.content_type,
            signature_secret=secrets.get("providers.vonage.signature_secret_env"),
        )


@dataclass(frozen=True, slots=True)
class BasicAuthSettings:
    """What the provider sections guarded by HTTP Basic share (Exotel, Jambonz, FreeSWITCH)."""

    #: The section's key under ``providers`` (a class constant, not a setting).
    section: ClassVar[str] = ""
    enabled: bool = True
    username: str = ""
    password_env: str = ""
    allow_unauthenticated: bool = False

    def __post_init__(self) -> None:
        if self.password_env and not _ENV_NAME.fullmatch(self.password_env):
            raise ConfigError(
                f"password_env must name an environment variable, got {self.password_env!r}"
            )
        if bool(self.username) != bool(self.password_env):
            raise ConfigError("username and password_env go together")
        self.options({self.secret_key: "x"} if self.username else {})  # fail at load time

    @property
    def secret_key(self) -> str:
        """The key path the CLI resolves the password under."""
        return f"providers.{self.section}.password_env"

    def secret_env_names(self) -> dict[str, str]:
        """Key path -> environment variable, for the secret this section names."""
        if self.enabled and self.password_env:
            return {self.secret_key: self.password_env}
        return {}

    def exposure_problem(self) -> str | None:
        """What this route lacks to be served beyond loopback (check_exposure), if anything."""
        if not self.enabled or self.allow_unauthenticated or self.password_env:
            return None
        return f"providers.{self.section} needs username and password_env"

    def options(self, secrets: Mapping[str, str]) -> object:
        """The server's options for this section, with the secret the CLI resolved."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class ExotelSettings(BasicAuthSettings):
    """``providers.exotel``: the Voicebot applet's dynamic URL and stream route."""

    section: ClassVar[str] = "exotel"
    sample_rate: int = 8000
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    webhook_fields: tuple[str, ...] = DEFAULT_EXOTEL_FIELDS

    def options(self, secrets: Mapping[str, str]) -> ExotelOptions:
        """The server's Exotel options, with the secret the CLI resolved."""
        return ExotelOptions(
            parameters=self.parameters,
            webhook_fields=self.webhook_fields,
            sample_rate=self.sample_rate,
            username=self.username,
            password=secrets.get(self.secret_key),
        )


@dataclass(frozen=True, slots=True)
class JambonzSettings(BasicAuthSettings):
    """``providers.jambonz``: the calling webhook (a listen verb) and the listen socket."""

    section: ClassVar[str] = "jambonz"
    sample_rate: int = 8000
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    webhook_fields: tuple[str, ...] = ()

    def options(self, secrets: Mapping[str, str]) -> JambonzOptions:
        """The server's Jambonz options, with the secret the CLI resolved."""
        return JambonzOptions(
            parameters=self.parameters,
            webhook_fields=self.webhook_fields,
            sample_rate=self.sample_rate,
            username=self.username,
            password=secrets.get(self.secret_key),
        )


@dataclass(frozen=True, slots=True)
class FreeSwitchSettings(BasicAuthSettings):
    """``providers.freeswitch``: the mod_audio_fork socket (docs/protocols/freeswitch.md)."""

    section: ClassVar[str] = "freeswitch"
    sample_rate: int = 8000
    chunk_ms: int = 200

    def options(self, secrets: Mapping[str, str]) -> FreeSwitchOptions:
        """The server's FreeSWITCH options, with the secret the CLI resolved."""
        return FreeSwitchOptions(
            sample_rate=self.sample_rate,
            chunk_ms=self.chunk_ms,
            username=self.username,
            password=secrets.get(self.secret_key),
        )


@dataclass(frozen=True, slots=True)
class GenesysSettings:
    """``providers.genesys``: the AudioHook (Audio Connector) WebSocket route."""

    enabled: bool = True
    api_key_env: str = ""
    client_secret_env: str = ""
    allow_unauthenticated: bool = False

    def __post_init__(self) -> None:
        for key in ("api_key_env", "client_secret_env"):
            name = getattr(self, key)
            if name and not _ENV_NAME.fullmatch(name):
                raise ConfigError(f"{key} must name an environment variable, got {name!r}")
        if self.client_secret_env and not self.api_key_env:
            raise ConfigError("client_secret_env needs api_key_env (the signature's keyid)")

    def secret_env_names(self) -> dict[str, str]:
        """Key path -> environment variable, for the secrets this section names."""
        names = {
            "providers.genesys.api_key_env": self.api_key_env,
            "providers.genesys.client_secret_env": self.client_secret_env,
        }
        return {path: name for path, name in names.items() if name and self.enabled}

    def exposure_problem(self) -> str | None:
        """What this route lacks to be served beyond loopback (check_exposure), if anything."""
        signed = self.api_key_env and self.client_secret_env
        if not self.enabled or self.allow_unauthenticated or signed:
            return None
        return "providers.genesys needs api_key_env and client_secret_env"

    def options(self, secrets: Mapping[str, str]) -> GenesysOptions:
        """The server's Genesys options, with the secrets the CLI resolved."""
        return GenesysOptions(
            api_key=secrets.get("providers.genesys.api_key_env"),
            client_secret=secrets.get("providers.genesys.client_secret_env"),
        )


@dataclass(frozen=True, slots=True)
class AsteriskSettings(BasicAuthSettings):
    """``providers.asterisk``: the chan_websocket route Asterisk's websocket_client.conf names."""

    section: ClassVar[str] = "asterisk"

    def options(self, secrets: Mapping[str, str]) -> AsteriskOptions:
        """The server's Asterisk options, with the secret the CLI resolved."""
        return AsteriskOptions(username=self.username, password=secrets.get(self.secret_key))


@dataclass(frozen=True, slots=True)
class ProvidersSettings:
    """``providers``: one section per provider dialect."""

    twilio: TwilioSettings = field(default_factory=TwilioSettings)
    browser: BrowserSettings = field(default_factory=BrowserSettings)
    telnyx: TelnyxSettings = field(default_factory=TelnyxSettings)
    plivo: PlivoSettings = field(default_factory=PlivoSettings)
    vonage: VonageSettings = field(default_factory=VonageSettings)
    exotel: ExotelSettings = field(default_factory=ExotelSettings)
    jambonz: JambonzSettings = field(default_factory=JambonzSettings)
    genesys: GenesysSettings = field(default_factory=GenesysSettings)
    freeswitch: FreeSwitchSettings = field(default_factory=FreeSwitchSettings)
    asterisk: AsteriskSettings = field(default_factory=AsteriskSettings)


@dataclass(frozen=True, slots=True)
class PlayoutSettings:
    """``playout``: how far ahead of real time bot audio is sent."""

    #: Bot audio (ms) the provider holds: the caller hears no gap while the gateway is this
    #: late. A barge-in's flush drops it, so it does not delay the audible stop (playout.py).
    send_ahead_ms: int = 500
    #: Bot audio (ms) per outbound media message, at most half of ``send_ahead_ms``. Each
    #: message is a socket write, the costliest step of a speaking call's media path (issue
    #: 12: 200 ms took 2-7 % off the gateway's CPU at 300 calls against 100 ms). The provider
    #: holds at least ``send_ahead_ms - chunk_ms - 20`` ms: 280 by default, as with 100 ms
    #: chunks and 400 ms ahead before, so a 300 ms stall of the media loop is still not heard.
    chunk_ms: int = 200

    def __post_init__(self) -> None:
        for name in ("send_ahead_ms", "chunk_ms"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1 ms, got {getattr(self, name)}")


@dataclass(frozen=True, slots=True)
class SpeechSettings:
    """``speech``: which STT and TTS engines to use (``whisper``, ``espeak``, ``scripted:FILE``,
    ``tone``; cli/engines.py builds them)."""

    stt: str = "whisper"
    tts: str = "espeak"
    #: Embedded Whisper: an interim transcript (a re-decode of the utterance so far) every this
    #: many ms of speech; 0: none; None: only where a decision reads them (cli/wiring.py).
    interim_ms: int | None = None
    #: Embedded Whisper: the encoder window (s) for utterances that fit it with 3 s to spare
    #: (speech/embedded/whisper_window.py); 30 (Whisper's own window) turns that off.
    whisper_window_s: float = DEFAULT_WINDOW_S

    def __post_init__(self) -> None:
        if not MIN_TRAILING_S < self.whisper_window_s <= FULL_WINDOW_S:
            raise ConfigError(
                f"whisper_window_s must be more than {MIN_TRAILING_S:g} and at most "
                f"{FULL_WINDOW_S}, got {self.whisper_window_s}"
            )


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """``engine``: the agent project and the language model that drives it."""

    project_dir: Path = Path("config/agent")
    llm: str = "scripted:config/agent/conversation.yml"
    # Spoken when a turn fails (the model could not answer, even after its retries).
    error_response: str = "Sorry, I could not get that. Could you say it again?"


class StoreBackend(enum.Enum):
    """Where durable state lives (issue 13): embedded SQLite, or a Redis server shared by nodes."""

    SQLITE = "sqlite"
    REDIS = "redis"


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """``store``: where durable state (memory, resumable call state) lives."""

    backend: StoreBackend = StoreBackend.SQLITE
    data_dir: Path = Path("data")
    redis_url_env: str = "VOICEGATE_REDIS_URL"
    key_prefix: str = "voicegate"
    memory_ttl_s: float = 30 * 24 * 3600.0
    call_ttl_s: float = 3600.0
    timeout_s: float = 0.5
    retries: int = 2
    resume_line: str = "Sorry, we were cut off. Where were we?"
    #: How long a call's lease in the Redis call registry outlives its node's last renewal.
    lease_s: float = 5.0
    #: Every call's timeline as JSONL under data_dir/calls (shown by /calls).
    call_logs: bool = True
    call_log_max_bytes: int = 1024 * 1024
    call_logs_kept: int = 1000
    call_log_max_age_s: float = 7 * 24 * 3600.0

    def __post_init__(self) -> None:
        if not _ENV_NAME.fullmatch(self.redis_url_env):
            raise ConfigError(
                f"redis_url_env must name an environment variable, got {self.redis_url_env!r}"
            )
        if not self.key_prefix or ":" in self.key_prefix:
            raise ConfigError(f"key_prefix must be non-empty without ':', got {self.key_prefix!r}")
        for name in (
            "memory_ttl_s",
            "call_ttl_s",
            "timeout_s",
            "lease_s",
            "call_log_max_bytes",
            "call_logs_kept",
            "call_log_max_age_s",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")

    def call_log_options(self) -> CallLogOptions | None:
        """Where the gateway writes call logs, or None when they are off."""
        if not self.call_logs:
            return None
        return CallLogOptions(
            self.data_dir / "calls",
            max_bytes=self.call_log_max_bytes,
            keep=self.call_logs_kept,
            max_age_s=self.call_log_max_age_s,
        )


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
    limits: Limits = field(default_factory=Limits)
    call_control: CallControlSettings = field(default_factory=CallControlSettings)

    def secret_env_names(self) -> dict[str, str]:
        """Key path -> environment variable name, for every secret the CLI must resolve."""
        twilio, browser = self.providers.twilio, self.providers.browser
        names = {
            "providers.twilio.auth_token_env": twilio.auth_token_env if twilio.enabled else "",
            "providers.twilio.stream_secret_env": (
                twilio.stream_secret_env if twilio.enabled else ""
            ),
            "providers.browser.api_key_env": browser.api_key_env if browser.enabled else "",
            "server.metrics_token_env": self.server.metrics_token_env,
            "server.calls_token_env": self.server.calls_token_env,
        }
        providers = self.providers
        names.update(providers.telnyx.secret_env_names())
        names.update(providers.plivo.secret_env_names())
        names.update(providers.vonage.secret_env_names())
        names.update(providers.exotel.secret_env_names())
        names.update(providers.jambonz.secret_env_names())
        names.update(providers.freeswitch.secret_env_names())
        names.update(providers.genesys.secret_env_names())
        names.update(providers.asterisk.secret_env_names())
        names.update(self.call_control.env_names())
        return {path: name for path, name in names.items() if name}

    def check_exposure(self) -> None:
        """Refuse to listen beyond this machine with a provider route left unauthenticated.

        The secure setup is the default one off loopback (issue 15, SECURITY.md); each route
        may opt out with ``allow_unauthenticated: true``.
        """
        if _loopback(self.server.host):
            return
        twilio, browser = self.providers.twilio, self.providers.browser
        problems = []
        signed = bool(twilio.auth_token_env and twilio.stream_secret_env)
        if twilio.enabled and not twilio.allow_unauthenticated and not signed:
            problems.append("providers.twilio needs auth_token_env and stream_secret_env")
        if browser.enabled and not browser.allow_unauthenticated and not browser.api_key_env:
            problems.append("providers.browser needs api_key_env")
        providers = self.providers
        sections = (providers.telnyx, providers.plivo, providers.vonage, providers.exotel)
        basic = (providers.jambonz, providers.freeswitch, providers.asterisk)
        for section in (*sections, *basic, providers.genesys):
            if (problem := section.exposure_problem()) is not None:
                problems.append(problem)
        if problems:
            raise ConfigError(
                f"server.host {self.server.host} accepts calls from other machines, but "
                + "; ".join(problems)
                + " (or allow_unauthenticated: true; see SECURITY.md)"
            )

    def gateway_options(
        self,
        *,
        twilio_auth_token: str | None = None,
        secrets: Mapping[str, str] = MappingProxyType({}),
    ) -> GatewayOptions:
        """The server's options; ``secrets`` (key path -> value) are resolved by the CLI."""
        twilio, browser = self.providers.twilio, self.providers.browser
        telnyx, plivo, vonage = self.providers.telnyx, self.providers.plivo, self.providers.vonage
        relay = twilio.conversationrelay
        exotel, jambonz = self.providers.exotel, self.providers.jambonz
        genesys, asterisk = self.providers.genesys, self.providers.asterisk
        if twilio_auth_token is None:
            twilio_auth_token = secrets.get("providers.twilio.auth_token_env")
        return GatewayOptions(
            host=self.server.host,
            port=self.server.port,
            public_url=self.server.public_url,
            capacity=self.server.capacity,
            shutdown_deadline_s=self.server.shutdown_deadline_s,
            metrics_token=secrets.get("server.metrics_token_env"),
            calls_token=secrets.get("server.calls_token_env"),
            call_logs=self.store.call_log_options(),
            trusted_proxy=self.server.trusted_proxy,
            limits=self.limits,
            twilio=TwilioOptions(
                parameters=twilio.parameters,
                webhook_fields=twilio.webhook_fields,
                auth_token=twilio_auth_token,
                stream_secret=secrets.get("providers.twilio.stream_secret_env"),
                stream_token_ttl_s=twilio.stream_token_ttl_s,
                relay_attributes=relay.attributes if relay.enabled else None,
            )
            if twilio.enabled
            else None,
            browser=BrowserOptions(
                browser.output_sample_rate,
                allowed_origins=browser.allowed_origins,
                api_key=secrets.get("providers.browser.api_key_env"),
            )
            if browser.enabled
            else None,
            telnyx=telnyx.options(secrets) if telnyx.enabled else None,
            plivo=plivo.options(secrets) if plivo.enabled else None,
            vonage=vonage.options(secrets) if vonage.enabled else None,
            exotel=exotel.options(secrets) if exotel.enabled else None,
            jambonz=jambonz.options(secrets) if jambonz.enabled else None,
            freeswitch=(
                self.providers.freeswitch.options(secrets)
                if self.providers.freeswitch.enabled
                else None
            ),
            genesys=genesys.options(secrets) if genesys.enabled else None,
            asterisk=asterisk.options(secrets) if asterisk.enabled else None,
        )
