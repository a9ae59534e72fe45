"""Plivo Audio Streams codec (providers.md §b.5), driven by the golden transcripts."""

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
from voicegate.codecs import PlivoCodec
from voicegate.codecs.plivo import content_type, plivo_format
from voicegate.errors import ConfigError
from voicegate.types import TELEPHONE_ULAW, AudioEncoding, AudioFormat


def make_codec(
    *, outbound_encoding: str = "pcmu", outbound_rate: int = 8000, **options: Any
) -> PlivoCodec:
    """The codec, its outbound format spelled as a transcript ``config`` line can."""
    outbound = AudioFormat(AudioEncoding(outbound_encoding), outbound_rate)
    return PlivoCodec(outbound_format=outbound, **options)


@pytest.mark.parametrize("path", transcript_paths("plivo"), ids=lambda path: path.name)
def test_plivo_transcript(path: Path) -> None:
    replay(path, make_codec, {})


def test_plivo_transcripts_cover_every_event_and_command() -> None:
    events, commands = covered_types("plivo")
    assert events == set(EVENT_TYPES)
    assert commands == set(COMMAND_TYPES)


def test_plivo_capabilities_match_the_barge_in_matrix() -> None:
    # providers.md §b.0: flush `clearAudio`, acks by `checkpoint` -> `playedStream`, no pause.
    capabilities = PlivoCodec().capabilities
    assert capabilities.flush_verb == "clearAudio"
    assert capabilities.hangup_verb is None
    assert (capabilities.playback_acks, capabilities.pause, capabilities.dtmf) == (
        True,
        False,
        True,
    )
    assert capabilities.binary_audio is False
    assert capabilities.outbound_format == TELEPHONE_ULAW


@pytest.mark.parametrize(
    ("text", "audio_format"),
    [
        ("audio/x-mulaw;rate=8000", TELEPHONE_ULAW),
        ("audio/x-l16;rate=8000", AudioFormat(AudioEncoding.L16, 8000)),
        ("audio/x-l16;rate=16000", AudioFormat(AudioEncoding.L16, 16000)),
    ],
)
def test_content_types_round_trip(text: str, audio_format: AudioFormat) -> None:
    assert plivo_format(text) == audio_format
    assert content_type(audio_format) == text


@pytest.mark.parametrize("text", ["audio/x-mulaw;rate=16000", "audio/x-l16", "audio/wav;rate=8000"])
def test_content_types_plivo_does_not_offer_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="plivo content_type must be one of"):
        plivo_format(text)


def test_plivo_refuses_an_outbound_format_it_cannot_send() -> None:
    with pytest.raises(ConfigError, match="plivo cannot play"):
        PlivoCodec(outbound_format=AudioFormat(AudioEncoding.PCMA, 8000))
    with pytest.raises(ConfigError, match="max_message_bytes"):
        PlivoCodec(max_message_bytes=0)


@settings(max_examples=300, deadline=None)
@given(
    batch=codec_inputs(seed_messages("plivo"), seed_messages("plivo", "session")),
    started=st.booleans(),
)
def test_plivo_only_ever_yields_outputs_or_protocol_errors(
    batch: list[Step], started: bool
) -> None:
    codec = PlivoCodec()
    if started:
        codec.receive(valid_start("plivo"))
    assert_only_events_or_protocol_errors(codec, batch)
