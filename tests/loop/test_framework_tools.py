"""The framework tools and their offering rules (tools reference, "Built-in framework tools")."""

from pathlib import Path
from typing import Any

from tests.loop.loop_kit import (
    ADA_PHONE,
    CARD_SERVICES,
    TOOL_HEADER,
    Chat,
    ended,
    said,
    skill_md,
    write_project,
)
from tests.loop.test_skills import AUTH, verified

REPLACE = {"activate": {"flow_id": "card_replace"}}
PICK_CARD = {"activate": {"flow_id": "card_replace__pick_card"}}


async def ada(*turns: dict[str, Any]) -> Chat:
    chat = await Chat(CARD_SERVICES, [*AUTH, *turns], caller_phone=ADA_PHONE).open()
    await verified(chat)
    return chat


async def test_complete_skill_is_withheld_and_refused_inside_a_block_and_back_after_it() -> None:
    chat = await ada(
        {"calls": [REPLACE, PICK_CARD]},
        {
            "steps": [
                {"calls": ["complete_skill"]},
                {"calls": [{"set_fields": {"selected_card_id": "card-2"}}]},
                {"say": "Got it, the Mastercard."},
            ]
        },
    )
    picking = await chat.send("I need a new card")
    assert said(picking) == [
        "This call is recorded for your security.",
        "Which card needs replacing?",
    ]
    chosen = await chat.send("the mastercard")
    in_block = chat.tools(-3)  # the instructions step "confirm_choice" runs
    assert "complete_skill" not in in_block
    assert "cancel_skill" in in_block
    refused = chat.results("complete_skill")[0]["error"]
    assert refused.startswith("complete_skill is refused while the ordered block 'pick_card' runs")
    assert chat.stack == ["card_replace"]
    # the block reached END: the hybrid skill's prose is back in control
    assert said(chosen) == ["Got it, the Mastercard."]
    assert "complete_skill" in chat.tools()
    assert chat.flow_events()[-1] == ("ordered_block_completed", "card_replace", "pick_card")


async def test_cancel_skill_abandons_a_skill_in_the_middle_of_a_block() -> None:
    chat = await ada(
        {"calls": [REPLACE, PICK_CARD]},
        {"steps": [{"calls": ["cancel_skill"]}, {"say": "Okay, I stopped."}]},
    )
    await chat.send("I need a new card")
    stopped = await chat.send("stop, forget it")
    assert said(stopped) == ["Okay, I stopped."]  # no completion question after a cancel
    assert chat.stack == []
    assert chat.flow_events()[-2:] == [
        ("ordered_block_cancelled", "card_replace", "pick_card"),
        ("skill_cancelled", "card_replace", ""),
    ]


async def test_set_fields_schema_eligibility_coercion_and_empty_calls() -> None:
    chat = await ada(
        {
            "steps": [
                {"calls": [REPLACE]},
                {"calls": ["set_fields"]},
                {"calls": [{"set_fields": {"selected_card_label": "Visa"}}]},
                {"calls": [{"set_fields": {"replacement_reason": "Stolen"}}]},
                {"say": "Noted."},
            ]
        }
    )
    await chat.send("my card was stolen")
    schema = chat.tool_spec("set_fields").parameters
    assert schema["properties"] == {
        "replacement_reason": {
            "enum": ["lost", "stolen", "damaged", "not_received"],
            "description": "Why the card is being replaced.",
        },
        "selected_card_id": {"type": "string", "description": "Id of the card being replaced."},
    }
    empty, label, reason = chat.results("set_fields")[-3:]  # after the date of birth
    assert empty == {"error": "No fields provided to set_fields."}
    assert label["set"] == []
    assert label["errors"]["selected_card_label"].startswith("set_fields.not_eligible:")
    assert reason == {"set": ["replacement_reason"]}
    assert chat.memory("card_replace.replacement_reason") == "stolen"
    assert chat.memory("card_replace.lock_recommended") is True  # its post-write hook ran


HOOKED = {
    "skills/budget/skill.md": skill_md("", "Ask for the monthly budget.\n", name="Budget"),
    "skills/budget/memory.yml": (
        "schema:\n  public:\n    amount: {type: int, llm_settable: true}\n    tier: {type: text}\n"
    ),
    "skills/budget/tools.py": TOOL_HEADER
    + (
        '@tool(description="Check the budget")\n'
        "async def run_after_setting_amount(context: ToolContext = None) -> ToolResult:\n"
        '    amount = context.memory.get("amount")\n'
        "    if amount > 100:\n"
        '        return ToolResult(llm_response={"error": "at most 100"})\n'
        '    context.memory.set("tier", "small" if amount < 50 else "large")\n'
        '    return ToolResult(llm_response={"error": None})\n'
    ),
}


async def test_a_post_write_hook_error_rolls_the_write_back(tmp_path: Path) -> None:
    chat = await Chat(
        write_project(tmp_path, HOOKED),
        [
            {
                "steps": [
                    {"calls": [{"activate": {"flow_id": "budget"}}]},
                    {"calls": [{"set_fields": {"amount": "500"}}]},
                    {"calls": [{"set_fields": {"amount": 75}}]},
                    {"say": "Done."},
                ]
            }
        ],
    ).open()
    await chat.send("my budget is 500")
    rejected, accepted = chat.results("set_fields")
    assert rejected == {
        "set": [],
        "errors": {"amount": "at most 100"},
        "error": "amount: at most 100",
    }
    assert accepted == {"set": ["amount"]}
    assert chat.memory("budget.amount") == 75
    assert chat.memory("budget.tier") == "large"


async def test_correct_is_offered_once_a_value_is_set_and_rescopes_if_paragraphs() -> None:
    chat = await ada(
        {"calls": [REPLACE]},
        {"steps": [{"calls": [{"set_fields": {"replacement_reason": "stolen"}}]}, {"say": "Ok."}]},
        {
            "steps": [
                {"calls": [{"correct": {"field": "replacement_reason", "value": "lost"}}]},
                {"say": "Ok."},
            ]
        },
    )
    await chat.send("I need a new card")
    assert "correct" not in chat.tools()
    await chat.send("it was stolen")
    assert chat.tool_spec("correct").parameters["properties"]["field"]["enum"] == [
        "replacement_reason"
    ]
    assert "the card will be locked for their protection" in chat.prompt()
    await chat.send("sorry, I actually lost it")
    assert chat.results("correct") == [{"corrected": "replacement_reason"}]
    assert "the card will be locked for their protection" not in chat.prompt()
    assert "Offer to lock the card while the new one ships." in chat.prompt()


async def test_search_knowledge_collapses_the_tools_for_the_rest_of_the_turn() -> None:
    chat = await ada(
        {"calls": [REPLACE]},
        {
            "steps": [
                {"calls": [{"search_knowledge": {"query": "replacement fee lost card"}}]},
                {"say": "A replacement costs five dollars."},
            ]
        },
        {"say": "Anything else?"},
    )
    await chat.send("I need a new card")
    before = chat.tools()
    assert "search_knowledge" in before
    assert "cannot_help" not in before  # withheld until a search ran (a knowledge base exists)
    await chat.send("how much does a replacement cost?")
    assert chat.tools() == ["activate", "search_knowledge", "cannot_help"]
    assert "## Answer from knowledge" in chat.prompt()
    (search,) = chat.results("search_knowledge")
    sources = {hit["source"] for hit in search["results"]}
    assert any(source.startswith("references/") for source in sources)
    assert {hit["scope"] for hit in search["results"]} <= {"global", "card_replace"}
    await chat.send("ok")  # the next turn: the skill's tools and listen are back
    assert "send_sms_confirmation" in chat.tools()
    assert "listen" in chat.tools()
    assert "cannot_help" not in chat.tools()


NO_KNOWLEDGE = {
    "skills/budget/skill.md": skill_md("", "Ask for the monthly budget.\n", name="Budget")
}


async def test_cannot_help_is_offered_at_once_without_a_knowledge_base(tmp_path: Path) -> None:
    turns = [{"steps": [{"calls": [{"cannot_help": {"in_domain": False}}]}, {"say": "never said"}]}]
    chat = await Chat(write_project(tmp_path, NO_KNOWLEDGE), turns).open()
    events = await chat.send("what's the weather?")
    assert "cannot_help" in chat.tools(0)
    assert "search_knowledge" not in chat.tools(0)
    assert "## Out of scope" in chat.prompt(0)
    assert said(events) == ["Sorry, I can't help with that."]
    assert chat.requests == 1  # the decline ends the turn: the engine waits
    assert ended(events).reason == "completed"


async def test_listen_alone_ends_the_turn_in_silence_and_is_ignored_when_mixed(
    tmp_path: Path,
) -> None:
    turns = [
        {"calls": ["listen"]},
        {"steps": [{"say": "Take your time.", "calls": ["listen"]}, {"say": "I'm here."}]},
    ]
    chat = await Chat(write_project(tmp_path, NO_KNOWLEDGE), turns).open()
    silent = await chat.send("hmm, let me think")
    assert said(silent) == []
    assert chat.requests == 1
    assert chat.results("listen") == [{"listening": True}]
    mixed = await chat.send("one moment")
    assert said(mixed) == ["Take your time.", "I'm here."]
    assert chat.results("listen")[1] == {
        "ignored": "listen was mixed with text or other tool calls"
    }


async def test_tools_see_the_knowledge_index_search_knowledge_reads(tmp_path: Path) -> None:
    files = {
        "references/fees.md": "A replacement card costs five dollars.\n",
        "skills/budget/skill.md": skill_md("", "Use count_notes when asked.\n", name="Budget"),
        "skills/budget/tools.py": TOOL_HEADER
        + (
            '@tool(description="Count the knowledge chunks")\n'
            "async def count_notes(context: ToolContext = None) -> ToolResult:\n"
            "    index = context.model.references_index\n"
            '    hits = index.search("replacement card")\n'
            '    return ToolResult(llm_response={"chunks": len(index.chunks), "hits": len(hits)})\n'
        ),
    }
    turns = [{"calls": [{"activate": {"flow_id": "budget"}}, "count_notes"]}]
    chat = await Chat(write_project(tmp_path, files), turns).open()
    await chat.send("how many notes?")
    assert chat.results("count_notes") == [{"chunks": 1, "hits": 1}]
