"""Asterisk chan_websocket codec (providers.md §b.10), driven by the golden transcripts."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.codecs.codec_fuzz import (
    Step,
    assert_only_events_or_protocol_errors,
    codec_inputs,
    commands,
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
from voicegate.codecs import AsteriskCodec, PlayAudio
from voicegate.codecs.asterisk import MAX_MEDIA_BYTES
from voicegate.errors import ConfigError, RemoteProtocolError
from voicegate.types import AudioEncoding, AudioFormat

#: Plain-text control messages as chan_websocket.c prints them, to seed the property test.
PLAIN_SEEDS = [
    "MEDIA_START connection_id:c channel:WebSocket/c channel_id:1.1 format:ulaw "
    "optimal_frame_size:160 ptime:20",
    "DTMF_END digit:5 channel_id:1.1",
    "MEDIA_MARK_PROCESSED t1.1",
    "MEDIA_XOFF",
    "MEDIA_XON",
    "ERROR channel_id:1.1 error_text:bad",
]


@pytest.mark.parametrize("path", transcript_paths("asterisk"), ids=lambda path: path.name)
def test_asterisk_transcript(path: Path) -> None:
    replay(path, AsteriskCodec, {"call_id": "asterisk-call-1"})


def test_asterisk_transcripts_cover_every_event_and_command() -> None:
    events, commands = covered_types("asterisk")
    # No stop message: the channel hangs up by closing the socket.
    assert events == set(EVENT_TYPES) - {"CallEnded"} | {"ProtocolReply", "ProviderError"}
    assert commands == set(COMMAND_TYPES)


def test_asterisk_capabilities_match_the_barge_in_matrix() -> None:
    # providers.md §b.0: binary media, FLUSH_MEDIA, MARK_MEDIA acks, PAUSE/CONTINUE, DTMF_END.
    codec = AsteriskCodec("c")
    codec.receive('{"event":"MEDIA_START","format":"slin16","optimal_frame_size":640}')
    capabilities = codec.capabilities
    assert (capabilities.flush_verb, capabilities.hangup_verb) == ("FLUSH_MEDIA", "HANGUP")
    assert (capabilities.playback_acks, capabilities.pause, capabilities.dtmf) == (True, True, True)
    assert capabilities.binary_audio is True
    assert capabilities.outbound_format == AudioFormat(AudioEncoding.L16, 16000)


def test_payloads_over_the_message_limit_go_out_in_whole_frames_below_it() -> None:
    codec = AsteriskCodec("c")
    codec.receive("MEDIA_START connection_id:c format:ulaw optimal_frame_size:160")
    payload = bytes(range(256)) * 300  # 76,800 bytes: above chan_websocket's 65,500
    messages = codec.send(PlayAudio(payload))
    sizes = [len(m) for m in messages]
    assert all(isinstance(m, bytes) for m in messages)
    assert max(sizes) <= MAX_MEDIA_BYTES
    assert all(size % 160 == 0 for size in sizes)
    assert b"".join(m for m in messages if isinstance(m, bytes)) == payload


def test_limits_are_checked() -> None:
    with pytest.raises(ConfigError, match="max_message_bytes"):
        AsteriskCodec("c", max_message_bytes=0)
    with pytest.raises(ConfigError, match="max_held_ms"):
        AsteriskCodec("c", max_held_ms=-1)


@settings(max_examples=300, deadline=None)
@given(
    batch=codec_inputs(seed_messages("asterisk"), seed_messages("asterisk", "json_session"))
    | st.lists(st.sampled_from(PLAIN_SEEDS) | st.text(max_size=80) | commands, max_size=8),
    start=st.sampled_from(["", "json", "plain"]),
)
def test_asterisk_only_ever_yields_outputs_or_protocol_errors(
    batch: list[Step], start: str
) -> None:
    codec = AsteriskCodec("c")
    if start:
        codec.receive(valid_start("asterisk") if start == "json" else PLAIN_SEEDS[0])
    assert_only_events_or_protocol_errors(codec, batch)


@pytest.mark.parametrize(
    "bad",
    [
        '"connection_id":null',  # found by the property test below: it used to half-start
        '"connection_id":""',
        '"ptime":0',
        '"channel_id":7',
    ],
)
def test_a_refused_media_start_leaves_the_codec_waiting_for_one(bad: str) -> None:
    codec = AsteriskCodec("c")
    start = (
        '{"event":"MEDIA_START","channel":"WebSocket/c/0x1","channel_id":"1.1",'
        f'"format":"ulaw","optimal_frame_size":160,{bad}}}'
    )
    assert_only_events_or_protocol_errors(codec, [start])
    with pytest.raises(RemoteProtocolError):
        codec.receive(start)
    assert codec.receive(PLAIN_SEEDS[0])  # a good MEDIA_START is still taken


def test_flow_control_is_bounded_and_blames_the_peer() -> None:
    # A MEDIA_XOFF without a MEDIA_XON must not grow a buffer: past max_held_ms the call ends
    # as the peer's protocol error (the session closes it with the reason), and the codec is
    # left as it was.
    codec = AsteriskCodec("c", max_held_ms=40)
    codec.receive('{"event":"MEDIA_START","format":"ulaw","optimal_frame_size":160}')
    codec.receive('{"event":"MEDIA_XOFF"}')
    assert codec.send(PlayAudio(bytes(160))) == []
    with pytest.raises(RemoteProtocolError, match="MEDIA_XOFF held back 60 ms"):
        codec.send(PlayAudio(bytes(320)))
    assert codec.send(PlayAudio(bytes(160))) == []  # 40 ms held: still within the bound
