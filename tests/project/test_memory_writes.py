"""Static inspection of context.memory calls in tool source (undeclared_memory_write)."""

from pathlib import Path

import pytest

from tests.project.project_kit import TOOL_HEADER, problems, skill_md, tool_source, write
from voicegate.engine.project.loader import inspect_project
from voicegate.engine.project.memory_writes import MemoryCall, memory_calls

SKILL_MEMORY = (
    "schema:\n  public:\n    card_id:\n      type: text\n  private:\n    tries:\n      type: int\n"
)
OTHER_MEMORY = "schema:\n  public:\n    nickname:\n      type: text\n"
PROJECT_MEMORY = "authenticated:\n  type: bool\n"


def test_memory_calls_are_found_with_literal_names() -> None:
    source = (
        "async def f(context, ctx, name):\n"
        "    context.memory.set('a', 1)\n"
        "    ctx.memory.set(name, 2)\n"
        "    context.memory.get('b')\n"
        "    self.context.memory.clear()\n"
        "    memory.set('not on a context', 3)\n"
        "    context.memory.set(name='c', value=4)\n"
        "    context.memory.set(value=5, name='d')\n"
    )
    assert memory_calls(source, "t.py") == [
        MemoryCall("set", "a", 2),
        MemoryCall("set", None, 3),
        MemoryCall("get", "b", 4),
        MemoryCall("clear", None, 5),
        MemoryCall("set", "c", 7),
        MemoryCall("set", "d", 8),
    ]


def setting(name: str) -> str:
    return tool_source(
        "writer", f"    context.memory.set({name!r}, None)\n    return ToolResult()\n"
    )


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("card_id", True),
        ("tries", True),
        ("cards.card_id", True),
        ("authenticated", True),
        ("project.authenticated", True),
        ("undeclared", False),
        ("project.card_id", False),
        ("other.nickname", False),
        ("system.flags", False),
        ("session.cards.card_id", False),
    ],
)
def test_local_tool_writes_are_checked_as_the_skill_would_run_them(
    tmp_path: Path, name: str, ok: bool
) -> None:
    write(
        tmp_path,
        {
            "memory.yml": PROJECT_MEMORY,
            "skills/cards/memory.yml": SKILL_MEMORY,
            "skills/other/memory.yml": OTHER_MEMORY,
            "skills/other/skill.md": skill_md(),
            "skills/cards/tools.py": TOOL_HEADER + setting(name),
        },
    )
    expected = [] if ok else [("undeclared_memory_write", "skills/cards/tools.py", 7)]
    assert problems(tmp_path) == expected


def test_non_literal_names_are_not_judged(tmp_path: Path) -> None:
    body = "    name = 'undeclared'\n    context.memory.set(name, 1)\n    return ToolResult()\n"
    write(tmp_path, {"skills/cards/tools.py": TOOL_HEADER + tool_source("writer", body)})
    assert problems(tmp_path) == []


def test_shared_modules_are_checked_for_every_importing_skill(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "memory.yml": PROJECT_MEMORY,
            "skills/cards/memory.yml": SKILL_MEMORY,
            "skills/other/memory.yml": OTHER_MEMORY,
            "tools/shared.py": TOOL_HEADER + setting("card_id"),
            "skills/cards/skill.md": skill_md("import_tools: [writer]\n"),
            "skills/other/skill.md": skill_md("import_tools: [writer]\n"),
        },
    )
    [(code, path, line)] = problems(tmp_path)
    assert (code, path, line) == ("undeclared_memory_write", "tools/shared.py", 7)
    [problem] = inspect_project(tmp_path).problems
    assert "writing as skill 'other'" in problem.message


def test_a_shared_module_no_skill_imports_is_checked_against_every_declaration(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        {
            "skills/cards/memory.yml": SKILL_MEMORY,
            "tools/shared.py": TOOL_HEADER + setting("card_id"),
        },
    )
    assert problems(tmp_path) == []
    write(tmp_path, {"tools/shared.py": TOOL_HEADER + setting("nothing_declares_this")})
    assert problems(tmp_path) == [("undeclared_memory_write", "tools/shared.py", 7)]


def test_memory_apis_other_than_get_and_set_are_refused(tmp_path: Path) -> None:
    body = "    context.memory.delete('card_id')\n    return ToolResult()\n"
    write(
        tmp_path,
        {
            "skills/cards/memory.yml": SKILL_MEMORY,
            "skills/cards/tools.py": TOOL_HEADER + tool_source("writer", body),
        },
    )
    assert problems(tmp_path) == [
        ("mantle.validation.tools.forbidden_memory_api", "skills/cards/tools.py", 7)
    ]


def test_a_broken_memory_yml_is_reported_once_not_at_every_write(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "skills/cards/memory.yml": "schema:\n  public:\n    card_id:\n      type: string\n",
            "skills/cards/tools.py": TOOL_HEADER + setting("card_id"),
            "skills/cards/skill.md": skill_md(
                "requires: session.cards.card_id\n", "Use @memory.cards.card_id.\n"
            ),
        },
    )
    assert [code for code, _, _ in problems(tmp_path)] == ["mantle.validation.memory.invalid"]
