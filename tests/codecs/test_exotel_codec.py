"""Exotel AgentStream codec (providers.md §b.6), driven by the golden transcripts."""

from __future__ import annotations

import base64
import json
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
from voicegate.codecs import CallEnded, ExotelCodec, PlayAudio
from voicegate.codecs.exotel import CHUNK_MULTIPLE, MAX_CHUNK_BYTES, MIN_CHUNK_BYTES
from voicegate.errors import ConfigError, LocalProtocolError
from voicegate.types import AudioEncoding, AudioFormat


@pytest.mark.parametrize("path", transcript_paths("exotel"), ids=lambda path: path.name)
def test_exotel_transcript(path: Path) -> None:
    replay(path, ExotelCodec, {})


def test_exotel_transcripts_cover_every_event_and_command() -> None:
    events, commands = covered_types("exotel")
    assert events == set(EVENT_TYPES)
    # Exotel has no pause: PausePlayback appears only as an error, ResumePlayback not at all.
    assert commands == set(COMMAND_TYPES) - {"ResumePlayback"}


def test_exotel_capabilities_match_the_barge_in_matrix() -> None:
    # providers.md §b.0: JSON base64 PCM16, flush `clear`, acks by `mark`, no pause, dtmf.
    capabilities = ExotelCodec(sample_rate=16000).capabilities
    assert capabilities.flush_verb == "clear"
    assert capabilities.hangup_verb is None
    assert (capabilities.playback_acks, capabilities.pause, capabilities.dtmf) == (
        True,
        False,
        True,
    )
    assert capabilities.binary_audio is False
    assert capabilities.outbound_format == AudioFormat(AudioEncoding.L16, 16000)
    frames = capabilities.outbound_frames
    assert (frames.min_bytes, frames.max_bytes, frames.multiple_of) == (3200, 100_000, 320)


def test_rates_and_limits_are_checked() -> None:
    with pytest.raises(ConfigError, match="exotel sample_rate must be one of"):
        ExotelCodec(sample_rate=44100)
    with pytest.raises(ConfigError, match="max_message_bytes"):
        ExotelCodec(max_message_bytes=0)
    codec = ExotelCodec()
    codec.receive(valid_start("exotel"))
    with pytest.raises(LocalProtocolError, match="is above 100000"):
        codec.send(PlayAudio(bytes(MAX_CHUNK_BYTES + 2)))


@settings(max_examples=200, deadline=None)
@given(size=st.integers(min_value=1, max_value=MAX_CHUNK_BYTES // 2))
def test_every_media_message_is_whole_blocks_of_at_least_the_minimum(size: int) -> None:
    codec = ExotelCodec()
    codec.receive(valid_start("exotel"))
    payload = bytes([1]) * (size * 2)
    (message,) = codec.send(PlayAudio(payload))
    assert isinstance(message, str)
    sent = base64.b64decode(json.loads(message)["media"]["payload"])
    assert len(sent) >= MIN_CHUNK_BYTES
    assert len(sent) % CHUNK_MULTIPLE == 0
    assert sent.startswith(payload)
    assert not sent[len(payload) :].strip(b"\0")  # the padding is silence
    assert len(sent) - len(payload) < max(CHUNK_MULTIPLE, MIN_CHUNK_BYTES - len(payload) + 1)


@settings(max_examples=300, deadline=None)
@given(
    batch=codec_inputs(seed_messages("exotel"), seed_messages("exotel", "session")),
    started=st.booleans(),
)
def test_exotel_only_ever_yields_outputs_or_protocol_errors(
    batch: list[Step], started: bool
) -> None:
    codec = ExotelCodec()
    if started:
        codec.receive(valid_start("exotel"))
    assert_only_events_or_protocol_errors(codec, batch)


def test_a_refused_stop_leaves_the_call_going() -> None:
    codec = ExotelCodec()
    codec.receive(valid_start("exotel"))
    # Found by the property test above: the stream used to end before `stop` was read.
    assert_only_events_or_protocol_errors(codec, ['{"event":"stop","stop":false}'])
    (ended,) = codec.receive('{"event":"stop","stop":{"reason":"callended"}}')
    assert ended == CallEnded("exotel sent stop (callended)")
