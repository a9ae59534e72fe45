"""TwiML for Twilio's voice webhook, the URLs it points at, and webhook signature checks.

The webhook answer connects the call to this gateway's ``/twilio`` media stream,
bidirectionally: ``<Connect><Stream url="wss://..."><Parameter .../></Stream></Connect>``
(shared/spec/providers.md §b.1; https://www.twilio.com/docs/voice/twiml/stream). Parameters
come back in the stream's ``start`` message as ``customParameters``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import parse_qs, urlsplit, urlunsplit
from xml.sax.saxutils import escape as xml_escape

#: Characters XML 1.0 does not allow at all (§2.2), even escaped: dropped from values.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# Whitespace in attributes is written as references so parsers do not normalise it away.
_ATTRIBUTE_ESCAPES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    '"': "&quot;",
    "'": "&apos;",
    "\t": "&#9;",
    "\n": "&#10;",
    "\r": "&#13;",
}
_DEFAULT_PORTS = {"http": 80, "https": 443}
_WEBSOCKET_SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}
# A host name or IP literal with an optional port: nothing that could add a path or userinfo.
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?")


def xml_attribute(value: str) -> str:
    """``value`` as a double-quoted XML attribute value, escaped."""
    text = _NOT_XML.sub("", value)
    return '"' + "".join(_ATTRIBUTE_ESCAPES.get(char, char) for char in text) + '"'


def connect_stream_twiml(stream_url: str, parameters: Iterable[tuple[str, str]]) -> str:
    """A TwiML document that connects the call to a bidirectional media stream."""
    parameter_lines = [
        f"      <Parameter name={xml_attribute(name)} value={xml_attribute(value)}/>"
        for name, value in parameters
    ]
    return "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-8"?>',
            "<Response>",
            "  <Connect>",
            f"    <Stream url={xml_attribute(stream_url)}>",
            *parameter_lines,
            "    </Stream>",
            "  </Connect>",
            "</Response>",
            "",
        ]
    )


def dial_twiml(to: str) -> str:
    """A TwiML document dialling ``to``: a number, or a SIP URI through ``<Sip>``.

    https://www.twilio.com/docs/voice/twiml/dial (a number as the verb's text) and
    https://www.twilio.com/docs/voice/twiml/sip (``<Sip>`` for a ``sip:`` URI).
    """
    noun = f"<Sip>{xml_escape(to)}</Sip>" if to.lower().startswith("sip:") else xml_escape(to)
    return f"<Response><Dial>{noun}</Dial></Response>"


def stream_parameters(
    static: Mapping[str, str], fields: Sequence[str], form: Mapping[str, str]
) -> list[tuple[str, str]]:
    """Configured parameters first, then the named webhook form fields that are present."""
    forwarded = [(name, form[name]) for name in fields if name in form]
    return [*static.items(), *forwarded]


def external_base(public_url: str | None, scheme: str, host: str) -> str:
    """This gateway's URL as providers see it: the configured one, else the request's."""
    base = public_url if public_url else f"{scheme}://{host}"
    return base.rstrip("/")


def forwarded_origin(scheme: str, host: str, headers: Mapping[str, str]) -> tuple[str, str]:
    """The scheme and host the client used, from a trusted proxy's ``X-Forwarded-*`` headers.

    A proxy chain lists values comma-separated, the client-facing one first; a value that is
    not a plain scheme or host name is ignored (the request's own is kept).
    """
    proto = headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    forwarded_host = headers.get("X-Forwarded-Host", "").split(",")[0].strip()
    if proto in _WEBSOCKET_SCHEMES:
        scheme = proto
    if forwarded_host and _HOST.fullmatch(forwarded_host):
        host = forwarded_host
    return scheme, host


def websocket_url(base: str, path: str) -> str:
    """``base`` (http, https, ws or wss) turned into the WebSocket URL of ``path``."""
    scheme, separator, rest = base.partition("://")
    if not separator or scheme.lower() not in _WEBSOCKET_SCHEMES:
        raise ValueError(f"not an http(s) or ws(s) URL: {base!r}")
    return f"{_WEBSOCKET_SCHEMES[scheme.lower()]}://{rest}{path}"


def twilio_signature(auth_token: str, url: str, form: Mapping[str, Sequence[str]]) -> str:
    """The X-Twilio-Signature Twilio computes for a POST to ``url`` with ``form``.

    https://www.twilio.com/docs/usage/security#validating-requests : the full URL, then every
    POST parameter name followed by its value, sorted by name; HMAC-SHA1 keyed with the auth
    token; base64.
    """
    signed = url + "".join(name + value for name in sorted(form) for value in sorted(form[name]))
    digest = hmac.new(auth_token.encode("utf-8"), signed.encode("utf-8"), hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def signature_valid(
    auth_token: str, url: str, form: Mapping[str, Sequence[str]], signature: str
) -> bool:
    """True when ``signature`` is the one Twilio would send for this request.

    Twilio may sign the URL with or without the scheme's default port (its own validators
    accept both), so both spellings are tried.
    """
    if not signature.isascii():
        # A real signature is base64. aiohttp decodes header bytes with surrogateescape, so
        # other text may not even encode (issue 15 #3: that was a 500, now a mismatch).
        return False
    given = signature.encode("ascii")
    return any(
        hmac.compare_digest(twilio_signature(auth_token, candidate, form).encode("ascii"), given)
        for candidate in _port_spellings(url)
    )


def body_hash_valid(url: str, body: bytes) -> bool:
    """Whether a JSON webhook's body matches the ``bodySHA256`` query parameter of its URL.

    Twilio's rule for non-form bodies: the signature covers the URL only, and the URL carries
    the hex SHA-256 of the body (https://www.twilio.com/docs/usage/security#validating-requests).
    """
    given = parse_qs(urlsplit(url).query).get("bodySHA256", [""])[0]
    expected = hashlib.sha256(body).hexdigest()
    return given.isascii() and hmac.compare_digest(given.lower().encode(), expected.encode())


def _port_spellings(url: str) -> list[str]:
    """``url`` as given, and with its port removed, or its default port added."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    shown = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        other = shown
    else:
        default = _DEFAULT_PORTS.get(parts.scheme)
        other = f"{shown}:{default}" if default else shown
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@{other}" if userinfo else other
    return [url, urlunsplit(parts._replace(netloc=netloc))]
