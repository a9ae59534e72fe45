"""Every problem is reported, in dependency order; loading raises the first one."""

from pathlib import Path

import pytest

from tests.project.project_kit import TOOL_HEADER, problems, skill_md, tool_source, write
from voicegate.cli.main import main
from voicegate.engine.project.loader import load_project
from voicegate.errors import ProjectError

BROKEN = {
    "integrations.yml": "llm: {model_group: main}\n",
    "agent.yml": "agent: {id: x}\n",
    "memory.yml": "flag:\n  type: boolean\n",
    "responses.yml": "responses:\n  utter_a:\n    - text: ''\n",
    "skills/cards/skill.md": skill_md("requires: flag\n", "Use session.project.flag.\n"),
    "skills/cards/tools.py": TOOL_HEADER
    + tool_source("t", "    context.memory.set('nothing', 1)\n    return ToolResult()\n"),
}


def test_all_problems_are_listed_in_dependency_order(tmp_path: Path) -> None:
    assert problems(write(tmp_path, BROKEN)) == [
        ("config.integrations.unknown_model_group", "integrations.yml", 1),
        ("config.agent.missing_persona", "agent.yml", 1),
        ("mantle.validation.memory.invalid", "memory.yml", 2),
        ("mantle.validation.response.empty_text", "responses.yml", 3),
        ("mantle.validation.condition.unknown_name", "skills/cards/skill.md", 4),
        ("skill.markdown.bare_session_reference", "skills/cards/skill.md", 6),
    ]  # the undeclared write is not judged: the project memory.yml did not load


def test_load_project_raises_the_first_problem_and_counts_the_rest(tmp_path: Path) -> None:
    write(tmp_path, BROKEN)
    with pytest.raises(
        ProjectError, match=r"\(and 5 more problems; `voicegate validate` lists them all\)"
    ) as raised:
        load_project(tmp_path)
    assert raised.value.code == "config.integrations.unknown_model_group"
    assert raised.value.path == str(tmp_path.resolve() / "integrations.yml")
    assert raised.value.line == 1


def test_validate_prints_one_line_per_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, BROKEN)
    assert main(["validate", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7
    assert lines[0].startswith("config.integrations.unknown_model_group: ")
    assert lines[0].endswith(f"({tmp_path}/integrations.yml:1)")
    assert lines[-1] == f"{tmp_path}: 6 problems"


def test_a_missing_folder_or_agent_yml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "nowhere")]) == 1
    assert "project.invalid_layout: not a project folder" in capsys.readouterr().out
    assert main(["validate", str(tmp_path)]) == 1
    assert "agent.yml is missing" in capsys.readouterr().out


def test_a_relative_project_path_is_shown_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "bot", {"agent.yml": "agent: {}\n"})
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "bot"]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("(bot/agent.yml:1)")
