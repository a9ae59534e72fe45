"""Live call views (issue 18): every call's timeline as JSONL under the data directory, and
``/calls`` showing recent and live calls through a real server, authenticated."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.calls.call_kit import FAST_REPLAY_LIMITS, cue, gateway_for, script_of, settled
from tests.server.server_kit import ScriptedRunner, eventually, running_gateway
from voicegate.callers.driver import EmulatedCaller, drive
from voicegate.callers.telnyx import TelnyxCaller
from voicegate.callers.twilio import TwilioCaller
from voicegate.gateway.calllog import CallLogOptions, CallLogs, close_lost_logs
from voicegate.gateway.limits import Limits
from voicegate.gateway.options import BrowserOptions, GatewayOptions, TwilioOptions

CALL_SID = "CA00000000000000000000000000000042"
TELNYX_CALL = "v3:emulated-telnyx-call-0000000000000042"


async def get_json(session: aiohttp.ClientSession, url: str) -> Any:
    async with session.get(url) as reply:
        assert reply.status == 200, await reply.text()
        return await reply.json()


async def listed(session: aiohttp.ClientSession, base: str, state: str) -> dict[str, Any]:
    """The first call /calls lists in ``state``, asked until it appears (10 s at most)."""
    for _ in range(1000):
        calls = (await get_json(session, base + "/calls?format=json"))["calls"]
        found = [c for c in calls if c["state"] == state]
        if found:
            return found[0]
        await asyncio.sleep(0.01)
    raise AssertionError(f"no {state} call listed")


async def test_a_twilio_call_is_listed_live_then_ended_with_its_timeline(tmp_path: Path) -> None:
    await live_then_ended(tmp_path, "twilio", CALL_SID)


async def test_a_telnyx_call_is_shown_the_same_way(tmp_path: Path) -> None:
    await live_then_ended(tmp_path, "telnyx", TELNYX_CALL)


def caller_for(dialect: str) -> EmulatedCaller:
    script = script_of(cue("synth/festival/balance_8k.wav", at_ms=300))
    if dialect == "twilio":
        return TwilioCaller(script)
    return TelnyxCaller(script, call_control_id=TELNYX_CALL)


async def live_then_ended(tmp_path: Path, dialect: str, provider_id: str) -> None:
    """A call of ``dialect`` appears live in /calls, then ended, its log the whole timeline."""
    logs = CallLogOptions(tmp_path / "calls")
    options = GatewayOptions(
        port=0, twilio=TwilioOptions(), browser=BrowserOptions(), call_logs=logs
    )
    run = gateway_for(tmp_path, ["check my balance"], options=options, limits=FAST_REPLAY_LIMITS)
    async with run as world, aiohttp.ClientSession() as session:
        base = world.gateway.base_url
        url = world.url.removesuffix("/twilio") + "/" + dialect
        call = asyncio.create_task(drive(url, caller_for(dialect), speed=3.0, max_ms=30_000))
        live = await listed(session, base, "live")
        assert live["dialect"] == dialect
        records_url = f"{base}/calls/{live['call_id']}/records"
        # While the call runs, its records are served from the log as they are written.
        early = await get_json(session, records_url + "?offset=0")
        assert not early["ended"]
        assert early["records"][0]["event"] == "call_connected"
        async with session.get(f"{base}/calls/{live['call_id']}") as page:
            assert page.status == 200
            assert "calls.js" in await page.text()
        assert await call == 1000
        await settled(world)
        ended = await listed(session, base, "ended")
        rest = await get_json(session, f"{records_url}?offset={early['offset']}")
    assert ended["call_id"] == live["call_id"]
    assert ended["provider_call_id"] == provider_id
    assert ended["close_code"] == 1000
    assert rest["ended"]
    shown = early["records"] + rest["records"]
    # The file is the call's whole timeline between its connected and closed records.
    lines = (tmp_path / "calls" / f"{live['call_id']}.jsonl").read_text().splitlines()
    written = [json.loads(line) for line in lines]
    assert written == shown
    events = [r["event"] for r in written]
    assert events[0] == "call_connected"
    assert events[-1] == "call_closed"
    timeline = world.runner.timeline(provider_id)
    assert timeline is not None
    assert written[1:-1] == [json.loads(json.dumps(r, default=str)) for r in timeline.records]
    assert "say" in events
    assert "call_started" in events


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": basic("ops", "wrong")}, 401),
        ({"Authorization": "Basic !!notbase64"}, 401),
        ({"Authorization": "Bearer s3cret"}, 200),
        ({"Authorization": basic("anyone", "s3cret")}, 200),
    ],
)
async def test_calls_want_the_token_when_one_is_configured(
    tmp_path: Path, headers: dict[str, str], status: int
) -> None:
    logs = CallLogOptions(tmp_path)
    async with (
        running_gateway(ScriptedRunner(), call_logs=logs, calls_token="s3cret") as gateway,
        aiohttp.ClientSession() as session,
    ):
        for path in ("/calls", "/calls?format=json"):
            async with session.get(gateway.base_url + path, headers=headers) as reply:
                assert reply.status == status
                if status == 401:
                    assert reply.headers["WWW-Authenticate"].startswith("Basic ")


async def test_without_a_token_calls_are_refused_through_a_proxy(tmp_path: Path) -> None:
    logs = CallLogOptions(tmp_path)
    async with (
        running_gateway(ScriptedRunner(), call_logs=logs, trusted_proxy=True) as gateway,
        aiohttp.ClientSession() as session,
        session.get(gateway.base_url + "/calls?format=json") as reply,
    ):
        assert reply.status == 403
        assert "calls_token_env" in await reply.text()


@pytest.mark.parametrize(
    "path",
    [
        "/calls/..%2Fsecret",
        "/calls/%2E%2E/records",
        "/calls/..%2F..%2Fsecret/records",
        "/calls/a%00b/records",
        "/calls/.secret/records",
        "/calls/" + "a" * 200 + "/records",
        "/calls/no-such-call/records",
        "/calls/secret.jsonl/records",
    ],
)
async def test_hostile_call_ids_never_reach_a_file(tmp_path: Path, path: str) -> None:
    logs = CallLogOptions(tmp_path / "calls")
    (tmp_path / "calls").mkdir()
    (tmp_path / "secret.jsonl").write_text('{"t_ms": 0, "event": "call_closed"}\n')
    (tmp_path / "calls" / ".secret.jsonl").write_text('{"t_ms": 0, "event": "x"}\n')
    async with (
        running_gateway(ScriptedRunner(), call_logs=logs) as gateway,
        aiohttp.ClientSession() as session,
        session.get(gateway.base_url + path) as reply,
    ):
        assert reply.status in (400, 404)
        assert "call_closed" not in await reply.text()


async def test_a_bad_offset_is_refused(tmp_path: Path) -> None:
    logs = CallLogOptions(tmp_path)
    (tmp_path / "twilio-1.jsonl").write_text('{"t_ms": 0, "event": "call_connected"}\n')
    async with (
        running_gateway(ScriptedRunner(), call_logs=logs) as gateway,
        aiohttp.ClientSession() as session,
        session.get(gateway.base_url + "/calls/twilio-1/records?offset=-1") as reply,
    ):
        assert reply.status == 400


def test_a_call_log_is_bounded_and_the_directory_pruned(tmp_path: Path) -> None:
    options = CallLogOptions(tmp_path, max_bytes=2000, keep=3, max_age_s=3600)
    old = tmp_path / "twilio-old.jsonl"
    old.write_text("{}\n")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    logs = CallLogs(options)
    for index in range(5):
        call_log = logs.open(f"twilio-{index}", "twilio")
        assert call_log is not None
        for t_ms in range(200):
            call_log.record({"t_ms": t_ms, "event": "transcript", "text": "x" * 40})
        call_log.close(1000, "call ended", f"CA{index}")
    assert logs.open("../escape", "twilio") is None
    logs.close()
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == ["twilio-2.jsonl", "twilio-3.jsonl", "twilio-4.jsonl"]
    lines = [json.loads(x) for x in (tmp_path / "twilio-4.jsonl").read_text().splitlines()]
    assert lines[-2]["event"] == "call_log_truncated"
    assert lines[-2]["dropped"] > 150
    assert lines[-1]["event"] == "call_closed"
    assert lines[-1]["provider_call_id"] == "CA4"
    assert sum(len(json.dumps(r)) + 1 for r in lines[:-2]) <= 2000


def test_the_directory_is_pruned_once_every_twentieth_of_keep_calls(tmp_path: Path) -> None:
    logs = CallLogs(CallLogOptions(tmp_path, keep=40, max_age_s=3600))  # a prune every 2 calls

    def one_call(index: int) -> None:
        call_log = logs.open(f"twilio-{index}", "twilio")
        assert call_log is not None
        call_log.close(1000, "call ended", f"CA{index}")

    for index in range(41):
        one_call(index)
    logs.close()
    assert len(list(tmp_path.iterdir())) == 41  # the 41st call ended after no prune
    logs = CallLogs(CallLogOptions(tmp_path, keep=40, max_age_s=3600))
    one_call(41)
    one_call(42)
    logs.close()
    kept = {p.name for p in tmp_path.iterdir()}
    assert len(kept) == 40
    assert "twilio-0.jsonl" not in kept
    assert "twilio-42.jsonl" in kept


async def test_a_prune_keeps_the_log_of_another_workers_live_call(tmp_path: Path) -> None:
    """Workers share the directory: one worker's prunes (past ``keep``) must not delete the
    log of a call another worker still runs, however old its last write; they deleted it,
    and the call's end then wrote a log holding only its ``call_closed``."""
    options = CallLogOptions(tmp_path, keep=20, max_age_s=3600)
    worker_a, worker_b = CallLogs(options), CallLogs(options)
    live = worker_a.open("twilio-live", "twilio")
    assert live is not None
    live.record({"t_ms": 40, "event": "speech_started"})
    path = tmp_path / "twilio-live.jsonl"
    await eventually(lambda: path.exists() and path.stat().st_size > 0, "the live log written")
    os.utime(path, (time.time() - 60, time.time() - 60))  # a quiet call: the oldest log
    for index in range(25):  # keep // 20: worker B prunes after each of its calls
        ended = worker_b.open(f"twilio-{index}", "twilio")
        assert ended is not None
        ended.close(1000, "call ended", f"CA{index}")
    worker_b.close()
    live.close(1000, "call ended", "CA-live")
    worker_a.close()
    assert [record["event"] for record in records_of(path)] == [
        "call_connected",
        "speech_started",
        "call_closed",
    ]
    assert len(os.listdir(tmp_path)) == 20  # closed logs past ``keep`` were pruned


def test_a_prune_deletes_the_open_logs_of_a_dead_worker_past_keep(tmp_path: Path) -> None:
    """A log its worker left open when it died (a lost call) goes like a closed one."""
    code = "import os; print(os.getpid())"
    dead = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lost = tmp_path / "twilio-lost.jsonl"
    opened = {"t_ms": 0, "event": "call_connected", "pid": int(dead.stdout)}
    lost.write_text(json.dumps(opened) + "\n", "utf-8")
    os.utime(lost, (time.time() - 60, time.time() - 60))
    logs = CallLogs(CallLogOptions(tmp_path, keep=1, max_age_s=3600))
    ended = logs.open("twilio-1", "twilio")
    assert ended is not None
    ended.close(1000, "call ended", "CA1")
    logs.close()
    assert os.listdir(tmp_path) == ["twilio-1.jsonl"]


def records_of(path: Path) -> list[Any]:
    """A call log's records."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_open_logs_of_a_dead_worker_are_closed_with_1006_and_why(tmp_path: Path) -> None:
    """The supervisor ends the logs of the calls a killed worker took with it; another
    worker's live call and a call that had ended are left alone."""
    opened = {"t_ms": 0, "event": "call_connected", "pid": 41}
    started = {"t_ms": 0, "event": "call_started", "call_id": "CA1"}
    lost = tmp_path / "twilio-lost.jsonl"
    lost.write_text(f'{json.dumps(opened)}\n{json.dumps(started)}\n{{"t_ms": 900, "ev', "utf-8")
    other = tmp_path / "twilio-other.jsonl"
    other.write_text(json.dumps({**opened, "pid": 42}) + "\n", "utf-8")
    ended = tmp_path / "twilio-ended.jsonl"
    ended.write_text(json.dumps(opened) + '\n{"event": "call_closed"}\n', "utf-8")
    before = {path: path.read_bytes() for path in (other, ended)}
    reason = "worker 0 (pid 41) exited (killed by SIGKILL)"
    assert close_lost_logs(tmp_path, 41, reason, since=time.time() - 60) == 1
    *_, cut, last = lost.read_text().splitlines()
    assert cut == '{"t_ms": 900, "ev'  # the line the worker died writing stays on its own
    closed = json.loads(last)
    assert (closed["event"], closed["code"], closed["reason"]) == ("call_closed", 1006, reason)
    assert closed["provider_call_id"] == "CA1"
    assert {path: path.read_bytes() for path in (other, ended)} == before


async def test_calls_are_rate_limited_per_address(tmp_path: Path) -> None:
    limits = replace(Limits(), requests_per_ip_per_s=0.001, requests_per_ip_burst=2)
    async with (
        running_gateway(ScriptedRunner(), call_logs=CallLogOptions(tmp_path), limits=limits) as gw,
        aiohttp.ClientSession() as session,
    ):
        statuses = []
        for _ in range(3):
            async with session.get(gw.base_url + "/calls?format=json") as reply:
                statuses.append(reply.status)
    assert statuses == [200, 200, 429]
