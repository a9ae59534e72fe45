"""Telnyx's TeXML answer webhook and the checks on Telnyx's requests (webhook and stream).

The answer connects the call to this gateway's ``/telnyx`` stream, bidirectionally:
``<Connect><Stream url="wss://..." bidirectionalMode="rtp" ...><Parameter .../></Stream>
</Connect>`` (https://developers.telnyx.com/docs/voice/programmable-voice/texml-verbs/stream
and .../texml-verbs/connect: the call waits on the stream, and with no verb after it the call
ends when the stream does). Parameters come back as the ``start`` frame's
``custom_parameters``.

Webhooks are signed with Ed25519: ``telnyx-signature-ed25519`` is the base64 signature of
``"{telnyx-timestamp}|{raw body}"`` under the account's public key from the Mission Control
Portal (https://developers.telnyx.com/docs/development/sdk/python/webhooks ; the SDKs refuse
timestamps more than 300 s away). The stream itself carries the Call Control
``stream_auth_token`` in the ``x-telnyx-streaming-auth-token`` header of the upgrade (AsyncAPI
page, Connected Frame).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from aiohttp import web
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from voicegate.errors import ConfigError
from voicegate.gateway.twiml import (
    external_base,
    stream_parameters,
    websocket_url,
    xml_attribute,
)

if TYPE_CHECKING:  # options.py imports this module for public_key()
    from voicegate.gateway.options import TelnyxOptions
    from voicegate.gateway.transport import Refusal

log = logging.getLogger(__name__)

#: The Media Streaming WebSocket route (its TeXML webhook is POST STREAM_PATH + "/texml").
STREAM_PATH = "/telnyx"
SIGNATURE_HEADER = "telnyx-signature-ed25519"
TIMESTAMP_HEADER = "telnyx-timestamp"
STREAM_TOKEN_HEADER = "x-telnyx-streaming-auth-token"
#: How far (s) a webhook's timestamp may be from now; the Telnyx SDKs' default tolerance.
DEFAULT_TOLERANCE_S = 300
_ED25519_KEY_BYTES = 32


def public_key(encoded: str) -> Ed25519PublicKey:
    """The account's Ed25519 public key from its base64 form in the portal."""
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError("telnyx public key is not valid base64") from None
    if len(raw) != _ED25519_KEY_BYTES:
        raise ConfigError(f"telnyx public key must be 32 bytes, got {len(raw)}")
    return Ed25519PublicKey.from_public_bytes(raw)


def signature_problem(
    key: Ed25519PublicKey,
    body: bytes,
    headers: Mapping[str, str],
    *,
    now_s: float,
    tolerance_s: int = DEFAULT_TOLERANCE_S,
) -> str | None:
    """Why a webhook's signature does not hold, or None when Telnyx signed it recently."""
    signature, timestamp = headers.get(SIGNATURE_HEADER), headers.get(TIMESTAMP_HEADER)
    if not signature or not timestamp:
        return f"missing {SIGNATURE_HEADER} or {TIMESTAMP_HEADER}"
    if not timestamp.isascii() or not timestamp.isdigit():
        return f"{TIMESTAMP_HEADER} is not a Unix time"
    if abs(now_s - int(timestamp)) > tolerance_s:
        return f"{TIMESTAMP_HEADER} is more than {tolerance_s} s away (a replay?)"
    try:
        key.verify(base64.b64decode(signature, validate=True), timestamp.encode() + b"|" + body)
    except (binascii.Error, ValueError, InvalidSignature):
        return f"{SIGNATURE_HEADER} does not match the body"
    return None


def stream_token_valid(expected: str, headers: Mapping[str, str]) -> bool:
    """Whether the upgrade carries the configured ``stream_auth_token``."""
    given = headers.get(STREAM_TOKEN_HEADER, "")
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def connect_stream_texml(
    stream_url: str, parameters: Iterable[tuple[str, str]], *, codec: str, sample_rate: int
) -> str:
    """A TeXML document connecting the call to a bidirectional RTP media stream."""
    parameter_lines = [
        f"      <Parameter name={xml_attribute(name)} value={xml_attribute(value)}/>"
        for name, value in parameters
    ]
    attributes = " ".join(
        [
            f"url={xml_attribute(stream_url)}",
            'bidirectionalMode="rtp"',  # raw RTP payloads back, not mp3 files (1 msg/s)
            f"bidirectionalCodec={xml_attribute(codec)}",
            f"bidirectionalSamplingRate={xml_attribute(str(sample_rate))}",
        ]
    )
    return "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-8"?>',
            "<Response>",
            "  <Connect>",
            f"    <Stream {attributes}>",
            *parameter_lines,
            "    </Stream>",
            "  </Connect>",
            "</Response>",
            "",
        ]
    )


def forbidden(reason: str) -> web.Response:
    """The answer to a request that failed Telnyx's authentication."""
    log.warning("telnyx: refused a request: %s", reason)
    return web.Response(status=403, text=reason + "\n")


async def answer(
    request: web.Request, telnyx: TelnyxOptions, public_url: str | None, refusal: Refusal | None
) -> web.Response:
    """The TeXML webhook: check the signature, then TeXML streaming the call to ``/telnyx``."""
    body = await request.read()
    if telnyx.public_key is not None:
        key = public_key(telnyx.public_key)
        problem = signature_problem(key, body, request.headers, now_s=time.time())
        if problem is not None:
            return forbidden(problem)
    if refusal is not None:
        # Telnyx then tries the application's failover URL.
        return web.Response(status=503, text=refusal.reason + "\n")
    form = await request.post()
    fields = {name: value for name, value in form.items() if isinstance(value, str)}
    base = external_base(public_url, request.scheme, request.host)
    texml = connect_stream_texml(
        websocket_url(base, STREAM_PATH),
        stream_parameters(telnyx.parameters, telnyx.webhook_fields, fields),
        codec=telnyx.bidirectional_codec,
        sample_rate=telnyx.bidirectional_sampling_rate,
    )
    return web.Response(text=texml, content_type="text/xml")


def stream_refusal(request: web.Request, telnyx: TelnyxOptions) -> web.Response | None:
    """403 for a stream upgrade without the configured auth token; None to accept it."""
    token = telnyx.stream_auth_token
    if token is not None and not stream_token_valid(token, request.headers):
        return forbidden(f"missing or wrong {STREAM_TOKEN_HEADER}")
    return None
