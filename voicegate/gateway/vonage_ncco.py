"""Vonage's answer webhook: the NCCO that connects a call here, and Vonage's signed webhooks.

The answer is one ``connect`` action to a ``websocket`` endpoint
(https://developer.vonage.com/en/voice/voice-api/ncco-reference#connect ,
https://developer.vonage.com/en/voice/voice-api/concepts/websockets): its ``content-type``
sets the L16 rate both ways, and its ``headers`` come back in the socket's first text message
(the call's metadata). With no action after ``connect``, the call ends when the socket closes.

Signed webhooks carry ``Authorization: Bearer <JWT>``, HS256 with the account's signature
secret (https://developer.nexmo.com/voice/voice-api/guides/signed-webhooks ; Vonage support:
"Webhooks will include a JWT in the Authorization header"). Vonage does not sign the socket's
upgrade, so when a secret is set the websocket URI carries a key derived from it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web

from voicegate.gateway.twiml import external_base, stream_parameters, websocket_url

if TYPE_CHECKING:
    from voicegate.gateway.options import VonageOptions
    from voicegate.gateway.transport import Refusal

log = logging.getLogger(__name__)

#: The WebSocket route (its answer webhook is GET or POST STREAM_PATH + "/answer").
STREAM_PATH = "/vonage"
#: The query parameter of the websocket URI holding :func:`stream_key`.
STREAM_KEY_PARAMETER = "key"


def connect_ncco(uri: str, headers: Mapping[str, str], *, content_type: str) -> list[Any]:
    """An NCCO connecting the call to a websocket endpoint at ``uri``."""
    endpoint = {"type": "websocket", "uri": uri, "content-type": content_type, "headers": headers}
    return [{"action": "connect", "endpoint": [endpoint]}]


def jwt_problem(secret: str, authorization: str, *, now_s: float) -> str | None:
    """Why the ``Authorization`` header is not a valid Vonage webhook JWT, or None."""
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or token.count(".") != 2:
        return "no Bearer JWT in Authorization"
    head, body, signature = token.split(".")
    header, claims = _segment(head), _segment(body)
    if header is None or claims is None or header.get("alg") != "HS256":
        return "the JWT is malformed or not HS256"
    expected = hmac.new(secret.encode("utf-8"), f"{head}.{body}".encode(), hashlib.sha256)
    if not hmac.compare_digest(_b64url(expected.digest()), signature):
        return "the JWT signature does not match the signature secret"
    expires = claims.get("exp")
    if isinstance(expires, int | float) and expires < now_s:
        return "the JWT has expired"
    return None


def stream_key(secret: str) -> str:
    """The key the NCCO puts in the websocket URI, derived from (never equal to) the secret."""
    return hmac.new(secret.encode("utf-8"), b"voicegate vonage stream", "sha256").hexdigest()


def _segment(part: str) -> dict[str, Any] | None:
    """One base64url JSON segment of a JWT, or None when it is not a JSON object."""
    try:
        value = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


async def answer(
    request: web.Request, vonage: VonageOptions, public_url: str | None, refusal: Refusal | None
) -> web.Response:
    """The answer webhook: check the signed JWT, then an NCCO connecting the call here."""
    base = external_base(public_url, request.scheme, request.host)
    uri = websocket_url(base, STREAM_PATH)
    secret = vonage.signature_secret
    if secret is not None:
        authorization = request.headers.get("Authorization", "")
        problem = jwt_problem(secret, authorization, now_s=time.time())
        if problem is not None:
            log.warning("vonage webhook: %s", problem)
            return web.Response(status=403, text=problem + "\n")
        uri += f"?{STREAM_KEY_PARAMETER}={stream_key(secret)}"
    if refusal is not None:
        return web.Response(status=503, text=refusal.reason + "\n")
    fields = await answer_fields(request)
    headers = dict(stream_parameters(vonage.parameters, vonage.webhook_fields, fields))
    return web.json_response(connect_ncco(uri, headers, content_type=vonage.content_type))


def stream_refusal(request: web.Request, vonage: VonageOptions) -> web.Response | None:
    """403 for an upgrade without the key a signed answer gave out; None to accept it."""
    if vonage.signature_secret is None:
        return None
    given = request.query.get(STREAM_KEY_PARAMETER, "").encode()
    if hmac.compare_digest(given, stream_key(vonage.signature_secret).encode()):
        return None
    log.warning("vonage stream: missing or wrong key")
    return web.Response(status=403, text="missing or wrong stream key\n")


async def answer_fields(request: web.Request) -> dict[str, str]:
    """Vonage's answer parameters: the query of a GET, or a POST's JSON object body."""
    if request.method != "POST":
        return dict(request.query)
    try:
        body = await request.json()
    except ValueError:
        return {}
    if not isinstance(body, dict):
        return {}
    return {str(key): value for key, value in body.items() if isinstance(value, str)}
