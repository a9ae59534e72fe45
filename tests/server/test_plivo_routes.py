"""Plivo routes: the answer webhook (V3 signatures, Plivo XML) and the stream key."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import xml.etree.ElementTree as ET

import aiohttp
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.server.server_kit import ScriptedRunner, receive_json, running_gateway, ws_url
from voicegate.errors import ConfigError
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.options import PlivoOptions
from voicegate.gateway.plivo_xml import header_text, signature_valid, stream_key, v3_signature

TOKEN = "my_auth_token"
NONCE = "05429567804466091622"
FORM = {"CallUUID": "abc-123", "From": "+14155550100", "To": "+14155550111"}
START = {
    "event": "start",
    "sequenceNumber": 1,
    "start": {
        "callId": "12345678-1234-1234-1234-123456789abc",
        "streamId": "87654321-4321-4321-4321-cba987654321",
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000},
    },
    "extra_headers": "tenant=acme",
}


def hmac_b64(message: str) -> str:
    digest = hmac.new(TOKEN.encode(), message.encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def test_v3_signature_signs_the_documented_layout() -> None:
    # URL with its query sorted, "." , the form sorted as name+value, ".", the nonce.
    url = "https://voice.example.com/plivo/answer?b=2&a=1"
    form = {"From": ["+1415"], "CallUUID": ["abc"]}
    expected = "https://voice.example.com/plivo/answer?a=1&b=2.CallUUIDabcFrom+1415." + NONCE
    assert v3_signature(TOKEN, url, form, NONCE) == hmac_b64(expected)
    # Without a query the form follows a bare "?"; without a form nothing is added.
    bare = "https://voice.example.com/plivo/answer"
    assert v3_signature(TOKEN, bare, form, NONCE) == hmac_b64(
        f"{bare}?CallUUIDabcFrom+1415.{NONCE}"
    )
    assert v3_signature(TOKEN, bare, {}, NONCE) == hmac_b64(f"{bare}.{NONCE}")


def test_any_of_several_signatures_may_match() -> None:
    url = "https://voice.example.com/plivo/answer"
    good = v3_signature(TOKEN, url, {}, NONCE)
    headers = {"X-Plivo-Signature-V3": f"bm90IGl0, {good}", "X-Plivo-Signature-V3-Nonce": NONCE}
    assert signature_valid(TOKEN, url, {}, headers)
    assert not signature_valid("other", url, {}, headers)
    assert not signature_valid(TOKEN, url, {}, {"X-Plivo-Signature-V3": good})


async def post_answer(gateway: Gateway, headers: dict[str, str]) -> tuple[int, str]:
    url = gateway.base_url + "/plivo/answer"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=FORM, headers=headers) as reply,
    ):
        return reply.status, await reply.text()


def stream_of(xml: str) -> tuple[str, dict[str, str]]:
    root = ET.fromstring(xml)
    (stream,) = list(root)
    assert (root.tag, stream.tag) == ("Response", "Stream")
    return str(stream.text), dict(stream.attrib)


async def test_answer_streams_the_call_bidirectionally_with_extra_headers() -> None:
    plivo = PlivoOptions(parameters={"tenant": "acme"}, content_type="audio/x-l16;rate=16000")
    async with running_gateway(ScriptedRunner(), plivo=plivo) as gateway:
        status, xml = await post_answer(gateway, {})
    assert status == 200
    url, attributes = stream_of(xml)
    assert url == f"ws://127.0.0.1:{gateway.port}/plivo"
    assert attributes == {
        "bidirectional": "true",
        "keepCallAlive": "true",
        "audioTrack": "inbound",
        "contentType": "audio/x-l16;rate=16000",
        "extraHeaders": "tenant=acme,From=14155550100,To=14155550111",
    }


async def test_a_signed_answer_carries_a_stream_key_the_stream_must_present() -> None:
    async with running_gateway(ScriptedRunner(), plivo=PlivoOptions(auth_token=TOKEN)) as gw:
        url = gw.base_url + "/plivo/answer"
        form = {name: [value] for name, value in FORM.items()}
        signed = {
            "X-Plivo-Signature-V3": v3_signature(TOKEN, url, form, NONCE),
            "X-Plivo-Signature-V3-Nonce": NONCE,
        }
        assert (await post_answer(gw, {}))[0] == 403
        assert (await post_answer(gw, {**signed, "X-Plivo-Signature-V3-Nonce": "1"}))[0] == 403
        status, xml = await post_answer(gw, signed)
        assert status == 200
        stream, _ = stream_of(xml)
        assert stream == ws_url(gw, "/plivo") + "?key=" + stream_key(TOKEN)
        assert TOKEN not in stream
        for bad in ("/plivo", "/plivo?key=guess"):
            with pytest.raises(InvalidStatus) as refused:
                async with connect(ws_url(gw, bad), open_timeout=10):
                    pass
            assert refused.value.response.status_code == 403
        async with connect(stream, open_timeout=10) as client:
            assert await receive_json(client) == {"dialect": "plivo"}


async def test_plivo_route_hands_the_runner_a_plivo_codec() -> None:
    async with (
        running_gateway(ScriptedRunner()) as gateway,
        connect(ws_url(gateway, "/plivo"), open_timeout=10) as client,
    ):
        assert await receive_json(client) == {"dialect": "plivo"}
        await client.send(json.dumps(START))
        assert await receive_json(client) == {"event": "CallStarted"}
        assert await receive_json(client) == {
            "call_id": "12345678-1234-1234-1234-123456789abc",
            "metadata": {"tenant": "acme"},
        }


async def test_disabled_plivo_has_no_routes() -> None:
    async with running_gateway(ScriptedRunner(), plivo=None) as gateway:
        assert (await post_answer(gateway, {}))[0] == 404


def test_plivo_options_are_checked_up_front() -> None:
    with pytest.raises(ConfigError, match="content_type must be one of"):
        PlivoOptions(content_type="audio/x-mulaw;rate=16000")
    with pytest.raises(ConfigError, match="letters and digits only"):
        PlivoOptions(parameters={"tenant": "acme-corp"})
    assert header_text("+1 (415) 555-0100") == "14155550100"
