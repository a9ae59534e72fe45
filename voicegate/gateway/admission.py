"""Checks a request passes before it becomes a call, and the gate a call passes at `start`.

Issue 15 #4, #8 to #10, in the order a connection meets them: the per-address rate and
socket limits (429), the route's authentication (403: Twilio's X-Twilio-Signature on the
upgrade, a browser's Origin and API key), then at `start` the stream token and a call slot
(1008 or 1013, see :class:`StartGate`). Refusals before the upgrade are HTTP answers with a
reason in the body; after it, WebSocket closes with a reason.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from voicegate.codecs import CallStarted
from voicegate.gateway.auth import (
    STREAM_TOKEN_PARAMETER,
    basic_valid,
    bearer_valid,
    issue_stream_token,
    origin_allowed,
    stream_token_problem,
)
from voicegate.gateway.calllog import CallLog
from voicegate.gateway.calls import ActiveCall, CallRegistry
from voicegate.gateway.options import BrowserOptions, GatewayOptions, TwilioOptions
from voicegate.gateway.ratelimit import RateLimiter, SocketCounter
from voicegate.gateway.transport import CLOSE_POLICY_VIOLATION, Refusal
from voicegate.gateway.twiml import (
    external_base,
    forwarded_origin,
    signature_valid,
    websocket_url,
)

log = logging.getLogger(__name__)

#: The browser page's cookie: a token proving the client loaded this gateway's page.
PAGE_COOKIE = "voicegate_page"
PAGE_SUBJECT = "browser-page"
PAGE_TOKEN_TTL_S = 3600.0
#: Who decides a call may start: a reason to refuse, or None.
Authenticator = Callable[[CallStarted], str | None]


@dataclass(frozen=True, slots=True)
class StartGate:
    """One connection's admission at `start` (transport.CallGate): token, then a slot."""

    registry: CallRegistry
    call: ActiveCall
    authenticate: Authenticator | None = None
    #: The call's log on disk (gateway/calllog.py), when the gateway keeps them.
    log: CallLog | None = None

    @property
    def call_id(self) -> str:
        """The gateway's own id for the connection."""
        return self.call.call_id

    def started(self, call: CallStarted) -> Refusal | None:
        """Authenticate the stream, then take a call slot; or say why not."""
        if self.authenticate is not None:
            problem = self.authenticate(call)
            if problem is not None:
                return Refusal(CLOSE_POLICY_VIOLATION, problem)
        return self.registry.start(self.call, call.call_id or call.stream_id)

    def record(self, record: dict[str, Any]) -> None:
        """Append one timeline record to the call's log (if kept)."""
        if self.log is not None:
            self.log.record(record)


def twilio_token_check(twilio: TwilioOptions) -> Authenticator | None:
    """The stream token check of `start` when a stream secret is configured."""
    secret = twilio.stream_secret
    if secret is None:
        return None

    def check(call: CallStarted) -> str | None:
        parameters = {k: v for k, v in call.metadata.items() if isinstance(v, str)}
        return stream_token_problem(secret, call.call_id, parameters, time.time())

    return check


def twilio_token_parameter(twilio: TwilioOptions, call_sid: str | None) -> list[tuple[str, str]]:
    """The ``<Parameter>`` carrying the stream token for ``call_sid`` (none without a secret)."""
    if twilio.stream_secret is None or not call_sid:
        return []
    token = issue_stream_token(
        twilio.stream_secret, call_sid, time.time(), twilio.stream_token_ttl_s
    )
    return [(STREAM_TOKEN_PARAMETER, token)]


class RequestGuard:
    """Per-address limits and per-route authentication of requests before any upgrade."""

    def __init__(self, options: GatewayOptions, clock: Callable[[], float] = time.monotonic):
        limits = options.limits
        self._options = options
        self._rate = RateLimiter(limits.requests_per_ip_per_s, limits.requests_per_ip_burst, clock)
        self.sockets = SocketCounter(limits.sockets_per_ip)

    def too_many(self, request: web.Request) -> web.Response | None:
        """429 when this address sends requests faster than the configured rate."""
        if self._rate.allow(address(request)):
            return None
        reason = "too many requests from this address (limits.requests_per_ip_per_s)"
        return web.Response(status=429, text=reason + "\n", headers={"Retry-After": "1"})

    def twilio_upgrade_refusal(self, request: web.Request) -> web.Response | None:
        """403 unless the upgrade carries Twilio's signature of its URL (when a token is set).

        Twilio signs the WebSocket handshake like a webhook without parameters: HMAC-SHA1 of
        the URL (https://www.twilio.com/docs/usage/security; the Media Streams docs ask for
        the same validation of the handshake).
        """
        twilio = self._options.twilio
        if twilio is None or twilio.auth_token is None:
            return None
        base = request_base(self._options, request)
        signature = request.headers.get("X-Twilio-Signature", "")
        path = request.rel_url.path_qs
        for url in (websocket_url(base, "") + path, base + path):
            if signature_valid(twilio.auth_token, url, {}, signature):
                return None
        return web.Response(status=403, text="invalid X-Twilio-Signature\n")

    def browser_refusal(self, request: web.Request) -> web.Response | None:
        """403 for a foreign Origin, or without the API key or the page's cookie."""
        browser = self._options.browser
        assert browser is not None
        origin = request.headers.get("Origin")
        if not origin_allowed(origin, request.host, browser.allowed_origins):
            return web.Response(status=403, text="origin not allowed\n")
        if browser.api_key is None or _key_or_page(request, browser):
            return None
        return web.Response(status=403, text="an API key or the gateway's page is required\n")

    def page_cookie(self, response: web.StreamResponse) -> None:
        """Give the page a cookie its WebSocket upgrade carries (when an API key is set)."""
        browser = self._options.browser
        if browser is None or browser.api_key is None:
            return
        token = issue_stream_token(browser.api_key, PAGE_SUBJECT, time.time(), PAGE_TOKEN_TTL_S)
        response.set_cookie(PAGE_COOKIE, token, httponly=True, samesite="Strict", path="/browser")


def _key_or_page(request: web.Request, browser: BrowserOptions) -> bool:
    assert browser.api_key is not None
    if bearer_valid(request.headers.get("Authorization"), browser.api_key):
        return True
    cookie = request.cookies.get(PAGE_COOKIE)
    if cookie is None:
        return False
    token = {STREAM_TOKEN_PARAMETER: cookie}
    return stream_token_problem(browser.api_key, PAGE_SUBJECT, token, time.time()) is None


def basic_refusal(
    request: web.Request, dialect: str, username: str, password: str | None
) -> web.Response | None:
    """401 when HTTP Basic credentials are configured and the request lacks them, else None.

    Exotel (stream URL user-info) and Jambonz (``wsAuth``, basic-auth webhooks) authenticate
    this way; docs/protocols/exotel.md, jambonz.md.
    """
    if password is None:
        return None
    if basic_valid(request.headers.get("Authorization"), username, password):
        return None
    log.warning("%s %s: missing or wrong Basic credentials", dialect, request.path)
    headers = {"WWW-Authenticate": f'Basic realm="voicegate {dialect}"'}
    return web.Response(status=401, text="missing or wrong credentials\n", headers=headers)


def request_base(options: GatewayOptions, request: web.Request) -> str:
    """This gateway's URL as the provider reached it: ``public_url``, else the request's own
    scheme and host (those of a trusted proxy's ``X-Forwarded-*`` headers, if set)."""
    scheme, host = request.scheme, request.host
    if options.trusted_proxy:
        scheme, host = forwarded_origin(scheme, host, request.headers)
    return external_base(options.public_url, scheme, host)


def address(request: web.Request) -> str:
    """The client's address (the proxy's, behind a proxy)."""
    return request.remote or "unknown"


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def body_deadline(limit_s: float) -> Middleware:
    """A middleware giving a request ``limit_s`` to send its whole body (else 408).

    aiohttp's keep-alive timeout (``limits.http_idle_timeout_s``) ends connections whose
    headers never complete, but nothing bounded the body after them: a webhook body sent a
    byte a second held its connection and handler for as long as the sender liked (a
    slowloris on the body). The body is read here, where aiohttp keeps it for the handler's
    ``post()``, ``json()`` or ``read()``; a multipart body, parsed as it streams, bounds the
    whole handler instead.
    """

    @web.middleware
    async def deadline(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.body_exists:
            return await handler(request)
        try:
            async with asyncio.timeout(limit_s):
                if request.content_type == "multipart/form-data":
                    return await handler(request)
                await request.read()
        except TimeoutError:
            log.info("%s: request body not received within %g s", request.path, limit_s)
            text = f"request body not received within {limit_s:g} s (limits.http_idle_timeout_s)\n"
            return web.Response(status=408, text=text)
        return await handler(request)

    return deadline
