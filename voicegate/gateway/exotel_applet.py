"""Exotel's Voicebot applet: the stream URL it dials, its dynamic-URL answer, its Basic auth.

The applet is configured in Exotel's App Bazaar with the WebSocket URL, or with an HTTPS URL
that answers ``{"url": "wss://..."}`` for each call (applet page,
https://developer.exotel.com/docs/agentstream/stream-voicebot-applet , Configuration
Parameters: URL; the extension guide
https://support.exotel.com/support/solutions/articles/3000108630 : "it must return a json with
the key url"). ``GET /exotel/url`` is that HTTPS URL: Exotel calls it with the call's details
as query parameters (``CallSid``, ``CallFrom``, ``CallTo``, like every applet URL), and it
answers with the stream URL: ``?sample-rate=`` sets the audio rate both ways, and up to three
more query parameters come back as the start event's ``custom_parameters`` (at most 256
characters in all).

Exotel authenticates its stream with an IP allow-list or HTTP Basic credentials written into
the URL's user-info, sent as ``Authorization: Basic`` (applet page, Authentication). When
credentials are configured, the upgrade must carry them, and so must the dynamic-URL request,
since its answer contains them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from aiohttp import web

from voicegate.gateway.admission import basic_refusal
from voicegate.gateway.twiml import external_base, stream_parameters, websocket_url

if TYPE_CHECKING:
    from voicegate.gateway.options import ExotelOptions
    from voicegate.gateway.transport import Refusal

log = logging.getLogger(__name__)

#: The stream's WebSocket route; its dynamic-URL answer is ``GET URL_PATH``.
STREAM_PATH = "/exotel"
URL_PATH = STREAM_PATH + "/url"
#: "Up to 3 key-value pairs ... (max 256 chars total)" (applet page, Custom Parameters).
MAX_CUSTOM_PARAMETERS = 3
MAX_CUSTOM_CHARS = 256
SAMPLE_RATE_PARAMETER = "sample-rate"


def stream_url(base: str, exotel: ExotelOptions, fields: Mapping[str, str]) -> str:
    """The Voicebot applet's WebSocket URL: credentials, the rate and the custom parameters."""
    url = websocket_url(base, STREAM_PATH)
    if exotel.username and exotel.password is not None:
        scheme, _, rest = url.partition("://")
        user_info = f"{quote(exotel.username, safe='')}:{quote(exotel.password, safe='')}"
        url = f"{scheme}://{user_info}@{rest}"
    custom = _fitting(stream_parameters(exotel.parameters, exotel.webhook_fields, fields))
    query = [(SAMPLE_RATE_PARAMETER, str(exotel.sample_rate)), *custom]
    return f"{url}?{urlencode(query)}"


def _fitting(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The custom parameters that fit Exotel's limits, in order; the rest are logged and left."""
    kept: list[tuple[str, str]] = []
    for pair in pairs[:MAX_CUSTOM_PARAMETERS]:
        if len(urlencode([*kept, pair])) > MAX_CUSTOM_CHARS:
            log.warning("exotel custom parameter %r left out: over the limit", pair[0])
            continue
        kept.append(pair)
    return kept


def credentials_refusal(request: web.Request, exotel: ExotelOptions) -> web.Response | None:
    """401 when credentials are configured and the request lacks them; None to go on."""
    return basic_refusal(request, "exotel", exotel.username, exotel.password)


async def answer(
    request: web.Request, exotel: ExotelOptions, public_url: str | None, refusal: Refusal | None
) -> web.Response:
    """The dynamic-URL answer: ``{"url": ...}`` for this call, or why not."""
    denied = credentials_refusal(request, exotel)
    if denied is not None:
        return denied
    if refusal is not None:
        return web.Response(status=503, text=refusal.reason + "\n")
    base = external_base(public_url, request.scheme, request.host)
    return web.json_response({"url": stream_url(base, exotel, dict(request.query))})
