"""Prompt assembly (contract §7.2): fixed section order, if: paragraphs scoped, @memory tokens
substituted (PII as [set]), memory sections, and one turn-local branch."""

from tests.loop.loop_kit import ADA_PHONE, CARD_SERVICES, Chat
from tests.loop.test_skills import AUTH, verified


async def test_the_routing_branch_lists_startable_flows_under_the_fixed_sections() -> None:
    chat = await Chat(CARD_SERVICES, [{"say": "Hello!"}], caller_phone=ADA_PHONE).open()
    await chat.send("hi")
    prompt = chat.prompt()
    order = [
        "You are the phone assistant",  # persona
        "- Only help with cards",  # rules
        "## Skills\n- authenticate: Authenticate",  # glossary
        "Your replies are spoken aloud",  # channel rules (voice by default)
        "Begin your first sentence with a brief acknowledgement",  # ack_enabled, first call
        'User: "I lost my card" -> "I\'m sorry to hear that."',
        "## Engine tools",
        "Current date and time:",
        "### Project Memory\nproject.caller_phone: [set]",  # PII masked
        "## Routing\nNo skill is active.",
        "If the caller only greets, greet back",  # prompts.routing_no_active_skill
        "- authenticate: Verify the caller's identity",
    ]
    positions = [prompt.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert ADA_PHONE not in prompt
    assert "## Active skill" not in prompt
    # the prompt never mentions a framework tool that is not offered
    assert "complete_skill" not in prompt
    assert "cannot_help" not in prompt


async def test_the_active_skill_branch_scopes_paragraphs_and_renders_tokens() -> None:
    chat = await Chat(
        CARD_SERVICES,
        [
            *AUTH,
            {"calls": [{"activate": {"flow_id": "card_replace"}}]},
            {"calls": [{"set_fields": {"replacement_reason": "lost", "selected_card_id": "c-1"}}]},
        ],
        caller_phone=ADA_PHONE,
    ).open()
    await verified(chat)
    await chat.send("I need a new card")
    first = chat.prompt()
    assert "## Active skill: card_replace (Card Replace)" in first
    assert 'go through activate(flow_id="authenticate")' in first  # @skill. token
    assert 'invoke activate(flow_id="card_replace__pick_card")' in first  # @block. token
    assert "Offer to lock the card" not in first  # its if: does not hold yet
    assert "Work on the chosen card" not in first
    assert "card_replace.replacement_reason: (not set)" in first  # ### Memory:
    assert "## Routing" not in first
    await chat.send("I lost it, the first card")
    scoped = chat.prompt()
    assert "Offer to lock the card while the new one ships." in scoped
    assert "the card will be locked for their protection" not in scoped
    # an unset @memory token stays as written; a set PII one becomes [set]
    assert "Work on the chosen card, @memory.card_replace.selected_card_label." in scoped
    assert "text a\nconfirmation to [set] with send_sms_confirmation" in scoped
    assert "card_replace.replacement_reason: lost" in scoped
    assert "authenticate.date_of_birth" not in scoped  # another skill's private field
    assert "activate(flow_id=" in scoped


async def test_already_collected_values_are_listed_so_they_are_not_asked_again() -> None:
    chat = await Chat(
        CARD_SERVICES,
        [
            *AUTH,
            {
                "calls": [
                    {"activate": {"flow_id": "travel_notice"}},
                    {"activate": {"flow_id": "travel_notice__register_notice"}},
                ]
            },
            {"calls": [{"set_fields": {"destination": "Japan"}}]},
            {"say": "When exactly?"},
        ],
        caller_phone=ADA_PHONE,
    ).open()
    await verified(chat)
    await chat.send("I'm travelling")
    await chat.send("Japan")
    await chat.send("hmm")
    prompt = chat.prompt()
    assert "### Already collected (do not re-ask)\n- destination: Japan" in prompt
    assert "### Current step (block register_notice, step ask_dates)" in prompt
    assert "Collect `travel_dates` (The first and last day of the trip.)" in prompt
