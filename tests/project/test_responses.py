"""responses.yml (contract §2.7): variants, conditions, placeholders, buttons, references."""

from pathlib import Path
from typing import Any

import pytest

from tests.project.project_kit import TOOL_HEADER, codes, skill_md, tool_source, write
from voicegate.engine.memory.fields import FieldType, MemoryField
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project.loader import load_project
from voicegate.engine.project.responses import coerce_button_value

SKILL_MEMORY = (
    "schema:\n  public:\n    reason:\n      type: categorical\n      enum_values: [lost, stolen]\n"
    "    count:\n      type: int\n    ok:\n      type: bool\n  private:\n    secret:\n"
    "      type: text\n"
)
PROJECT_MEMORY = "name:\n  type: text\n"


def load_responses(tmp_path: Path, root: str = "", skill: str = "") -> Any:
    files = {"memory.yml": PROJECT_MEMORY, "skills/cards/memory.yml": SKILL_MEMORY}
    if root:
        files["responses.yml"] = "responses:\n" + root
    if skill:
        files["skills/cards/responses.yml"] = "responses:\n" + skill
    return write(tmp_path, files)


def test_plain_string_variants_and_defaults_anywhere(tmp_path: Path) -> None:
    load_responses(
        tmp_path,
        skill=(
            "  utter_a:\n    - Just text.\n"
            "  utter_b:\n    - text: Lost.\n      condition: session.cards.reason == 'lost'\n"
            "    - text: Default.\n"
            "    - text: Stolen.\n      condition: session.cards.reason == 'stolen'\n"
            "  utter_c:\n    - One.\n    - Two.\n"
        ),
    )
    responses = load_project(tmp_path).responses
    assert responses["utter_a"].variants[0].text == "Just text."
    assert [v.condition is None for v in responses["utter_b"].variants] == [False, True, False]
    assert len(responses["utter_c"].variants) == 2


def test_placeholders_resolve_skill_first_then_project(tmp_path: Path) -> None:
    load_responses(
        tmp_path,
        skill="  utter_a:\n"
        "    - 'Hi {name}, {count} cards, {session.cards.secret}, {not a placeholder}'\n",
    )
    [variant] = load_project(tmp_path).responses["utter_a"].variants
    assert [(p.text, p.ref, p.entry) for p in variant.placeholders] == [
        ("{name}", None, "name"),
        ("{count}", None, "count"),
        ("{session.cards.secret}", FieldRef("cards", "secret"), None),
    ]


@pytest.mark.parametrize(
    ("root", "skill", "code"),
    [
        (
            "  utter_a:\n    - 'Hi {session.cards.secret}'\n",
            "",
            "mantle.validation.response.unreadable_memory",
        ),
        ("  utter_a:\n    - 'Hi {nobody}'\n", "", "mantle.validation.response.unreadable_memory"),
        (
            "  utter_a:\n    - 'Hi {session.cards}'\n",
            "",
            "mantle.validation.response.unreadable_memory",
        ),
        (
            "  utter_a:\n    - text: Hi.\n      condition: session.cards.secret\n    - Hello.\n",
            "",
            "mantle.validation.response.unreadable_memory",
        ),
        (
            "  utter_a:\n    - text: Hi.\n      condition: session.project.nobody\n    - Hello.\n",
            "",
            "mantle.validation.response.unreadable_memory",
        ),
        (
            "  utter_a:\n    - text: Hi.\n      condition: name\n    - Hello.\n",
            "",
            "mantle.validation.response.invalid_condition",
        ),
        (
            "  utter_a:\n    - text: Hi.\n      condition: ''\n    - Hello.\n",
            "",
            "mantle.validation.response.invalid_condition",
        ),
        (
            "  utter_a:\n    - text: Hi.\n      condition: session.project.name\n",
            "",
            "mantle.validation.response.default_variant",
        ),
        (
            "  utter_a:\n    - text: A.\n      condition: session.project.name\n    - text: B.\n"
            "      condition: session.project.name\n",
            "",
            "mantle.validation.response.default_variant",
        ),
        ("  utter_a: []\n", "", "mantle.validation.response.invalid"),
        ("  utter_a: Hello.\n", "", "mantle.validation.response.invalid"),
        ("  utter_a:\n    - 3\n", "", "mantle.validation.response.invalid"),
        ("  utter_a:\n    - text: '  '\n", "", "mantle.validation.response.empty_text"),
        (
            "  utter_a:\n    - buttons: [{title: Yes}]\n",
            "",
            "mantle.validation.response.empty_text",
        ),
        (
            "  utter_a:\n    - text: Hi.\n      metadata: {rephrase: sometimes}\n",
            "",
            "mantle.validation.response.invalid",
        ),
        # Hang-up and transfer metadata (docs/contract-decisions.md): a flag, a destination.
        ("  utter_a:\n    - text: Bye.\n      metadata: {end_call: true}\n", "", None),
        ("  utter_a:\n    - text: Hold.\n      metadata: {transfer_to: '+15550100'}\n", "", None),
        (
            "  utter_a:\n    - text: Bye.\n      metadata: {end_call: 'yes'}\n",
            "",
            "mantle.validation.response.invalid",
        ),
        (
            "  utter_a:\n    - text: Hold.\n      metadata: {transfer_to: ' '}\n",
            "",
            "mantle.validation.response.invalid",
        ),
        (
            "  utter_a:\n    - text: Hi.\n"
            "      metadata: {end_call: true, transfer_to: '+15550100'}\n",
            "",
            "mantle.validation.response.invalid",
        ),
        (
            "  utter_a:\n    - text: Hi.\n      buttons: []\n",
            "",
            "mantle.validation.response.invalid_buttons",
        ),
        (
            "  utter_a:\n    - text: Hi.\n      buttons: {tool: x}\n",
            "",
            "mantle.validation.response.invalid_buttons",
        ),
        (
            "  utter_a:\n    - text: Hi.\n      buttons: [{title: Yes, value: y}]\n",
            "",
            "mantle.validation.response.invalid_buttons",
        ),
        (
            "  utter_a:\n    - text: Hi.\n      buttons: [{title: Yes, payload: 3}]\n",
            "",
            "mantle.validation.response.invalid_buttons",
        ),
        (
            "  utter_a:\n    - text: Hi.\n      buttons: [{title: '{nobody}'}]\n",
            "",
            "mantle.validation.response.unreadable_memory",
        ),
        (
            "  utter_a:\n    - text: Hi.\n"
            "      buttons: [{title: Y, payload: 'set:cards.ok=true'}]\n",
            "",
            "mantle.validation.response.invalid_set_payload",
        ),
        (
            "  utter_a:\n    - text: Hi.\n"
            "      buttons: [{title: Y, payload: 'set:session.cards.count=many'}]\n",
            "",
            "mantle.validation.response.invalid_set_payload",
        ),
        (
            "  utter_a:\n    - text: Hi.\n"
            "      buttons: [{title: Y, payload: 'set:session.cards.reason=found'}]\n",
            "",
            "mantle.validation.response.invalid_set_payload",
        ),
        (
            "  utter_a:\n    - text: Hi.\n"
            "      buttons: [{title: Y, payload: 'set:session.system.x=1'}]\n",
            "",
            "mantle.validation.response.invalid_set_target",
        ),
        (
            "  utter_a:\n    - text: Hi.\n"
            "      buttons: [{title: Y, payload: 'set:session.nobody.x=1'}]\n",
            "",
            "mantle.validation.response.invalid_set_target",
        ),
        (
            "  utter_a: [Hi.]\n",
            "  utter_a: [Hello.]\n",
            "mantle.validation.response.duplicate_name",
        ),
        ("", "  utter_a:\n    - 'Mine: {session.cards.secret}'\n", None),
    ],
)
def test_response_rules(tmp_path: Path, root: str, skill: str, code: str | None) -> None:
    assert codes(load_responses(tmp_path, root, skill)) == ([code] if code else [])


def test_unknown_top_level_keys_are_refused_but_version_is_allowed(tmp_path: Path) -> None:
    write(tmp_path, {"responses.yml": 'version: "3.1"\nresponses:\n  utter_a: [Hi.]\n'})
    assert codes(tmp_path) == []
    write(tmp_path, {"responses.yml": "responses:\n  utter_a: [Hi.]\nslots: {}\n"})
    assert codes(tmp_path) == ["mantle.validation.response.invalid"]


def test_one_bad_variant_does_not_make_its_name_unknown_elsewhere(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "responses.yml": "responses:\n  utter_hello:\n    - text: Hi.\n      channel: voice\n",
            "skills/cards/skill.md": skill_md("utter:\n  - utter_hello: {on: activate}\n"),
        },
    )
    assert codes(tmp_path) == ["mantle.validation.response.unknown_key"]


def test_button_sources_must_be_local_tools(tmp_path: Path) -> None:
    source = "  utter_pick:\n    - text: Which?\n      buttons: {source: card_buttons}\n"
    write(
        tmp_path,
        {
            "skills/cards/responses.yml": "responses:\n" + source,
            "skills/cards/tools.py": TOOL_HEADER + tool_source("card_buttons"),
        },
    )
    assert codes(tmp_path) == []
    write(tmp_path, {"tools/shared.py": TOOL_HEADER + tool_source("shared_buttons")})
    write(
        tmp_path,
        {
            "responses.yml": "responses:\n  utter_x:\n    - text: X?\n"
            "      buttons: {source: shared_buttons}\n"
        },
    )
    assert codes(tmp_path) == ["mantle.validation.response.invalid_buttons"]


@pytest.mark.parametrize(
    ("kind", "options", "raw", "value"),
    [
        (FieldType.BOOL, (), "True", True),
        (FieldType.BOOL, (), "false", False),
        (FieldType.INT, (), "42", 42),
        (FieldType.FLOAT, (), "2.5", 2.5),
        (FieldType.TEXT, (), "two words", "two words"),
        (FieldType.ANY, (), "x", "x"),
        (FieldType.LIST, (), '["a", 1]', ["a", 1]),
        (FieldType.JSON, (), '{"a": 1}', {"a": 1}),
        (FieldType.CATEGORICAL, ("express", "standard"), "express", "express"),
        (FieldType.CATEGORICAL, (1, 2), "2", 2),
    ],
)
def test_set_payload_values_are_coerced_to_the_field_type(
    kind: FieldType, options: tuple[Any, ...], raw: str, value: Any
) -> None:
    assert coerce_button_value(MemoryField("f", kind, enum_values=options), raw) == (value, None)


@pytest.mark.parametrize(
    ("kind", "options", "raw"),
    [
        (FieldType.BOOL, (), "yes"),
        (FieldType.INT, (), "4.5"),
        (FieldType.FLOAT, (), "fast"),
        (FieldType.LIST, (), '{"a": 1}'),
        (FieldType.JSON, (), "{oops"),
        (FieldType.CATEGORICAL, ("a",), "b"),
    ],
)
def test_set_payload_values_the_type_refuses(
    kind: FieldType, options: tuple[Any, ...], raw: str
) -> None:
    value, problem = coerce_button_value(MemoryField("f", kind, enum_values=options), raw)
    assert value is None
    assert problem
