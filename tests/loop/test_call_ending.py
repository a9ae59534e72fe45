"""Hang-up and transfer responses (docs/contract-decisions.md, "Hang-up and transfer").

A response whose variant says ``end_call: true`` or ``transfer_to`` ends the call once it was
said: the turn emits ``EndCall`` after the response's sentences, says nothing more (not even
the completion question) and asks the model nothing more.
"""

from __future__ import annotations

from pathlib import Path

from tests.loop.loop_kit import AGENT, Chat, said, skill_md, write_project
from voicegate.engine.seam import CallInfo, EndCall, Transcript, TurnEnded, event_record
from voicegate.gateway.dialogue import DialoguePlane, ThreadedEngine

ONE_ACTION = ":::ordered_block id=main\nsteps:\n  - id: say\n    action: {}\n:::\n"
PROJECT = {
    "agent.yml": AGENT,
    "responses.yml": (
        "responses:\n"
        "  utter_bye:\n"
        "    - text: Goodbye. Take care.\n"
        "      metadata: {end_call: true}\n"
        "  utter_transfer:\n"
        "    - text: Connecting you now.\n"
        "      condition: session.project.vip == true\n"
        "      metadata: {transfer_to: 'sip:vip@example.com'}\n"
        "    - text: Connecting you now.\n"
        "      metadata: {transfer_to: '+15550100'}\n"
    ),
    "memory.yml": "vip:\n  type: bool\n",
    "skills/bye/skill.md": skill_md("", ONE_ACTION.format("utter_bye"), name="Bye"),
    "skills/agent/skill.md": skill_md("", ONE_ACTION.format("utter_transfer"), name="Agent"),
}


async def test_an_end_call_response_ends_the_turn_after_its_words(tmp_path: Path) -> None:
    chat = await Chat(
        write_project(tmp_path, PROJECT),
        [{"calls": [{"activate": {"flow_id": "bye"}}]}, {"say": "never asked"}],
    ).open()
    events = await chat.send("bye")
    # Its sentences, then EndCall, then the end of the turn: no "anything else?" after it.
    assert said(events) == ["Goodbye.", "Take care."]
    assert [type(e).__name__ for e in events[-2:]] == ["EndCall", "TurnEnded"]
    assert events[-2] == EndCall(events[-1].turn_id, "")
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].reason == "completed"
    assert chat.requests == 1  # the model was not asked again once the call was ending
    assert event_record(events[-2]) == {"event": "end_call", "turn_id": events[-1].turn_id}


async def test_a_transfer_response_names_its_destination(tmp_path: Path) -> None:
    chat = await Chat(
        write_project(tmp_path, PROJECT),
        [{"calls": [{"activate": {"flow_id": "agent"}}]}],
    ).open()
    events = await chat.send("a person please")
    ending = [e for e in events if isinstance(e, EndCall)]
    assert [e.transfer_to for e in ending] == ["+15550100"]
    assert event_record(ending[0])["transfer_to"] == "+15550100"


async def test_end_call_crosses_the_dialogue_plane(tmp_path: Path) -> None:
    # The gateway runs the engine on its own thread (gateway/dialogue.py): EndCall reaches the
    # media loop like any other event, in order, before the turn's end.
    chat = Chat(write_project(tmp_path, PROJECT), [{"calls": [{"activate": {"flow_id": "bye"}}]}])
    plane = DialoguePlane()
    plane.start()
    try:
        threaded = ThreadedEngine(chat.engine, plane)
        await threaded.open(CallInfo("c1"))
        async with threaded.turn("c1", Transcript("bye")) as stream:
            events = [event async for event in stream]
        await threaded.close("c1")
    finally:
        plane.stop()
    assert [type(e).__name__ for e in events] == ["Say", "Say", "EndCall", "TurnEnded"]
    assert events[2] == EndCall(stream.turn_id, "")
