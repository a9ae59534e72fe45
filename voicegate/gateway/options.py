"""What the server needs to know, as plain frozen data built by the CLI from the settings.

The gateway layer never reads ``config/voicegate.yml`` (that is ``voicegate.config``, a layer
above); ``voicegate.config.Settings.gateway_options`` maps the file onto these, with secrets
already resolved from the environment by the CLI (design §7).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from voicegate.codecs.browser import SAMPLE_RATES
from voicegate.codecs.exotel import exotel_format
from voicegate.codecs.freeswitch import DEFAULT_CHUNK_MS, freeswitch_capabilities, freeswitch_format
from voicegate.codecs.jambonz import jambonz_format
from voicegate.codecs.plivo import plivo_format
from voicegate.codecs.telnyx import ENCODINGS as TELNYX_ENCODINGS
from voicegate.codecs.telnyx import check_outbound_format as check_telnyx_format
from voicegate.codecs.vonage import vonage_format
from voicegate.errors import ConfigError
from voicegate.gateway.calllog import CallLogOptions
from voicegate.gateway.limits import Limits
from voicegate.gateway.telnyx_texml import public_key
from voicegate.types import AudioFormat

#: Webhook form fields forwarded by default as TwiML ``<Parameter>`` (they reach the session as
#: ``customParameters`` of Twilio's ``start`` message, providers.md §b.1).
DEFAULT_WEBHOOK_FIELDS = ("CallSid", "From", "To")


@dataclass(frozen=True, slots=True)
class TwilioOptions:
    """The Twilio routes: ``POST /twilio/voice`` (TwiML) and the ``/twilio`` media stream."""

    # Static <Parameter name=.. value=..> pairs written into every <Stream>.
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Webhook form fields copied into <Parameter>s under the same name, when present.
    webhook_fields: tuple[str, ...] = DEFAULT_WEBHOOK_FIELDS
    # The account's auth token; when set, the webhook and the /twilio upgrade must carry a
    # valid X-Twilio-Signature (https://www.twilio.com/docs/usage/security).
    auth_token: str | None = field(default=None, repr=False)
    # The gateway's secret for stream tokens (gateway/auth.py); when set, a stream's `start`
    # must carry the token the webhook issued for its CallSid.
    stream_secret: str | None = field(default=None, repr=False)
    # How long a stream token stays valid after the webhook answered.
    stream_token_ttl_s: float = 300.0
    # <ConversationRelay> attributes (welcomeGreeting, voice, ...) for POST
    # /conversationrelay/voice; None: the ConversationRelay routes are off.
    relay_attributes: Mapping[str, str] | None = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class TelnyxOptions:
    """The Telnyx routes: ``POST /telnyx/texml`` (TeXML) and the ``/telnyx`` media stream."""

    # Static <Parameter name=.. value=..> pairs written into every <Stream>.
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # TeXML webhook form fields copied into <Parameter>s under the same name, when present.
    webhook_fields: tuple[str, ...] = DEFAULT_WEBHOOK_FIELDS
    # bidirectionalCodec / bidirectionalSamplingRate: what the gateway sends back.
    bidirectional_codec: str = "PCMU"
    bidirectional_sampling_rate: int = 8000
    # The account's base64 Ed25519 public key; when set, webhooks must be signed with it.
    public_key: str | None = field(default=None, repr=False)
    # Call Control stream_auth_token; when set, stream upgrades must carry it.
    stream_auth_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # Fail when the server is built, not on the first Telnyx call.
        telnyx_format(self.bidirectional_codec, self.bidirectional_sampling_rate)
        if self.public_key is not None:
            public_key(self.public_key)

    @property
    def outbound_format(self) -> AudioFormat:
        """The wire format of the audio sent back to Telnyx."""
        return telnyx_format(self.bidirectional_codec, self.bidirectional_sampling_rate)


def telnyx_format(codec: str, sample_rate: int) -> AudioFormat:
    """The audio format a TeXML ``bidirectionalCodec`` and ``bidirectionalSamplingRate`` name."""
    encoding = TELNYX_ENCODINGS.get(codec)
    if encoding is None:
        raise ConfigError(
            f"bidirectional_codec must be one of {sorted(TELNYX_ENCODINGS)}, got {codec!r}"
        )
    audio_format = AudioFormat(encoding, sample_rate)
    check_telnyx_format(audio_format)
    return audio_format


#: Plivo answer form fields forwarded by default as extraHeaders (CallUUID is in start).
DEFAULT_PLIVO_FIELDS = ("From", "To")


@dataclass(frozen=True, slots=True)
class PlivoOptions:
    """The Plivo routes: ``POST /plivo/answer`` (Plivo XML) and the ``/plivo`` audio stream."""

    # Static extraHeaders name=value pairs (letters and digits only, Plivo's rule).
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Answer form fields copied into extraHeaders under the same name, when present.
    webhook_fields: tuple[str, ...] = DEFAULT_PLIVO_FIELDS
    # <Stream contentType>: the audio both ways.
    content_type: str = "audio/x-mulaw;rate=8000"
    # The account's auth token; when set, webhooks need a valid X-Plivo-Signature-V3 and the
    # stream URL carries a key derived from it.
    auth_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        plivo_format(self.content_type)  # fail when the server is built
        for name, value in self.parameters.items():
            if not (name + value).isascii() or not (name + value).isalnum():
                raise ConfigError(
                    f"plivo parameters must be letters and digits only (extraHeaders): {name!r}"
                )

    @property
    def outbound_format(self) -> AudioFormat:
        """The wire format of the audio sent back to Plivo (the stream's contentType)."""
        return plivo_format(self.content_type)


#: Vonage answer parameters forwarded by default as websocket headers.
DEFAULT_VONAGE_FIELDS = ("uuid", "from", "to")


@dataclass(frozen=True, slots=True)
class VonageOptions:
    """The Vonage routes: ``/vonage/answer`` (NCCO, GET or POST) and the ``/vonage`` socket."""

    # Static websocket headers, sent back in the socket's first message.
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Answer parameters copied into the headers under the same name, when present.
    webhook_fields: tuple[str, ...] = DEFAULT_VONAGE_FIELDS
    # The endpoint's content-type: L16 at 8000 or 16000 Hz, both ways.
    content_type: str = "audio/l16;rate=16000"
    # The account's signature secret; when set, webhooks need a valid signed JWT and the
    # websocket URI carries a key derived from it.
    signature_secret: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        vonage_format(self.content_type)  # fail when the server is built


#: Exotel applet-URL query parameters forwarded by default as custom parameters.
DEFAULT_EXOTEL_FIELDS = ("CallFrom", "CallTo")


def check_basic_pair(dialect: str, username: str, password: str | None) -> None:
    """HTTP Basic credentials come as a pair: a user name with a password, or neither."""
    if (password is None) != (not username):
        raise ConfigError(f"{dialect} username and password go together")


@dataclass(frozen=True, slots=True)
class ExotelOptions:
    """The Exotel routes: ``GET /exotel/url`` (the applet's dynamic URL) and ``/exotel``."""

    # Static custom parameters of the stream URL; they come back in start.custom_parameters.
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Dynamic-URL query parameters copied into the custom parameters, when present.
    webhook_fields: tuple[str, ...] = DEFAULT_EXOTEL_FIELDS
    # The stream's audio rate both ways (?sample-rate=): 8000, 16000 or 24000.
    sample_rate: int = 8000
    # HTTP Basic credentials Exotel must present (the URL's user-info); None: not checked.
    username: str = ""
    password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        exotel_format(self.sample_rate)  # fail when the server is built
        if len(self.parameters) + len(self.webhook_fields) > 3:
            raise ConfigError("exotel takes at most 3 custom parameters (parameters + fields)")
        check_basic_pair("exotel", self.username, self.password)


@dataclass(frozen=True, slots=True)
class JambonzOptions:
    """The Jambonz routes: ``/jambonz/call`` (a listen verb), its actionHook, ``/jambonz``."""

    # Static listen metadata; it comes back in the socket's first message.
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Calling-webhook fields copied into the metadata (the first message has from/to already).
    webhook_fields: tuple[str, ...] = ()
    # listen sampleRate and bidirectionalAudio.sampleRate: the audio rate both ways.
    sample_rate: int = 8000
    # HTTP Basic credentials the webhooks and the socket (wsAuth) must carry; None: unchecked.
    username: str = ""
    password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        jambonz_format(self.sample_rate)  # fail when the server is built
        check_basic_pair("jambonz", self.username, self.password)


@dataclass(frozen=True, slots=True)
class AsteriskOptions:
    """The ``/asterisk`` route for Asterisk's chan_websocket (docs/protocols/asterisk.md)."""

    # HTTP Basic credentials of the websocket_client.conf client (username, password) that
    # every upgrade must carry; None: not checked.
    username: str = ""
    password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        check_basic_pair("asterisk", self.username, self.password)


@dataclass(frozen=True, slots=True)
class FreeSwitchOptions:
    """The ``/freeswitch`` mod_audio_fork socket (docs/protocols/freeswitch.md)."""

    # The fork's <sampling-rate> (8k or 16k) when its metadata names no sampleRate.
    sample_rate: int = 8000
    # Bot audio per playAudio message, i.e. per file FreeSWITCH plays (codecs/freeswitch.py).
    chunk_ms: int = DEFAULT_CHUNK_MS
    # HTTP Basic credentials the upgrade must carry (the channel's MOD_AUDIO_BASIC_AUTH_*
    # variables); None: not checked.
    username: str = ""
    password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # Fail when the server is built.
        freeswitch_capabilities(freeswitch_format(self.sample_rate), self.chunk_ms)
        check_basic_pair("freeswitch", self.username, self.password)


@dataclass(frozen=True, slots=True)
class GenesysOptions:
    """The ``/genesys`` AudioHook (Audio Connector) route (docs/protocols/genesys.md)."""

    # The integration's API key, which X-API-KEY must carry; None: not checked.
    api_key: str | None = field(default=None, repr=False)
    # The integration's client secret (base64); when set, upgrades need a valid HTTP message
    # signature keyed with it (gateway/audiohook.py).
    client_secret: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.client_secret is not None and self.api_key is None:
            raise ConfigError("genesys client_secret needs api_key (the signature's keyid)")


@dataclass(frozen=True, slots=True)
class BrowserOptions:
    """The ``/browser`` route (docs/protocols/browser.md)."""

    output_sample_rate: int = 16000
    # Origins (scheme://host[:port]) whose pages may open calls besides the gateway's own.
    allowed_origins: tuple[str, ...] = ()
    # When set, a client must present it (Authorization: Bearer) or come from the gateway's
    # own page (a cookie the page is given).
    api_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # Fail when the server is built, not on the first browser call.
        if self.output_sample_rate not in SAMPLE_RATES:
            raise ConfigError(
                f"browser output_sample_rate must be one of {SAMPLE_RATES}, "
                f"got {self.output_sample_rate}"
            )


@dataclass(frozen=True, slots=True)
class GatewayOptions:
    """Listening address, limits and enabled providers (None: the provider's routes are off)."""

    host: str = "127.0.0.1"
    port: int = 8080  # 0 picks a free port (tests, the in-process replay gateway)
    # Where providers reach this server from outside, e.g. "https://voice.example.com";
    # None: derived from each request's Host header (fine on a LAN, wrong behind a proxy).
    public_url: str | None = None
    capacity: int = 100
    shutdown_deadline_s: float = 30.0
    # When set, GET /metrics wants ``Authorization: Bearer <token>`` (else 403).
    metrics_token: str | None = field(default=None, repr=False)
    # When set, /calls wants it (Bearer, or HTTP Basic with it as password); None: /calls
    # serves clients on this machine only (gateway/callviews.py).
    calls_token: str | None = field(default=None, repr=False)
    # Where every call's timeline is written as JSONL and read by /calls; None: not kept.
    call_logs: CallLogOptions | None = None
    # Behind a proxy this gateway trusts: take the scheme and host of URLs from its
    # X-Forwarded-Proto and X-Forwarded-Host (never from an untrusted peer: it could then
    # choose the URL that Twilio signatures are checked against).
    trusted_proxy: bool = False
    limits: Limits = field(default_factory=Limits)
    twilio: TwilioOptions | None = field(default_factory=TwilioOptions)
    browser: BrowserOptions | None = field(default_factory=BrowserOptions)
    telnyx: TelnyxOptions | None = field(default_factory=TelnyxOptions)
    plivo: PlivoOptions | None = field(default_factory=PlivoOptions)
    vonage: VonageOptions | None = field(default_factory=VonageOptions)
    exotel: ExotelOptions | None = field(default_factory=ExotelOptions)
    jambonz: JambonzOptions | None = field(default_factory=JambonzOptions)
    freeswitch: FreeSwitchOptions | None = field(default_factory=FreeSwitchOptions)
    genesys: GenesysOptions | None = field(default_factory=GenesysOptions)
    asterisk: AsteriskOptions | None = field(default_factory=AsteriskOptions)
