"""Minimal project loading: agent.yml, memory.yml, skill tools, errors naming the file."""

import logging
import sys
from pathlib import Path

import pytest

from voicegate.engine.llm.script import parse_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.fields import FieldType
from voicegate.engine.memory.store import InMemoryStore
from voicegate.engine.project.loader import load_project
from voicegate.engine.seam import CallInfo, ToolFinished, Transcript
from voicegate.engine.tools.reserved import FRAMEWORK_TOOL_NAMES
from voicegate.errors import ProjectError, ToolDefinitionError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bank_balance"

TOOL_HEADER = (
    "from rasa.mantle.tools.decorator import ToolContext, tool\n"
    "from rasa.mantle.tools.result import ToolResult\n\n"
)


def tool_source(name: str, description: str = "A tool") -> str:
    return (
        f"@tool(description={description!r})\n"
        f"async def {name}(context: ToolContext = None) -> ToolResult:\n"
        "    return ToolResult()\n\n"
    )


def write(root: Path, files: dict[str, str]) -> Path:
    files = {"agent.yml": "agent:\n  persona: Test.\n", **files}
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def skill(skill_id: str, tools: str | None = None) -> dict[str, str]:
    files = {f"skills/{skill_id}/skill.md": "---\nname: x\ndescription: y\n---\nDo it.\n"}
    if tools is not None:
        files[f"skills/{skill_id}/tools.py"] = TOOL_HEADER + tools
    return files


def test_loads_the_example_project() -> None:
    project = load_project(EXAMPLE)
    assert project.agent.tool_timeout == 5.0
    assert project.agent.persona.startswith("You are the voice assistant")
    assert set(project.skills["check_balance"].tools) == {"check_balance"}
    tool = project.skills["check_balance"].tools["check_balance"]
    assert tool.spec.parameters["required"] == ["account_id"]
    assert project.memory.project["caller_phone"].pii
    assert project.memory.skills["check_balance"].fields["current_balance"].type is FieldType.FLOAT
    assert project.llm_config["llm"] == {"model_group": "main"}


def test_tool_timeout_defaults_to_ten_seconds(tmp_path: Path) -> None:
    assert load_project(write(tmp_path, {})).agent.tool_timeout == 10.0


@pytest.mark.parametrize("value", ["0", "-1", "soon", "true"])
def test_a_bad_tool_timeout_names_agent_yml(tmp_path: Path, value: str) -> None:
    write(tmp_path, {"agent.yml": f"agent: {{persona: x}}\ntool_timeout: {value}\n"})
    with pytest.raises(ProjectError, match="tool_timeout") as raised:
        load_project(tmp_path)
    assert raised.value.path == str(tmp_path / "agent.yml")


def test_yaml_errors_name_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, {"agent.yml": "agent:\n  persona: ok\nrules: [\n"})
    with pytest.raises(ProjectError, match="invalid YAML") as raised:
        load_project(tmp_path)
    assert raised.value.path.endswith("agent.yml")
    assert raised.value.line is not None


def test_an_unquoted_rule_with_a_colon_is_explained(tmp_path: Path) -> None:
    write(tmp_path, {"agent.yml": "agent: {persona: x}\nrules:\n  - Never: quote a balance\n"})
    with pytest.raises(ProjectError, match="quote a rule"):
        load_project(tmp_path)


def test_missing_agent_yml_is_a_project_error(tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match=r"agent\.yml is missing"):
        load_project(tmp_path)


def test_a_skill_folder_needs_skill_md(tmp_path: Path) -> None:
    (tmp_path / "skills" / "empty").mkdir(parents=True)
    write(tmp_path, {})
    with pytest.raises(ProjectError, match=r"skill\.md") as raised:
        load_project(tmp_path)
    assert raised.value.path == str(tmp_path / "skills" / "empty")


@pytest.mark.parametrize("skill_id", ["project", "system"])
def test_reserved_namespaces_cannot_be_skill_ids(tmp_path: Path, skill_id: str) -> None:
    write(tmp_path, skill(skill_id))
    with pytest.raises(ProjectError, match="cannot be a skill id"):
        load_project(tmp_path)


def test_tools_py_and_tools_folder_are_both_scanned(tmp_path: Path) -> None:
    files = skill("cards", tool_source("lock_card") + tool_source("shared_name", "from tools.py"))
    files["skills/cards/tools/extra.py"] = TOOL_HEADER + tool_source("order_card")
    files["skills/cards/tools/more.py"] = TOOL_HEADER + tool_source("shared_name", "from folder")
    project = load_project(write(tmp_path, files))
    tools = project.skills["cards"].tools
    assert set(tools) == {"lock_card", "order_card", "shared_name"}
    assert tools["shared_name"].description == "from folder"  # tools/*.py shadows tools.py


def test_a_shadowed_tool_is_logged_as_a_duplicate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    files = skill("cards", tool_source("lock_card"))
    files["skills/cards/tools/a.py"] = TOOL_HEADER + tool_source("lock_card")
    with caplog.at_level(logging.WARNING):
        load_project(write(tmp_path, files))
    assert "duplicate" in caplog.text


def test_only_tools_defined_in_the_module_are_discovered(tmp_path: Path) -> None:
    files = skill(
        "cards",
        "from lib.shared import imported_tool\n\n"
        "async def helper() -> None: ...\n\n" + tool_source("own_tool"),
    )
    files["lib/__init__.py"] = ""
    files["lib/shared.py"] = TOOL_HEADER + tool_source("imported_tool")
    project = load_project(write(tmp_path, files))
    assert set(project.skills["cards"].tools) == {"own_tool"}


def test_lib_is_importable_only_while_tools_load(tmp_path: Path) -> None:
    files = skill("cards", "from lib.data import VALUE\n\n" + tool_source("uses_lib"))
    files["lib/__init__.py"] = ""
    files["lib/data.py"] = "VALUE = 3\n"
    load_project(write(tmp_path, files))
    assert str(tmp_path) not in sys.path
    assert "lib" not in sys.modules
    assert "rasa" not in sys.modules


@pytest.mark.parametrize("name", sorted(FRAMEWORK_TOOL_NAMES))
def test_reserved_framework_tool_names_raise_at_load(tmp_path: Path, name: str) -> None:
    write(tmp_path, skill("cards", tool_source(name)))
    with pytest.raises(ToolDefinitionError, match="built-in framework tool") as raised:
        load_project(tmp_path)
    assert "skills/cards/tools.py" in str(raised.value)


def test_a_bare_tool_decorator_fails_the_load_naming_the_module(tmp_path: Path) -> None:
    source = "@tool\nasync def bare(context: ToolContext = None) -> ToolResult:\n    ...\n"
    write(tmp_path, skill("cards", source))
    with pytest.raises(ToolDefinitionError, match="keyword argument") as raised:
        load_project(tmp_path)
    assert "tools.py" in str(raised.value)


def test_a_tool_module_that_cannot_import_fails_the_load(tmp_path: Path) -> None:
    write(tmp_path, skill("cards", "import not_a_module_anywhere\n"))
    with pytest.raises(ProjectError, match="cannot import this tool module") as raised:
        load_project(tmp_path)
    assert raised.value.path.endswith("tools.py")


def test_the_same_tool_in_two_folder_modules_is_refused(tmp_path: Path) -> None:
    files = skill("cards")
    files["skills/cards/tools/a.py"] = TOOL_HEADER + tool_source("twice")
    files["skills/cards/tools/b.py"] = TOOL_HEADER + tool_source("twice")
    with pytest.raises(ToolDefinitionError, match="also defined"):
        load_project(write(tmp_path, files))


async def test_tool_timeout_from_agent_yml_bounds_every_local_call(tmp_path: Path) -> None:
    source = "import asyncio\n\n" + tool_source("slow").replace(
        "    return ToolResult()", "    await asyncio.Event().wait()\n    return ToolResult()"
    )
    files = skill("cards", source)
    files["agent.yml"] = "agent: {persona: x}\ntool_timeout: 0.02\n"
    project = load_project(write(tmp_path, files))
    # a loaded skill's tools are offered once it is active (contract §5.1)
    script = parse_script({"turns": [{"calls": [{"activate": {"flow_id": "cards"}}, "slow"]}]})
    engine = ProjectEngine(project, lambda call_id: ScriptedLLM(script), InMemoryStore())
    await engine.open(CallInfo("c1"))
    async with engine.turn("c1", Transcript("go")) as stream:
        finished = [event async for event in stream if isinstance(event, ToolFinished)]
    assert [(event.outcome, event.result) for event in finished] == [
        ("timeout", {"error": "tool 'slow' timed out after 0.02 s (tool_timeout)"})
    ]
