"""Two `voicegate serve` processes share one Redis; one is SIGKILLed mid-tool (issue 13).

The caller's stream to the first node is cut when the node dies while its tool awaits; the
same CallSid streams to the second node, which resumes the call: it says the resume line, the
pending tool runs again, memory the lost node wrote is there. What the second node did is read
back from Redis (the call's saved state), so nothing here reaches into either process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from tests.calls.call_kit import SLOW_BANK, cue, script_of
from tests.calls.test_redis_outage import start_refusal
from tests.redis_kit import RedisServer, redis_server  # noqa: F401 - the fixture
from voicegate.callers.driver import drive
from voicegate.callers.twilio import TwilioCaller

BALANCE = "synth/festival/balance_8k.wav"
CALL_SID = "CA0000000000000000000000000000re03"
RESUME_LINE = "Sorry, we were cut off."
FIRST = """turns:
  - calls:
      - activate: {flow_id: check_balance}
      - check_balance: {account_id: A-17, delay_ms: 60000}
"""
SECOND = """turns:
  - steps:
      - calls:
          - check_balance: {account_id: A-17, delay_ms: 10, announce: false}
      - say: Your balance is {check_balance.balance} dollars.
"""


def node_config(root: Path, name: str, project: Path, conversation: str, heard: str) -> Path:
    """A node's settings: the shared project, its own scripted model and recogniser, Redis."""
    folder = root / name
    folder.mkdir()
    (folder / "conversation.yml").write_text(conversation, encoding="utf-8")
    (folder / "caller_lines.txt").write_text(heard + "\n", encoding="utf-8")
    config = folder / "voicegate.yml"
    config.write_text(
        "server:\n  port: 0\n"
        f"speech:\n  stt: scripted:{folder / 'caller_lines.txt'}\n  tts: tone\n"
        f"engine:\n  project_dir: {project}\n  llm: scripted:{folder / 'conversation.yml'}\n"
        f"store:\n  backend: redis\n  resume_line: {RESUME_LINE}\n  lease_s: 1.0\n"
        # The second caller replays at twice real time (issue 15's pacing would drop it).
        "limits:\n  media_max_speed: 4\n",
        encoding="utf-8",
    )
    return config


@contextlib.asynccontextmanager
async def serve(
    config: Path, redis_url: str
) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """A running `voicegate serve` and its Twilio stream URL (its log in a file beside)."""
    env = {**os.environ, "VOICEGATE_REDIS_URL": redis_url}
    with (config.parent / "serve.log").open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "voicegate",
            "serve",
            "--config",
            str(config),
            # One process per node, so SIGKILL takes the whole node down (with several
            # workers, the supervisor's death lets its workers drain their calls).
            "--workers",
            "1",
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
            env=env,
        )
        try:
            assert process.stdout is not None
            first = (await asyncio.wait_for(process.stdout.readline(), 120)).decode()
            found = re.search(r"listening on http(://127\.0\.0\.1:\d+)", first)
            assert found, f"unexpected first line: {first!r}; log in {log.name}"
            yield process, f"ws{found.group(1)}/twilio"
        finally:
            if process.returncode is None:
                process.kill()
            await process.wait()


def tool_record(project: Path) -> list[str]:
    path = project / "tool_record.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [json.loads(line)["event"] for line in lines]


async def until_started(project: Path, timeout_s: float = 60.0) -> None:
    """Poll the tool's own record until its lookup started (it then awaits its backend)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while "started" not in tool_record(project):
        assert loop.time() < deadline, "the tool never started"
        await asyncio.sleep(0.05)


def saved(server: RedisServer) -> tuple[dict[str, str], dict[str, Any], dict[str, str]]:
    """The call's hash (epoch, state), its decoded state, and the conversation's memory."""
    client = server.client()
    try:
        (call_key,) = client.keys(f"voicegate:*:call:{CALL_SID}")
        (memory_key,) = client.keys(f"voicegate:*:mem:{CALL_SID}")
        call, memory = client.hgetall(call_key), client.hgetall(memory_key)
    finally:
        client.close()
    return call, json.loads(call["state"]), memory


async def reconnect(url: str, attempts: int = 20) -> int | None:
    """The caller's stream again, retried while the call's old lease still holds it."""
    for _ in range(attempts):
        again = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=4000), call_sid=CALL_SID)
        code = await drive(url, again, speed=2.0, max_ms=30_000)
        if code != 1013:
            return code
        await asyncio.sleep(0.5)
    return 1013


async def test_a_sigkilled_node_s_call_resumes_on_the_other_node(
    tmp_path: Path,
    redis_server: RedisServer,  # noqa: F811
) -> None:
    project = tmp_path / "project"
    shutil.copytree(SLOW_BANK, project)
    first = node_config(tmp_path, "a", project, FIRST, "check my balance")
    second = node_config(tmp_path, "b", project, SECOND, "hello?")
    async with (
        serve(first, redis_server.url) as (node_a, url_a),
        serve(second, redis_server.url) as (_, url_b),
    ):
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=60_000), call_sid=CALL_SID)
        call = asyncio.create_task(drive(url_a, caller, speed=1.0, max_ms=70_000))
        await until_started(project)
        # The same CallSid on the other node while it is live here: refused with a reason,
        # and the first call goes on.
        code, reason = await start_refusal(url_b, CALL_SID)
        assert code == 1013
        assert str(reason).startswith(f"call {CALL_SID} is live on node ")
        assert not call.done()
        assert tool_record(project) == ["started"]  # its tool still awaits, untouched
        node_a.send_signal(signal.SIGKILL)  # the node is lost while its tool awaits
        with contextlib.suppress(Exception):
            await call
        # The lost node's lease on the CallSid lapses (lease_s) before the other node takes
        # the call: until then it is refused with 1013, as a provider's reconnect would be.
        assert await reconnect(url_b) == 1000
    call, state, memory = saved(redis_server)
    assert call["epoch"] == "2"
    heard = [e for e in state["history"] if e["type"] == "BotUttered"]
    assert heard[0]["turn_id"] == "t2"
    assert heard[0]["text"].startswith(RESUME_LINE)
    assert "Your balance is 42 dollars." in heard[0]["text"]
    users = [e["text"] for e in state["history"] if e["type"] == "UserUttered"]
    assert users == ["check my balance", "hello?"]
    assert tool_record(project).count("started") == 2  # the pending tool ran again
    assert tool_record(project).count("finished") == 1  # and completed once
    assert memory['["project", "lookups_started"]'] == "2"  # the lost node's write was kept
