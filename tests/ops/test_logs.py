"""Logs of ``voicegate serve``: levels, JSON lines, call ids across threads, no secrets."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from voicegate.cli import logs
from voicegate.cli.main import build_parser
from voicegate.errors import ConfigError
from voicegate.gateway.dialogue import DialoguePlane
from voicegate.gateway.logcontext import about_call

TOKEN = "tw-auth-0123456789abcdef"
API_KEY = "sk-live-abcdefghijklmnop"


@dataclass
class FakeCall:
    call_id: str
    provider_call_id: str | None = None


@pytest.fixture
def output() -> Iterator[io.StringIO]:
    """Configure JSON logging into a buffer; restore the root logger afterwards."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    chatty = {name: logging.getLogger(name).level for name in logs.CHATTY_LOGGERS}
    buffer = io.StringIO()
    environ = {"TWILIO_AUTH_TOKEN": TOKEN, "OPENAI_API_KEY": API_KEY, "HOME": "/home/x"}
    logs.configure(logs.resolve_log_options(None, "json", environ), stream=buffer)
    yield buffer
    root.handlers[:], root.level = saved
    for name, level in chatty.items():
        logging.getLogger(name).setLevel(level)


def lines(buffer: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_one_json_object_per_line_with_the_call_ids(output: io.StringIO) -> None:
    call = FakeCall("twilio-abc")
    log = logging.getLogger("voicegate.test")
    log.info("outside any call")
    with about_call(call):
        log.info("connected")
        call.provider_call_id = "CA123"  # known at the peer's start
        log.warning("two\nlines")
    first, connected, started = lines(output)
    assert "call_id" not in first
    assert connected["call_id"] == "twilio-abc"
    assert "provider_call_id" not in connected
    assert started["provider_call_id"] == "CA123"
    assert started["message"] == "two\nlines"
    assert started["level"] == "warning"
    assert started["logger"] == "voicegate.test"


def test_call_ids_cross_to_the_dialogue_and_tool_threads(output: io.StringIO) -> None:
    plane = DialoguePlane()
    plane.start()
    tool_loop = asyncio.new_event_loop()
    tool_thread = threading.Thread(target=tool_loop.run_forever)
    tool_thread.start()
    done = threading.Event()

    def tool_step() -> None:
        logging.getLogger("voicegate.engine.tools").info("tool ran")
        done.set()

    async def engine_turn() -> None:
        logging.getLogger("voicegate.engine").info("turn ran")
        tool_loop.call_soon_threadsafe(tool_step)  # as engine/tools/isolation.py does

    try:
        with about_call(FakeCall("twilio-x", "CA9")):
            plane.submit(engine_turn()).result(5)
        assert done.wait(5)
    finally:
        tool_loop.call_soon_threadsafe(tool_loop.stop)
        tool_thread.join(5)
        tool_loop.close()
        plane.stop()
    records = lines(output)
    assert [r["message"] for r in records] == ["turn ran", "tool ran"]
    assert all(r["call_id"] == "twilio-x" and r["provider_call_id"] == "CA9" for r in records)


def test_no_secrets_in_messages_or_tracebacks(output: io.StringIO) -> None:
    log = logging.getLogger("voicegate.test")
    log.warning("bad signature for %r", f"https://x/twilio?token={TOKEN}")
    try:
        raise RuntimeError(f"401 with Authorization: Bearer {API_KEY}")
    except RuntimeError:
        log.exception("model call failed")
    text = output.getvalue()
    assert TOKEN not in text
    assert API_KEY not in text
    assert text.count(logs.REDACTED) == 2  # the message and the exception


def test_text_format_redacts_and_shows_ids() -> None:
    buffer = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        logs.configure(logs.LogOptions("info", "text", (TOKEN,)), who="w1", stream=buffer)
        with about_call(FakeCall("browser-1", "B1")):
            logging.getLogger("voicegate.x").info("token %s", TOKEN)
    finally:
        root.handlers[:], root.level = saved
    line = buffer.getvalue()
    assert "w1 voicegate.x: [browser-1 B1] token [redacted]" in line


def test_peer_text_cannot_forge_lines_in_the_text_format() -> None:
    # A provider's error description and a CallSid are peer text: a newline or an ANSI
    # escape in them must not start a line of its own; a traceback keeps its lines.
    buffer = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    forged = "bad\n2026-12-02 ERROR voicegate.gateway.calls: call crashed\x1b[2K"
    try:
        logs.configure(logs.LogOptions("info", "text", ()), stream=buffer)
        with about_call(FakeCall("twilio-1", "CA1\nERROR forged")):
            logging.getLogger("voicegate.x").warning("provider says: %s", forged)
            try:
                raise RuntimeError("boom")
            except RuntimeError:
                logging.getLogger("voicegate.x").exception("failed")
    finally:
        root.handlers[:], root.level = saved
    first, second, *traceback = buffer.getvalue().splitlines()
    assert first.endswith(
        "voicegate.x: [twilio-1 CA1\\nERROR forged] provider says: bad\\n2026-12-02 ERROR "
        "voicegate.gateway.calls: call crashed\\x1b[2K"
    )
    assert second.endswith("failed")
    assert traceback[0] == "Traceback (most recent call last):"
    assert traceback[-1] == "RuntimeError: boom"


def test_chatty_libraries_are_quiet_by_default(output: io.StringIO) -> None:
    logging.getLogger("faster_whisper").info("Processing segment at 00:00.000")
    logging.getLogger("aiohttp.access").info("GET /healthz 200")
    logging.getLogger("mcp.client").info("session message")
    logging.getLogger("faster_whisper").warning("model fell back")
    assert [r["message"] for r in lines(output)] == ["model fell back"]


def test_flags_over_environment_over_defaults() -> None:
    env = {logs.LEVEL_ENV: "WARNING", logs.FORMAT_ENV: "json"}
    assert logs.resolve_log_options(None, None, {}) == logs.LogOptions("info", "text", ())
    chosen = logs.resolve_log_options(None, None, env)
    assert (chosen.level, chosen.format) == ("warning", "json")
    chosen = logs.resolve_log_options("debug", "text", env)
    assert (chosen.level, chosen.format) == ("debug", "text")
    with pytest.raises(ConfigError, match="log format"):
        logs.resolve_log_options(None, None, {logs.FORMAT_ENV: "xml"})
    with pytest.raises(ConfigError, match="log level"):
        logs.resolve_log_options(None, None, {logs.LEVEL_ENV: "loud"})


def test_short_values_are_not_redacted() -> None:
    options = logs.resolve_log_options(None, None, {"MY_TOKEN": "abc", "OTHER": "longvalue123"})
    assert options.secrets == ()


def test_serve_takes_the_flags() -> None:
    args = build_parser().parse_args(["serve", "--log-level", "debug", "--log-format", "json"])
    assert (args.log_level, args.log_format) == ("debug", "json")
