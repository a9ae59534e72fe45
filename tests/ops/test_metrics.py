"""``/metrics``: what the timeline turns into, the route's protection, and workers' sums."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.server.server_kit import ScriptedRunner, loopback_options, twilio_start, ws_url
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.metrics import GatewayMetrics
from voicegate.gateway.supervisor import MULTIPROC_ENV, metrics_directory

TOKEN = "metrics-token-0123456789"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Sample name and labels -> value, from the exposition text."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, tuple(sorted(labels.items()))), 0.0)


def test_a_call_timeline_feeds_the_latency_histograms_and_counters() -> None:
    metrics = GatewayMetrics()
    listen = metrics.call_listener()
    for record in [
        {"t_ms": 100, "event": "speech_started", "onset_ms": 60},
        {"t_ms": 100, "event": "playout_paused"},  # flushed 40 ms after the onset
        {"t_ms": 900, "event": "speech_ended", "end_ms": 800},
        {"t_ms": 1000, "event": "transcript", "text": "hi", "final": True},
        {"t_ms": 1000, "event": "interruption", "onset_ms": 60, "epoch": 1},
        {"t_ms": 1000, "event": "tool_started", "call_id": "t1", "name": "lookup"},
        {"t_ms": 1250, "event": "tool_finished", "call_id": "t1", "name": "lookup",
         "outcome": "timeout"},
        {"t_ms": 1300, "event": "bot_speaking", "interruptible": True},
        {"t_ms": 1400, "event": "playout_resumed"},
        {"t_ms": 1500, "event": "speech_error", "engine": "tts", "reason": "x"},
    ]:  # fmt: skip
        listen(record)
    metrics.record_lag(3.0)
    text = metrics.exposition().decode()
    assert value(text, "voicegate_media_loop_lag_seconds_sum") == 0.003
    assert value(text, "voicegate_bargein_flush_seconds_sum") == 0.04
    assert value(text, "voicegate_stt_final_seconds_sum") == 0.2
    assert value(text, "voicegate_response_seconds_sum") == 0.5
    assert value(text, "voicegate_tool_seconds_sum", tool="lookup") == 0.25
    assert value(text, "voicegate_barge_ins_total") == 1
    assert value(text, "voicegate_false_interruptions_total") == 1
    assert value(text, "voicegate_errors_total", kind="tool_timeout") == 1
    assert value(text, "voicegate_errors_total", kind="tts") == 1


async def test_metrics_route_counts_calls_and_wants_its_token() -> None:
    metrics = GatewayMetrics()
    options = loopback_options(metrics_token=TOKEN)
    async with (
        Gateway(ScriptedRunner(), options, metrics=metrics) as gateway,
        aiohttp.ClientSession() as session,
    ):
        async with session.ws_connect(ws_url(gateway, "/twilio")) as socket:
            await socket.send_str(twilio_start("CA1"))
            await socket.close()
        url = gateway.base_url + "/metrics"
        async with session.get(url) as refused:
            assert refused.status == 403
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with session.get(url, headers=headers) as reply:
            assert reply.status == 200
            assert reply.content_type == "text/plain"
            text = await reply.text()
    assert value(text, "voicegate_calls_active", provider="twilio") == 0
    assert sum(v for (n, _), v in samples(text).items() if n == "voicegate_calls_total") == 1


def _worker_calls(directory: str, calls: int) -> None:
    """In a spawned process: count ``calls`` ended Twilio calls and one still running."""
    assert os.environ[MULTIPROC_ENV] == directory  # inherited: multiprocess mode is on
    metrics = GatewayMetrics(Path(directory))
    for _ in range(calls):
        metrics.call_started("twilio")
        metrics.call_ended("twilio", 1000)
    metrics.call_started("twilio")


def test_workers_metrics_add_up_and_the_run_directory_is_removed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A spawned child imports this module by name: the repository root must be on the path
    # it inherits (pytest's importlib mode does not put it there).
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    context = multiprocessing.get_context("spawn")
    with metrics_directory() as directory:
        for calls in (2, 3):
            process = context.Process(target=_worker_calls, args=(str(directory), calls))
            process.start()
            process.join(60)
            assert process.exitcode == 0
        text = GatewayMetrics(directory).exposition().decode()
    assert value(text, "voicegate_calls_total", provider="twilio", close_code="1000") == 5
    assert not directory.exists()
    assert MULTIPROC_ENV not in os.environ
