"""Jambonz listen codec (providers.md §b.9), driven by the golden transcripts."""

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
from voicegate.codecs import JambonzCodec
from voicegate.errors import ConfigError
from voicegate.types import AudioEncoding, AudioFormat


@pytest.mark.parametrize("path", transcript_paths("jambonz"), ids=lambda path: path.name)
def test_jambonz_transcript(path: Path) -> None:
    replay(path, JambonzCodec, {"call_id": "jambonz-call-1"})


def test_jambonz_transcripts_cover_every_event_and_command() -> None:
    events, commands = covered_types("jambonz")
    # No stop message (the socket closes) and no acknowledgement (the playout estimates).
    assert events == set(EVENT_TYPES) - {"CallEnded", "MarkReached"}
    assert commands == set(COMMAND_TYPES) - {"ResumePlayback"}


def test_jambonz_capabilities_match_the_barge_in_matrix() -> None:
    # providers.md §b.0: binary L16, flush killAudio, no documented acks, no pause, dtmf.
    capabilities = JambonzCodec("c", sample_rate=16000).capabilities
    assert capabilities.flush_verb == '{"type":"killAudio"}'
    assert capabilities.hangup_verb == '{"type":"disconnect"}'
    assert (capabilities.playback_acks, capabilities.pause, capabilities.dtmf) == (
        False,
        False,
        True,
    )
    assert capabilities.binary_audio is True
    assert capabilities.outbound_format == AudioFormat(AudioEncoding.L16, 16000)


def test_rates_and_limits_are_checked() -> None:
    with pytest.raises(ConfigError, match="jambonz sample_rate must be one of"):
        JambonzCodec("c", sample_rate=64000)
    with pytest.raises(ConfigError, match="max_message_bytes"):
        JambonzCodec("c", max_message_bytes=0)


@settings(max_examples=300, deadline=None)
@given(
    batch=codec_inputs(seed_messages("jambonz"), seed_messages("jambonz", "session")),
    started=st.booleans(),
)
def test_jambonz_only_ever_yields_outputs_or_protocol_errors(
    batch: list[Step], started: bool
) -> None:
    codec = JambonzCodec("c")
    if started:
        codec.receive(valid_start("jambonz"))
    assert_only_events_or_protocol_errors(codec, batch)
