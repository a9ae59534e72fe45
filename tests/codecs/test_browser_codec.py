"""Browser dialect codec (docs/protocols/browser.md), driven by the golden transcripts."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.codecs.codec_fuzz import (
    Step,
    assert_only_events_or_protocol_errors,
    codec_inputs,
    seed_messages,
    valid_start,
)
from tests.codecs.codec_transcripts import (
    COMMAND_TYPES,
    EVENT_TYPES,
    covered_types,
    replay,
    transcript_paths,
)
from voicegate.codecs import AcceptCall, BrowserCodec, FrameLimits, PublishEvent
from voicegate.errors import ConfigError
from voicegate.types import AudioEncoding, AudioFormat

DEFAULTS = {"call_id": "web-call-1"}


@pytest.mark.parametrize("path", transcript_paths("browser"), ids=lambda path: path.name)
def test_browser_transcript(path: Path) -> None:
    replay(path, BrowserCodec, DEFAULTS)


def test_browser_transcripts_cover_every_event_and_command() -> None:
    events, commands = covered_types("browser")
    assert events == set(EVENT_TYPES)
    assert commands == set(COMMAND_TYPES)


def test_browser_capabilities_follow_the_output_rate_and_message_limit() -> None:
    capabilities = BrowserCodec("c", output_sample_rate=48000, max_message_bytes=4000).capabilities
    assert (capabilities.flush_verb, capabilities.hangup_verb) == ("clear", "stop")
    assert (capabilities.playback_acks, capabilities.pause, capabilities.dtmf) == (
        True,
        False,
        True,
    )
    assert capabilities.binary_audio is True
    assert capabilities.outbound_format == AudioFormat(AudioEncoding.L16, 48000)
    assert [fmt.sample_rate for fmt in capabilities.inbound_formats] == [8000, 16000, 24000, 48000]
    assert {fmt.encoding for fmt in capabilities.inbound_formats} == {AudioEncoding.L16}
    assert capabilities.outbound_frames == FrameLimits(min_bytes=2, max_bytes=4000, multiple_of=2)


@pytest.mark.parametrize(
    ("settings_", "problem"),
    [
        ({"output_sample_rate": 44100}, "output sample rate 44100"),
        ({"max_message_bytes": 1}, "max_message_bytes"),
    ],
)
def test_browser_refuses_bad_settings(settings_: dict[str, int], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        BrowserCodec("c", **settings_)


@settings(max_examples=300, deadline=None)
@given(
    batch=codec_inputs(seed_messages("browser"), seed_messages("browser", "session")),
    started=st.booleans(),
)
def test_browser_only_ever_yields_outputs_or_protocol_errors(
    batch: list[Step], started: bool
) -> None:
    codec = BrowserCodec("web-call-1")
    if started:
        codec.receive(valid_start("browser"))
        codec.send(AcceptCall())
    assert_only_events_or_protocol_errors(codec, batch)


def test_browser_event_records_with_values_json_lacks_are_written_as_text() -> None:
    # A tool's result may hold dates or decimals; the page still gets one JSON text frame.
    codec = BrowserCodec("web-call-1")
    codec.receive(valid_start("browser"))
    codec.send(AcceptCall())
    record = {"t_ms": 20, "event": "tool_finished", "result": {"due": date(2025, 1, 31)}}
    (message,) = codec.send(PublishEvent(record))
    assert isinstance(message, str)
    assert json.loads(message) == {
        "type": "event",
        "t_ms": 20,
        "event": "tool_finished",
        "result": {"due": "2025-01-31"},
    }
