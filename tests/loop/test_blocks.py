"""Ordered blocks (contract §6): every step kind, ``next:`` branches, ``END`` and where a block
returns to."""

from pathlib import Path

from tests.loop.loop_kit import (
    ADA_PHONE,
    CARD_SERVICES,
    TOOL_HEADER,
    Chat,
    buttons,
    said,
    skill_md,
    started,
    write_project,
)
from tests.loop.test_skills import ANYTHING_ELSE, AUTH, verified


async def test_a_travel_notice_walks_collect_set_memory_call_listen_instructions_and_noop() -> None:
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
            {"calls": [{"set_fields": {"travel_dates": "May 1 to May 9"}}]},
            {"calls": [{"set_fields": {"contact_confirmed": True}}]},
        ],
        caller_phone=ADA_PHONE,
    ).open()
    await verified(chat)
    assert said(await chat.send("I'm travelling")) == ["Where are you travelling to?"]
    dates = await chat.send("Japan")
    assert said(dates) == ["When do you leave for Japan, and when are you back?"]
    contact = await chat.send("May first to May ninth")
    # set_memory, then the called block confirm_contact asks and listens (action_listen)
    assert chat.memory("travel_notice.notice_requested") is True
    assert said(contact) == [
        "Can we reach you on the number you are calling from while you travel?"
    ]
    assert buttons(contact) == [["Yes", "No"]]
    assert chat.stack == ["travel_notice"]
    filed = await chat.send("yes, that number works")
    # the instructions step completed (complete_when), END returned to the call step, the
    # tool filed the notice, the noop branched to "done", END returned to the prose, and
    # complete_when (notice_id) completed the skill
    notice = chat.memory("travel_notice.notice_id")
    assert started(filed) == ["register_travel_notice"]
    assert said(filed) == [f"Done: your travel notice {notice} is registered.", ANYTHING_ELSE]
    assert chat.stack == []
    blocks = [e for e in chat.flow_events() if "block" in e[0] and e[1] == "travel_notice"]
    assert blocks == [
        ("ordered_block_entered", "travel_notice", "register_notice"),
        ("ordered_block_entered", "travel_notice", "confirm_contact"),
        ("ordered_block_completed", "travel_notice", "confirm_contact"),
        ("ordered_block_completed", "travel_notice", "register_notice"),
    ]


SURVEY_BLOCK = """:::ordered_block id=main
steps:
  - id: ask_color
    collect: color
    utterance: utter_ask_color
    ask_before_filling: true
  - id: branch
    noop: true
    next:
      - if: session.survey.color == "red"
        then: red
      - else: other
  - id: red
    action: utter_red
    next: chat
  - id: other
    action: utter_other
  - id: chat
    instructions: Say one nice thing about the color.
  - id: helper
    call: helper
  - id: wrap
    link: goodbye
:::
"""
ONE_ACTION = ":::ordered_block id=main\nsteps:\n  - id: say\n    action: {}\n  - id: END\n:::\n"
SURVEY = {
    "skills/survey/skill.md": skill_md("", SURVEY_BLOCK, name="Survey"),
    "skills/survey/memory.yml": (
        "schema:\n  public:\n    color: {type: categorical, enum_values: [red, blue]}\n"
    ),
    "skills/survey/responses.yml": (
        "responses:\n"
        "  utter_ask_color:\n    - text: Which color do you like?\n"
        "  utter_red:\n    - text: Red is bold.\n"
        "  utter_other:\n    - text: '{color} is nice too.'\n"
        "  utter_helper:\n    - text: I'm the helper.\n"
        "  utter_bye:\n    - text: Goodbye from the survey.\n"
    ),
    "skills/helper/skill.md": skill_md("", ONE_ACTION.format("utter_helper"), name="Helper"),
    "skills/goodbye/skill.md": skill_md("", ONE_ACTION.format("utter_bye"), name="Goodbye"),
}


async def test_branches_ask_before_filling_call_to_a_skill_and_link(tmp_path: Path) -> None:
    chat = await Chat(
        write_project(tmp_path, SURVEY),
        [
            {"calls": [{"activate": {"flow_id": "survey"}}, {"set_fields": {"color": "red"}}]},
            {
                "steps": [
                    {"calls": [{"set_fields": {"color": "blue"}}]},
                    {"say": "Blue like the sea."},
                ]
            },
        ],
    ).open()
    asked = await chat.send("a survey about red")
    # ask_before_filling: the value the model recorded is cleared and the question asked
    assert said(asked) == ["Which color do you like?"]
    assert chat.memory("survey.color") is None
    answered = await chat.send("blue")
    # noop -> else branch; the instructions step without complete_when ends with the answer
    assert said(answered) == ["blue is nice too.", "Blue like the sea."]
    assert "### Current step (block main, step chat)\nSay one nice thing" in chat.prompt()
    finished = await chat.send("thanks")
    # call: the helper runs and returns; link: goodbye takes over for good
    assert said(finished) == ["I'm the helper.", "Goodbye from the survey.", ANYTHING_ELSE]
    assert chat.requests == 3  # one in the first turn, two in the second, none in the last
    assert [kind for kind, skill, _ in chat.flow_events() if kind.startswith("skill")] == [
        "skill_activated",  # survey
        "skill_interrupted",  # survey, parked by its call step
        "skill_activated",  # helper
        "skill_completed",  # helper
        "skill_resumed",  # survey
        "skill_completed",  # survey, linked away
        "skill_activated",  # goodbye
        "skill_completed",  # goodbye
    ]


VAULT = {
    "skills/vault/skill.md": skill_md(
        "tool_constraints:\n  - open_vault:\n      requires: session.vault.code\n",
        ":::ordered_block id=main\nsteps:\n  - id: open\n    execute_tool: open_vault\n"
        "    parameters:\n      code: session.vault.code\n"
        "  - id: done\n    action: utter_opened\n:::\n",
        name="Vault",
    ),
    "skills/vault/memory.yml": (
        "schema:\n  private:\n    code: {type: text, llm_settable: true}\n"
        "    opened: {type: bool}\n"
    ),
    "skills/vault/responses.yml": "responses:\n  utter_opened:\n    - text: The vault is open.\n",
    "skills/vault/tools.py": TOOL_HEADER
    + (
        '@tool(description="Open the vault")\n'
        "async def open_vault(code: str, context: ToolContext = None) -> ToolResult:\n"
        '    context.memory.set("opened", code == "1234")\n'
        "    return ToolResult()\n"
    ),
}


async def test_an_execute_tool_step_is_held_until_its_requires_holds(tmp_path: Path) -> None:
    chat = await Chat(
        write_project(tmp_path, VAULT),
        [
            {
                "steps": [
                    {"calls": [{"activate": {"flow_id": "vault"}}]},
                    {"say": "What is the code?"},
                ]
            },
            {"calls": [{"set_fields": {"code": "1234"}}]},
        ],
    ).open()
    held = await chat.send("open the vault")
    assert started(held) == []
    assert said(held) == ["What is the code?"]
    assert "The block waits to call open_vault until session.vault.code holds." in chat.prompt()
    opened = await chat.send("1234")
    assert started(opened) == ["open_vault"]
    assert chat.memory("vault.opened") is True
    assert said(opened) == ["The vault is open.", ANYTHING_ELSE]
