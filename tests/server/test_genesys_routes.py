"""Genesys AudioHook route: the API key and the HTTP message signature of the upgrade."""

from __future__ import annotations

import base64
import time

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.server.server_kit import ScriptedRunner, receive_json, running_gateway, ws_url
from voicegate.callers.genesys import GenesysCaller
from voicegate.callers.script import CallerScript
from voicegate.errors import ConfigError
from voicegate.gateway.audiohook import signature_problem
from voicegate.gateway.options import GenesysOptions

# The example request of Genesys's session walkthrough ("Establishing connection").
WALKTHROUGH = {
    "audiohook-organization-id": "d7934305-0972-4844-938e-9060eef73d05",
    "audiohook-correlation-id": "e160e428-53e2-487c-977d-96989bf5c99d",
    "audiohook-session-id": "30b0e395-84d3-4570-ac13-9a62d8f514c0",
    "x-api-key": "SGVsbG8sIEkgYW0gdGhlIEFQSSBrZXkh",
    "signature": "sig1=:NZBwyBHRRyRoeLqy1IzOa9VYBuI8TgMFt2GRDkDuJh4=:",
    "signature-input": 'sig1=("@request-target" "@authority" "audiohook-organization-id" '
    '"audiohook-session-id" "audiohook-correlation-id" "x-api-key");'
    'keyid="SGVsbG8sIEkgYW0gdGhlIEFQSSBrZXkh";nonce="VGhpc0lzQVVuaXF1ZU5vbmNl";'
    'alg="hmac-sha256";created=1641013200;expires=3282026430',
}
WALKTHROUGH_SECRET = "TXlTdXBlclNlY3JldEtleVRlbGxOby0xITJAMyM0JDU="
API_KEY = WALKTHROUGH["x-api-key"]
SECRET = base64.b64encode(b"another client secret").decode()
OPEN_AT = 1641013200


def walkthrough_problem(api_key: str = API_KEY, **changes: str) -> str | None:
    headers = {**WALKTHROUGH, **changes}
    return signature_problem(
        WALKTHROUGH_SECRET,
        api_key,
        target="/api/v1/voicebiometrics/ws",
        authority="audiohook.example.com",
        headers=headers,
        now_s=OPEN_AT,
    )


def test_the_walkthrough_signature_is_valid_and_any_change_breaks_it() -> None:
    assert walkthrough_problem() is None
    assert "does not match" in str(walkthrough_problem(**{"audiohook-session-id": "x"}))
    assert "does not match" in str(walkthrough_problem(**{"x-api-key": "other"}))
    assert "keyid is not the API key" in str(walkthrough_problem(api_key="another key"))
    narrowed = WALKTHROUGH["signature-input"].replace(' "x-api-key"', "")
    assert "does not cover x-api-key" in str(walkthrough_problem(**{"signature-input": narrowed}))
    assert "same label" in str(walkthrough_problem(signature="sig2=:AAAA:"))
    assert (
        signature_problem(
            WALKTHROUGH_SECRET,
            API_KEY,
            target="/api/v1/voicebiometrics/ws",
            authority="audiohook.example.com",
            headers=WALKTHROUGH,
            now_s=3282026431,
        )
        == "the signature has expired"
    )


def caller() -> GenesysCaller:
    script = CallerScript((), 8000)
    return GenesysCaller(script, api_key=API_KEY, client_secret=SECRET)


async def test_only_a_signed_upgrade_with_the_api_key_opens_a_session() -> None:
    genesys = GenesysOptions(api_key=API_KEY, client_secret=SECRET)
    async with running_gateway(ScriptedRunner(), genesys=genesys) as gateway:
        url = ws_url(gateway, "/genesys")
        good = caller().upgrade_headers(url, int(time.time()))
        refusals = {
            400: {k: v for k, v in good.items() if k != "audiohook-session-id"},
            401: {**good, "x-api-key": "guess"},
        }
        unsigned = {k: v for k, v in good.items() if not k.lower().startswith("signature")}
        for status, headers in [*refusals.items(), (401, unsigned)]:
            with pytest.raises(InvalidStatus) as refused:
                async with connect(url, additional_headers=headers, open_timeout=10):
                    pass
            assert refused.value.response.status_code == status
        async with connect(url, additional_headers=good, open_timeout=10) as client:
            assert await receive_json(client) == {"dialect": "genesys"}
            await client.send(caller().opening()[0])
            assert await receive_json(client) == {"event": "CallStarted"}
            started = await receive_json(client)
            assert started["call_id"] == "090eaa2f-0000-4000-8000-000000000042"


async def test_disabled_genesys_has_no_route() -> None:
    async with running_gateway(ScriptedRunner(), genesys=None) as gateway:
        with pytest.raises(InvalidStatus) as refused:
            async with connect(ws_url(gateway, "/genesys"), open_timeout=10):
                pass
        assert refused.value.response.status_code == 404


def test_genesys_options_are_checked_up_front() -> None:
    with pytest.raises(ConfigError, match="needs api_key"):
        GenesysOptions(client_secret=SECRET)
