"""Vonage Voice API WebSockets codec (providers.md §b.3), driven by the golden transcripts."""

from __future__ import annotations

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
from voicegate.codecs import VonageCodec
from voicegate.codecs.vonage import vonage_format
from voicegate.errors import ConfigError
from voicegate.types import AudioEncoding, AudioFormat


@pytest.mark.parametrize("path", transcript_paths("vonage"), ids=lambda path: path.name)
def test_vonage_transcript(path: Path) -> None:
    replay(path, VonageCodec, {"call_id": "vonage-call-1"})


def test_vonage_transcripts_cover_every_event_and_command() -> None:
    events, commands = covered_types("vonage")
    # Vonage has no stop message (the leg ends when the socket closes), so no CallEnded.
    assert events == set(EVENT_TYPES) - {"CallEnded"}
    assert commands == set(COMMAND_TYPES)


def test_vonage_capabilities_match_the_barge_in_matrix() -> None:
    # providers.md §b.0: binary L16, flush {"action":"clear"}, acks by notify, no pause.
    capabilities = VonageCodec("c").capabilities
    assert capabilities.flush_verb == '{"action":"clear"}'
    assert capabilities.hangup_verb is None
    assert (capabilities.playback_acks, capabilities.pause, capabilities.dtmf) == (
        True,
        False,
        True,
    )
    assert capabilities.binary_audio is True
    assert capabilities.outbound_format == AudioFormat(AudioEncoding.L16, 16000)


def test_vonage_plays_back_at_the_rate_the_first_message_declared() -> None:
    codec = VonageCodec("c", content_type="audio/l16;rate=16000")
    codec.receive('{"event":"websocket:connected","content-type":"audio/l16;rate=8000"}')
    assert codec.capabilities.outbound_format == AudioFormat(AudioEncoding.L16, 8000)


def test_content_types_are_checked() -> None:
    assert vonage_format("audio/l16; rate=8000") == AudioFormat(AudioEncoding.L16, 8000)
    with pytest.raises(ConfigError, match="vonage content_type must be one of"):
        VonageCodec("c", content_type="audio/l16;rate=24000")
    with pytest.raises(ConfigError, match="max_message_bytes"):
        VonageCodec("c", max_message_bytes=0)


@settings(max_examples=300, deadline=None)
@given(
    batch=codec_inputs(seed_messages("vonage"), seed_messages("vonage", "session")),
    started=st.booleans(),
)
def test_vonage_only_ever_yields_outputs_or_protocol_errors(
    batch: list[Step], started: bool
) -> None:
    codec = VonageCodec("c")
    if started:
        codec.receive(valid_start("vonage"))
    assert_only_events_or_protocol_errors(codec, batch)
