"""A third-party project's `utter` triggers, end to end (fixtures/projects/spoke_rentals).

The skill.md reference: `on: activate` fires "when the skill becomes active", `when:` "the
first time the condition becomes true after a memory write", and "an entry may set both".
voicegate's reading of both (docs/contract-decisions.md): once per activation, at once when
the condition holds, else on the write that first makes it true.
"""

import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.loop.loop_kit import ROOT, Chat, said, started
from tests.loop.test_step_cancellation import StallingModel, interrupt

SPOKE = ROOT / "fixtures" / "projects" / "spoke_rentals"
INTRO = "Let's find you a bike."
EBIKE = "E-bikes need a charged battery check at pickup."
PERK = "Welcome back, plus member: your helmet is free."
LONG = "For 10 hours a day pass is cheaper."
BOOKED = "Booked: BK-ebike-10."
ANYTHING_ELSE = "Is there anything else I can help you with?"


def script(name: str) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = yaml.safe_load(Path(SPOKE / name).read_text())["turns"]
    return turns


async def test_on_activate_with_when_speaks_once_when_its_condition_first_holds() -> None:
    chat = await Chat(SPOKE, script("conversation_member.yml"), member_level="plus").open()

    first = await chat.send("I want to rent an e-bike")
    # The caller is not a verified member yet: the perk waits. The e-bike notice is not due
    # at activation (the skill's memory was just reset) but on the set_fields of the same
    # batch, and it is said once.
    assert said(first) == [INTRO, EBIKE, "For how many hours?"]

    await chat.send("I am a member")  # delegated to verify_member
    third = await chat.send("M-123")
    # verify_member wrote project.is_member; rent_bike resumed and its perk became due
    assert said(third) == [PERK, "You are verified."]
    assert chat.stack == ["rent_bike"]

    fourth = await chat.send("ten hours")
    # the `when:` of set_fields(hours) speaks before book_bike's on_success, in call order
    assert started(fourth) == ["book_bike"]
    assert said(fourth) == [LONG, BOOKED, ANYTHING_ELSE]
    assert chat.stack == []


async def test_a_condition_that_holds_at_activation_speaks_then_and_not_again() -> None:
    turns = script("conversation_member.yml")
    again = [
        {
            "user_matches": "another",
            "steps": [
                {"calls": [{"activate": {"flow_id": "rent_bike"}}]},
                {"calls": [{"set_fields": {"bike_type": "city"}}], "say": "How long?"},
            ],
        },
        {
            "user_matches": "two",
            "steps": [
                {"calls": [{"set_fields": {"bike_type": "ebike", "hours": 2}}]},
                {"say": "Noted."},
            ],
        },
    ]
    chat = await Chat(SPOKE, [*turns, *again], member_level="plus").open()
    for line in ("I want to rent an e-bike", "I am a member", "M-123", "ten hours"):
        await chat.send(line)

    fifth = await chat.send("another one please")
    # a new activation: the caller is a member by now, so the perk is said at once
    assert said(fifth) == [INTRO, PERK, "How long?"]
    sixth = await chat.send("two hours, an e-bike after all")
    # the perk does not repeat; the e-bike notice is due for the first time in this activation
    assert said(sixth) == [EBIKE, "Noted."]


async def test_the_caller_hears_a_tool_result_before_the_completion_question() -> None:
    # return_bike's write completes the skill (complete_when). Its result is "what the LLM
    # reads" (tools reference) and no on_success presents it, so the model answers first.
    chat = await Chat(SPOKE, script("conversation_return.yml")).open()
    events = await chat.send("I want to return my bike, BK-ebike-10")
    assert started(events) == ["return_bike"]
    assert said(events) == ["You're 4 euros late, sorry.", ANYTHING_ELSE]
    assert chat.stack == []
    assert chat.requests == 2  # the tool batch, then the answer; not asked again after it


async def test_a_reworded_resume_offer_names_the_paused_skill() -> None:
    # responses.yml rewords the engine's utter_ask_wants_to_continue with the {skill} the
    # engine fills; it was refused at load ("names no readable memory field")
    chat = await Chat(SPOKE, script("conversation_digression.yml")).open()
    await chat.send("I'd like to rent a bike")
    second = await chat.send("wait, when are you open?")
    assert said(second) == ["We are open 9 to 18 every day.", "Shall we get back to Rent a bike?"]
    third = await chat.send("yes please")
    assert said(third) == ["Which bike then?"]  # resumed: no on: activate responses again
    assert chat.stack == ["rent_bike"]


async def test_a_response_named_by_two_entries_fires_on_each_condition(tmp_path: Path) -> None:
    root = tmp_path / "spoke_rentals"
    shutil.copytree(SPOKE, root)
    skill = root / "skills" / "rent_bike" / "skill.md"
    entry = "  - utter_long_rental: {when: session.rent_bike.hours >= 8}\n"
    second = "  - utter_long_rental: {when: session.rent_bike.bike_type == 'mountain'}\n"
    skill.write_text(skill.read_text().replace(entry, entry + second))
    turns = [
        {
            "steps": [
                {"calls": [{"activate": {"flow_id": "rent_bike"}}, {"set_fields": {"hours": 9}}]},
                {"say": "Which bike?"},
            ]
        },
        {"steps": [{"calls": [{"set_fields": {"bike_type": "mountain"}}]}, {"say": "Noted."}]},
    ]
    chat = await Chat(root, turns).open()
    first = await chat.send("a bike for nine hours")
    assert said(first) == [INTRO, "For 9 hours a day pass is cheaper.", "Which bike?"]
    second_turn = await chat.send("a mountain bike")
    # the second entry has its own state: it was not taken as already spoken
    assert said(second_turn) == ["For 9 hours a day pass is cheaper.", "Noted."]


async def test_an_instructions_step_lets_the_model_tell_the_result_before_moving_on() -> None:
    # find_booking's write makes the step's complete_when true; the step's instructions ask
    # the model to tell the caller what it found, so the block goes on after its answer
    chat = await Chat(SPOKE, script("conversation_status.yml")).open()
    await chat.send("is my bike ready?")
    events = await chat.send("it's BK-city-2")
    assert started(events) == ["find_booking"]
    assert said(events) == [
        "Your bike is ready at Canal Street.",
        "Please bring an ID to the pickup.",
        ANYTHING_ELSE,
    ]
    assert chat.stack == []


async def test_a_barge_in_before_the_result_was_told_leaves_the_callers_words_to_the_model() -> (
    None
):
    # The caller cuts in while the model prepares the fee: the completion waited for that
    # answer, so the next turn finds it due. It completes without "anything else?" (which
    # would drop the caller's words) and the model answers.
    model = StallingModel(script("conversation_return.yml"), stall_on={2})
    chat = await Chat(SPOKE, [], llm=model).open()
    await interrupt(chat, "I want to return my bike, BK-ebike-10", model.stalled)
    assert chat.memory("return_bike.late_fee") == 4.0
    again = await chat.send("hello? how much do I owe?")
    assert said(again) == ["You're 4 euros late, sorry."]
    assert chat.stack == []
    assert chat.requests == 3
