"""Hang-up and transfer through the providers' REST APIs, for calls the socket cannot end.

Closing the media socket ends a call only where the answer document has nothing after the
stream (voicegate's own TeXML, Plivo XML and NCCO). A Telnyx Call Control call, or a transfer
anywhere, needs the provider's REST API. Each function below builds one request, sans-I/O
(:class:`RestRequest`); :func:`perform` sends it. ``gateway/call_ending.py`` picks the request
for a call when the engine ends or transfers it (issue 16).

- Twilio: ``POST /2010-04-01/Accounts/{AccountSid}/Calls/{CallSid}.json``, form-encoded, HTTP
  Basic auth with the account SID and auth token; ``Status=completed`` hangs up, ``Twiml=``
  replaces the call's TwiML, e.g. ``<Response><Dial>...</Dial></Response>`` to transfer
  (https://www.twilio.com/docs/voice/api/call-resource#update-a-call-resource and
  https://www.twilio.com/docs/voice/tutorials/how-to-modify-calls-in-progress : "update the
  Call to tell Twilio to immediately change the TwiML it's using").

- Telnyx Call Control: ``POST /v2/calls/{call_control_id}/actions/hangup`` and
  ``.../actions/transfer`` with ``{"to": ...}``, ``Authorization: Bearer <API key>``
  (https://developers.telnyx.com/api-reference/call-commands/transfer-call).
- Plivo: ``DELETE /v1/Account/{auth_id}/Call/{call_uuid}/`` hangs up; ``POST`` to the same
  URL with ``legs=aleg`` and ``aleg_url`` transfers (the URL answers with Plivo XML, e.g. a
  ``<Dial>``); HTTP Basic auth with the auth id and token.
- Vonage: ``PUT /v1/calls/{uuid}`` with ``{"action": "hangup"}`` or ``{"action":
  "transfer", "destination": {"type": "ncco", "ncco": [...]}}``, ``Authorization: Bearer``
  an RS256 JWT of the application (``application_id``, ``iat``, ``jti``, ``exp``) signed with
  its private key.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import aiohttp
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from voicegate.errors import ConfigError, RemoteProtocolError
from voicegate.gateway.twiml import dial_twiml

TWILIO_API = "https://api.twilio.com/2010-04-01"
TELNYX_API = "https://api.telnyx.com/v2"
PLIVO_API = "https://api.plivo.com/v1"
VONAGE_API = "https://api.nexmo.com/v1"
#: How long an application JWT for one Vonage request stays valid (s).
VONAGE_JWT_LIFETIME_S = 60


@dataclass(frozen=True, slots=True)
class RestRequest:
    """One provider API request: method, URL, headers, and a JSON body or a form body."""

    method: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] | None = None
    form: Mapping[str, str] | None = None


def twilio_hangup(
    account_sid: str, auth_token: str, call_sid: str, *, api: str = TWILIO_API
) -> RestRequest:
    """Hang up a Twilio call (``Status=completed`` on its Call resource)."""
    return _twilio(account_sid, auth_token, call_sid, {"Status": "completed"}, api)


def twilio_transfer(
    account_sid: str, auth_token: str, call_sid: str, to: str, *, api: str = TWILIO_API
) -> RestRequest:
    """Transfer a Twilio call: its TwiML becomes a ``<Dial>`` to ``to`` (number or SIP URI)."""
    return _twilio(account_sid, auth_token, call_sid, {"Twiml": dial_twiml(to)}, api)


def _twilio(sid: str, token: str, call_sid: str, form: dict[str, str], api: str) -> RestRequest:
    url = f"{api}/Accounts/{quote(sid, safe='')}/Calls/{quote(call_sid, safe='')}.json"
    return RestRequest("POST", url, _basic(sid, token), form=form)


def telnyx_hangup(api_key: str, call_control_id: str, *, api: str = TELNYX_API) -> RestRequest:
    """Hang up a Telnyx Call Control call."""
    return _telnyx(api_key, call_control_id, "hangup", {}, api)


def telnyx_transfer(
    api_key: str, call_control_id: str, to: str, *, api: str = TELNYX_API
) -> RestRequest:
    """Transfer a Telnyx call to a number (E.164) or SIP URI."""
    return _telnyx(api_key, call_control_id, "transfer", {"to": to}, api)


def _telnyx(api_key: str, call_id: str, action: str, body: dict[str, Any], api: str) -> RestRequest:
    url = f"{api}/calls/{quote(call_id, safe='')}/actions/{action}"
    return RestRequest("POST", url, {"Authorization": f"Bearer {api_key}"}, body)


def plivo_hangup(
    auth_id: str, auth_token: str, call_uuid: str, *, api: str = PLIVO_API
) -> RestRequest:
    """Hang up a Plivo call."""
    return RestRequest(
        "DELETE", _plivo_call_url(api, auth_id, call_uuid), _basic(auth_id, auth_token)
    )


def plivo_transfer(
    auth_id: str, auth_token: str, call_uuid: str, xml_url: str, *, api: str = PLIVO_API
) -> RestRequest:
    """Transfer a Plivo call: Plivo fetches Plivo XML (e.g. a ``<Dial>``) from ``xml_url``."""
    body = {"legs": "aleg", "aleg_url": xml_url, "aleg_method": "POST"}
    url = _plivo_call_url(api, auth_id, call_uuid)
    return RestRequest("POST", url, _basic(auth_id, auth_token), body)


def _plivo_call_url(api: str, auth_id: str, call_uuid: str) -> str:
    return f"{api}/Account/{quote(auth_id, safe='')}/Call/{quote(call_uuid, safe='')}/"


def _basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return {"Authorization": f"Basic {token}"}


def vonage_hangup(jwt: str, call_uuid: str, *, api: str = VONAGE_API) -> RestRequest:
    """Hang up a Vonage call (``jwt`` from :func:`vonage_application_jwt`)."""
    return _vonage(jwt, call_uuid, {"action": "hangup"}, api)


def vonage_transfer(jwt: str, call_uuid: str, number: str, *, api: str = VONAGE_API) -> RestRequest:
    """Transfer a Vonage call to a phone number, with an NCCO ``connect``."""
    ncco = [{"action": "connect", "endpoint": [{"type": "phone", "number": number}]}]
    body = {"action": "transfer", "destination": {"type": "ncco", "ncco": ncco}}
    return _vonage(jwt, call_uuid, body, api)


def _vonage(jwt: str, call_uuid: str, body: dict[str, Any], api: str) -> RestRequest:
    url = f"{api}/calls/{quote(call_uuid, safe='')}"
    return RestRequest("PUT", url, {"Authorization": f"Bearer {jwt}"}, body)


def vonage_application_jwt(application_id: str, private_key_pem: bytes, *, now_s: int) -> str:
    """An RS256 JWT authenticating a Vonage application for one request."""
    try:
        key = serialization.load_pem_private_key(private_key_pem, password=None)
    except ValueError as error:
        raise ConfigError(f"vonage private key is not a PEM private key: {error}") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ConfigError("vonage private key must be an RSA key (RS256)")
    claims = {
        "application_id": application_id,
        "iat": now_s,
        "exp": now_s + VONAGE_JWT_LIFETIME_S,
        "jti": str(uuid.uuid4()),
    }
    signing_input = f"{_b64url_json({'alg': 'RS256', 'typ': 'JWT'})}.{_b64url_json(claims)}"
    signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{_b64url(signature)}"


def _b64url_json(value: Mapping[str, Any]) -> str:
    return _b64url(json.dumps(value, separators=(",", ":")).encode())


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


async def perform(
    session: aiohttp.ClientSession, request: RestRequest, *, timeout_s: float
) -> None:
    """Send ``request``; a non-2xx answer raises RemoteProtocolError with the provider's text."""
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    form = dict(request.form) if request.form is not None else None
    async with session.request(
        request.method,
        request.url,
        headers=dict(request.headers),
        json=request.body,
        data=form,
        timeout=timeout,
    ) as reply:
        if not 200 <= reply.status < 300:
            text = (await reply.text())[:200]
            raise RemoteProtocolError(
                f"{request.method} {request.url}: the provider answered {reply.status}: {text}"
            )
