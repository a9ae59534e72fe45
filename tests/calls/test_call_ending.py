"""The agent ends the call (issue 16): through a real gateway, after the goodbye was heard.

fixtures/projects/goodbye: its goodbye response carries ``end_call``, its transfer response
``transfer_to``. The caller is the emulated Twilio caller (marks echoed as audio plays); the
REST hang-up and transfer go to a loopback HTTP server standing in for Twilio's API.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.calls.call_kit import ROOT, gateway_for, script_of
from tests.calls.test_bargein_calls import BALANCE, CALL_SID, INTERRUPTION, cue, first, records
from tests.server.test_call_control import fake_api
from voicegate.callers.browser import BrowserCaller
from voicegate.callers.driver import drive
from voicegate.callers.freeswitch import FreeSwitchCaller
from voicegate.callers.jambonz import JambonzCaller
from voicegate.callers.script import CallerScript
from voicegate.callers.twilio import TwilioCaller
from voicegate.codecs.jambonz import DISCONNECT
from voicegate.gateway.call_ending import (
    CallControlCredentials,
    CallControlSettings,
    ProviderCallControl,
)
from voicegate.gateway.session import CallServices

GOODBYE = ROOT / "fixtures" / "projects" / "goodbye"
JAMBONZ_SID = "1a2b0000-0000-4000-8000-0000000000e1"
ACCOUNT_SID = "AC00000000000000000000000000000042"


def _heard_everything(timeline: list[dict[str, Any]]) -> None:
    """The hang-up came after the caller had heard the whole goodbye (its last mark)."""
    ending = first(timeline, "call_ending")
    last_mark = max(r["t_ms"] for r in timeline if r["event"] == "mark_played")
    assert ending["t_ms"] >= last_mark
    heard = first(timeline, "heard", turn_id="t1")
    assert heard["interrupted"] is False


async def test_a_goodbye_hangs_up_once_heard_by_closing_the_socket(tmp_path: Path) -> None:
    async with gateway_for(tmp_path, ["goodbye"], project=GOODBYE) as world:
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=30_000))
        # The caller would stay 30 s more: the gateway closes first, normally.
        assert await drive(world.url, caller, speed=4.0, max_ms=60_000) == 1000
    timeline = records(world)
    _heard_everything(timeline)
    assert first(timeline, "heard", turn_id="t1")["text"] == "Thank you for calling. Goodbye!"
    ended = first(timeline, "call_ended_by_agent")
    assert (ended["action"], ended["via"]) == ("hangup", "socket")


async def test_a_transfer_updates_the_twilio_call_with_a_dial_then_closes(tmp_path: Path) -> None:
    async with fake_api() as (api, seen):
        control = ProviderCallControl(
            CallControlSettings(twilio_api=api, timeout_s=5),
            CallControlCredentials(twilio_auth_token="tok"),
        )
        async with gateway_for(
            tmp_path,
            ["a person please"],
            project=GOODBYE,
            conversation="conversation_transfer.yml",
        ) as world:
            services: CallServices = world.runner.services
            object.__setattr__(services, "call_control", control)  # frozen: set for this test
            caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=30_000))
            assert await drive(world.url, caller, speed=4.0, max_ms=60_000) == 1000
    timeline = records(world)
    _heard_everything(timeline)
    ended = first(timeline, "call_ended_by_agent")
    assert (ended["action"], ended["via"]) == ("transfer", "api")
    basic = "Basic " + base64.b64encode(f"{ACCOUNT_SID}:tok".encode()).decode()
    assert seen == [
        {
            "method": "POST",
            "path": f"/Accounts/{ACCOUNT_SID}/Calls/{CALL_SID}.json",
            "authorization": basic,
            "body": None,
            "form": {"Twiml": "<Response><Dial>+15550100</Dial></Response>"},
        }
    ]


async def test_a_browser_hears_the_goodbye_then_a_stop_that_says_why(tmp_path: Path) -> None:
    async with gateway_for(tmp_path, ["goodbye"], project=GOODBYE) as world:
        balance = cue(BALANCE, at_ms=300)  # 8 kHz: the browser captures at 8 kHz here
        caller = BrowserCaller(CallerScript([balance], 8000, tail_ms=30_000))
        browser_url = world.url.removesuffix("/twilio") + "/browser"
        assert await drive(browser_url, caller, speed=4.0, max_ms=60_000) == 1000
    assert caller.stopped_reason == "the agent ended the call"
    timeline = world.runner.timeline(caller.call_id)
    assert timeline is not None
    ended = first(list(timeline.records), "call_ended_by_agent")
    assert (ended["action"], ended["via"]) == ("hangup", "stop")


async def test_a_barge_in_into_the_goodbye_keeps_the_call_going(tmp_path: Path) -> None:
    async with gateway_for(
        tmp_path,
        ["goodbye", "wait, one more thing"],
        project=GOODBYE,
        conversation="conversation_twice.yml",
    ) as world:
        barge = cue(INTERRUPTION, after_bot_speech=1, delay_ms=400)
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), barge, tail_ms=30_000))
        assert await drive(world.url, caller, speed=4.0, max_ms=60_000) == 1000
    timeline = records(world)
    # The first goodbye was cut short: no hang-up then; the second was heard, and ended it.
    assert first(timeline, "heard", turn_id="t1")["interrupted"] is True
    ending = first(timeline, "call_ending")
    assert ending["t_ms"] > first(timeline, "turn_started", turn_id="t2")["t_ms"]
    assert [r["event"] for r in timeline].count("call_ending") == 1
    assert first(timeline, "heard", turn_id="t2")["interrupted"] is False


@pytest.mark.parametrize("dialect", ["jambonz", "freeswitch"])
async def test_without_acknowledgements_the_playout_clock_says_when_to_hang_up(
    tmp_path: Path, dialect: str
) -> None:
    # Jambonz and FreeSWITCH's mod_audio_fork acknowledge no playback: the goodbye's marks
    # fall due on the playout clock, and the gateway sends `disconnect` once they have.
    script = script_of(cue(BALANCE, at_ms=300), tail_ms=30_000)
    caller = (
        JambonzCaller(script, call_sid=JAMBONZ_SID)
        if dialect == "jambonz"
        else FreeSwitchCaller(script, uuid=JAMBONZ_SID)
    )
    async with gateway_for(tmp_path, ["goodbye"], project=GOODBYE) as world:
        url = world.url.removesuffix("/twilio") + "/" + dialect
        code = await drive(url, caller, speed=4.0, max_ms=60_000, subprotocols=caller.subprotocols)
        assert code == 1000
    assert caller.disconnected_ms is not None  # the provider got the hang-up request
    timeline_of = world.runner.timeline(JAMBONZ_SID)
    assert timeline_of is not None
    timeline = list(timeline_of.records)
    ending = first(timeline, "call_ending")
    marks = [r for r in timeline if r["event"] == "mark_played"]
    assert marks
    assert all(r.get("estimated") for r in marks)
    assert ending["t_ms"] >= marks[-1]["t_ms"]
    ended = first(timeline, "call_ended_by_agent")
    assert (ended["action"], ended["via"]) == ("hangup", DISCONNECT)


async def test_a_transfer_over_freeswitch_asks_the_dialplan_to_transfer(tmp_path: Path) -> None:
    # mod_audio_fork has no transfer of its own: voicegate sends the README's `transfer`
    # message once the words were heard, and the dialplan's hook transfers the call.
    async with gateway_for(
        tmp_path, ["a person please"], project=GOODBYE, conversation="conversation_transfer.yml"
    ) as world:
        caller = FreeSwitchCaller(
            script_of(cue(BALANCE, at_ms=300), tail_ms=30_000), uuid=JAMBONZ_SID
        )
        url = world.url.removesuffix("/twilio") + "/freeswitch"
        code = await drive(url, caller, speed=4.0, max_ms=60_000, subprotocols=caller.subprotocols)
        assert code == 1000
    assert caller.transferred_to == "+15550100"
    timeline_of = world.runner.timeline(JAMBONZ_SID)
    assert timeline_of is not None
    timeline = list(timeline_of.records)
    ending = first(timeline, "call_ending")
    assert (ending["action"], ending["transfer_to"]) == ("transfer", "+15550100")
    marks = [r for r in timeline if r["event"] == "mark_played"]
    assert ending["t_ms"] >= marks[-1]["t_ms"]
    ended = first(timeline, "call_ended_by_agent")
    assert (ended["action"], ended["via"]) == ("transfer", '{"type":"transfer"}')
