"""Tool discovery and resolution (tools reference; contract §8.3, §10.2)."""

import logging
import sys
from pathlib import Path

import pytest

from tests.project.project_kit import (
    INTEGRATIONS,
    TOOL_HEADER,
    codes,
    problems,
    skill_md,
    tool_source,
    write,
)
from voicegate.engine.project.loader import inspect_project, load_project
from voicegate.engine.project.model import ToolOrigin


def shared(*names: str) -> dict[str, str]:
    return {"tools/shared.py": TOOL_HEADER + "".join(tool_source(name) for name in names)}


def imports(*entries: str) -> dict[str, str]:
    listed = "".join(f"  - {entry}\n" for entry in entries)
    return {"skills/cards/skill.md": skill_md(f"import_tools:\n{listed}")}


def test_shared_tools_attach_only_where_imported(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            **shared("get_customer_info"),
            **imports("get_customer_info"),
            "skills/other/skill.md": skill_md(),
        },
    )
    project = load_project(tmp_path)
    assert project.skills["cards"].toolset["get_customer_info"].origin is ToolOrigin.SHARED
    assert project.skills["other"].toolset == {}
    assert set(project.shared_tools) == {"get_customer_info"}


def test_a_local_tool_shadows_a_shared_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(
        tmp_path,
        {
            **shared("lookup"),
            **imports("lookup"),
            "skills/cards/tools.py": TOOL_HEADER + tool_source("lookup"),
        },
    )
    with caplog.at_level(logging.INFO):
        project = load_project(tmp_path)
    assert project.skills["cards"].toolset["lookup"].origin is ToolOrigin.LOCAL
    assert "shadows" in caplog.text


def test_tools_folder_shadows_tools_py_and_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(
        tmp_path,
        {
            "skills/cards/tools.py": TOOL_HEADER + tool_source("lock_card"),
            "skills/cards/tools/more.py": TOOL_HEADER
            + tool_source("lock_card").replace("The lock_card", "Folder"),
        },
    )
    with caplog.at_level(logging.WARNING):
        project = load_project(tmp_path)
    assert project.skills["cards"].toolset["lock_card"].tool.description == "Folder tool"
    assert caplog.messages == [
        "skills/cards/tools/more.py: tool 'lock_card' shadows the one in skills/cards/tools.py "
        "(duplicate)"
    ]


def test_mcp_entries_resolve_to_their_bare_names(tmp_path: Path) -> None:
    integrations = INTEGRATIONS + "  - name: fx.rates\n    url: https://fx.example.com/mcp\n"
    write(
        tmp_path,
        {
            **imports("mcp/banking:get_balance", "mcp/fx.rates:convert-amount"),
            "integrations.yml": integrations,
        },
    )
    toolset = load_project(tmp_path).skills["cards"].toolset
    assert {name: (tool.origin, tool.server) for name, tool in toolset.items()} == {
        "get_balance": (ToolOrigin.MCP, "banking"),
        "convert-amount": (ToolOrigin.MCP, "fx.rates"),
    }


def test_the_same_mcp_entry_may_appear_in_several_skills(tmp_path: Path) -> None:
    entry = "import_tools:\n  - mcp/banking:get_balance\n"
    write(
        tmp_path,
        {
            "integrations.yml": INTEGRATIONS,
            "skills/cards/skill.md": skill_md(entry),
            "skills/other/skill.md": skill_md(entry),
        },
    )
    assert codes(tmp_path) == []


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("a" * 64, True),
        ("a" * 65, False),
        ("get-balance_2", True),
        ("get.balance", False),
        ("get balance", False),
        ("ünïcode", False),
    ],
)
def test_mcp_tool_names_must_be_llm_function_names(tmp_path: Path, name: str, valid: bool) -> None:
    write(tmp_path, {**imports(f"'mcp/banking:{name}'"), "integrations.yml": INTEGRATIONS})
    expected = [] if valid else ["mantle.validation.tools.invalid_mcp_tool_name"]
    if name == "get balance":
        expected = ["mantle.validation.tools.invalid_import"]
    assert codes(tmp_path) == expected


@pytest.mark.parametrize(
    ("entries", "files", "code"),
    [
        (
            ("mcp/banking:echo", "mcp/banking:echo"),
            {},
            "mantle.validation.tools.duplicate_tool_name",
        ),
        (
            ("get_customer_info", "mcp/banking:get_customer_info"),
            shared("get_customer_info"),
            "mantle.validation.tools.duplicate_tool_name",
        ),
        (("mcp/nowhere:echo",), {}, "mantle.validation.tools.unknown_mcp_server"),
        (("missing_tool",), {}, "mantle.validation.tools.unresolved_tool"),
        (
            ("lock_card",),
            {"skills/cards/tools.py": TOOL_HEADER + tool_source("lock_card")},
            "mantle.validation.tools.unresolved_tool",
        ),
        (("complete_skill",), {}, "mantle.validation.tools.unresolved_tool"),
        (("mcp/:echo",), {}, "mantle.validation.tools.invalid_import"),
        (("not a name",), {}, "mantle.validation.tools.invalid_import"),
    ],
)
def test_import_collisions_and_load_failures(
    tmp_path: Path, entries: tuple[str, ...], files: dict[str, str], code: str
) -> None:
    write(tmp_path, {**imports(*entries), "integrations.yml": INTEGRATIONS, **files})
    assert codes(tmp_path) == [code]


def test_without_integrations_yml_no_mcp_server_is_declared(tmp_path: Path) -> None:
    write(tmp_path, imports("mcp/banking:get_balance"))
    assert codes(tmp_path) == ["mantle.validation.tools.unknown_mcp_server"]


def test_a_broken_integrations_yml_does_not_also_fail_every_mcp_import(tmp_path: Path) -> None:
    write(tmp_path, {**imports("mcp/banking:get_balance"), "integrations.yml": "llm: [\n"})
    assert codes(tmp_path) == ["config.integrations.invalid"]


def test_a_broken_tool_module_does_not_also_fail_constraints_on_its_tools(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "skills/cards/skill.md": skill_md(
                "tool_constraints:\n  - lock_card: {on_success: utter_done}\n"
            ),
            "skills/cards/tools.py": "import nowhere_to_be_found\n"
            + TOOL_HEADER
            + tool_source("lock_card"),
            "responses.yml": "responses:\n  utter_done: [Done.]\n",
        },
    )
    assert codes(tmp_path) == ["mantle.validation.tools.import_failed"]


def test_lib_is_importable_from_shared_and_local_tools_only_while_they_load(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "lib/__init__.py": "",
            "lib/data.py": "VALUE = 3\n",
            "tools/shared.py": "from lib.data import VALUE\n"
            + TOOL_HEADER
            + tool_source("shared_one"),
            "skills/cards/tools/local.py": "from lib.data import VALUE\n"
            + TOOL_HEADER
            + tool_source("local_one"),
            **imports("shared_one"),
        },
    )
    project = load_project(tmp_path)
    assert set(project.skills["cards"].toolset) == {"shared_one", "local_one"}
    assert str(tmp_path) not in sys.path
    assert "lib" not in sys.modules


def test_every_tool_module_is_reported_not_just_the_first(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "tools/a.py": "import missing_a\n",
            "skills/cards/tools.py": "import missing_b\n",
            "skills/cards/tools/c.py": TOOL_HEADER
            + "@tool\nasync def c(context: ToolContext = None) -> ToolResult: ...\n",
        },
    )
    assert codes(tmp_path) == [
        "mantle.validation.tools.import_failed",
        "mantle.validation.tools.import_failed",
        "mantle.validation.tools.invalid_definition",
    ]


def test_a_tool_module_that_exits_while_it_loads_is_an_import_failure(tmp_path: Path) -> None:
    # argparse at module level (copied from a script) exits: before, it ended validate itself
    # with argparse's usage message instead of naming the module.
    write(
        tmp_path,
        {
            "tools/cli_copy.py": "import argparse\n"
            "ARGS = argparse.ArgumentParser().parse_args(['--nope'])\n",
            "skills/cards/tools.py": "import sys\nsys.exit(4)\n",
        },
    )
    failed = "mantle.validation.tools.import_failed"
    assert problems(tmp_path) == [
        (failed, "tools/cli_copy.py", 2),
        (failed, "skills/cards/tools.py", 2),
    ]
    assert [problem.message for problem in inspect_project(tmp_path).problems] == [
        "cannot import this tool module: it exits while it loads (SystemExit: 2)",
        "cannot import this tool module: it exits while it loads (SystemExit: 4)",
    ]


@pytest.mark.parametrize(
    ("memory", "steps", "code"),
    [
        ("reason:\n      type: text\n      llm_settable: true\n", "", None),
        (
            "reason:\n      type: text\n",
            ":::ordered_block id=main\nsteps:\n  - id: ask\n    collect: reason\n:::\n",
            None,
        ),
        ("reason:\n      type: text\n", "", "mantle.validation.tools.invalid_hook"),
        ("other:\n      type: text\n", "", "mantle.validation.tools.invalid_hook"),
    ],
)
def test_post_write_hooks_follow_a_settable_or_collected_field(
    tmp_path: Path, memory: str, steps: str, code: str | None
) -> None:
    write(
        tmp_path,
        {
            "skills/cards/memory.yml": "schema:\n  public:\n    " + memory,
            "skills/cards/tools.py": TOOL_HEADER + tool_source("run_after_setting_reason"),
            "skills/cards/skill.md": skill_md(body=steps or "Help.\n"),
        },
    )
    assert codes(tmp_path) == ([code] if code else [])
    if code is None:
        skill = load_project(tmp_path).skills["cards"]
        assert "run_after_setting_reason" in skill.hooks
        assert "run_after_setting_reason" not in skill.toolset
