"""The HTTP message signature of a Genesys AudioHook upgrade (RFC 9421, HMAC-SHA256), pure.

The gateway checks it (gateway/audiohook.py); the emulated Genesys client makes it
(callers/genesys.py). The signature base is one line per covered component, ``"name": value``
in the order ``Signature-Input`` lists them, then ``"@signature-params": `` and that member's
value; the key is the base64-decoded client secret
(https://developer.genesys.cloud/devapps/audiohook/session-walkthrough#establishing-connection).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping, Sequence

#: What Genesys covers, in the walkthrough's order.
COMPONENTS = (
    "@request-target",
    "@authority",
    "audiohook-organization-id",
    "audiohook-session-id",
    "audiohook-correlation-id",
    "x-api-key",
)
LABEL = "sig1"


def signature_base(
    components: Sequence[str],
    params: str,
    target: str,
    authority: str,
    headers: Mapping[str, str],
) -> str:
    """The signature base of the covered ``components`` (headers keyed by lowercase name)."""
    derived = {"@request-target": target, "@authority": authority.lower()}
    lines = []
    for name in components:
        value = derived[name] if name in derived else headers[name].strip()
        lines.append(f'"{name}": {value}')
    lines.append(f'"@signature-params": {params}')
    return "\n".join(lines)


def hmac_signature(client_secret: bytes, base: str) -> str:
    """base64 HMAC-SHA256 of ``base`` keyed with the decoded client secret."""
    return base64.b64encode(
        hmac.new(client_secret, base.encode(), hashlib.sha256).digest()
    ).decode()


def sign(
    client_secret: bytes,
    *,
    target: str,
    authority: str,
    headers: Mapping[str, str],
    nonce: str,
    created: int,
    expires: int,
) -> dict[str, str]:
    """``Signature-Input`` and ``Signature`` for an upgrade carrying ``headers`` (lowercase)."""
    listed = " ".join(f'"{name}"' for name in COMPONENTS)
    keyid = headers["x-api-key"]
    params = (
        f'({listed});keyid="{keyid}";nonce="{nonce}";alg="hmac-sha256";'
        f"created={created};expires={expires}"
    )
    base = signature_base(COMPONENTS, params, target, authority, headers)
    return {
        "Signature-Input": f"{LABEL}={params}",
        "Signature": f"{LABEL}=:{hmac_signature(client_secret, base)}:",
    }
