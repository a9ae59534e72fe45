"""Telnyx Media Streaming codec (providers.md §b.4), driven by the golden transcripts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
from voicegate.codecs import PlayAudio, TelnyxCodec
from voicegate.errors import ConfigError, LocalProtocolError
from voicegate.types import TELEPHONE_ULAW, AudioEncoding, AudioFormat


def make_codec(
    *, outbound_encoding: str = "pcmu", outbound_rate: int = 8000, **options: Any
) -> TelnyxCodec:
    """The codec, its outbound format spelled as a transcript ``config`` line can."""
    outbound = AudioFormat(AudioEncoding(outbound_encoding), outbound_rate)
    return TelnyxCodec(outbound_format=outbound, **options)


@pytest.mark.parametrize("path", transcript_paths("telnyx"), ids=lambda path: path.name)
def test_telnyx_transcript(path: Path) -> None:
    replay(path, make_codec, {})


def test_telnyx_transcripts_cover_every_event_and_command() -> None:
    events, commands = covered_types("telnyx")
    assert events == set(EVENT_TYPES)
    assert commands == set(COMMAND_TYPES)


def test_telnyx_capabilities_match_the_barge_in_matrix() -> None:
    # providers.md §b.0: flush `clear`, acks by `mark`, no pause, `dtmf`, JSON audio.
    capabilities = TelnyxCodec().capabilities
    assert capabilities.flush_verb == "clear"
    assert capabilities.hangup_verb is None
    assert (capabilities.playback_acks, capabilities.pause, capabilities.dtmf) == (
        True,
        False,
        True,
    )
    assert capabilities.binary_audio is False
    assert capabilities.outbound_format == TELEPHONE_ULAW
    assert TELEPHONE_ULAW in capabilities.inbound_formats


def test_telnyx_refuses_a_chunk_over_thirty_seconds() -> None:
    codec = TelnyxCodec()
    codec.receive(valid_start("telnyx"))
    assert codec.send(PlayAudio(b"\xff" * 240_000))  # exactly 30 s of 8 kHz mu-law
    with pytest.raises(LocalProtocolError, match="above the maximum of 240000"):
        codec.send(PlayAudio(b"\xff" * 240_001))


@pytest.mark.parametrize(
    "outbound",
    [
        AudioFormat(AudioEncoding.L16, 8000),
        AudioFormat(AudioEncoding.PCMU, 44100),
        AudioFormat(AudioEncoding.PCMU, 8000, channels=2),
    ],
)
def test_telnyx_refuses_an_outbound_format_it_cannot_send(outbound: AudioFormat) -> None:
    with pytest.raises(ConfigError, match="telnyx bidirectional"):
        TelnyxCodec(outbound_format=outbound)


def test_telnyx_refuses_a_nonpositive_message_limit() -> None:
    with pytest.raises(ConfigError, match="max_message_bytes"):
        TelnyxCodec(max_message_bytes=0)


@settings(max_examples=300, deadline=None)
@given(
    batch=codec_inputs(seed_messages("telnyx"), seed_messages("telnyx", "session")),
    started=st.booleans(),
)
def test_telnyx_only_ever_yields_outputs_or_protocol_errors(
    batch: list[Step], started: bool
) -> None:
    codec = TelnyxCodec()
    if started:
        codec.receive(valid_start("telnyx"))
    assert_only_events_or_protocol_errors(codec, batch)
