"""One minimal broken project per validation code: refused with exactly that code, file, line.

Each folder under ``fixtures/projects/invalid/`` holds an ``expected_problem.yml`` naming the
one problem ``voicegate validate`` must report (code, path relative to the project, line).
"""

import json
import re
from pathlib import Path

import pytest
import yaml

from voicegate.cli.main import main
from voicegate.engine.project import codes
from voicegate.engine.project.loader import load_project
from voicegate.errors import ProjectError, ToolDefinitionError

INVALID = Path(__file__).resolve().parents[2] / "fixtures" / "projects" / "invalid"
FOLDERS = sorted(path for path in INVALID.iterdir() if path.is_dir())
TOOL_DEFINITION_CODES = {
    codes.TOOL_INVALID_DEFINITION,
    codes.TOOL_RESERVED_NAME,
}
LINE = re.compile(r"^(?P<code>[\w.]+): (?P<message>.+) \((?P<where>[^()]+)\)$")


def expected(folder: Path) -> dict[str, object]:
    return dict(yaml.safe_load((folder / "expected_problem.yml").read_text()))


@pytest.mark.parametrize("folder", FOLDERS, ids=[folder.name for folder in FOLDERS])
def test_validate_reports_exactly_the_documented_problem(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    want = expected(folder)
    assert main(["validate", str(folder)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"{folder}: 1 problem"
    match = LINE.match(lines[0])
    assert match is not None, lines[0]
    where = f"{folder}/{want['path']}" + (f":{want['line']}" if want["line"] is not None else "")
    assert (match["code"], match["where"]) == (want["code"], where)
    assert len(lines) == 2


@pytest.mark.parametrize("folder", FOLDERS, ids=[folder.name for folder in FOLDERS])
def test_load_project_raises_the_same_problem(folder: Path) -> None:
    want = expected(folder)
    if want["code"] in TOOL_DEFINITION_CODES:
        with pytest.raises(ToolDefinitionError) as definition:
            load_project(folder)
        assert f"{want['path']}:{want['line']}" in str(definition.value)
        return
    with pytest.raises(ProjectError) as raised:
        load_project(folder)
    error = raised.value
    assert error.code == want["code"]
    assert Path(error.path).relative_to(folder.resolve()).as_posix() == want["path"]
    assert error.line == want["line"]


def test_every_published_code_has_a_fixture() -> None:
    published = {
        codes.FRONTMATTER_DELIMITER,
        codes.TOOL_CONSTRAINTS,
        codes.MISSING_INSTRUCTIONS,
        codes.UNDECLARED_MEMORY_WRITE,
        codes.AGENT_MISSING_SECTION,
        codes.AGENT_MISSING_PERSONA,
        codes.UNRESOLVED_TOOL,
        codes.CONDITION_UNKNOWN_NAME,
    }
    # A non-UTF-8 reference file cannot live in the repository (linters read every file), so
    # that one code is tested with a file written at test time (test_references.py).
    # inline_llm and hooks_not_run are warnings (the project loads), pinned by
    # test_published_projects.py; key_in_model too, pinned by test_config_files.py.
    written_at_test_time = {
        codes.REFERENCE_UNREADABLE,
        codes.INTEGRATIONS_INLINE_LLM,
        codes.PROJECT_HOOKS_NOT_RUN,
        codes.INTEGRATIONS_KEY_IN_MODEL,
    }
    every = {
        value for name, value in vars(codes).items() if name.isupper() and isinstance(value, str)
    }
    covered = {expected(folder)["code"] for folder in FOLDERS}
    assert published <= covered
    assert every - covered == written_at_test_time


def test_json_output_lists_problems_as_objects(capsys: pytest.CaptureFixture[str]) -> None:
    folder = INVALID / "condition_unknown_name"
    assert main(["validate", str(folder), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["valid"] is False
    assert result["summary"] is None
    [problem] = result["problems"]
    assert problem["code"] == "mantle.validation.condition.unknown_name"
    assert problem["path"] == f"{folder}/skills/cards/skill.md"
    assert problem["line"] == 4
    assert "Unknown name 'authenticated' in condition expression" in problem["message"]
