"""Prose paragraphs, if: markers and @ tokens (contract §2.6, skill.md reference)."""

from pathlib import Path

import pytest

from tests.project.project_kit import problems, skill_md, write
from voicegate.engine.memory.fields import FieldType, MemoryField
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project.loader import load_project
from voicegate.engine.project.problems import Problems
from voicegate.engine.project.prose import parse_paragraphs, render_tokens, scan_tokens
from voicegate.engine.project.token_model import TokenKind

MEMORY = (
    "schema:\n  public:\n    reason:\n      type: text\n      llm_settable: true\n"
    "  private:\n    pin_tries:\n      type: int\n"
)
PROJECT_MEMORY = "authenticated:\n  type: bool\nphone:\n  type: text\n  pii: true\n"


def numbered(text: str, first: int = 5) -> list[tuple[int, str]]:
    return [(first + index, line) for index, line in enumerate(text.splitlines())]


def test_blank_lines_separate_paragraphs_and_if_scopes_only_its_own() -> None:
    found = Problems()
    text = (
        "Always here.\nStill the same paragraph.\n\nif: session.p.x == 'a'\nOnly for a.\n  \n"
        "Back to always.\n"
    )
    paragraphs = parse_paragraphs(numbered(text), "skill.md", found)
    assert not found
    assert [(p.line, p.condition is not None, p.text) for p in paragraphs] == [
        (5, False, "Always here.\nStill the same paragraph."),
        (8, True, "Only for a."),
        (11, False, "Back to always."),
    ]
    assert paragraphs[1].condition.source == "session.p.x == 'a'"


def test_if_is_only_a_marker_on_the_first_line() -> None:
    found = Problems()
    [paragraph] = parse_paragraphs(
        numbered("Say this.\nif: not a marker here\n"), "skill.md", found
    )
    assert paragraph.condition is None
    assert not found


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ("if: >\n  session.project.authenticated\nText.\n", "mantle.validation.condition.invalid"),
        ("if: session.project.authenticated\n", "skill.markdown.invalid_marker"),
        ("if: authenticated\nText.\n", "mantle.validation.condition.unknown_name"),
        ("elif: session.project.authenticated\nText.\n", "skill.markdown.invalid_marker"),
        ("else:\nText.\n", "skill.markdown.invalid_marker"),
        ("if: session.project.missing\nText.\n", "mantle.validation.condition.undeclared_memory"),
        (
            "if: session.other.pin_tries > 1\nText.\n",
            "mantle.validation.condition.unreadable_memory",
        ),
    ],
)
def test_bad_if_paragraphs(tmp_path: Path, body: str, code: str) -> None:
    write(
        tmp_path,
        {
            "memory.yml": PROJECT_MEMORY,
            "skills/other/memory.yml": MEMORY,
            "skills/other/skill.md": skill_md(),
            "skills/cards/skill.md": skill_md(body="Intro.\n\n" + body),
        },
    )
    assert problems(tmp_path) == [(code, "skills/cards/skill.md", 7)]


def test_else_as_an_ordinary_word_is_prose() -> None:
    found = Problems()
    parse_paragraphs(numbered("Else, ask them politely.\n"), "skill.md", found)
    assert not found


def test_tokens_are_found_with_their_positions_and_lines() -> None:
    found = Problems()
    text = "Use @memory.cards.reason now.\nThen @block.pick_card, or @skill.authenticate."
    tokens = scan_tokens(text, 10, "skill.md", found)
    assert not found
    assert [(t.kind, t.target, t.line, text[t.start : t.end]) for t in tokens] == [
        (TokenKind.MEMORY, "cards.reason", 10, "@memory.cards.reason"),
        (TokenKind.BLOCK, "pick_card", 11, "@block.pick_card"),
        (TokenKind.SKILL, "authenticate", 11, "@skill.authenticate"),
    ]
    assert tokens[0].ref == FieldRef("cards", "reason")


def test_emails_and_other_at_words_are_not_tokens() -> None:
    found = Problems()
    assert scan_tokens("Write to help@memory.example or @tool.get_balance.", 1, "s", found) == ()
    assert not found


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Hello @memory.project by name.", "skill.markdown.invalid_memory_reference"),
        ("Hello @memory.project.phone.extra.", "skill.markdown.invalid_memory_reference"),
        ("Hello @memory.system.flags.", "skill.markdown.invalid_memory_reference"),
        ("Go to @block now.", "skill.markdown.unknown_block_reference"),
        ("Use @skill.", "skill.markdown.unknown_skill_reference"),
        ("Use session.project.phone here.", "skill.markdown.bare_session_reference"),
        ("Use `session.cards.reason` here.", "skill.markdown.bare_session_reference"),
    ],
)
def test_malformed_tokens_and_bare_session_references(text: str, code: str) -> None:
    found = Problems()
    scan_tokens(text, 3, "skill.md", found)
    assert [(problem.code, problem.line) for problem in found.items] == [(code, 3)]


def test_session_as_an_ordinary_word_is_prose() -> None:
    found = Problems()
    scan_tokens(
        "At the end of the session. The session.ends here? A session.x is fine.", 1, "s", found
    )
    assert not found


@pytest.mark.parametrize(
    ("token", "code"),
    [
        ("@memory.other.pin_tries", "skill.markdown.invalid_memory_reference"),
        ("@memory.other.nothing", "skill.markdown.invalid_memory_reference"),
        ("@memory.nobody.reason", "skill.markdown.invalid_memory_reference"),
        ("@block.nowhere", "skill.markdown.unknown_block_reference"),
        ("@skill.nobody", "skill.markdown.unknown_skill_reference"),
    ],
)
def test_tokens_must_name_something_readable(tmp_path: Path, token: str, code: str) -> None:
    write(
        tmp_path,
        {
            "skills/other/memory.yml": MEMORY,
            "skills/other/skill.md": skill_md(),
            "skills/cards/skill.md": skill_md(body=f"First.\n\nThen {token} please.\n"),
        },
    )
    assert problems(tmp_path) == [(code, "skills/cards/skill.md", 7)]


def test_readable_tokens_load(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "memory.yml": PROJECT_MEMORY,
            "skills/other/memory.yml": MEMORY,
            "skills/other/skill.md": skill_md(
                body="Mine: @memory.other.pin_tries and @memory.other.reason.\n"
            ),
            "skills/cards/skill.md": skill_md(
                body="Theirs: @memory.other.reason, @memory.project.phone, @skill.other.\n"
            ),
        },
    )
    assert problems(tmp_path) == []


def test_render_replaces_set_tokens_masks_pii_and_leaves_unset_ones() -> None:
    text = "Card @memory.cards.reason; call @memory.project.phone; left @memory.cards.other."
    tokens = scan_tokens(text, 1, "s", Problems())
    fields = {
        FieldRef("cards", "reason"): ("stolen", MemoryField("reason", FieldType.TEXT)),
        FieldRef("project", "phone"): ("+1555", MemoryField("phone", FieldType.TEXT, pii=True)),
    }
    rendered = render_tokens(text, tokens, lambda ref: fields.get(ref, (None, None)))
    assert rendered == "Card stolen; call [set]; left @memory.cards.other."


def test_loaded_paragraph_tokens_render(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "memory.yml": PROJECT_MEMORY,
            "skills/cards/skill.md": skill_md(body="Text @memory.project.phone back.\n"),
        },
    )
    [paragraph] = load_project(tmp_path).skills["cards"].body.paragraphs
    phone = MemoryField("phone", FieldType.TEXT, pii=True)
    assert (
        render_tokens(paragraph.text, paragraph.tokens, lambda ref: ("+1", phone))
        == "Text [set] back."
    )
