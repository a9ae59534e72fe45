"""Telnyx routes: the TeXML webhook (Ed25519 signatures) and the stream (auth token)."""

from __future__ import annotations

import base64
import json
import time
import xml.etree.ElementTree as ET
from urllib.parse import urlencode

import aiohttp
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.server.server_kit import ScriptedRunner, receive_json, running_gateway, ws_url
from voicegate.errors import ConfigError
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.options import TelnyxOptions
from voicegate.gateway.telnyx_texml import public_key, signature_problem

FORM = {"CallSid": "v3:abc", "From": "+13122010094", "To": "+13122123456", "Extra": "x"}
START = {
    "event": "start",
    "sequence_number": "1",
    "stream_id": "32DE0DEA-53CB-4B21-89A4-9E1819C043BC",
    "start": {
        "call_control_id": "v3:abc",
        "custom_parameters": {"tenant": "acme"},
        "media_format": {"encoding": "PCMU", "sample_rate": 8000, "channels": 1},
    },
}


def keypair() -> tuple[Ed25519PrivateKey, str]:
    """A private key and the base64 public key as the portal shows it."""
    private = Ed25519PrivateKey.generate()
    raw = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return private, base64.b64encode(raw).decode()


def signed(private: Ed25519PrivateKey, body: bytes, at: int) -> dict[str, str]:
    """The headers Telnyx sends: the signature of ``timestamp|body`` and the timestamp."""
    signature = private.sign(f"{at}|".encode() + body)
    return {
        "telnyx-signature-ed25519": base64.b64encode(signature).decode(),
        "telnyx-timestamp": str(at),
    }


async def post_texml(gateway: Gateway, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    headers = {"Content-Type": "application/x-www-form-urlencoded", **headers}
    url = gateway.base_url + "/telnyx/texml"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers=headers) as reply,
    ):
        return reply.status, await reply.text()


async def test_texml_connects_a_bidirectional_rtp_stream_with_parameters() -> None:
    telnyx = TelnyxOptions(parameters={"tenant": "acme"}, bidirectional_codec="PCMA")
    async with running_gateway(ScriptedRunner(), telnyx=telnyx) as gateway:
        status, texml = await post_texml(gateway, urlencode(FORM).encode(), {})
    assert status == 200
    root = ET.fromstring(texml)
    (connect_verb,) = list(root)
    (stream,) = list(connect_verb)
    assert (root.tag, connect_verb.tag, stream.tag) == ("Response", "Connect", "Stream")
    assert stream.attrib == {
        "url": f"ws://127.0.0.1:{gateway.port}/telnyx",
        "bidirectionalMode": "rtp",
        "bidirectionalCodec": "PCMA",
        "bidirectionalSamplingRate": "8000",
    }
    parameters = [(p.attrib["name"], p.attrib["value"]) for p in stream]
    assert parameters == [
        ("tenant", "acme"),
        ("CallSid", "v3:abc"),
        ("From", "+13122010094"),
        ("To", "+13122123456"),
    ]


async def test_texml_webhook_needs_a_fresh_valid_signature_when_a_key_is_set() -> None:
    private, encoded = keypair()
    body = urlencode(FORM).encode()
    now = int(time.time())
    async with running_gateway(ScriptedRunner(), telnyx=TelnyxOptions(public_key=encoded)) as gw:
        assert (await post_texml(gw, body, signed(private, body, now)))[0] == 200
        assert (await post_texml(gw, body, {}))[0] == 403
        assert (await post_texml(gw, body + b"&x=1", signed(private, body, now)))[0] == 403
        assert (await post_texml(gw, body, signed(private, body, now - 3600)))[0] == 403
        other, _ = keypair()
        status, text = await post_texml(gw, body, signed(other, body, now))
    assert status == 403
    assert "does not match" in text


def test_signature_problems_are_named() -> None:
    private, encoded = keypair()
    key = public_key(encoded)
    body = b"CallSid=v3%3Aabc"
    headers = signed(private, body, 1_700_000_000)
    assert signature_problem(key, body, headers, now_s=1_700_000_100) is None
    assert "300 s" in str(signature_problem(key, body, headers, now_s=1_700_000_301))
    bad_time = {**headers, "telnyx-timestamp": "soon"}
    assert "not a Unix time" in str(signature_problem(key, body, bad_time, now_s=0))
    bad_b64 = {**headers, "telnyx-signature-ed25519": "!!"}
    assert "does not match" in str(signature_problem(key, body, bad_b64, now_s=1_700_000_000))


@pytest.mark.parametrize("encoded", ["not base64!", base64.b64encode(b"short").decode()])
def test_a_malformed_public_key_is_refused_up_front(encoded: str) -> None:
    with pytest.raises(ConfigError, match="telnyx public key"):
        TelnyxOptions(public_key=encoded)


def test_an_outbound_codec_telnyx_cannot_take_is_refused_up_front() -> None:
    with pytest.raises(ConfigError, match="bidirectional_codec must be one of"):
        TelnyxOptions(bidirectional_codec="OPUS")
    with pytest.raises(ConfigError, match="sampling rate"):
        TelnyxOptions(bidirectional_sampling_rate=11025)


async def test_telnyx_route_hands_the_runner_a_telnyx_codec() -> None:
    async with (
        running_gateway(ScriptedRunner()) as gateway,
        connect(ws_url(gateway, "/telnyx"), open_timeout=10) as client,
    ):
        assert await receive_json(client) == {"dialect": "telnyx"}
        await client.send(json.dumps({"event": "connected", "version": "1.0.0"}))
        await client.send(json.dumps(START))
        assert await receive_json(client) == {"event": "CallStarted"}
        assert await receive_json(client) == {"call_id": "v3:abc", "metadata": {"tenant": "acme"}}


async def test_the_stream_needs_the_auth_token_when_one_is_set() -> None:
    telnyx = TelnyxOptions(stream_auth_token="s3cret")
    async with running_gateway(ScriptedRunner(), telnyx=telnyx) as gateway:
        url = ws_url(gateway, "/telnyx")
        for headers in ({}, {"x-telnyx-streaming-auth-token": "guess"}):
            with pytest.raises(InvalidStatus) as refused:
                async with connect(url, open_timeout=10, additional_headers=headers):
                    pass
            assert refused.value.response.status_code == 403
        token = {"x-telnyx-streaming-auth-token": "s3cret"}
        async with connect(url, open_timeout=10, additional_headers=token) as client:
            assert await receive_json(client) == {"dialect": "telnyx"}


async def test_disabled_telnyx_has_no_routes() -> None:
    async with running_gateway(ScriptedRunner(), telnyx=None) as gateway:
        assert (await post_texml(gateway, b"", {}))[0] == 404
        with pytest.raises(InvalidStatus) as refused:
            async with connect(ws_url(gateway, "/telnyx"), open_timeout=10):
                pass
        assert refused.value.response.status_code == 404
