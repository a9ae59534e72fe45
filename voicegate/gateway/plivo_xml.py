"""Plivo's answer webhook: the Plivo XML that streams a call here, and Plivo's signatures.

The answer starts a bidirectional stream that holds the call:
``<Stream bidirectional="true" keepCallAlive="true" audioTrack="inbound" contentType=...>``
(https://docs.plivo.com/docs/voice/xml/audiostream : bidirectional needs the inbound track;
with keepCallAlive the elements after the stream run only once it disconnects, and there are
none, so the call ends with the stream). ``extraHeaders`` come back as the ``start`` event's
``extra_headers``; Plivo allows only ``[A-Za-z0-9]`` in them, so other characters are dropped.

Webhooks carry ``X-Plivo-Signature-V3`` and ``X-Plivo-Signature-V3-Nonce``: base64
HMAC-SHA256, keyed with the auth token, of the URL Plivo called (query parameters sorted),
then for a POST its form parameters sorted by name as name+value, then ``.`` and the nonce;
the header may list several signatures separated by commas
(https://docs.plivo.com/docs/voice/xml/request/validation ; the message layout is the one the
SDKs' ``validate_v3_signature`` computes). Plivo does not sign the stream's upgrade, so when an
auth token is set the stream URL carries a key derived from it (``STREAM_KEY_PARAMETER``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from aiohttp import web

from voicegate.gateway.twiml import (
    external_base,
    stream_parameters,
    websocket_url,
    xml_attribute,
)

if TYPE_CHECKING:
    from voicegate.gateway.options import PlivoOptions
    from voicegate.gateway.transport import Refusal

log = logging.getLogger(__name__)

#: The audio stream WebSocket route (its answer webhook is POST STREAM_PATH + "/answer").
STREAM_PATH = "/plivo"
SIGNATURE_HEADER = "X-Plivo-Signature-V3"
NONCE_HEADER = "X-Plivo-Signature-V3-Nonce"
#: The query parameter of the stream URL holding :func:`stream_key`.
STREAM_KEY_PARAMETER = "key"
_NOT_HEADER_TEXT = re.compile("[^A-Za-z0-9]")


def v3_signature(auth_token: str, url: str, form: Mapping[str, Sequence[str]], nonce: str) -> str:
    """The X-Plivo-Signature-V3 Plivo computes for a POST of ``form`` to ``url``."""
    parts = urlsplit(url)
    base = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    query = "&".join(f"{name}={value}" for name, value in sorted(parse_qsl(parts.query, True)))
    if form:
        # With form parameters the URL always gets its "?", and a "." after a query.
        base += "?" + query + ("." if query else "")
        base += "".join(name + value for name in sorted(form) for value in sorted(form[name]))
    elif query:
        base += "?" + query
    signed = f"{base}.{nonce}".encode()
    digest = hmac.new(auth_token.encode("utf-8"), signed, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def signature_valid(
    auth_token: str, url: str, form: Mapping[str, Sequence[str]], headers: Mapping[str, str]
) -> bool:
    """True when one of the request's V3 signatures is the one Plivo would send."""
    nonce, given = headers.get(NONCE_HEADER, ""), headers.get(SIGNATURE_HEADER, "")
    if not nonce or not given:
        return False
    expected = v3_signature(auth_token, url, form, nonce).encode("ascii")
    return any(hmac.compare_digest(expected, part.strip().encode()) for part in given.split(","))


def stream_key(auth_token: str) -> str:
    """The key the answer puts in the stream URL, derived from (never equal to) the token."""
    return hmac.new(auth_token.encode("utf-8"), b"voicegate plivo stream", "sha256").hexdigest()


def header_text(value: str) -> str:
    """``value`` with what Plivo's extraHeaders do not allow removed (only A-Z, a-z, 0-9)."""
    return _NOT_HEADER_TEXT.sub("", value)


def stream_xml(stream_url: str, headers: Iterable[tuple[str, str]], *, content_type: str) -> str:
    """A Plivo XML document streaming the call both ways to ``stream_url``."""
    extra = ",".join(f"{header_text(name)}={header_text(value)}" for name, value in headers)
    attributes = [
        'bidirectional="true"',
        'keepCallAlive="true"',
        'audioTrack="inbound"',  # the only track allowed with bidirectional
        f"contentType={xml_attribute(content_type)}",
    ]
    if extra:
        attributes.append(f"extraHeaders={xml_attribute(extra)}")
    url = stream_url.replace("&", "&amp;").replace("<", "&lt;")
    return "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-8"?>',
            "<Response>",
            f"  <Stream {' '.join(attributes)}>{url}</Stream>",
            "</Response>",
            "",
        ]
    )


async def answer(
    request: web.Request, plivo: PlivoOptions, public_url: str | None, refusal: Refusal | None
) -> web.Response:
    """The answer webhook: check the signature, then Plivo XML streaming the call here."""
    form = await request.post()
    fields = {name: [v for v in form.getall(name) if isinstance(v, str)] for name in form}
    base = external_base(public_url, request.scheme, request.host)
    stream = websocket_url(base, STREAM_PATH)
    if plivo.auth_token is not None:
        url = base + request.rel_url.path_qs
        if not signature_valid(plivo.auth_token, url, fields, request.headers):
            log.warning("plivo webhook: bad %s for %s", SIGNATURE_HEADER, url)
            return web.Response(status=403, text=f"invalid {SIGNATURE_HEADER}\n")
        stream += f"?{STREAM_KEY_PARAMETER}={stream_key(plivo.auth_token)}"
    if refusal is not None:
        # Plivo then uses the application's fallback answer URL.
        return web.Response(status=503, text=refusal.reason + "\n")
    first_values = {name: values[0] for name, values in fields.items() if values}
    headers = stream_parameters(plivo.parameters, plivo.webhook_fields, first_values)
    xml = stream_xml(stream, headers, content_type=plivo.content_type)
    return web.Response(text=xml, content_type="application/xml")


def stream_refusal(request: web.Request, plivo: PlivoOptions) -> web.Response | None:
    """403 for a stream upgrade without the key a signed answer gave out; None to accept."""
    if plivo.auth_token is None:
        return None
    given = request.query.get(STREAM_KEY_PARAMETER, "").encode()
    if hmac.compare_digest(given, stream_key(plivo.auth_token).encode()):
        return None
    log.warning("plivo stream: missing or wrong key")
    return web.Response(status=403, text="missing or wrong stream key\n")
