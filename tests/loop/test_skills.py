"""Skills on the stack (contract §5): routing, requires, disabled, blocks-only entry blocks with
branches, delegation with automatic resume, digressions with a resume offer, utter triggers.

The conversations run the card_services fixture, a project written to the Mantle contract.
"""

from typing import Any

from tests.loop.loop_kit import ADA_PHONE, CARD_SERVICES, Chat, ended, said, started
from voicegate.engine.loop import snapshot
from voicegate.engine.seam import ToolStarted

#: Turns that verify Ada: authenticate asks for her date of birth, then checks it.
AUTH = [
    {"calls": [{"activate": {"flow_id": "authenticate"}}]},
    {"calls": [{"set_fields": {"date_of_birth": "1990-04-01"}}]},
]
VERIFY_INTRO = "Before we look at your cards, I need to confirm it's you."
ASK_BIRTHDAY = "What is your date of birth?"
ANYTHING_ELSE = "Is there anything else I can help you with?"


async def chat_with(*turns: dict[str, Any]) -> Chat:
    """A call from Ada whose model plays the authentication turns, then ``turns``."""
    return await Chat(CARD_SERVICES, [*AUTH, *turns], caller_phone=ADA_PHONE).open()


async def verified(chat: Chat) -> None:
    await chat.send("I need help with my card")
    await chat.send("April first, 1990")


def startable(chat: Chat, request: int = -1) -> list[str]:
    flow_id = chat.tool_spec("activate", request).parameters["properties"]["flow_id"]
    return list(flow_id["enum"])


async def test_routing_offers_only_eligible_flows_and_a_blocks_only_skill_runs_main() -> None:
    chat = await chat_with()
    first = await chat.send("I need help with my card")
    # requires: unmet (card_replace, check_balance, travel_notice), disabled (gift_cards) and
    # engine-managed (default_session_start) skills are not on the menu
    assert startable(chat, 0) == ["authenticate"]
    assert said(first) == [VERIFY_INTRO, ASK_BIRTHDAY]  # utter on: activate, then the collect
    assert chat.stack == ["authenticate"]

    second = await chat.send("April first, 1990")
    # a guided-collect call: set_fields offered, listen withheld
    assert "set_fields" in chat.tools()
    assert "listen" not in chat.tools()
    assert "Collect `date_of_birth`" in chat.prompt()
    verify = next(event for event in second if isinstance(event, ToolStarted))
    assert verify.arguments == {"date_of_birth": "1990-04-01", "phone": ADA_PHONE}
    assert said(second) == ["Thanks, you're verified.", ANYTHING_ELSE]
    assert chat.memory("project.authenticated") is True
    assert chat.stack == []
    assert chat.flow_events() == [
        ("skill_activated", "authenticate", ""),
        ("ordered_block_entered", "authenticate", "main"),
        ("ordered_block_completed", "authenticate", "main"),
        ("skill_completed", "authenticate", ""),
    ]
    await chat.send("I want to replace a card")
    assert startable(chat) == ["authenticate", "card_replace", "check_balance", "travel_notice"]


async def test_next_branches_retry_then_lock_the_caller_out() -> None:
    wrong = {"calls": [{"set_fields": {"date_of_birth": "2000-01-01"}}]}
    chat = await Chat(CARD_SERVICES, [AUTH[0], wrong, wrong, wrong], caller_phone=ADA_PHONE).open()
    await chat.send("hello")
    retry = await chat.send("January first, 2000")
    assert said(retry) == [
        "That does not match our records.",
        "Let's try once more.",
        ASK_BIRTHDAY,
    ]
    await chat.send("January first, 2000")
    locked = await chat.send("January first, 2000")
    assert started(locked) == ["verify_identity"]
    locked_out = ["I could not verify you.", "Please visit a branch with a photo ID."]
    assert said(locked) == [*locked_out, ANYTHING_ELSE]
    assert chat.memory("project.verification_attempts") == 3
    assert chat.memory("project.authenticated") is None
    assert chat.stack == []


async def test_activating_a_flow_that_cannot_start_is_a_tool_error() -> None:
    turns = [{"steps": [{"calls": [{"activate": {"flow_id": "card_replace"}}]}, {"say": "Hm."}]}]
    chat = await Chat(CARD_SERVICES, turns, caller_phone=ADA_PHONE).open()
    events = await chat.send("replace my card")
    assert chat.results("activate") == [
        {"error": "flow 'card_replace' cannot be started now (startable: ['authenticate'])"}
    ]
    assert chat.stack == []
    assert said(events) == ["Hm."]


async def test_delegation_resumes_the_parent_by_itself() -> None:
    chat = await chat_with(
        {
            "steps": [
                {"calls": [{"activate": {"flow_id": "travel_notice"}}]},
                {"say": "Happy to help. Where are you going?"},
            ]
        },
        {
            "steps": [
                {"calls": [{"activate": {"flow_id": "card_replace"}}]},
                {"say": "I'm sorry. Was it lost or stolen?"},
            ]
        },
        {
            "steps": [
                {"calls": ["complete_skill"]},
                {"say": "Glad it turned up. So, where are you going?"},
            ]
        },
    )
    await verified(chat)
    await chat.send("I'm going abroad")
    lost = await chat.send("actually I lost my card on my last trip")
    assert chat.stack == ["travel_notice", "card_replace"]
    recorded = "This call is recorded for your security."
    assert said(lost) == [recorded, "I'm sorry.", "Was it lost or stolen?"]
    back = await chat.send("never mind, it turned up")
    # the travel notice takes over again without asking: it named @skill.card_replace
    assert said(back) == ["Glad it turned up.", "So, where are you going?"]
    assert chat.stack == ["travel_notice"]
    assert "## Active skill: travel_notice" in chat.prompt()
    assert chat.flow_events()[-5:] == [
        ("skill_activated", "travel_notice", ""),
        ("skill_interrupted", "travel_notice", ""),
        ("skill_activated", "card_replace", ""),
        ("skill_completed", "card_replace", ""),
        ("skill_resumed", "travel_notice", ""),
    ]


TRAVEL_BLOCK = {
    "calls": [
        {"activate": {"flow_id": "travel_notice"}},
        {"activate": {"flow_id": "travel_notice__register_notice"}},
    ]
}
DIGRESS = {
    "steps": [
        {"calls": [{"activate": {"flow_id": "check_balance"}}]},
        {"say": "Your balance is fine."},
    ]
}
DONE = {"calls": ["complete_skill"]}


async def test_a_digression_is_offered_back_and_resumes_at_the_same_step() -> None:
    chat = await chat_with(
        TRAVEL_BLOCK,
        DIGRESS,
        DONE,
        {
            "steps": [
                {"calls": [{"activate": {"flow_id": "travel_notice"}}]},
                {"say": "Great. Where are you travelling to?"},
            ]
        },
        {"calls": [{"set_fields": {"destination": "Japan"}}]},
    )
    await verified(chat)
    asked = await chat.send("I'm travelling soon")
    assert said(asked) == ["Where are you travelling to?"]
    await chat.send("wait, what's my balance first?")
    assert chat.stack == ["travel_notice", "check_balance"]
    offer = await chat.send("thanks")
    assert said(offer) == ["Would you like to continue with Travel notice?"]
    assert chat.stack == ["travel_notice"]
    await chat.send("yes please")
    # while the offer stands: activate (to resume) and cancel_skill (to decline); no skill tools
    offered = chat.tools(-2)
    assert "travel_notice" in startable(chat, -2)
    assert "cancel_skill" in offered
    assert "complete_skill" not in offered
    assert "## Paused skill" in chat.prompt(-2)
    dates = await chat.send("Japan")
    assert said(dates) == ["When do you leave for Japan, and when are you back?"]
    assert chat.flow_events()[-2:] == [
        ("skill_completed", "check_balance", ""),
        ("skill_resumed", "travel_notice", "register_notice"),
    ]


async def test_declining_the_resume_offer_drops_the_paused_skill() -> None:
    chat = await chat_with(
        TRAVEL_BLOCK,
        DIGRESS,
        DONE,
        {"steps": [{"calls": ["cancel_skill"]}, {"say": "No problem. Anything else?"}]},
    )
    await verified(chat)
    await chat.send("I'm travelling soon")
    await chat.send("what's my balance?")
    await chat.send("thanks")
    declined = await chat.send("no, forget the trip")
    assert said(declined) == ["No problem.", "Anything else?"]
    assert chat.stack == []
    assert chat.flow_events()[-1] == ("skill_dropped", "travel_notice", "")
    assert chat.results("cancel_skill") == [{"dropped": "travel_notice"}]


async def test_utter_when_fires_on_the_write_that_makes_it_true_and_not_again() -> None:
    chat = await chat_with(
        {
            "calls": [
                {"activate": {"flow_id": "card_replace"}},
                {"set_fields": {"replacement_reason": "stolen"}},
            ]
        },
        {"calls": [{"set_fields": {"replacement_reason": "stolen"}}]},
        {"calls": [{"correct": {"field": "replacement_reason", "value": "lost"}}]},
        {"calls": [{"correct": {"field": "replacement_reason", "value": "stolen"}}]},
    )
    await verified(chat)
    stolen = await chat.send("my card was stolen")
    warning = ["I'm sorry about the theft.", "We will lock the card right away."]
    assert said(stolen) == ["This call is recorded for your security.", *warning]
    assert said(await chat.send("yes, stolen")) == []  # still true: no second warning
    assert said(await chat.send("no wait, I lost it")) == []
    # true again, but it fires "the first time the condition becomes true" (skill.md
    # reference): the caller already heard the warning in this activation
    assert said(await chat.send("sorry, it was stolen after all")) == []


async def test_utter_when_fires_again_in_a_new_activation_and_its_state_is_saved() -> None:
    chat = await chat_with(
        {
            "calls": [
                {"activate": {"flow_id": "card_replace"}},
                {"set_fields": {"replacement_reason": "stolen"}},
            ]
        },
        {"calls": ["cancel_skill"]},
        {
            "calls": [
                {"activate": {"flow_id": "card_replace"}},
                {"set_fields": {"replacement_reason": "stolen"}},
            ]
        },
    )
    await verified(chat)
    warning = ["I'm sorry about the theft.", "We will lock the card right away."]
    assert said(await chat.send("my card was stolen"))[-2:] == warning
    fired = {("card_replace", "utter_stolen_warning")}
    state = chat.engine.session("c1").dialogue
    assert state.utter_fired == fired
    # a call resumed on another node does not warn again (issue 13 snapshot)
    saved = snapshot.loads(snapshot.dumps(snapshot.Snapshot(state, [], 1)))
    assert saved.dialogue.utter_fired == fired
    await chat.send("forget it")
    assert said(await chat.send("my card was stolen"))[-2:] == warning  # activated again


async def test_a_model_that_completes_the_last_skill_hears_the_completion_question() -> None:
    chat = await chat_with(
        {"calls": [{"activate": {"flow_id": "check_balance"}}]},
        {"steps": [{"say": "Your balance is 20 dollars."}]},
        {"calls": ["complete_skill"]},
    )
    await verified(chat)
    await chat.send("balance please")
    await chat.send("the main account")
    done = await chat.send("that's all")
    assert said(done) == [ANYTHING_ELSE]
    assert ended(done).reason == "completed"
    assert chat.stack == []


async def test_session_start_runs_the_projects_session_start_skill_without_the_model() -> None:
    chat = await Chat(CARD_SERVICES, [], caller_phone=ADA_PHONE).open()
    greeting = await chat.send("/session_start")
    # load_profile found Ada by her number, so the greeting's conditioned variant applies;
    # a lifecycle skill ending is not followed by the completion question
    assert started(greeting) == ["load_profile"]
    assert said(greeting) == ["Hello Ada, this is Example Bank card services.", "How can I help?"]
    assert chat.requests == 0
    assert chat.stack == []
