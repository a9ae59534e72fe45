"""skill.md: the frontmatter delimiter rule and every frontmatter property (contract §2.5)."""

import logging
from pathlib import Path

import pytest

from tests.project.project_kit import TOOL_HEADER, codes, problems, skill_md, tool_source, write
from voicegate.engine.project.loader import load_project
from voicegate.engine.project.skill_md import split_skill_file
from voicegate.errors import ProjectError

DELIMITER = "skill.markdown.invalid_frontmatter_delimiter"


def test_the_frontmatter_lines_keep_their_file_line_numbers() -> None:
    parts = split_skill_file("---\nname: x\ndescription: y\n---\nBody.\n", "skill.md")
    assert parts.frontmatter.splitlines()[1:] == ["name: x", "description: y"]
    assert parts.body == ("Body.",)
    assert parts.body_first_line == 5


@pytest.mark.parametrize(
    "text",
    ["\ufeff---\nname: x\n---\nBody.\n", "---  \nname: x\n---\t\nBody.\n"],
    ids=["byte-order mark", "trailing whitespace"],
)
def test_tolerated_delimiters(text: str) -> None:
    assert split_skill_file(text, "skill.md").body == ("Body.",)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n---\nname: x\n---\nBody.\n",
        "# Title\n---\nname: x\n---\n",
        "---\nname: x\n",
        "--- \nname",
    ],
    ids=["empty", "blank first line", "heading first", "not closed", "never closed"],
)
def test_bad_delimiters_fail_with_their_code(text: str) -> None:
    with pytest.raises(ProjectError) as raised:
        split_skill_file(text, "skill.md")
    assert (raised.value.code, raised.value.line) == (DELIMITER, 1)


def test_the_skill_id_is_the_folder_name_not_the_name_property(tmp_path: Path) -> None:
    project = load_project(write(tmp_path, {"skills/card_replace/skill.md": skill_md()}))
    assert set(project.skills) == {"card_replace", "cards"}
    assert project.skills["card_replace"].frontmatter.name == "Cards"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("---\nname: ''\ndescription: Help.\n---\nBody.\n", 2),
        ("---\nname: Cards\ndescription: 3\n---\nBody.\n", 3),
        ("---\nname: Cards\n---\nBody.\n", 2),
        ("---\n---\nBody.\n", 2),
    ],
    ids=["blank name", "description not text", "no description", "empty frontmatter"],
)
def test_name_and_description_are_required_text(tmp_path: Path, text: str, line: int) -> None:
    write(tmp_path, {"skills/cards/skill.md": text})
    found = problems(tmp_path)
    assert found[0] == ("skill.markdown.invalid_frontmatter", "skills/cards/skill.md", line)
    assert {code for code, _, _ in found} == {"skill.markdown.invalid_frontmatter"}


def test_unknown_frontmatter_keys_are_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, {"skills/cards/skill.md": skill_md("priority: high\nrequire: oops\n")})
    with caplog.at_level(logging.INFO):
        load_project(tmp_path)
    assert "priority" in caplog.text


@pytest.mark.parametrize(
    ("front", "code"),
    [
        ("requires:\n  authenticated: {exists: true}\n", "mantle.validation.condition.invalid"),
        ("requires: true\n", "mantle.validation.condition.invalid"),
        ("disabled: 'yes'\n", "skill.markdown.invalid_frontmatter"),
        ("import_tools: get_customer_info\n", "skill.markdown.invalid_frontmatter"),
        ("routing: {engine_managed: maybe}\n", "skill.markdown.invalid_frontmatter"),
        (
            "complete_when: {condition: session.project.done, when: now}\n",
            "skill.markdown.invalid_complete_when",
        ),
        ("complete_when: {criteria: [Asked., Asked.]}\n", "skill.markdown.invalid_complete_when"),
        ("complete_when: {criteria: []}\n", "skill.markdown.invalid_complete_when"),
        ("utter: [utter_hello]\n", "skill.markdown.invalid_utter"),
        ("utter:\n  - utter_hello: {}\n", "skill.markdown.invalid_utter"),
        ("tool_constraints: {lock_card: {}}\n", "skill.markdown.invalid_tool_constraints"),
        ("tool_constraints:\n  - lock_card: requires\n", "skill.markdown.invalid_tool_constraints"),
        (
            "tool_constraints:\n  - {lock_card: {}, order_card: {}}\n",
            "skill.markdown.invalid_tool_constraints",
        ),
        (
            "tool_constraints:\n  - lock_card: {requires_confirmation: true}\n",
            "skill.markdown.invalid_tool_constraints",
        ),
        (
            "tool_constraints:\n"
            "  - lock_card: {requires_confirmation: {utter_for_confirmation: x}}\n",
            "skill.markdown.invalid_tool_constraints",
        ),
        (
            "tool_constraints:\n  - lock_card: {on_success: 3}\n",
            "skill.markdown.invalid_tool_constraints",
        ),
        (
            "tool_constraints:\n  - lock_card: {}\n  - lock_card: {}\n",
            "skill.markdown.invalid_tool_constraints",
        ),
    ],
)
def test_frontmatter_property_types(tmp_path: Path, front: str, code: str | None) -> None:
    files = {
        "skills/cards/skill.md": skill_md(front),
        "skills/cards/tools.py": TOOL_HEADER + tool_source("lock_card") + tool_source("order_card"),
        "memory.yml": "done:\n  type: bool\n",
        "responses.yml": "responses:\n  utter_hello: [Hello.]\n  x: [X.]\n",
    }
    assert codes(write(tmp_path, files)) == ([code] if code else [])


def test_complete_when_accepts_a_string_or_a_mapping(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "memory.yml": "done:\n  type: bool\n",
            "skills/cards/skill.md": skill_md("complete_when: session.project.done\n"),
            "skills/other/skill.md": skill_md(
                "complete_when:\n  condition: session.project.done\n"
                "  criteria: [The customer said goodbye.]\n"
            ),
        },
    )
    project = load_project(tmp_path)
    assert project.skills["cards"].frontmatter.complete_when.criteria == ()
    other = project.skills["other"].frontmatter.complete_when
    assert other.criteria == ("The customer said goodbye.",)
    assert other.condition.source == "session.project.done"


def test_requires_confirmation_may_be_disabled_and_unnamed(tmp_path: Path) -> None:
    files = {
        "skills/cards/skill.md": skill_md(
            "tool_constraints:\n  - lock_card:\n      requires_confirmation: {enabled: true}\n"
        ),
        "skills/cards/tools.py": TOOL_HEADER + tool_source("lock_card"),
    }
    constraint = (
        load_project(write(tmp_path, files))
        .skills["cards"]
        .frontmatter.tool_constraints["lock_card"]
    )
    assert constraint.confirmation.enabled
    assert constraint.confirmation.utter_for_confirmation is None


def test_the_unsupported_request_handler_must_stay_engine_managed(tmp_path: Path) -> None:
    folder = "skills/default_unsupported_request_handler/skill.md"
    write(tmp_path, {folder: skill_md("routing: {engine_managed: false}\n")})
    assert problems(tmp_path) == [("skill.markdown.invalid_frontmatter", folder, 4)]
    write(tmp_path, {folder: skill_md("routing: {engine_managed: true}\n")})
    assert problems(tmp_path) == []


def test_yaml_errors_in_the_frontmatter_point_at_the_file_line(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"skills/cards/skill.md": "---\nname: Cards\ndescription: [unclosed\n---\nBody.\n"},
    )
    [(code, path, line)] = problems(tmp_path)
    assert (code, path) == ("skill.markdown.invalid_frontmatter", "skills/cards/skill.md")
    assert line is not None
    assert line >= 3


def test_yaml_booleans_follow_yaml_1_2(tmp_path: Path) -> None:
    # "on: activate" must stay a key named "on" (YAML 1.1 would read it as True).
    write(
        tmp_path,
        {
            "skills/cards/skill.md": skill_md("utter:\n  - utter_hello:\n      on: activate\n"),
            "responses.yml": "responses:\n  utter_hello: [Hello.]\n",
        },
    )
    [trigger] = load_project(tmp_path).skills["cards"].frontmatter.utter
    assert trigger.on_activate
