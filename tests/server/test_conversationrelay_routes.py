"""ConversationRelay's HTTP routes: the TwiML answer and the ``<Connect action>``, on loopback."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import aiohttp
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.server.server_kit import ScriptedRunner, running_gateway, ws_url
from voicegate.codecs.conversationrelay import handoff_data
from voicegate.config.settings import ConversationRelaySettings
from voicegate.errors import ConfigError
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.options import TwilioOptions
from voicegate.gateway.twiml import twilio_signature

ATTRIBUTES = {"welcomeGreeting": 'Hi "there" & welcome', "dtmfDetection": "true"}


async def post(
    gateway: Gateway, path: str, form: dict[str, str], headers: dict[str, str] | None = None
) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(gateway.base_url + path, data=form, headers=headers or {}) as reply,
    ):
        return reply.status, await reply.text()


async def test_the_answer_connects_a_relay_with_the_configured_attributes() -> None:
    twilio = TwilioOptions(parameters={"tenant": "acme"}, relay_attributes=ATTRIBUTES)
    async with running_gateway(ScriptedRunner(), twilio=twilio) as gateway:
        status, twiml = await post(gateway, "/conversationrelay/voice", {"CallSid": "CA1"})
    assert status == 200
    root = ET.fromstring(twiml)
    (connect_verb,) = list(root)
    base = f"127.0.0.1:{gateway.port}"
    assert connect_verb.attrib == {"action": f"http://{base}/conversationrelay/action"}
    (relay,) = list(connect_verb)
    assert relay.tag == "ConversationRelay"
    assert relay.attrib == {"url": f"ws://{base}/conversationrelay", **ATTRIBUTES}
    assert [(p.attrib["name"], p.attrib["value"]) for p in relay] == [
        ("tenant", "acme"),
        ("CallSid", "CA1"),
    ]


@pytest.mark.parametrize(
    ("handoff", "expected"),
    [
        (handoff_data("transferred", "+15550100"), "<Response><Dial>+15550100</Dial></Response>"),
        (
            handoff_data("transferred", "sip:desk@example.com"),
            "<Response><Dial><Sip>sip:desk@example.com</Sip></Dial></Response>",
        ),
        (handoff_data("the agent ended the call", ""), "<Response><Hangup/></Response>"),
        (None, "<Response><Hangup/></Response>"),
        ("not json", "<Response><Hangup/></Response>"),
    ],
)
async def test_the_action_dials_a_transfer_or_hangs_up(
    handoff: dict[str, str] | str | None, expected: str
) -> None:
    form = {"CallSid": "CA1", "SessionStatus": "ended"}
    if handoff is not None:
        form["HandoffData"] = handoff if isinstance(handoff, str) else json.dumps(handoff)
    async with running_gateway(ScriptedRunner()) as gateway:
        status, twiml = await post(gateway, "/conversationrelay/action", form)
    assert (status, twiml) == (200, expected)


async def test_both_webhooks_and_the_socket_need_twilios_signature() -> None:
    token, public = "s3cret", "https://voice.example.com"
    twilio = TwilioOptions(auth_token=token)
    form = {"CallSid": "CA7"}
    fields = {k: [v] for k, v in form.items()}
    async with running_gateway(ScriptedRunner(), twilio=twilio, public_url=public) as gateway:
        for path in ("/conversationrelay/voice", "/conversationrelay/action"):
            assert (await post(gateway, path, form))[0] == 403
            signed = twilio_signature(token, public + path, fields)
            ok = await post(gateway, path, form, {"X-Twilio-Signature": signed})
            assert ok[0] == 200
        with pytest.raises(InvalidStatus) as refused:
            async with connect(ws_url(gateway, "/conversationrelay")):
                pass
    assert refused.value.response.status_code == 403


async def test_disabled_relay_routes_answer_404() -> None:
    twilio = TwilioOptions(relay_attributes=None)
    async with running_gateway(ScriptedRunner(), twilio=twilio) as gateway:
        assert (await post(gateway, "/conversationrelay/voice", {}))[0] == 404


def test_attribute_names_are_checked_up_front() -> None:
    with pytest.raises(ConfigError, match="not a <ConversationRelay> attribute"):
        ConversationRelaySettings(attributes={"url": "wss://elsewhere"})
    with pytest.raises(ConfigError, match="not a <ConversationRelay> attribute"):
        ConversationRelaySettings(attributes={'x" onload="': "1"})
