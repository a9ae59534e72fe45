"""``set:`` button taps write memory without the model (contract §2.7, §7.1)."""

from tests.loop.loop_kit import ADA_PHONE, CARD_SERVICES, Chat, said, started
from tests.loop.test_skills import ANYTHING_ELSE, AUTH, verified
from voicegate.engine.history import UserUttered
from voicegate.engine.llm.port import UserMessage
from voicegate.engine.seam import ButtonPress

TRAVEL = [
    *AUTH,
    {
        "calls": [
            {"activate": {"flow_id": "travel_notice"}},
            {"activate": {"flow_id": "travel_notice__register_notice"}},
        ]
    },
    {"calls": [{"set_fields": {"destination": "Japan"}}]},
    {"calls": [{"set_fields": {"travel_dates": "May 1 to May 9"}}]},
]


async def at_the_contact_question() -> Chat:
    chat = await Chat(CARD_SERVICES, TRAVEL, caller_phone=ADA_PHONE).open()
    await verified(chat)
    await chat.send("I'm travelling")
    await chat.send("Japan")
    await chat.send("May first to May ninth")
    return chat


async def test_a_set_tap_writes_the_field_and_the_block_goes_on_without_the_model() -> None:
    chat = await at_the_contact_question()
    requests = chat.requests
    tapped = await chat.send(ButtonPress("set:session.travel_notice.contact_confirmed=true", "Yes"))
    assert chat.memory("travel_notice.contact_confirmed") is True
    assert started(tapped) == ["register_travel_notice"]
    assert said(tapped)[-1] == ANYTHING_ELSE
    assert chat.requests == requests  # no model call at all
    # the raw payload is kept out of what the model reads: the title stands for it
    assert [e.text for e in chat.history() if isinstance(e, UserUttered)][-1] == "Yes"
    await chat.send("thanks")
    assert UserMessage("Yes") in chat.model.requests[-1]


async def test_a_stale_tap_is_skipped_with_a_notice() -> None:
    chat = await at_the_contact_question()
    requests = chat.requests
    stale = await chat.send(ButtonPress("set:session.card_replace.shipping_type=express"))
    assert said(stale) == ["That option is no longer available.", "What would you like to do?"]
    assert chat.memory("card_replace.shipping_type") is None
    assert chat.requests == requests
    wrong_value = await chat.send(ButtonPress("set:session.travel_notice.contact_confirmed=maybe"))
    assert said(wrong_value) == said(stale)
    assert chat.memory("travel_notice.contact_confirmed") is None
