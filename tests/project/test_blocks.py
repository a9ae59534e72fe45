"""Ordered-block fences and steps (contract §6): shapes, kinds, next:, and what is refused."""

from pathlib import Path

import pytest

from tests.project.project_kit import TOOL_HEADER, codes, problems, skill_md, tool_source, write
from voicegate.engine.project.loader import inspect_project, load_project
from voicegate.engine.project.skill_model import BodyShape
from voicegate.engine.project.step_model import (
    ActionStep,
    Branch,
    CallStep,
    CollectStep,
    EndStep,
    ExecuteToolStep,
    InstructionsStep,
    LinkStep,
    NoopStep,
    SetMemoryStep,
)

MEMORY = (
    "schema:\n  public:\n    card_id:\n      type: text\n    locked:\n      type: bool\n"
    "    confirmed:\n      type: bool\n      llm_settable: true\n"
)
RESPONSES = "responses:\n  utter_hello: [Hello.]\n  utter_ask_card:\n    - Which card?\n"


def block(steps: str, block_id: str = "main", extra: str = "") -> str:
    return f":::ordered_block id={block_id}\n{extra}steps:\n{steps}:::\n"


def project_with(tmp_path: Path, body: str, **files: str) -> Path:
    return write(
        tmp_path,
        {
            "skills/cards/skill.md": skill_md(body=body),
            "skills/cards/memory.yml": MEMORY,
            "skills/cards/tools.py": TOOL_HEADER + tool_source("lock_card", args="card_id: str, "),
            "skills/other/skill.md": skill_md(),
            "responses.yml": RESPONSES,
            **files,
        },
    )


ALL_KINDS = """\
  - id: hello
    action: utter_hello
  - id: ask
    collect: card_id
    utterance: utter_ask_card
    ask_before_filling: true
    description: The card to lock.
  - id: wait
    action: action_listen
  - id: lock
    execute_tool: lock_card
    parameters: {card_id: session.cards.card_id}
  - id: remember
    set_memory: {locked: true}
  - id: confirm
    instructions: Ask whether @memory.cards.card_id is right.
    complete_when: session.cards.confirmed != None
  - id: helper
    call: other
  - id: route
    noop: true
    next:
      - if: session.cards.confirmed
        then: END
      - else: away
  - id: away
    link: other
"""


def test_every_step_kind_parses_into_its_class(tmp_path: Path) -> None:
    project = load_project(project_with(tmp_path, block(ALL_KINDS)))
    skill = project.skills["cards"]
    steps = skill.body.blocks["main"].steps
    assert [type(step) for step in steps] == [
        ActionStep,
        CollectStep,
        ActionStep,
        ExecuteToolStep,
        SetMemoryStep,
        InstructionsStep,
        CallStep,
        NoopStep,
        LinkStep,
    ]
    ask = steps[1]
    assert isinstance(ask, CollectStep)
    assert (ask.entry, ask.utterance, ask.ask_before_filling) == ("card_id", "utter_ask_card", True)
    route = steps[7]
    assert isinstance(route, NoopStep)
    assert [(branch.target, branch.condition is not None) for branch in route.next] == [
        ("END", True),
        ("away", False),
    ]
    confirm = steps[5]
    assert isinstance(confirm, InstructionsStep)
    assert [token.text for token in confirm.tokens] == ["@memory.cards.card_id"]
    assert steps[0].line == 7
    assert steps[1].line == 9
    assert (skill.body.shape, skill.body.entry_block) == (BodyShape.BLOCKS, "main")


def test_a_plain_next_is_one_unconditioned_branch(tmp_path: Path) -> None:
    body = block(
        "  - id: a\n    action: utter_hello\n    next: b\n  - id: b\n    action: utter_hello\n"
    )
    steps = load_project(project_with(tmp_path, body)).skills["cards"].body.blocks["main"].steps
    assert steps[0].next == (Branch("b", None, 9),)
    assert steps[1].next == ()


def test_block_ids_are_fence_attributes_and_quotes_are_allowed(tmp_path: Path) -> None:
    body = (
        'Use @block.pick.\n\n:::ordered_block id="pick"\nname: Pick\ndescription: old style\n'
        "steps:\n  - id: END\n:::\n"
    )
    skill = load_project(project_with(tmp_path, body)).skills["cards"]
    assert list(skill.body.blocks) == ["pick"]
    assert skill.body.shape is BodyShape.HYBRID


@pytest.mark.parametrize(
    ("blocks", "entry"),
    [
        (block("  - id: END\n", "only"), "only"),
        (block("  - id: END\n", "one") + block("  - id: END\n", "main"), "main"),
        (block("  - id: END\n", "one") + block("  - id: END\n", "two"), None),
    ],
)
def test_the_entry_block_of_a_blocks_only_skill(
    tmp_path: Path, blocks: str, entry: str | None
) -> None:
    skill = load_project(project_with(tmp_path, blocks)).skills["cards"]
    assert (skill.body.shape, skill.body.entry_block) == (BodyShape.BLOCKS, entry)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (":::ordered_block\nsteps:\n  - id: END\n:::\n", "skill.markdown.invalid_ordered_block"),
        # Near-miss openers (other markdown directives allow them) would silently be prose.
        (
            "::: ordered_block id=main\nsteps:\n  - id: END\n:::\n",
            "skill.markdown.invalid_ordered_block",
        ),
        (
            ":::ordered-block id=main\nsteps:\n  - id: END\n:::\n",
            "skill.markdown.invalid_ordered_block",
        ),
        (
            ":::ordered_block id=main color=red\nsteps:\n  - id: END\n:::\n",
            "skill.markdown.invalid_ordered_block",
        ),
        (
            ":::ordered_block id=main routable=true\nsteps:\n  - id: END\n:::\n",
            "skill.markdown.routable_in_block",
        ),
        (block("  - id: END\n", extra="mode: strict\n"), "skill.markdown.invalid_ordered_block"),
        (":::ordered_block id=main\n:::\n", "skill.markdown.invalid_ordered_block"),
        (":::ordered_block id=main\nsteps: []\n:::\n", "skill.markdown.invalid_ordered_block"),
        (":::ordered_block id=main\n- id: END\n:::\n", "skill.markdown.invalid_ordered_block"),
        (block("  - action: utter_hello\n"), "skill.markdown.invalid_step"),
        (block("  - id: a\n"), "skill.markdown.invalid_step"),
        (
            block("  - id: a\n    action: utter_hello\n    execute_tool: lock_card\n"),
            "skill.markdown.invalid_step",
        ),
        (block("  - id: a\n    noop: false\n    next: END\n"), "skill.markdown.invalid_step"),
        (
            block(
                "  - id: a\n    action: utter_hello\n"
                "    next: [{else: END}, {if: session.cards.locked, then: END}]\n"
            ),
            "skill.markdown.invalid_step",
        ),
        (
            block(
                "  - id: a\n    noop: true\n    next:\n      - if: session.cards.locked\n"
                "        then:\n          - action: utter_hello\n      - else: END\n"
            ),
            "skill.markdown.invalid_step",
        ),
        (block("  - id: a\n    noop: true\n    next: [END]\n"), "skill.markdown.invalid_step"),
        (
            block("  - id: a\n    link: other\n  - id: b\n    action: utter_hello\n"),
            "skill.markdown.invalid_step",
        ),
        (block("  - id: a\n    link: other\n    next: END\n"), "skill.markdown.unknown_step_key"),
        (block("  - id: END\n    action: utter_hello\n"), "skill.markdown.unknown_step_key"),
        (
            block("  - id: a\n    collect: card_id\n    utter: utter_ask_card\n"),
            "skill.markdown.unknown_step_key",
        ),
        (block("  - id: a\n    instructions: ''\n"), "skill.markdown.invalid_step"),
        (
            block("  - id: a\n    collect: card_id\n    ask_before_filling: sometimes\n"),
            "skill.markdown.invalid_step",
        ),
        (block("  - id: a\n    set_memory: locked\n"), "skill.markdown.invalid_step"),
        (
            block("  - id: a\n    execute_tool: lock_card\n    parameters: [card_id]\n"),
            "skill.markdown.invalid_step",
        ),
        (
            block(
                "  - id: a\n    noop: true\n"
                "    next: [{if: session.cards.locked, then: nowhere}, {else: END}]\n"
            ),
            "skill.markdown.unknown_step_target",
        ),
        (block("  - id: a\n    call: nowhere\n"), "skill.markdown.unknown_step_target"),
        (block("  - id: a\n    link: nowhere\n"), "skill.markdown.unknown_step_target"),
        (
            block("  - id: a\n    execute_tool: unknown_tool\n"),
            "mantle.validation.tools.unresolved_tool",
        ),
        (block("  - id: a\n    action: utter_missing\n"), "mantle.validation.response.not_found"),
        (
            block("  - id: a\n    collect: card_id\n    utterance: utter_missing\n"),
            "mantle.validation.response.not_found",
        ),
        (block("  - id: a\n    collect: unknown_entry\n"), "mantle.validation.memory.undeclared"),
        (
            block("  - id: a\n    set_memory: {cards.nothing: 1}\n"),
            "mantle.validation.memory.undeclared",
        ),
        (
            block("  - id: a\n    set_memory: {other.card_id: x}\n"),
            "mantle.validation.memory.undeclared",
        ),
        (
            block(
                "  - id: a\n    execute_tool: lock_card\n"
                "    parameters: {card_id: session.cards.unknown}\n"
            ),
            "mantle.validation.tools.invalid_parameters",
        ),
        (
            block("  - id: a\n    instructions: Use @block.nowhere.\n"),
            "skill.markdown.unknown_block_reference",
        ),
        (
            block("  - id: a\n    instructions: Read session.cards.card_id aloud.\n"),
            "skill.markdown.bare_session_reference",
        ),
        (
            block("  - id: a\n    instructions: Talk.\n    complete_when: session.cards.nothing\n"),
            "mantle.validation.condition.undeclared_memory",
        ),
    ],
)
def test_malformed_blocks_and_steps(tmp_path: Path, body: str, code: str) -> None:
    assert codes(project_with(tmp_path, body)) == [code]


def test_a_collect_step_with_utter_explains_utterance(tmp_path: Path) -> None:
    project_with(tmp_path, block("  - id: a\n    collect: card_id\n    utter: utter_ask_card\n"))
    [problem] = inspect_project(tmp_path).problems
    assert "utterance" in problem.message


def test_calls_and_links_may_target_blocks_skills_and_compiled_block_ids(tmp_path: Path) -> None:
    body = block(
        "  - id: a\n    call: helper\n  - id: b\n    call: other\n  - id: c\n"
        "    link: cards__helper\n"
    )
    body += block("  - id: END\n", "helper")
    assert problems(project_with(tmp_path, body)) == []


def test_an_if_line_inside_instructions_is_plain_text(tmp_path: Path) -> None:
    body = block("  - id: a\n    instructions: |\n      if: whatever\n      Talk to them.\n")
    step = load_project(project_with(tmp_path, body)).skills["cards"].body.blocks["main"].steps[0]
    assert isinstance(step, InstructionsStep)
    assert step.instructions.startswith("if: whatever")
    assert step.complete_when is None


def test_end_and_link_steps(tmp_path: Path) -> None:
    body = block("  - id: a\n    link: other\n  - id: END\n")
    steps = load_project(project_with(tmp_path, body)).skills["cards"].body.blocks["main"].steps
    assert steps == (LinkStep("a", "other", 7), EndStep("END", 9))


def test_a_link_may_end_one_branch_written_with_step_ids(tmp_path: Path) -> None:
    # Branches are step ids (no nested lists), so the link that ends one branch is followed by
    # the next branch's first step, which a next: jumps to: nothing after the link falls
    # through. (A third-party probe's pharmacy refill was refused before.)
    body = block(
        "  - id: route\n    noop: true\n    next:\n"
        "      - if: session.cards.locked\n        then: handoff\n"
        "      - else: done\n"
        "  - id: handoff\n    link: other\n"
        "  - id: done\n    action: utter_hello\n"
    )
    assert problems(project_with(tmp_path, body)) == []
    steps = load_project(tmp_path).skills["cards"].body.blocks["main"].steps
    assert [step.step_id for step in steps] == ["route", "handoff", "done"]


def test_a_numeric_step_id_is_explained(tmp_path: Path) -> None:
    # YAML reads `id: 1` as a number; the contract's step ids are text (§6.3).
    root = project_with(tmp_path, block("  - id: 1\n    action: utter_hello\n"))
    assert [problem.message for problem in inspect_project(root).problems] == [
        "block 'main': step id 1 is a number; step ids are text: quote it ('1')"
    ]
