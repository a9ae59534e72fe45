"""`voicegate serve --workers 2 --log-format json`: metrics add up across the workers, and
every log line is a JSON object; a call's lines carry both call ids."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from tests.server.test_workers import (
    WAIT_S,
    Server,
    eventually,
    one_call_on_each_worker,
    serving,
    write_config,
)


async def metric(server: Server, name: str, **labels: str) -> float:
    """One sample of ``GET /metrics`` (on a new connection: any worker may answer)."""
    connector = aiohttp.TCPConnector(force_close=True)
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(server.base + "/metrics") as reply,
    ):
        assert reply.status == 200
        text = await reply.text()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return 0.0


async def test_metrics_of_every_worker_and_json_logs(tmp_path: Path) -> None:
    config = str(write_config(tmp_path, 2))
    arguments = ("--workers", "2", "--config", config, "--log-format", "json")
    async with serving(*arguments) as server, asyncio.TaskGroup() as tasks:
        held = await one_call_on_each_worker(server, tasks)
        for _ in range(4):  # whichever worker answers, it counts both workers' calls
            assert await metric(server, "voicegate_calls_active", provider="twilio") == 2
        for call, _ in held:
            call.hang_up()
        for _, task in held:
            assert (await task)[0] == 1000

        async def ended() -> bool:
            # The retried calls of one_call_on_each_worker count in the total too, so the
            # total can reach 2 while a held call is still closing: wait for both figures.
            labels = {"provider": "twilio", "close_code": "1000"}
            total = await metric(server, "voicegate_calls_total", **labels)
            active = await metric(server, "voicegate_calls_active", provider="twilio")
            return total >= 2 and active == 0

        await eventually(ended, "both calls counted and none active")
        server.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(server.process.wait(), WAIT_S) == 0
        lines = [json.loads(line) for line in (await server.stderr()).splitlines()]
    ended_lines = [line for line in lines if " ended: 1000" in str(line["message"])]
    assert len(ended_lines) >= 2
    assert all(line["provider_call_id"].startswith("CA") for line in ended_lines)
    assert all(line["call_id"].startswith("twilio-") for line in ended_lines)
    assert {line["worker"] for line in ended_lines} <= {"w0", "w1"}
