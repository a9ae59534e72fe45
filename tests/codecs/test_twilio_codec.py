"""Twilio Media Streams codec (providers.md §b.1), driven by the golden transcripts."""

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
    WIRE,
    covered_types,
    replay,
    transcript_paths,
)
from voicegate.codecs import AudioReceived, CallEnded, CallStarted, FrameLimits, TwilioCodec
from voicegate.errors import ConfigError
from voicegate.types import TELEPHONE_ULAW

RECORDINGS = sorted((WIRE / "twilio").glob("*.twilio.jsonl"))


@pytest.mark.parametrize("path", transcript_paths("twilio"), ids=lambda path: path.name)
def test_twilio_transcript(path: Path) -> None:
    replay(path, TwilioCodec, {})


def test_twilio_transcripts_cover_every_event_and_command() -> None:
    events, commands = covered_types("twilio")
    assert events == set(EVENT_TYPES)
    assert commands == set(COMMAND_TYPES)


def test_both_festival_recordings_are_present() -> None:
    # An empty parameter list would skip the replay below instead of failing.
    assert [path.name for path in RECORDINGS] == [
        "festival_balance.twilio.jsonl",
        "festival_lost_card.twilio.jsonl",
    ]


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda path: path.name)
def test_recorded_twilio_call_yields_exactly_the_ulaw_audio(recording: Path) -> None:
    codec = TwilioCodec()
    lines = recording.read_text().splitlines()
    events = [event for line in lines for event in codec.receive(line)]

    ulaw = recording.with_name(recording.name.replace(".twilio.jsonl", "_8k.ulaw")).read_bytes()
    frames = [ulaw[i : i + 160] for i in range(0, len(ulaw), 160)]
    assert isinstance(events[0], CallStarted)
    assert events[0].audio_format == TELEPHONE_ULAW
    assert events[-1] == CallEnded("twilio sent stop")
    audio = events[1:-1]
    assert all(isinstance(event, AudioReceived) for event in audio)
    assert len(audio) == len(frames) == len(lines) - 3  # minus connected, start, stop
    assert [event.payload for event in audio if isinstance(event, AudioReceived)] == frames
    timestamps = [event.timestamp_ms for event in audio if isinstance(event, AudioReceived)]
    assert timestamps == [20 * n for n in range(len(frames))]


def test_twilio_capabilities_match_the_barge_in_matrix() -> None:
    # providers.md §b.0: flush `clear`, acks by `mark` echo, no pause, `dtmf`, JSON audio.
    capabilities = TwilioCodec().capabilities
    assert capabilities.flush_verb == "clear"
    assert capabilities.hangup_verb is None
    assert (capabilities.playback_acks, capabilities.pause, capabilities.dtmf) == (
        True,
        False,
        True,
    )
    assert capabilities.binary_audio is False
    assert capabilities.inbound_formats == (TELEPHONE_ULAW,)
    assert capabilities.outbound_format == TELEPHONE_ULAW
    assert capabilities.outbound_frames == FrameLimits(min_bytes=1, max_bytes=None, multiple_of=1)


def test_twilio_refuses_a_nonpositive_message_limit() -> None:
    with pytest.raises(ConfigError, match="max_message_bytes"):
        TwilioCodec(max_message_bytes=0)


@settings(max_examples=300, deadline=None)
@given(
    batch=codec_inputs(seed_messages("twilio"), seed_messages("twilio", "session")),
    started=st.booleans(),
)
def test_twilio_only_ever_yields_outputs_or_protocol_errors(
    batch: list[Step], started: bool
) -> None:
    codec = TwilioCodec()
    if started:
        codec.receive(valid_start("twilio"))
    assert_only_events_or_protocol_errors(codec, batch)
