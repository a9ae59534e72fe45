"""TwiML for Twilio ConversationRelay: the voice webhook's answer and the ``<Connect action>``.

The answer connects the call to this gateway's ``/conversationrelay`` socket:
``<Connect action="..."><ConversationRelay url="wss://..." ...attributes><Parameter .../>
</ConversationRelay></Connect>`` (https://www.twilio.com/docs/voice/twiml/connect/conversationrelay;
the attributes, e.g. ``welcomeGreeting``, ``voice``, ``language``, ``interruptible``,
``dtmfDetection``, come from ``providers.twilio.conversationrelay.attributes``). Parameters
come back in ``setup`` as ``customParameters``, the stream token among them.

When the session ends Twilio requests the ``<Connect action>`` URL with its usual parameters
and, when the gateway's ``end`` carried it, ``HandoffData``
(https://www.twilio.com/docs/voice/twiml/connect#action: without an action the call moves on
to the next verb, and with none it ends). voicegate's ``end`` says ``transferTo`` for a
transfer (codecs/conversationrelay.py); the action answers with a ``<Dial>`` to it, and
otherwise with ``<Hangup/>``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping

from aiohttp import web

from voicegate.codecs.conversationrelay import HANDOFF_TRANSFER
from voicegate.gateway.twiml import dial_twiml, xml_attribute

log = logging.getLogger(__name__)

STREAM_PATH = "/conversationrelay"
WEBHOOK_PATH = "/conversationrelay/voice"
ACTION_PATH = "/conversationrelay/action"


def connect_relay_twiml(
    socket_url: str,
    action_url: str,
    attributes: Mapping[str, str],
    parameters: Iterable[tuple[str, str]],
) -> str:
    """A TwiML document connecting the call to a ConversationRelay session on this gateway."""
    extra = "".join(f" {name}={xml_attribute(value)}" for name, value in attributes.items())
    parameter_lines = [
        f"      <Parameter name={xml_attribute(name)} value={xml_attribute(value)}/>"
        for name, value in parameters
    ]
    return "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-8"?>',
            "<Response>",
            f"  <Connect action={xml_attribute(action_url)}>",
            f"    <ConversationRelay url={xml_attribute(socket_url)}{extra}>",
            *parameter_lines,
            "    </ConversationRelay>",
            "  </Connect>",
            "</Response>",
            "",
        ]
    )


def handoff_twiml(handoff_data: str | None) -> str:
    """The action's answer: ``<Dial>`` where the agent transferred the call, else hang up."""
    target = _transfer_target(handoff_data)
    return dial_twiml(target) if target else "<Response><Hangup/></Response>"


def _transfer_target(handoff_data: str | None) -> str:
    """``transferTo`` of voicegate's own handoff data; "" for anything else."""
    if not handoff_data:
        return ""
    try:
        data = json.loads(handoff_data)
    except ValueError:
        log.warning("conversationrelay action: HandoffData is not JSON: %.80r", handoff_data)
        return ""
    if not isinstance(data, dict) or data.get("reasonCode") != HANDOFF_TRANSFER:
        return ""
    target = data.get("transferTo")
    return target if isinstance(target, str) else ""


def twiml_response(text: str) -> web.Response:
    """An XML answer to Twilio."""
    return web.Response(text=text, content_type="text/xml")
