"""`voicegate chat` on a project as published (issue 17): the inline llm: form loads, a
scripted conversation runs through, debugging events, projects with validation errors, and a
provider voicegate cannot call."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from voicegate.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PAYEE_DESK = ROOT / "tests" / "project" / "published" / "payee_desk"
SCRIPT = Path(__file__).resolve().parent / "published" / "payee_desk_transfer.yml"
TAP = "/button set:session.send_money.from_account=CHK-1\n"
TURNS = "send fifty dollars to Alice Smith\n" + TAP


def chat(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    project: Path,
    *options: str,
    stdin: str = TURNS,
) -> tuple[int, list[dict[str, Any]], str]:
    """Run ``voicegate chat --json`` in process; (exit code, events, standard error)."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["chat", str(project), "--json", "--memory=memory", *options])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def named(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["event"] == kind]


def test_the_published_project_runs_unchanged_with_scripted_turns(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, events, err = chat(monkeypatch, capsys, PAYEE_DESK, f"--llm=scripted:{SCRIPT}")
    assert code == 0
    assert "warning: integrations.yml:3:" in err
    assert "llm: {model_group: ID}" in err
    assert [e["reason"] for e in named(events, "turn_ended")] == ["completed", "completed"]
    memory = {e["name"]: e["value"] for e in named(events, "memory_set")}
    assert memory["send_money.amount"] == 50.0
    assert memory["send_money.from_account"] == "CHK-1"
    assert memory["send_money.transfer_reference"] == "TR-5000"
    assert [b["title"] for b in named(events, "buttons")[0]["buttons"]] == [
        "Everyday checking",
        "Rainy-day savings",
    ]
    said = [e["text"] for e in named(events, "say")]
    assert "Done: 50.0 dollars are on their way to Alice Smith." in said


def test_show_prints_prompt_tools_stack_and_framework_calls(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, events, _ = chat(
        monkeypatch, capsys, PAYEE_DESK, f"--llm=scripted:{SCRIPT}", "--show=prompt,tools,stack"
    )
    assert code == 0
    prompts = named(events, "prompt")
    assert len(prompts) == 4  # one per model request: three in turn 1, one in turn 2
    assert "Northwind Bank" in prompts[0]["text"]
    tools = named(events, "tools")
    assert "account_buttons" not in tools[1]["names"]
    assert "check_payee_exists" in tools[1]["names"]
    assert tools[1]["tools"][0]["parameters"]["type"] == "object"
    stacks = [e["stack"] for e in named(events, "stack")]
    assert stacks[0] == []
    assert stacks[1] == [
        {"skill": "send_money", "parked": None, "blocks": [{"block": "transfer", "step": 0}]}
    ]
    calls = [(e["name"], e["arguments"]) for e in named(events, "framework_call")]
    assert calls == [
        ("activate", {"flow_id": "send_money"}),
        ("activate", {"flow_id": "send_money__transfer"}),
        ("set_fields", {"payee_name": "Alice Smith"}),
        ("set_fields", {"amount": 50}),
    ]
    # In order: the first activate comes after the first request's events, before the next.
    kinds = [e["event"] for e in events]
    assert kinds.index("framework_call") < [i for i, k in enumerate(kinds) if k == "prompt"][1]


def test_show_rejects_unknown_names(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = chat(monkeypatch, capsys, PAYEE_DESK, "--llm=rules", "--show=prompts")
    assert code == 1
    assert "--show: unknown ['prompts']; choose from prompt, tools, stack, framework" in err


def broken_copy(tmp_path: Path) -> Path:
    """payee_desk with add_payee's skill.md missing its closing '---'."""
    root = tmp_path / "payee_desk"
    shutil.copytree(PAYEE_DESK, root)
    skill = root / "skills" / "add_payee" / "skill.md"
    skill.write_text(skill.read_text().replace("---\nAsk", "Ask", 1))
    return root


def test_a_project_with_errors_is_refused_with_the_first_and_a_way_forward(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = broken_copy(tmp_path)
    code, events, err = chat(monkeypatch, capsys, root, f"--llm=scripted:{SCRIPT}")
    assert (code, events) == (1, [])
    assert f"{root} has 1 validation error, the first: skills/add_payee/skill.md:1:" in err
    assert "[skill.markdown.invalid_frontmatter_delimiter]" in err
    assert f"`voicegate validate {root}` lists them all" in err
    assert "`voicegate chat --allow-invalid` runs the project anyway" in err


def test_allow_invalid_runs_what_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = broken_copy(tmp_path)
    code, events, err = chat(
        monkeypatch, capsys, root, f"--llm=scripted:{SCRIPT}", "--allow-invalid", "--show=tools"
    )
    assert code == 0
    assert "error: skills/add_payee/skill.md:1:" in err
    assert "running" in err
    assert "(--allow-invalid)" in err
    assert [e["reason"] for e in named(events, "turn_ended")] == ["completed", "completed"]
    description = named(events, "tools")[0]["tools"][0]["description"]
    assert "send_money" in description
    assert "add_payee" not in description  # the skill whose skill.md did not load is left out


def test_a_folder_without_agent_yml_cannot_run_even_with_allow_invalid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = chat(monkeypatch, capsys, tmp_path, "--llm=rules", "--allow-invalid")
    assert code == 1
    assert f"cannot run {tmp_path}: agent.yml: agent.yml is missing" in err


def test_a_provider_voicegate_cannot_call_fails_at_the_first_model_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "payee_desk"
    shutil.copytree(PAYEE_DESK, root)
    (root / "integrations.yml").write_text(
        "llm:\n  provider: anthropic\n  model: claude-sonnet-4\n  api_key_env: ANTHROPIC_API_KEY\n"
    )
    code, events, _ = chat(monkeypatch, capsys, root, "--llm=openai", stdin="hello\n")
    assert code == 0  # loaded and ran; the turn is what failed
    [ended] = named(events, "turn_ended")
    assert ended["reason"] == "error"
    assert "provider 'anthropic' is not supported" in ended["detail"]
    assert "--llm scripted:FILE or rules" in ended["detail"]


CLINIC_DESK = ROOT / "tests" / "project" / "published" / "clinic_desk"
CLINIC_SCRIPT = Path(__file__).resolve().parent / "published" / "clinic_desk_booking.yml"


def test_a_shared_post_write_hook_and_helper_class_run_as_the_importing_skill(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, events, err = chat(
        monkeypatch,
        capsys,
        CLINIC_DESK,
        f"--llm=scripted:{CLINIC_SCRIPT}",
        "--show=framework",
        stdin="book a visit on Saturday\nMonday then\n",
    )
    assert code == 0
    assert "beside model_group" in err
    set_calls = [e["result"] for e in named(events, "framework_call") if e["name"] == "set_fields"]
    assert set_calls[0]["errors"] == {"visit_date": "the clinic is closed at weekends"}
    assert set_calls[1] == {"set": ["visit_date"]}
    said = [e["text"] for e in named(events, "say")]
    assert "You are booked: V-dr_lee-2026-12-07, on Monday." in said
    memory = [(e["name"], e["value"]) for e in named(events, "memory_set")]
    assert ("project.visits_booked", 1) in memory
    assert memory.count(("book_visit.visit_date", None)) == 1  # the Saturday was rolled back


STUCK_BANK = ROOT / "fixtures" / "projects" / "stuck_bank"


def test_a_tool_that_blocks_its_thread_fails_its_turn_at_tool_timeout_in_chat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "stuck_bank"
    shutil.copytree(STUCK_BANK, root)  # the tool leaves marker files next to the project
    script = tmp_path / "script.yml"
    script.write_text(
        "turns:\n  - steps:\n      - calls:\n          - activate: {flow_id: check_balance}\n"
        "          - check_balance: {account_id: A-17, block_ms: 4000, announce: false}\n"
        "      - say: The lookup failed.\n"
    )
    code, events, _ = chat(
        monkeypatch, capsys, root, f"--llm=scripted:{script}", stdin="my balance?\n"
    )
    assert code == 0
    [finished] = named(events, "tool_finished")
    assert finished["outcome"] == "timeout"  # tool_timeout: 2 in its agent.yml
    assert "tool 'check_balance' timed out" in finished["result"]["error"]
    assert [e["reason"] for e in named(events, "turn_ended")] == ["completed"]
    assert "The lookup failed." in [e["text"] for e in named(events, "say")]
