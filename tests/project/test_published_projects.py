"""Projects written the way published third-party projects are (issue 17).

``published/payee_desk`` uses the 3.19 inline ``llm:`` form, one shared tools module imported
piecemeal by several skills, a root ``responses.yml`` naming a button source and ordered-block
instructions written as YAML block scalars. ``published/clinic_desk`` selects a model group
with settings beside it and shares a post-write hook and a helper class in one module.
Variants copied into a temporary folder each break one thing and check where the finding
points.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.project.project_kit import problems
from voicegate.cli.engines import openai_model
from voicegate.cli.main import main
from voicegate.engine.project.loader import inspect_project, load_project

PUBLISHED = Path(__file__).resolve().parent / "published"
PAYEE_DESK = PUBLISHED / "payee_desk"
INLINE_LLM = ("config.integrations.inline_llm", "integrations.yml", 3)


def copy(tmp_path: Path, edits: dict[str, str] | None = None) -> Path:
    """payee_desk in ``tmp_path``, with ``edits`` (relative path -> text) written over it."""
    root = tmp_path / "payee_desk"
    shutil.copytree(PAYEE_DESK, root)
    for relative, text in (edits or {}).items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def replace_in(root: Path, relative: str, old: str, new: str) -> None:
    """Replace ``old`` (which must be there) with ``new`` in one file of ``root``."""
    path = root / relative
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_the_published_project_loads_with_one_warning_for_the_inline_llm() -> None:
    report = inspect_project(PAYEE_DESK)
    assert report.project is not None
    assert report.errors == ()
    [warning] = report.warnings
    assert (warning.code, warning.line, warning.severity) == (INLINE_LLM[0], 3, "warning")
    assert "llm: {model_group: ID}" in warning.message  # names the preferred form
    assert load_project(PAYEE_DESK).integrations.llm["temperature"] == 0.2


def test_validate_passes_with_the_warning_and_strict_fails_on_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["validate", str(PAYEE_DESK)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("warning: config.integrations.inline_llm: ")
    assert lines[1].startswith(f"{PAYEE_DESK}: valid — 3 skills")
    assert lines[1].endswith("(1 warning)")
    assert main(["validate", "--strict", str(PAYEE_DESK)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [lines[0].removeprefix("warning: "), f"{PAYEE_DESK}: 1 problem"]


def test_validate_json_gives_each_problem_a_severity(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--json", str(PAYEE_DESK)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["valid"], result["strict"]) == (True, False)
    assert [(p["code"], p["severity"]) for p in result["problems"]] == [(INLINE_LLM[0], "warning")]
    assert main(["validate", "--json", "--strict", str(PAYEE_DESK)]) == 1
    assert json.loads(capsys.readouterr().out)["valid"] is False


def test_a_shared_tool_is_judged_under_the_skills_importing_that_tool_only(
    tmp_path: Path,
) -> None:
    # check_balance imports only list_accounts from tools/banking.py; check_payee_exists
    # (through its helper _remember_payee) writes payee_exists, which check_balance does not
    # declare. Only the importers of check_payee_exists count: no finding.
    assert problems(copy(tmp_path)) == [INLINE_LLM]


def test_a_real_undeclared_write_is_reported_for_the_skill_that_imports_the_tool(
    tmp_path: Path,
) -> None:
    root = copy(tmp_path)
    replace_in(
        root,
        "tools/banking.py",
        "    accounts = _accounts(context)\n",
        "    accounts = _accounts(context)\n"
        "    context.memory.set('last_listing', len(accounts))\n",
    )
    report = inspect_project(root)
    [error] = report.errors
    assert (error.code, Path(error.path).name, error.line) == (
        "undeclared_memory_write",
        "banking.py",
        19,
    )
    assert "writing as skill 'check_balance'" in error.message


def test_a_helper_write_reached_by_an_imported_tool_is_judged_as_that_tools_skills(
    tmp_path: Path,
) -> None:
    root = copy(tmp_path)
    replace_in(root, "skills/add_payee/memory.yml", "payee_exists", "payee_known")
    replace_in(root, "skills/add_payee/skill.md", "add_payee.payee_exists", "add_payee.payee_known")
    [error] = inspect_project(root).errors
    assert (error.code, error.line) == ("undeclared_memory_write", 13)  # in _remember_payee
    assert "writing as skill 'add_payee'" in error.message


def test_an_unimported_tool_is_checked_against_every_declaration(tmp_path: Path) -> None:
    root = copy(tmp_path)
    replace_in(root, "skills/check_balance/skill.md", "  - list_accounts\n", "  - list_accounts\n")
    extra = (
        "\n\n@tool(description='Unused')\n"
        "async def audit(context: ToolContext = None) -> ToolResult:\n"
        "    context.memory.set('payee_exists', True)\n"  # declared by two skills
        "    context.memory.set('nobody_declares_this', True)\n"
        "    return ToolResult()\n"
    )
    with (root / "tools/banking.py").open("a") as tools:
        tools.write(extra)
    [error] = inspect_project(root).errors
    assert "'nobody_declares_this' is not declared in any memory.yml" in error.message


@pytest.mark.parametrize(
    ("bad", "line"),
    [
        ("      Then call check_payee_exists with that name; the answer lands in\n", 20),
        ("      @memory.send_money.payee_exists.\n", 21),
    ],
)
def test_findings_inside_a_literal_block_scalar_point_at_their_line(
    tmp_path: Path, bad: str, line: int
) -> None:
    root = copy(tmp_path)
    replace_in(root, "skills/send_money/skill.md", bad, bad.rstrip() + " @memory.add_payee.x\n")
    assert problems(root)[1:] == [
        ("skill.markdown.invalid_memory_reference", "skills/send_money/skill.md", line)
    ]


def test_findings_inside_a_folded_block_scalar_point_at_their_line(tmp_path: Path) -> None:
    root = copy(tmp_path)
    replace_in(
        root,
        "skills/send_money/skill.md",
        "      and record it with set_fields.\n",
        "      and record it with set_fields, then read session.send_money.amount back.\n",
    )
    assert problems(root)[1:] == [
        ("skill.markdown.bare_session_reference", "skills/send_money/skill.md", 26)
    ]


def test_findings_inside_a_block_scalar_response_text_point_at_their_line(
    tmp_path: Path,
) -> None:
    text = (
        "responses:\n"
        "  utter_transfer_sent:\n"
        "    - text: |\n"
        "        Done.\n"
        "        {amount} dollars are on their way to {nobody.knows}.\n"
    )
    root = copy(tmp_path, {"skills/send_money/responses.yml": text})
    assert problems(root)[1:] == [
        ("mantle.validation.response.unreadable_memory", "skills/send_money/responses.yml", 5)
    ]


CLINIC_DESK = PUBLISHED / "clinic_desk"


def test_settings_beside_model_group_load_with_a_warning_and_reach_the_model() -> None:
    report = inspect_project(CLINIC_DESK)
    assert report.errors == ()
    [warning] = report.warnings
    assert (warning.code, warning.line) == ("config.integrations.inline_llm", 3)
    settings, key = openai_model("", load_project(CLINIC_DESK), {"GROQ_API_KEY": "gsk"})
    assert (settings.model, settings.base_url, key) == (
        "llama-3.1-8b-instant",
        "https://api.groq.com/openai/v1",
        "gsk",
    )
    assert settings.options == {"temperature": 0.3}


def test_a_shared_hook_and_a_helper_class_are_judged_under_their_importers_only(
    tmp_path: Path,
) -> None:
    # book_visit's writes go through Calendar.book; the hook writes weekday: both only
    # under book_visit, the one skill importing them.
    root = tmp_path / "clinic_desk"
    shutil.copytree(CLINIC_DESK, root)
    assert [p.code for p in inspect_project(root).errors] == []
    replace_in(root, "skills/find_doctor/skill.md", "  - list_doctors\n", "  - book_visit\n")
    [error] = inspect_project(root).errors
    assert (error.code, Path(error.path).name, error.line) == (
        "undeclared_memory_write",
        "scheduling.py",
        20,  # in Calendar.book, reached from the book_visit tool
    )
    assert "writing as skill 'find_doctor'" in error.message


def test_hook_modules_load_with_a_warning_that_they_never_run(tmp_path: Path) -> None:
    # contract §2.9: hooks.py and hooks/**/*.py are optional and "under development";
    # voicegate does not run them, and a project relying on one is told so, not left to
    # find out that its modify_incoming_message hook never fired
    hook = "from rasa.mantle.hooks import on_turn_started\n"
    root = copy(tmp_path, {"hooks.py": hook, "hooks/audit/extra.py": hook})
    report = inspect_project(root)
    assert report.project is not None
    assert [w.code for w in report.warnings] == [INLINE_LLM[0], *["project.hooks_not_run"] * 2]
    assert [(code, path) for code, path, _ in problems(root)][1:] == [
        ("project.hooks_not_run", "hooks.py"),
        ("project.hooks_not_run", "hooks/audit/extra.py"),
    ]
