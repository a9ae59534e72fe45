"""FreeSWITCH mod_audio_fork codec (providers.md §b.9), driven by the golden transcripts."""

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
from voicegate.codecs import FreeSwitchCodec, PlayAudio
from voicegate.errors import ConfigError
from voicegate.types import AudioEncoding, AudioFormat


@pytest.mark.parametrize("path", transcript_paths("freeswitch"), ids=lambda path: path.name)
def test_freeswitch_transcript(path: Path) -> None:
    replay(path, FreeSwitchCodec, {"call_id": "fs-call-1"})


def test_freeswitch_transcripts_cover_every_event_and_command() -> None:
    events, commands = covered_types("freeswitch")
    # No stop message (the socket closes) and no acknowledgement (the playout estimates).
    assert events == set(EVENT_TYPES) - {"CallEnded", "MarkReached"}
    assert commands == set(COMMAND_TYPES) - {"ResumePlayback"}


def test_freeswitch_capabilities_match_the_barge_in_matrix() -> None:
    # providers.md §b.0: binary L16 in, playAudio JSON out, flush killAudio, no acks, no pause.
    capabilities = FreeSwitchCodec("c", sample_rate=16000, chunk_ms=100).capabilities
    assert capabilities.flush_verb == '{"type":"killAudio"}'
    assert capabilities.hangup_verb == '{"type":"disconnect"}'
    assert (capabilities.playback_acks, capabilities.pause, capabilities.dtmf) == (
        False,
        False,
        True,
    )
    assert capabilities.binary_audio is False
    assert capabilities.outbound_format == AudioFormat(AudioEncoding.L16, 16000)
    # The playout's chunk: 100 ms at 16 kHz per playAudio file.
    assert capabilities.outbound_frames.min_bytes == 3200


def test_rates_chunks_and_limits_are_checked() -> None:
    with pytest.raises(ConfigError, match="freeswitch sample_rate must be one of"):
        FreeSwitchCodec("c", sample_rate=24000)
    with pytest.raises(ConfigError, match="chunk_ms"):
        FreeSwitchCodec("c", chunk_ms=210)
    with pytest.raises(ConfigError, match="chunk_ms"):
        FreeSwitchCodec("c", chunk_ms=2000)
    with pytest.raises(ConfigError, match="max_message_bytes"):
        FreeSwitchCodec("c", max_message_bytes=0)


@settings(max_examples=100, deadline=None)
@given(payload=st.binary(min_size=1, max_size=400).filter(lambda b: len(b) % 2 == 0))
def test_play_audio_carries_the_exact_samples(payload: bytes) -> None:
    codec = FreeSwitchCodec("c")
    codec.receive(valid_start("freeswitch"))
    [message] = codec.send(PlayAudio(payload))
    assert isinstance(message, str)
    data = json.loads(message)["data"]
    assert base64.b64decode(data["audioContent"]) == payload
    assert (data["audioContentType"], data["sampleRate"]) == ("raw", 8000)


@settings(max_examples=300, deadline=None)
@given(
    batch=codec_inputs(seed_messages("freeswitch"), seed_messages("freeswitch", "session")),
    started=st.booleans(),
)
def test_freeswitch_only_ever_yields_outputs_or_protocol_errors(
    batch: list[Step], started: bool
) -> None:
    codec = FreeSwitchCodec("c")
    if started:
        codec.receive(valid_start("freeswitch"))
    assert_only_events_or_protocol_errors(codec, batch)
