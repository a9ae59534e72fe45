"""Jambonz's application webhook: the ``listen`` verb that streams a call here, and its auth.

A Jambonz application's calling webhook answers with a JSON array of verbs
(https://docs.jambonz.org/verbs/verbs/overview). voicegate answers with one ``listen``
(https://docs.jambonz.org/verbs/verbs/listen): ``url`` is the ``/jambonz`` socket, ``sampleRate``
the rate Jambonz sends at, ``bidirectionalAudio`` ``{"enabled": true, "streaming": true,
"sampleRate": ...}`` so voicegate streams binary PCM back at the same rate (streaming defaults
to false, and an unset rate plays at the wrong speed), ``passDtmf`` for key presses,
``metadata`` (merged into the socket's first message) and ``actionHook``: when the listen
ends, Jambonz asks ``/jambonz/action`` what to do next, and voicegate answers ``hangup``.

Jambonz offers two ways to authenticate (https://docs.jambonz.org/guides/features/securing-http-endpoints):
HTTP Basic on the webhook, or a ``Jambonz-Signature`` header on the hosted platform only, in
a format the page does not give. voicegate uses HTTP Basic: the webhooks must carry the
configured credentials, and the verb passes them as ``wsAuth``, which Jambonz sends on the
socket's upgrade as ``Authorization: Basic`` (listen page, wsAuth).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web

from voicegate.gateway.admission import basic_refusal
from voicegate.gateway.twiml import external_base, stream_parameters, websocket_url
from voicegate.gateway.vonage_ncco import answer_fields

if TYPE_CHECKING:
    from voicegate.gateway.options import JambonzOptions
    from voicegate.gateway.transport import Refusal

#: The listen WebSocket route; the calling webhook is CALL_PATH, the actionHook ACTION_PATH.
STREAM_PATH = "/jambonz"
CALL_PATH = STREAM_PATH + "/call"
ACTION_PATH = STREAM_PATH + "/action"


def listen_verbs(
    stream_url: str, jambonz: JambonzOptions, metadata: Mapping[str, str], action_url: str
) -> list[dict[str, Any]]:
    """The application: one bidirectional streaming ``listen`` to ``stream_url``."""
    listen: dict[str, Any] = {
        "verb": "listen",
        "url": stream_url,
        "actionHook": action_url,
        "sampleRate": jambonz.sample_rate,
        "mixType": "mono",
        "passDtmf": True,
        "bidirectionalAudio": {
            "enabled": True,
            "streaming": True,
            "sampleRate": jambonz.sample_rate,
        },
        "metadata": dict(metadata),
    }
    if jambonz.password is not None:
        listen["wsAuth"] = {"username": jambonz.username, "password": jambonz.password}
    return [listen]


def credentials_refusal(request: web.Request, jambonz: JambonzOptions) -> web.Response | None:
    """401 when credentials are configured and the request lacks them; None to go on."""
    return basic_refusal(request, "jambonz", jambonz.username, jambonz.password)


async def answer(
    request: web.Request, jambonz: JambonzOptions, public_url: str | None, refusal: Refusal | None
) -> web.Response:
    """The calling webhook (GET or POST): the listen verb, or why not."""
    denied = credentials_refusal(request, jambonz)
    if denied is not None:
        return denied
    if refusal is not None:
        return web.Response(status=503, text=refusal.reason + "\n")
    base = external_base(public_url, request.scheme, request.host)
    fields = await answer_fields(request)  # a GET's query or a POST's JSON body
    metadata = dict(stream_parameters(jambonz.parameters, jambonz.webhook_fields, fields))
    verbs = listen_verbs(websocket_url(base, STREAM_PATH), jambonz, metadata, base + ACTION_PATH)
    return web.json_response(verbs)


async def action(request: web.Request, jambonz: JambonzOptions) -> web.Response:
    """The listen's actionHook: the stream is over, so the call ends."""
    return credentials_refusal(request, jambonz) or web.json_response([{"verb": "hangup"}])
