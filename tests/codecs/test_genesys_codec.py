"""Genesys AudioHook (Audio Connector) codec (providers.md §b.7), driven by the transcripts."""

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
from voicegate.codecs import GenesysCodec
from voicegate.types import TELEPHONE_ULAW


@pytest.mark.parametrize("path", transcript_paths("genesys"), ids=lambda path: path.name)
def test_genesys_transcript(path: Path) -> None:
    replay(path, GenesysCodec, {})


def test_genesys_transcripts_cover_every_event_and_command() -> None:
    events, commands = covered_types("genesys")
    # No marks in AudioHook: the playout clock estimates what was heard.
    assert events == (set(EVENT_TYPES) - {"MarkReached"}) | {"ProtocolReply"}
    assert commands == set(COMMAND_TYPES) - {"ResumePlayback"}


def test_genesys_capabilities_match_the_barge_in_matrix() -> None:
    # providers.md §b.0: binary PCMU, flush by the barge_in event, no marks, no playout pause.
    capabilities = GenesysCodec().capabilities
    assert capabilities.flush_verb == "event/barge_in"
    assert capabilities.hangup_verb == "disconnect"
    assert (capabilities.playback_acks, capabilities.pause, capabilities.dtmf) == (
        False,
        False,
        True,
    )
    assert capabilities.binary_audio is True
    assert capabilities.outbound_format == TELEPHONE_ULAW
    # 200 ms per binary message keeps a call inside Genesys's 5 messages per second.
    assert capabilities.outbound_frames.min_bytes == 1600


@settings(max_examples=300, deadline=None)
@given(
    batch=codec_inputs(seed_messages("genesys"), seed_messages("genesys", "session")),
    started=st.booleans(),
)
def test_genesys_only_ever_yields_outputs_or_protocol_errors(
    batch: list[Step], started: bool
) -> None:
    codec = GenesysCodec()
    if started:
        codec.receive(valid_start("genesys"))
    assert_only_events_or_protocol_errors(codec, batch)
