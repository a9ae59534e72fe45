"""`voicegate chat`: a project in text, one line per turn, events printed (JSON or human)."""

import io
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from voicegate.cli.chat_command import parse_input
from voicegate.cli.main import main
from voicegate.engine.seam import ButtonPress, Dtmf, SilenceTimeout, Transcript

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "bank_balance"
SCRIPT = EXAMPLE / "conversation.yml"


def chat(*options: str, stdin: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "voicegate", "chat", str(EXAMPLE), *options]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60)


def json_events(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines()]


def test_the_example_shows_a_tool_call_a_send_a_memory_write_and_turn_ends() -> None:
    result = chat(
        f"--llm=scripted:{SCRIPT}",
        "--json",
        "--memory=memory",
        stdin="hi\nwhat is my balance?\nno thanks\n",
    )
    assert result.returncode == 0, result.stderr
    events = json_events(result.stdout)
    names = [event["event"] for event in events]
    assert names.count("turn_ended") == 3
    assert {"event": "tool_started", "turn_id": "t2", "call_id": "call-2-1-1"}.items() <= events[
        names.index("tool_started")
    ].items()
    sends = [e["text"] for e in events if e["event"] == "say" and e["source"] == "tool"]
    assert sends == ["One moment while I look that up."]
    memory = {e["name"]: e["value"] for e in events if e["event"] == "memory_set"}
    assert memory == {
        "check_balance.account_id": "[set]",  # pii: true
        "check_balance.current_balance": 1250.75,
        "project.balance_checks": 1,
    }
    finished = events[names.index("tool_finished")]
    assert finished["result"] == {"balance": 1250.75, "currency": "USD"}
    assert "Your balance is 1250.75 USD." in [e.get("text") for e in events]


def chat_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *options: str, stdin: str
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["chat", str(EXAMPLE), *options])
    out, err = capsys.readouterr()
    return code, out, err


def test_human_output_reads_like_a_conversation(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = chat_in_process(
        monkeypatch, capsys, f"--llm=scripted:{SCRIPT}", "--memory=memory", stdin="hello\n"
    )
    assert code == 0
    assert out.splitlines() == [
        "bot: Hello!",
        "bot: I can tell you the balance of your accounts.",
        "bot: Which account?",
        '  [turn_ended] reason="completed"',
    ]


def test_memory_persists_in_the_data_dir_across_runs(tmp_path: Path) -> None:
    options = (f"--llm=scripted:{SCRIPT}", "--json", f"--data-dir={tmp_path}", "--conversation=c7")
    for expected_checks in (1, 2):
        result = chat(*options, stdin="hi\nbalance\n")
        assert result.returncode == 0, result.stderr
        memory = [e for e in json_events(result.stdout) if e["event"] == "memory_set"]
        assert {"name": "project.balance_checks", "value": expected_checks}.items() <= memory[
            -1
        ].items()
    assert (tmp_path / "memory.sqlite3").is_file()


def test_a_script_that_does_not_fit_reports_an_error_turn(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = chat_in_process(
        monkeypatch,
        capsys,
        f"--llm=scripted:{SCRIPT}",
        "--json",
        "--memory=memory",
        stdin="what?\n",
    )
    assert code == 0
    (ended,) = json_events(out)
    assert ended["event"] == "turn_ended"
    assert ended["reason"] == "error"
    assert "expects user_matches" in ended["detail"]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--llm=nonsense:x", "is not available"),
        ("--llm=openai:gpt", "OPENAI_API_KEY"),
        ("--llm=scripted:/no/such.yml", "cannot read"),
        ("--json", "no --llm given"),
    ],
)
def test_bad_llm_options_fail_with_a_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], option: str, message: str
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = chat_in_process(monkeypatch, capsys, option, stdin="")
    assert code == 1
    assert message in err


HANGING_PROJECT = {
    "agent.yml": "agent: {persona: x}\n",
    "skills/wait/skill.md": "---\nname: w\ndescription: w\n---\nWait.\n",
    "skills/wait/tools.py": (
        "import asyncio\n"
        "from rasa.mantle.tools.decorator import tool\n"
        "from rasa.mantle.tools.result import ToolResult\n\n"
        "@tool(description='Waits for a very slow backend')\n"
        "async def slow() -> ToolResult:\n"
        "    await asyncio.Event().wait()\n"
        "    return ToolResult()\n"
    ),
    "script.yml": "turns:\n  - calls: [{activate: {flow_id: wait}}, slow]\n",
}


def test_ctrl_c_during_a_turn_cancels_it_like_a_barge_in(tmp_path: Path) -> None:
    for relative, text in HANGING_PROJECT.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    command = [
        sys.executable,
        "-m",
        "voicegate",
        "chat",
        str(tmp_path),
        f"--llm=scripted:{tmp_path / 'script.yml'}",
        "--json",
        "--memory=memory",
    ]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write("go\n")
        process.stdin.flush()
        started = json.loads(process.stdout.readline())
        assert started["event"] == "tool_started"
        process.send_signal(signal.SIGINT)
        after = [json.loads(process.stdout.readline()) for _ in range(2)]
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    assert after == [
        {"event": "tool_cancelled", "turn_id": "t1", "call_id": "call-1-1-2", "name": "slow"},
        {"event": "turn_ended", "turn_id": "t1", "reason": "cancelled"},
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("  hello there \n", Transcript("hello there")),
        ("/dtmf 12#\n", Dtmf("12#")),
        ("/button plan_gold\n", ButtonPress("plan_gold")),
        ("/silence\n", SilenceTimeout()),
        ("/dtmf\n", Transcript("/dtmf")),
        ("   \n", None),
    ],
)
def test_input_lines(line: str, expected: object) -> None:
    assert parse_input(line) == expected


def test_ending_the_call_ends_the_chat(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The demo's goodbye response carries end_call (config/agent/responses.yml): the chat
    # stops there and never reads the lines after it.
    demo = ROOT / "config" / "agent"
    monkeypatch.setattr(sys, "stdin", io.StringIO("thank you goodbye\nare you still there?\n"))
    code = main(["chat", str(demo), "--llm=rules", "--memory=memory"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines() == [
        "bot: Thank you for calling Example Bank.",
        "bot: Goodbye!",
        "  [call ended]",
        '  [turn_ended] reason="completed"',
    ]


def test_metadata_seeds_the_projects_seed_fields_as_a_calls_parameters_would(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # fixtures/projects/lumen_energy seeds tier (text) and meter_kw (float) from the call
    lumen = ROOT / "fixtures" / "projects" / "lumen_energy"
    script = lumen / "conversation_bronze.yml"
    monkeypatch.setattr(sys, "stdin", io.StringIO("advice please, we use 0.3 kWh\n"))
    options = ["--metadata", "tier=gold", "--metadata=meter_kw=0.7", "--show=prompt"]
    code = main(
        ["chat", str(lumen), f"--llm=scripted:{script}", "--json", "--memory=memory", *options]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    prompt = [e["text"] for e in json_events(out) if e["event"] == "prompt"][-1]
    assert "project.meter_kw: 0.7\nproject.tier: gold" in prompt
    assert "Mention the live meter reading of 0.7 kW." in prompt


def test_metadata_must_be_key_equals_value(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = chat_in_process(
        monkeypatch, capsys, f"--llm=scripted:{SCRIPT}", "--metadata=tier", stdin=""
    )
    assert code != 0
    assert "--metadata 'tier': write KEY=VALUE" in err
