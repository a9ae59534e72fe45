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
from voicegate.errors import ConfigError
from voicegate.gateway.limits import Limits

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
    # Behind a proxy this gateway trusts: take the scheme and host of URLs from its
    # X-Forwarded-Proto and X-Forwarded-Host (never from an untrusted peer: it could then
    # choose the URL that Twilio signatures are checked against).
    trusted_proxy: bool = False
    limits: Limits = field(default_factory=Limits)
    twilio: TwilioOptions | None = field(default_factory=TwilioOptions)
    browser: BrowserOptions | None = field(default_factory=BrowserOptions)
