"""HTTP routes and WebSocket routing, through a real aiohttp server on loopback."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import aiohttp
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.server.server_kit import (
    TWILIO_CONNECTED,
    ScriptedRunner,
    call,
    close_of,
    get_json,
    loopback_options,
    receive_json,
    running_gateway,
    twilio_start,
    ws_url,
)
from voicegate.errors import ConfigError
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.options import BrowserOptions, TwilioOptions
from voicegate.gateway.twiml import signature_valid, twilio_signature

STARTING = "the gateway is starting, try again"


async def post_voice(
    gateway: Gateway, form: dict[str, str], headers: dict[str, str] | None = None
) -> tuple[int, str, str]:
    url = gateway.base_url + "/twilio/voice"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=form, headers=headers or {}) as reply,
    ):
        return reply.status, reply.content_type, await reply.text()


def stream_of(twiml: str) -> tuple[str, list[tuple[str, str]]]:
    """The <Stream url> and its <Parameter>s, read back with a real XML parser."""
    root = ET.fromstring(twiml)
    assert root.tag == "Response"
    (connect_verb,) = list(root)
    assert connect_verb.tag == "Connect"
    (stream,) = list(connect_verb)
    assert stream.tag == "Stream"
    assert all(child.tag == "Parameter" for child in stream)
    return stream.attrib["url"], [(p.attrib["name"], p.attrib["value"]) for p in stream]


# --- health and readiness ----------------------------------------------------------------------


async def test_health_and_ready_when_open() -> None:
    async with running_gateway(ScriptedRunner(), capacity=7) as gateway:
        assert await get_json(gateway, "/healthz") == (200, {"status": "ok"})
        status, body = await get_json(gateway, "/readyz")
        assert status == 200
        assert body == {"ready": True, "reason": "ready", "active_calls": 0, "capacity": 7}


async def test_not_ready_while_starting_and_calls_are_refused() -> None:
    gateway = Gateway(ScriptedRunner(), loopback_options())
    await gateway.start()
    try:
        assert (await get_json(gateway, "/healthz"))[0] == 200
        status, body = await get_json(gateway, "/readyz")
        assert (status, body["ready"], body["reason"]) == (503, False, STARTING)
        async with call(gateway, "/twilio") as client:
            assert await close_of(client) == (1013, STARTING)
        gateway.open()
        assert (await get_json(gateway, "/readyz"))[0] == 200
    finally:
        await gateway.drain()
        await gateway.close()


# --- TwiML -------------------------------------------------------------------------------------


async def test_twiml_connects_a_stream_on_the_request_host_with_parameters() -> None:
    twilio = TwilioOptions(parameters={"tenant": "acme"})
    async with running_gateway(ScriptedRunner(), twilio=twilio) as gateway:
        form = {"CallSid": "CA42", "From": "+15551230000", "To": "+15559870000", "Body": "x"}
        status, content_type, twiml = await post_voice(gateway, form)
    assert (status, content_type) == (200, "text/xml")
    url, parameters = stream_of(twiml)
    assert url == f"ws://127.0.0.1:{gateway.port}/twilio"
    # Configured parameters first, then the forwarded webhook fields; other fields stay out.
    assert parameters == [
        ("tenant", "acme"),
        ("CallSid", "CA42"),
        ("From", "+15551230000"),
        ("To", "+15559870000"),
    ]


async def test_twiml_escapes_every_value() -> None:
    hostile = "a\"b'c<d>&e</Parameter><Hangup/>\nline\x01"
    twilio = TwilioOptions(parameters={'we"ird<': hostile}, webhook_fields=("From",))
    async with running_gateway(ScriptedRunner(), twilio=twilio) as gateway:
        _, _, twiml = await post_voice(gateway, {"From": hostile})
    assert "<Hangup" not in twiml.replace("&lt;Hangup", "")
    _, parameters = stream_of(twiml)
    # XML 1.0 cannot carry U+0001 at all, so it is dropped; everything else round-trips.
    expected = hostile.replace("\x01", "")
    assert parameters == [('we"ird<', expected), ("From", expected)]


async def test_twiml_uses_the_public_url_as_wss() -> None:
    public = "https://voice.example.com/gw/"
    async with running_gateway(ScriptedRunner(), public_url=public) as gateway:
        _, _, twiml = await post_voice(gateway, {"CallSid": "CA1"})
    assert stream_of(twiml)[0] == "wss://voice.example.com/gw/twilio"


async def test_webhook_needs_a_valid_signature_when_a_token_is_set() -> None:
    token, public = "s3cret", "https://voice.example.com"
    twilio = TwilioOptions(auth_token=token)
    form = {"CallSid": "CA7", "From": "+1555"}
    signed = twilio_signature(token, public + "/twilio/voice", {k: [v] for k, v in form.items()})
    async with running_gateway(ScriptedRunner(), twilio=twilio, public_url=public) as gateway:
        assert (await post_voice(gateway, form))[0] == 403
        assert (await post_voice(gateway, form, {"X-Twilio-Signature": "AAAA"}))[0] == 403
        tampered = {**form, "From": "+1666"}
        assert (await post_voice(gateway, tampered, {"X-Twilio-Signature": signed}))[0] == 403
        status, _, twiml = await post_voice(gateway, form, {"X-Twilio-Signature": signed})
    assert status == 200
    assert ("CallSid", "CA7") in stream_of(twiml)[1]


def test_signature_matches_twilios_published_vectors() -> None:
    # Vectors from Twilio's own helper-library test suite (twilio-python,
    # tests/unit/test_request_validator.py): token, URL and parameters, expected signature.
    url = "https://mycompany.com/myapp.php?foo=1&bar=2"
    form = {
        "CallSid": ["CA1234567890ABCDE"],
        "Digits": ["1234"],
        "From": ["+14158675309"],
        "To": ["+18005551212"],
        "Caller": ["+14158675309"],
    }
    assert twilio_signature("12345", url, form) == "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    repeated = {"Sid": ["CA123"], "SidAccount": ["AC123"], "Digits": ["5678", "1234"]}
    assert twilio_signature("12345", url, repeated) == "IK+Dwps556ElfBT0I3Rgjkr1wJU="
    # Twilio may sign with or without the default port; both spellings validate.
    assert signature_valid("12345", url, form, "kvajT1Ptam85bY51eRf/AJRuM3w=")
    assert signature_valid(
        "12345", url.replace(".com", ".com:1234"), form, "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    )
    assert not signature_valid("12345", url, form, "kvajT1Ptam85bY51eRf/AJRuM3x=")
    assert not signature_valid("54321", url, form, "RSOYDt4T1cUTdK1PDd93/VVr8B8=")


# --- WebSocket routing ---------------------------------------------------------------------------


async def test_twilio_route_hands_the_runner_a_twilio_codec() -> None:
    async with running_gateway(ScriptedRunner()) as gateway, call(gateway, "/twilio") as client:
        assert await receive_json(client) == {"dialect": "twilio"}
        await client.send(json.dumps(TWILIO_CONNECTED))
        await client.send(twilio_start("CA9", {"tenant": "acme"}))
        assert await receive_json(client) == {"event": "CallStarted"}
        assert await receive_json(client) == {"call_id": "CA9", "metadata": {"tenant": "acme"}}


async def test_browser_route_hands_the_runner_a_browser_codec_at_the_configured_rate() -> None:
    browser = BrowserOptions(output_sample_rate=24000)
    async with (
        running_gateway(ScriptedRunner(), browser=browser) as gateway,
        call(gateway, "/browser") as client,
    ):
        assert await receive_json(client) == {"dialect": "browser"}
        await client.send(json.dumps({"type": "start", "sampleRate": 16000}))
        assert await receive_json(client) == {"event": "CallStarted"}
        report = await receive_json(client)
        started = await receive_json(client)
    assert report["call_id"].startswith("browser-")
    assert started == {
        "type": "started",
        "version": 1,
        "callId": report["call_id"],
        "sampleRate": 24000,
    }


async def test_each_call_gets_its_own_id() -> None:
    async with running_gateway(ScriptedRunner()) as gateway:
        ids = []
        for _ in range(3):
            async with call(gateway, "/browser") as client:
                await receive_json(client)
                await client.send(json.dumps({"type": "start", "sampleRate": 8000}))
                await receive_json(client)
                ids.append((await receive_json(client))["call_id"])
    assert len(set(ids)) == 3


async def test_a_disabled_provider_has_no_routes() -> None:
    async with running_gateway(ScriptedRunner(), twilio=None) as gateway:
        assert (await post_voice(gateway, {"CallSid": "CA1"}))[0] == 404
        with pytest.raises(InvalidStatus) as refused:
            async with connect(ws_url(gateway, "/twilio"), open_timeout=10):
                pass
        assert refused.value.response.status_code == 404
        async with call(gateway, "/browser") as client:
            assert await receive_json(client) == {"dialect": "browser"}


async def test_a_plain_get_on_a_websocket_route_says_upgrade_required() -> None:
    async with running_gateway(ScriptedRunner()) as gateway, aiohttp.ClientSession() as session:
        async with session.get(gateway.base_url + "/browser") as reply:
            assert reply.status == 426
            assert "WebSocket" in await reply.text()
        assert gateway.calls.active == ()


def test_a_browser_output_rate_the_dialect_cannot_announce_is_refused_up_front() -> None:
    with pytest.raises(ConfigError, match="output_sample_rate must be one of"):
        BrowserOptions(output_sample_rate=11025)
