"""Who may open a call: Twilio stream tokens, browser origins, HTTP Basic (issue 15 #8, #9).

A Twilio media stream proves it belongs to a call this gateway answered with a short-lived
token the webhook writes into the TwiML ``<Stream>`` as a ``<Parameter>``; it comes back in
``start.customParameters`` (providers.md §b.1). The token is an HMAC-SHA256, keyed with the
gateway's stream secret, over the CallSid and an expiry, so it cannot be moved to another
call or used after it expires. The engine's memory is keyed by the CallSid only once the
token is checked, so a peer that merely knows a CallSid never reads that caller's memory.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

#: The ``<Parameter>`` name the token travels under.
STREAM_TOKEN_PARAMETER = "voicegate_stream_token"


def _mac(secret: str, call_sid: str, expiry: int) -> str:
    message = f"{call_sid}\n{expiry}".encode()
    digest = hmac.new(secret.encode("utf-8"), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def issue_stream_token(secret: str, call_sid: str, now: float, ttl_s: float) -> str:
    """A token binding a stream to ``call_sid`` until ``now + ttl_s`` (Unix seconds)."""
    expiry = int(now + ttl_s)
    return f"{expiry}.{_mac(secret, call_sid, expiry)}"


def stream_token_problem(
    secret: str, call_sid: str, parameters: Mapping[str, str], now: float
) -> str | None:
    """Why a `start` is not authenticated, or None when its token is valid."""
    token = parameters.get(STREAM_TOKEN_PARAMETER)
    if token is None:
        return "no stream token: connect through the gateway's voice webhook"
    expiry_text, _, mac = token.partition(".")
    if not expiry_text.isascii() or not expiry_text.isdigit() or len(expiry_text) > 12:
        return "malformed stream token"
    expected = _mac(secret, call_sid, int(expiry_text))
    if not mac.isascii() or not hmac.compare_digest(mac.encode("ascii"), expected.encode()):
        return "invalid stream token for this call"
    if int(expiry_text) < now:
        return "expired stream token"
    return None


def origin_allowed(origin: str | None, host: str, allowed: Iterable[str]) -> bool:
    """Whether a browser page at ``origin`` may open a call (same origin or allow-listed).

    No Origin header means no browser page (a command-line client); that is decided by the
    API key check, not here. ``"*"`` in ``allowed`` admits every origin.
    """
    if origin is None:
        return True
    allowed = tuple(allowed)
    if "*" in allowed or origin in allowed:
        return True
    return urlsplit(origin).netloc.lower() == host.lower()


def bearer_valid(authorization: str | None, api_key: str) -> bool:
    """Whether an ``Authorization: Bearer <key>`` header carries ``api_key``."""
    if authorization is None or not authorization.isascii():
        return False
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode("ascii"), api_key.encode("utf-8"))


def basic_valid(authorization: str | None, username: str, password: str) -> bool:
    """Whether an ``Authorization: Basic`` header carries ``username`` and ``password``.

    HTTP Basic (RFC 7617): base64 of ``user:password``. Exotel sends it for credentials in the
    stream URL's user-info, Jambonz for ``wsAuth``; both names are compared in constant time.
    """
    if authorization is None or not authorization.isascii():
        return False
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except ValueError:
        return False
    given_user, colon, given_password = decoded.partition(b":")
    user_ok = hmac.compare_digest(given_user, username.encode("utf-8"))
    password_ok = hmac.compare_digest(given_password, password.encode("utf-8"))
    return bool(colon) and user_ok and password_ok
