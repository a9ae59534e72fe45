"""The HTTP and WebSocket routes, on one aiohttp application (one port for both).

==========================  ============================================================
``GET /twilio``             Twilio Media Streams WebSocket (providers.md §b.1)
``POST /twilio/voice``      Twilio voice webhook: TwiML connecting the call to ``/twilio``
``GET /conversationrelay`` Twilio ConversationRelay WebSocket, text (providers.md §b.2)
``GET /telnyx``             Telnyx Media Streaming WebSocket (docs/protocols/telnyx.md)
``POST /telnyx/texml``      Telnyx TeXML webhook: TeXML connecting the call to ``/telnyx``
``GET /plivo``              Plivo Audio Streams WebSocket (docs/protocols/plivo.md)
``POST /plivo/answer``      Plivo answer webhook: Plivo XML streaming the call to ``/plivo``
``GET /vonage``             Vonage Voice API WebSocket (docs/protocols/vonage.md)
``GET|POST /vonage/answer`` Vonage answer webhook: an NCCO connecting the call to ``/vonage``
``GET /exotel``             Exotel Voicebot applet stream (docs/protocols/exotel.md)
``GET /exotel/url``         Exotel applet's dynamic URL: ``{"url": ...}`` for ``/exotel``
``GET /jambonz``            Jambonz listen stream, ``audio.jambonz.org`` (docs/protocols/jambonz.md)
``GET|POST /jambonz/call``  Jambonz calling webhook: a ``listen`` verb streaming to ``/jambonz``
``GET|POST /jambonz/action`` the listen's actionHook: ``hangup``
``GET /freeswitch``         FreeSWITCH mod_audio_fork socket (docs/protocols/freeswitch.md)
``GET /genesys``            Genesys AudioHook / Audio Connector (docs/protocols/genesys.md)
``GET /asterisk``           Asterisk chan_websocket, Dial(WebSocket/...) (protocols/asterisk.md)
``GET /browser``            browser dialect WebSocket (docs/protocols/browser.md)
``GET /``                   the browser client page (``gateway/static/``; no build step)
``GET /static/{name}``      the page's scripts, audio worklets and style sheet
``GET /healthz``            the process is alive
``GET /readyz``             a new call would be admitted (503 with the reason if not)
``GET /workers``            every worker process: pid, calls, media-loop lag histogram
``GET /metrics``            Prometheus metrics of every worker (docs/metrics.md)
``GET /calls[/{id}]``        recent and live calls and their timelines (gateway/callviews.py)
==========================  ============================================================

ConversationRelay's webhooks are ``POST /conversationrelay/voice`` (TwiML
``<Connect><ConversationRelay>``) and ``POST /conversationrelay/action`` (the ``<Connect
action>``: ``<Dial>`` a transfer, else hang up; docs/protocols/conversationrelay.md).

Each accepted WebSocket gets a fresh codec for its route's dialect and is handed, as a
:class:`~voicegate.gateway.transport.Transport`, to the one :class:`CallRunner` the
application was built with. The routes of a disabled provider are not registered (404).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web

from voicegate.codecs import (
    AsteriskCodec,
    BrowserCodec,
    Codec,
    ExotelCodec,
    FreeSwitchCodec,
    GenesysCodec,
    Hangup,
    JambonzCodec,
    PlivoCodec,
    TelnyxCodec,
    TwilioCodec,
    VonageCodec,
)
from voicegate.codecs.conversationrelay import ConversationRelayCodec
from voicegate.codecs.freeswitch import SUBPROTOCOL as FREESWITCH_SUBPROTOCOL
from voicegate.codecs.jambonz import SUBPROTOCOL as JAMBONZ_SUBPROTOCOL
from voicegate.gateway import (
    audiohook,
    conversationrelay_twiml,
    exotel_applet,
    jambonz_app,
    plivo_xml,
    telnyx_texml,
    vonage_ncco,
)
from voicegate.gateway.admission import (
    Authenticator,
    RequestGuard,
    StartGate,
    address,
    basic_refusal,
    body_deadline,
    request_base,
    twilio_token_check,
    twilio_token_parameter,
)
from voicegate.gateway.auth import bearer_valid
from voicegate.gateway.calllog import CallLog, CallLogOptions, CallLogs
from voicegate.gateway.calls import ActiveCall, CallRegistry, run_call
from voicegate.gateway.callviews import CallViews
from voicegate.gateway.logcontext import about_call
from voicegate.gateway.metrics import CONTENT_TYPE, GatewayMetrics
from voicegate.gateway.options import GatewayOptions, TwilioOptions
from voicegate.gateway.scoreboard import Scoreboard
from voicegate.gateway.transport import CallRunner, Refusal, Transport
from voicegate.gateway.twiml import (
    body_hash_valid,
    connect_stream_twiml,
    signature_valid,
    stream_parameters,
    websocket_url,
)
from voicegate.gateway.websocket import GatewayWebSocket, WebSocketTransport

log = logging.getLogger(__name__)

TWILIO_STREAM_PATH = "/twilio"
TWILIO_WEBHOOK_PATH = "/twilio/voice"
BROWSER_PATH = "/browser"
TELNYX_STREAM_PATH = telnyx_texml.STREAM_PATH
TELNYX_WEBHOOK_PATH = TELNYX_STREAM_PATH + "/texml"
PLIVO_STREAM_PATH = plivo_xml.STREAM_PATH
PLIVO_WEBHOOK_PATH = PLIVO_STREAM_PATH + "/answer"
VONAGE_STREAM_PATH = vonage_ncco.STREAM_PATH
VONAGE_WEBHOOK_PATH = VONAGE_STREAM_PATH + "/answer"
EXOTEL_STREAM_PATH = exotel_applet.STREAM_PATH
EXOTEL_WEBHOOK_PATH = exotel_applet.URL_PATH
JAMBONZ_STREAM_PATH = jambonz_app.STREAM_PATH
JAMBONZ_WEBHOOK_PATH = jambonz_app.CALL_PATH
GENESYS_STREAM_PATH = audiohook.STREAM_PATH
FREESWITCH_STREAM_PATH = "/freeswitch"
#: Asterisk's websocket_client.conf ``uri`` points here; there is no webhook.
ASTERISK_STREAM_PATH = "/asterisk"
#: The browser client's files, shipped in the package (pyproject package-data).
STATIC_DIR = Path(__file__).resolve().parent / "static"
#: The page loads only its own files and talks only to this gateway (no CDN, no inline code).
PAGE_POLICY = "default-src 'self'; connect-src 'self'; img-src 'self' data:"
PAGE_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
#: How long closing a socket waits for the peer's close frame before dropping the connection.
CLOSE_TIMEOUT_S = 5.0


def new_call_id(dialect: str) -> str:
    """A fresh id for a call, unique enough to find it in the logs."""
    return f"{dialect}-{uuid.uuid4().hex[:16]}"


def build_app(
    runner: CallRunner,
    options: GatewayOptions,
    calls: CallRegistry,
    *,
    call_ids: Callable[[str], str] = new_call_id,
    board: Scoreboard | None = None,
    metrics: GatewayMetrics | None = None,
    call_logs: CallLogs | None = None,
    app: web.Application | None = None,
) -> web.Application:
    """The application serving every route; ``calls`` admits calls and is drained to stop;
    ``board`` (the workers' scoreboard) enables ``GET /workers``, ``metrics`` ``/metrics``,
    ``call_logs`` (the writer of ``options.call_logs``) ``/calls``. ``app``: add the routes
    to this application instead of a new one."""
    routes = _Routes(runner, options, calls, call_ids, metrics, call_logs)
    app = web.Application() if app is None else app
    app.middlewares.append(body_deadline(options.limits.http_idle_timeout_s))
    app.router.add_get("/healthz", routes.healthz)
    app.router.add_get("/readyz", routes.readyz)
    if board is not None:
        app.router.add_get("/workers", _workers_route(board))
    if metrics is not None:
        app.router.add_get("/metrics", routes.metrics)
    if options.twilio is not None:
        app.router.add_post(TWILIO_WEBHOOK_PATH, routes.twilio_voice)
        app.router.add_get(TWILIO_STREAM_PATH, routes.twilio_stream)
        if options.twilio.relay_attributes is not None:
            app.router.add_post(conversationrelay_twiml.WEBHOOK_PATH, routes.relay_voice)
            app.router.add_post(conversationrelay_twiml.ACTION_PATH, routes.relay_action)
            app.router.add_get(conversationrelay_twiml.STREAM_PATH, routes.relay_stream)
    if options.telnyx is not None:
        app.router.add_post(TELNYX_WEBHOOK_PATH, routes.telnyx_texml)
        app.router.add_get(TELNYX_STREAM_PATH, routes.telnyx_stream)
    if options.plivo is not None:
        app.router.add_post(PLIVO_WEBHOOK_PATH, routes.plivo_answer)
        app.router.add_get(PLIVO_STREAM_PATH, routes.plivo_stream)
    if options.vonage is not None:
        app.router.add_get(VONAGE_WEBHOOK_PATH, routes.vonage_answer)
        app.router.add_post(VONAGE_WEBHOOK_PATH, routes.vonage_answer)
        app.router.add_get(VONAGE_STREAM_PATH, routes.vonage_stream)
    if options.exotel is not None:
        app.router.add_get(EXOTEL_WEBHOOK_PATH, routes.exotel_url)
        app.router.add_get(EXOTEL_STREAM_PATH, routes.exotel_stream)
    if options.jambonz is not None:
        for path, handler in (
            (JAMBONZ_WEBHOOK_PATH, routes.jambonz_call),
            (jambonz_app.ACTION_PATH, routes.jambonz_action),
        ):
            app.router.add_get(path, handler)
            app.router.add_post(path, handler)
        app.router.add_get(JAMBONZ_STREAM_PATH, routes.jambonz_stream)
    if options.freeswitch is not None:
        app.router.add_get(FREESWITCH_STREAM_PATH, routes.freeswitch_stream)
    if options.genesys is not None:
        app.router.add_get(GENESYS_STREAM_PATH, routes.genesys_stream)
    if options.asterisk is not None:
        app.router.add_get(ASTERISK_STREAM_PATH, routes.asterisk_stream)
    if options.browser is not None:
        app.router.add_get(BROWSER_PATH, routes.browser_stream)
        app.router.add_get("/", routes.browser_page)
    if options.call_logs is not None:
        routes.call_views(options.call_logs).add_routes(app)
    if options.browser is not None or options.call_logs is not None:
        app.router.add_get("/static/{name}", page_file)
    return app


def _workers_route(board: Scoreboard) -> Callable[[web.Request], Awaitable[web.Response]]:
    """``GET /workers``: the scoreboard as JSON (README, "Worker processes")."""

    async def workers(request: web.Request) -> web.Response:
        return web.json_response(board.report().to_json())

    return workers


async def page_file(request: web.Request) -> web.FileResponse:
    """One of the page's scripts or its style sheet, by file name."""
    return _page_file(request.match_info["name"], {})


def _page_file(name: str, headers: dict[str, str]) -> web.FileResponse:
    # Types set here, not guessed from the host's mime.types: module scripts and worklets
    # load only when served as JavaScript.
    kind = PAGE_TYPES.get(Path(name).suffix)
    inside = Path(name).name == name and not name.startswith(".")  # no way out of STATIC_DIR
    if kind is None or not inside or not (STATIC_DIR / name).is_file():
        raise web.HTTPNotFound(text=f"no page file {name!r}\n")
    headers = {**headers, "Content-Type": kind, "Cache-Control": "no-cache"}
    return web.FileResponse(STATIC_DIR / name, headers=headers)


class _Routes:
    """The request handlers, sharing the runner, the options and the call registry."""

    def __init__(
        self,
        runner: CallRunner,
        options: GatewayOptions,
        calls: CallRegistry,
        call_ids: Callable[[str], str],
        metrics: GatewayMetrics | None = None,
        call_logs: CallLogs | None = None,
    ) -> None:
        self._runner = runner
        self._metrics = metrics
        self._call_logs = call_logs
        self._options = options
        self._calls = calls
        self._call_ids = call_ids
        self._guard = RequestGuard(options)
        self._twilio_check = None if options.twilio is None else twilio_token_check(options.twilio)

    def call_views(self, logs: CallLogOptions) -> CallViews:
        """The ``/calls`` handlers, behind this ingress's rate limit."""
        options = self._options
        token, proxy = options.calls_token, options.trusted_proxy
        return CallViews(logs, token, proxy, STATIC_DIR, self._guard.too_many)

    async def browser_page(self, request: web.Request) -> web.StreamResponse:
        """The browser client: talk to the gateway from a web page."""
        too_many = self._guard.too_many(request)
        if too_many is not None:
            return too_many
        page = _page_file("index.html", {"Content-Security-Policy": PAGE_POLICY})
        self._guard.page_cookie(page)
        return page

    async def healthz(self, request: web.Request) -> web.Response:
        """The process is up and serving HTTP."""
        return web.json_response({"status": "ok"})

    async def readyz(self, request: web.Request) -> web.Response:
        """Whether a new call would be admitted, and if not why (starting, draining, full, the
        call registry unreachable)."""
        readiness = await self._calls.check()
        body = {
            "ready": readiness.ready,
            "reason": readiness.reason,
            "active_calls": readiness.active_calls,
            "capacity": readiness.capacity,
        }
        return web.json_response(body, status=200 if readiness.ready else 503)

    async def metrics(self, request: web.Request) -> web.Response:
        """Prometheus metrics: rate-limited per address; the bearer token when configured."""
        assert self._metrics is not None  # the route exists only with metrics
        too_many = self._guard.too_many(request)
        if too_many is not None:
            return too_many
        token = self._options.metrics_token
        if token is not None and not bearer_valid(request.headers.get("Authorization"), token):
            return web.Response(status=403, text="GET /metrics wants the metrics bearer token\n")
        body = self._metrics.exposition()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    async def twilio_voice(self, request: web.Request) -> web.Response:
        """Answer Twilio's voice webhook with TwiML that streams the call to ``/twilio``."""
        twilio = self._options.twilio
        assert twilio is not None  # the route exists only when Twilio is enabled
        signed = await self._twilio_form(request, twilio)
        if isinstance(signed, web.Response):
            return signed
        values, base = signed
        refusal = self._calls.refusal()
        if refusal is not None:
            # Twilio then tries the number's fallback URL, if one is configured.
            return web.Response(status=503, text=refusal.reason + "\n")
        parameters = stream_parameters(twilio.parameters, twilio.webhook_fields, values)
        parameters += twilio_token_parameter(twilio, values.get("CallSid"))
        twiml = connect_stream_twiml(websocket_url(base, TWILIO_STREAM_PATH), parameters)
        return web.Response(text=twiml, content_type="text/xml")

    async def _twilio_form(
        self, request: web.Request, twilio: TwilioOptions
    ) -> tuple[dict[str, str], str] | web.Response:
        """A Twilio webhook's fields (first values) and this gateway's base URL, once its
        X-Twilio-Signature holds (when an auth token is set); else the answer refusing it."""
        too_many = self._guard.too_many(request)
        if too_many is not None:
            return too_many
        body = await request.read()
        json_body = "bodySHA256" in request.rel_url.query
        fields: dict[str, list[str]] = {}
        if not json_body:
            form = await request.post()
            fields = {name: [v for v in form.getall(name) if isinstance(v, str)] for name in form}
        base = request_base(self._options, request)
        if twilio.auth_token is not None:
            signature = request.headers.get("X-Twilio-Signature", "")
            url = base + request.rel_url.path_qs
            signed = signature_valid(twilio.auth_token, url, fields, signature)
            if not signed or (json_body and not body_hash_valid(url, body)):
                log.warning("twilio webhook: bad X-Twilio-Signature for %r", url)
                return web.Response(status=403, text="invalid X-Twilio-Signature\n")
        return {name: values[0] for name, values in fields.items() if values}, base

    async def relay_voice(self, request: web.Request) -> web.Response:
        """Answer Twilio's voice webhook with TwiML connecting a ConversationRelay session."""
        twilio = self._options.twilio
        assert twilio is not None  # the routes exist only when Twilio and the relay are on
        assert twilio.relay_attributes is not None
        signed = await self._twilio_form(request, twilio)
        if isinstance(signed, web.Response):
            return signed
        values, base = signed
        refusal = self._calls.refusal()
        if refusal is not None:
            return web.Response(status=503, text=refusal.reason + "\n")
        parameters = stream_parameters(twilio.parameters, twilio.webhook_fields, values)
        parameters += twilio_token_parameter(twilio, values.get("CallSid"))
        socket_url = websocket_url(base, conversationrelay_twiml.STREAM_PATH)
        action_url = base + conversationrelay_twiml.ACTION_PATH
        twiml = conversationrelay_twiml.connect_relay_twiml(
            socket_url, action_url, twilio.relay_attributes, parameters
        )
        return conversationrelay_twiml.twiml_response(twiml)

    async def relay_action(self, request: web.Request) -> web.Response:
        """The ``<Connect action>``: dial the transfer target, or hang up."""
        twilio = self._options.twilio
        assert twilio is not None
        signed = await self._twilio_form(request, twilio)
        if isinstance(signed, web.Response):
            return signed
        twiml = conversationrelay_twiml.handoff_twiml(signed[0].get("HandoffData"))
        return conversationrelay_twiml.twiml_response(twiml)

    async def relay_stream(self, request: web.Request) -> web.StreamResponse:
        """A Twilio ConversationRelay session (text over the socket)."""
        refusal = self._guard.twilio_upgrade_refusal(request)
        if refusal is not None:
            log.warning("conversationrelay upgrade refused: %s", refusal.text)
            return refusal
        size = self._options.limits.max_twilio_message_bytes
        return await self._media_call(
            request,
            "conversationrelay",
            lambda call_id: ConversationRelayCodec(max_message_bytes=size),
            self._twilio_check,
        )

    async def twilio_stream(self, request: web.Request) -> web.StreamResponse:
        """A Twilio Media Streams call."""
        refusal = self._guard.twilio_upgrade_refusal(request)
        if refusal is not None:
            log.warning("twilio upgrade refused: %s", refusal.text)
            return refusal
        size = self._options.limits.max_twilio_message_bytes
        return await self._media_call(
            request,
            "twilio",
            lambda call_id: TwilioCodec(max_message_bytes=size),
            self._twilio_check,
        )

    async def telnyx_texml(self, request: web.Request) -> web.Response:
        """Answer Telnyx's TeXML webhook (gateway/telnyx_texml.py)."""
        telnyx = self._options.telnyx
        assert telnyx is not None  # the route exists only when Telnyx is enabled
        refusal = self._calls.refusal()
        return await telnyx_texml.answer(
            request, telnyx, request_base(self._options, request), refusal
        )

    async def telnyx_stream(self, request: web.Request) -> web.StreamResponse:
        """A Telnyx Media Streaming call."""
        telnyx = self._options.telnyx
        assert telnyx is not None  # the route exists only when Telnyx is enabled
        outbound = telnyx.outbound_format
        return telnyx_texml.stream_refusal(request, telnyx) or await self._media_call(
            request, "telnyx", lambda call_id: TelnyxCodec(outbound_format=outbound)
        )

    async def plivo_answer(self, request: web.Request) -> web.Response:
        """Answer Plivo's answer webhook (gateway/plivo_xml.py)."""
        plivo = self._options.plivo
        assert plivo is not None  # the route exists only when Plivo is enabled
        refusal = self._calls.refusal()
        return await plivo_xml.answer(request, plivo, request_base(self._options, request), refusal)

    async def plivo_stream(self, request: web.Request) -> web.StreamResponse:
        """A Plivo Audio Streams call."""
        plivo = self._options.plivo
        assert plivo is not None  # the route exists only when Plivo is enabled
        outbound = plivo.outbound_format
        return plivo_xml.stream_refusal(request, plivo) or await self._media_call(
            request, "plivo", lambda call_id: PlivoCodec(outbound_format=outbound)
        )

    async def vonage_answer(self, request: web.Request) -> web.Response:
        """Answer Vonage's answer webhook (gateway/vonage_ncco.py)."""
        vonage = self._options.vonage
        assert vonage is not None  # the route exists only when Vonage is enabled
        refusal = self._calls.refusal()
        return await vonage_ncco.answer(
            request, vonage, request_base(self._options, request), refusal
        )

    async def vonage_stream(self, request: web.Request) -> web.StreamResponse:
        """A Vonage websocket leg."""
        vonage = self._options.vonage
        assert vonage is not None  # the route exists only when Vonage is enabled
        content_type = vonage.content_type
        return vonage_ncco.stream_refusal(request, vonage) or await self._media_call(
            request, "vonage", lambda call_id: VonageCodec(call_id, content_type=content_type)
        )

    async def exotel_url(self, request: web.Request) -> web.Response:
        """Answer the Voicebot applet's dynamic-URL request (gateway/exotel_applet.py)."""
        exotel = self._options.exotel
        assert exotel is not None  # the route exists only when Exotel is enabled
        refusal = self._calls.refusal()
        base = request_base(self._options, request)
        return await exotel_applet.answer(request, exotel, base, refusal)

    async def exotel_stream(self, request: web.Request) -> web.StreamResponse:
        """An Exotel Voicebot applet stream."""
        exotel = self._options.exotel
        assert exotel is not None  # the route exists only when Exotel is enabled
        rate = exotel.sample_rate
        return exotel_applet.credentials_refusal(request, exotel) or await self._media_call(
            request, "exotel", lambda call_id: ExotelCodec(sample_rate=rate)
        )

    async def jambonz_call(self, request: web.Request) -> web.Response:
        """Answer Jambonz's calling webhook (gateway/jambonz_app.py)."""
        jambonz = self._options.jambonz
        assert jambonz is not None  # the route exists only when Jambonz is enabled
        refusal = self._calls.refusal()
        base = request_base(self._options, request)
        return await jambonz_app.answer(request, jambonz, base, refusal)

    async def jambonz_action(self, request: web.Request) -> web.Response:
        """Answer the listen's actionHook: hang up."""
        jambonz = self._options.jambonz
        assert jambonz is not None  # the route exists only when Jambonz is enabled
        return await jambonz_app.action(request, jambonz)

    async def jambonz_stream(self, request: web.Request) -> web.StreamResponse:
        """A Jambonz listen stream (subprotocol audio.jambonz.org)."""
        jambonz = self._options.jambonz
        assert jambonz is not None  # the route exists only when Jambonz is enabled
        rate = jambonz.sample_rate
        return jambonz_app.credentials_refusal(request, jambonz) or await self._media_call(
            request,
            "jambonz",
            lambda call_id: JambonzCodec(call_id, sample_rate=rate),
            protocols=(JAMBONZ_SUBPROTOCOL,),
        )

    async def freeswitch_stream(self, request: web.Request) -> web.StreamResponse:
        """A mod_audio_fork socket (subprotocol audio.drachtio.org), HTTP Basic checked first."""
        fs = self._options.freeswitch
        assert fs is not None  # the route exists only when FreeSWITCH is enabled
        return basic_refusal(request, "freeswitch", fs.username, fs.password) or (
            await self._media_call(
                request,
                "freeswitch",
                lambda call_id: FreeSwitchCodec(
                    call_id, sample_rate=fs.sample_rate, chunk_ms=fs.chunk_ms
                ),
                protocols=(FREESWITCH_SUBPROTOCOL,),
            )
        )

    async def genesys_stream(self, request: web.Request) -> web.StreamResponse:
        """A Genesys AudioHook session (the API key and message signature checked first)."""
        genesys = self._options.genesys
        assert genesys is not None  # the route exists only when Genesys is enabled
        authority = urlsplit(request_base(self._options, request)).netloc
        refusal = audiohook.upgrade_refusal(request, genesys, authority, time.time())
        session_id = request.headers.get(audiohook.SESSION_HEADER)
        return refusal or await self._media_call(
            request, "genesys", lambda call_id: GenesysCodec(session_id=session_id)
        )

    async def asterisk_stream(self, request: web.Request) -> web.StreamResponse:
        """An Asterisk chan_websocket channel (the websocket_client.conf credentials first).

        The query is the dial string's ``v(...)`` URI parameters: the call's metadata.
        """
        asterisk = self._options.asterisk
        assert asterisk is not None  # the route exists only when Asterisk is enabled
        denied = basic_refusal(request, "asterisk", asterisk.username, asterisk.password)
        parameters = dict(request.query)
        return denied or await self._media_call(
            request, "asterisk", lambda call_id: AsteriskCodec(call_id, parameters=parameters)
        )

    async def browser_stream(self, request: web.Request) -> web.StreamResponse:
        """A browser call."""
        browser = self._options.browser
        assert browser is not None  # the route exists only when the browser is enabled
        refusal = self._guard.browser_refusal(request)
        if refusal is not None:
            return refusal
        rate = browser.output_sample_rate
        size = self._options.limits.max_browser_message_bytes
        return await self._media_call(
            request,
            "browser",
            lambda call_id: BrowserCodec(call_id, output_sample_rate=rate, max_message_bytes=size),
        )

    async def _media_call(
        self,
        request: web.Request,
        dialect: str,
        codec_for: Callable[[str], Codec],
        authenticate: Authenticator | None = None,
        protocols: tuple[str, ...] = (),
    ) -> web.StreamResponse:
        """Rate-limit, upgrade, admit or refuse, run the call to its end, close the socket."""
        too_many = self._guard.too_many(request)
        if too_many is not None:
            return too_many
        client = address(request)
        if not self._guard.sockets.acquire(client):
            text = "too many sockets from this address (limits.sockets_per_ip)\n"
            return web.Response(status=429, text=text)
        try:
            return await self._upgraded_call(request, dialect, codec_for, authenticate, protocols)
        finally:
            self._guard.sockets.release(client)

    async def _upgraded_call(
        self,
        request: web.Request,
        dialect: str,
        codec_for: Callable[[str], Codec],
        authenticate: Authenticator | None,
        protocols: tuple[str, ...] = (),
    ) -> web.StreamResponse:
        limits = self._options.limits
        # The frame limit sits above every codec's message limit (the codecs say what is
        # wrong); the heartbeat drops half-open peers (issue 15 #4).
        socket = GatewayWebSocket(
            timeout=CLOSE_TIMEOUT_S,
            compress=False,
            max_msg_size=limits.max_frame_bytes,
            heartbeat=limits.heartbeat_s,
            protocols=protocols,  # e.g. Jambonz's audio.jambonz.org
        )
        # A peer's pings are messages without audio too (gateway/websocket.py).
        socket.limit_pings(limits.control_messages_per_s, limits.control_messages_burst)
        if not socket.can_prepare(request).ok:
            return web.Response(status=426, text=f"{request.path} takes WebSocket upgrades\n")
        try:
            await socket.prepare(request)
        except ConnectionError as error:
            # The peer gave up during the handshake (e.g. its open timeout under load).
            log.info("%s upgrade abandoned by the peer: %s", request.path, error)
            return socket
        transport = WebSocketTransport(socket, limits.send_timeout_s)
        call_id = self._call_ids(dialect)
        codec = codec_for(call_id)
        admitted = self._calls.admit(call_id, dialect, transport, address(request))
        if isinstance(admitted, Refusal):
            log.info("call %s refused: %s", call_id, admitted.reason)
            await refuse(transport, codec, admitted)
            return socket
        with about_call(admitted):  # every log line of the call carries its ids
            log.info("call %s connected", call_id)
            if self._metrics is not None:
                self._metrics.call_started(dialect)
            call_log = None if self._call_logs is None else self._call_logs.open(call_id, dialect)
            try:
                gate = StartGate(self._calls, admitted, authenticate, call_log)
                await run_call(admitted, self._runner, codec, gate)
            finally:
                self._calls.release(admitted)
                self._ended(admitted, call_log)
            log.info("call %s ended: %d %s", call_id, admitted.close_code, admitted.close_reason)
        return socket

    def _ended(self, call: ActiveCall, call_log: CallLog | None) -> None:
        """Count the call's end and close its log with how it ended."""
        if self._metrics is not None:
            self._metrics.call_ended(call.dialect, call.close_code)
        if call_log is not None:
            call_log.close(call.close_code, call.close_reason, call.provider_call_id)


async def refuse(transport: Transport, codec: Codec, refusal: Refusal) -> None:
    """Turn a call away: the dialect's hang-up message (browser ``stop``), then the close."""
    for message in codec.send(Hangup(refusal.reason)):
        await transport.send(message)
    await transport.close(refusal.code, refusal.reason)
