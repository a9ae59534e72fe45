"""`voicegate chat` connects the project's MCP servers, as `serve` and `replay` do.

Tools reference, "Where tools are discovered": an MCP server that cannot be reached stops
startup "so a misconfiguration surfaces before the first conversation rather than as a
missing tool mid-turn" (contract §10.2). Chat used to start without connecting them: an
imported MCP tool was simply not there ("there is no tool ...") in the middle of a turn.
"""

import io
import json
import sys
from pathlib import Path

import pytest

from tests.mcp.mcp_kit import LEDGER
from voicegate.cli.main import main

SKILL = """---
name: Echo desk
description: Repeat what the caller says
import_tools:
  - mcp/ledger.v2:echo
---
Repeat what the caller says with echo.
"""

SCRIPT = """turns:
  - steps:
      - calls:
          - activate: {flow_id: echo_desk}
          - echo: {text: "¿qué tal?"}
      - say: Done.
"""


def write_project(root: Path, command: str) -> Path:
    """A one-skill project whose skill imports `echo` from a stdio server (id with a dot)."""
    (root / "skills" / "echo_desk").mkdir(parents=True)
    (root / "agent.yml").write_text("agent:\n  persona: You echo.\n", encoding="utf-8")
    (root / "integrations.yml").write_text(
        "llm: {model_group: main}\n"
        "model_groups:\n"
        "  - {id: main, models: [{provider: openai, model: gpt-4.1-mini}]}\n"
        "mcp_servers:\n"
        "  - name: ledger.v2\n"
        f"    command: {command}\n"
        f"    args: [{json.dumps(str(LEDGER))}, --name, ledger]\n",
        encoding="utf-8",
    )
    (root / "skills" / "echo_desk" / "skill.md").write_text(SKILL, encoding="utf-8")
    script = root / "conversation.yml"
    script.write_text(SCRIPT, encoding="utf-8")
    return script


def chat(
    monkeypatch: pytest.MonkeyPatch, project: Path, script: Path, stdin: str
) -> tuple[int, list[dict[str, object]]]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    code = main(["chat", str(project), f"--llm=scripted:{script}", "--json", "--memory=memory"])
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def test_chat_offers_and_calls_an_imported_mcp_tool(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    script = write_project(tmp_path, "python")
    code, events = chat(monkeypatch, tmp_path, script, "say it back\n")
    assert code == 0
    finished = [e for e in events if e["event"] == "tool_finished"]
    assert [(e["name"], e["outcome"], e["result"]) for e in finished] == [
        ("echo", "ok", {"result": "¿qué tal?"})
    ]
    assert [e["reason"] for e in events if e["event"] == "turn_ended"] == ["completed"]


def test_chat_stops_before_the_first_turn_when_a_server_cannot_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = write_project(tmp_path, "/nonexistent/python-for-mcp")
    code, events = chat(monkeypatch, tmp_path, script, "say it back\n")
    assert code != 0
    assert events == []  # no turn ran
    assert "ledger.v2" in capsys.readouterr().err
