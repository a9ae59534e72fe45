"""Who may open a Genesys AudioHook session: the API key and HTTP message signatures.

Genesys (the client) opens the WebSocket with ``Audiohook-Organization-Id``,
``Audiohook-Correlation-Id``, ``Audiohook-Session-Id`` and ``X-API-KEY`` headers, and, when
the integration has a client secret, ``Signature-Input`` and ``Signature`` headers: an HTTP
message signature (RFC 9421) over ``@request-target``, ``@authority``, the three
``audiohook-*`` ids and ``x-api-key``, with ``keyid`` (the API key), ``nonce``, ``alg``
``hmac-sha256``, ``created`` and ``expires``, keyed with the base64-decoded client secret
(https://developer.genesys.cloud/devapps/audiohook/session-walkthrough#establishing-connection
and the protocol reference's Authentication section; the walkthrough's example request is a
known-answer test in tests/server/test_genesys_routes.py). The signature base is one line per
covered component (codecs/genesys_signature.py, shared with the emulated client).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from aiohttp import web

from voicegate.codecs.genesys_signature import COMPONENTS, hmac_signature, signature_base

if TYPE_CHECKING:
    from voicegate.gateway.options import GenesysOptions

log = logging.getLogger(__name__)

STREAM_PATH = "/genesys"
SESSION_HEADER = "Audiohook-Session-Id"
ID_HEADERS = ("Audiohook-Organization-Id", "Audiohook-Correlation-Id", SESSION_HEADER)
API_KEY_HEADER = "X-API-KEY"
#: What a signature must cover (the walkthrough's Signature-Input lists exactly these).
COVERED = frozenset(COMPONENTS)
#: Clock skew allowed on ``created``.
SKEW_S = 60
_MEMBER = re.compile(r"^\s*([a-z][a-z0-9_.*-]*)=(.*)$", re.DOTALL)
_COMPONENTS = re.compile(r"^\(([^)]*)\)((?:;.*)?)$", re.DOTALL)
_SIGNATURE = re.compile(r"^\s*([a-z][a-z0-9_.*-]*)=:([A-Za-z0-9+/=]*):\s*$")


def signature_problem(
    client_secret: str,
    api_key: str,
    *,
    target: str,
    authority: str,
    headers: Mapping[str, str],
    now_s: float,
) -> str | None:
    """Why the request's message signature is not valid, or None when it is.

    ``headers`` are keyed by lowercase name.
    """
    member = _MEMBER.match(headers.get("signature-input", ""))
    signed = _SIGNATURE.match(headers.get("signature", ""))
    if member is None or signed is None or member.group(1) != signed.group(1):
        return "no Signature-Input and Signature for the same label"
    params = member.group(2).strip()
    parsed = _COMPONENTS.match(params)
    if parsed is None:
        return "Signature-Input is not a component list with parameters"
    components = re.findall(r'"([^"]+)"', parsed.group(1))
    problem = _parameters_problem(components, _parameters(parsed.group(2)), api_key, now_s)
    if problem is not None:
        return problem
    try:
        key = base64.b64decode(client_secret, validate=True)
    except (binascii.Error, ValueError):
        return "the client secret is not base64"
    base = signature_base(components, params, target, authority, headers)
    expected = hmac_signature(key, base).encode("ascii")
    if not hmac.compare_digest(expected, signed.group(2).encode("ascii")):
        return "the signature does not match the client secret"
    return None


def _parameters(text: str) -> dict[str, str]:
    """``;name=value`` signature parameters, quotes removed."""
    pairs = (part.partition("=") for part in text.split(";") if part.strip())
    return {name.strip(): value.strip().strip('"') for name, _, value in pairs}


def _parameters_problem(
    components: list[str], params: dict[str, str], api_key: str, now_s: float
) -> str | None:
    missing = COVERED - set(components)
    if missing:
        return f"the signature does not cover {', '.join(sorted(missing))}"
    if params.get("alg", "hmac-sha256") != "hmac-sha256":
        return f"signature alg {params.get('alg')!r} is not hmac-sha256"
    if not hmac.compare_digest(params.get("keyid", "").encode(), api_key.encode()):
        return "signature keyid is not the API key"
    created, expires = params.get("created", ""), params.get("expires", "")
    if not created.isdigit() or int(created) > now_s + SKEW_S:
        return "signature created is missing or in the future"
    if expires and (not expires.isdigit() or int(expires) < now_s):
        return "the signature has expired"
    return None


def upgrade_refusal(
    request: web.Request, genesys: GenesysOptions, authority: str, now_s: float
) -> web.Response | None:
    """400/401 for an upgrade without the ids, the API key or a valid signature; else None."""
    missing = [name for name in (*ID_HEADERS, API_KEY_HEADER) if name not in request.headers]
    if missing:
        return _refused(400, f"missing {', '.join(missing)}")
    if genesys.api_key is None:
        return None
    given = request.headers[API_KEY_HEADER].encode()
    if not hmac.compare_digest(given, genesys.api_key.encode()):
        return _refused(401, "wrong X-API-KEY")
    if genesys.client_secret is None:
        return None
    headers = {name.lower(): value for name, value in request.headers.items()}
    problem = signature_problem(
        genesys.client_secret,
        genesys.api_key,
        target=request.raw_path,
        authority=authority,
        headers=headers,
        now_s=now_s,
    )
    return _refused(401, problem) if problem is not None else None


def _refused(status: int, reason: str) -> web.Response:
    log.warning("genesys upgrade refused: %s", reason)
    return web.Response(status=status, text=reason + "\n")
