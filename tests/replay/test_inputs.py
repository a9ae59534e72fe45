"""Recorded callers: WAV at any rate, raw μ-law, Twilio message recordings; their labels."""

from __future__ import annotations

import base64
import json
import wave
from pathlib import Path

import numpy as np
import pytest

from tests.audio.stereo_kit import tone, write_channels
from tests.replay.replay_kit import AUDIO, WIRE
from voicegate.audio.g711 import (
    alaw_bytes_to_samples,
    samples_to_alaw_bytes,
    samples_to_ulaw_bytes,
    ulaw_bytes_to_samples,
)
from voicegate.audio.wav import read_wav, write_wav
from voicegate.callers.inputs import load_recording
from voicegate.callers.labels import Labels, labels_of
from voicegate.errors import AudioFormatError, ConfigError


def test_a_wav_keeps_its_rate_and_converts_to_another() -> None:
    recording = load_recording(AUDIO / "synth" / "festival" / "balance_16k.wav")
    assert recording.sample_rate == 16000
    narrow = recording.at_rate(8000)
    assert len(narrow) == len(recording.samples) // 2
    # The 8 kHz copy made by the fixture's authors has the same loudness, give or take.
    reference = read_wav(AUDIO / "synth" / "festival" / "balance_8k.wav").samples
    ratio = np.abs(narrow.astype(float)).mean() / np.abs(reference.astype(float)).mean()
    assert 0.8 < ratio < 1.25


def test_a_wav_at_a_rate_the_gateway_never_streams_is_converted(tmp_path: Path) -> None:
    t = np.arange(44100) / 44100
    write_wav(tmp_path / "a.wav", (8000 * np.sin(2 * np.pi * 300 * t)).astype(np.int16), 44100)
    converted = load_recording(tmp_path / "a.wav").at_rate(8000)
    assert abs(len(converted) - 8000) <= 1
    assert 4000 < np.abs(converted[100:-100]).max() < 9000


def test_a_stereo_wav_is_mixed_to_mono_with_a_note_saying_so(tmp_path: Path) -> None:
    frames = np.array([[4000, 0]] * 800, dtype="<i2")  # speech on the left channel only
    with wave.open(str(tmp_path / "call.wav"), "wb") as writer:
        writer.setnchannels(2)
        writer.setsampwidth(2)
        writer.setframerate(8000)
        writer.writeframes(frames.tobytes())
    recording = load_recording(tmp_path / "call.wav")
    assert (recording.samples == 2000).all()
    assert len(recording.notes) == 1
    assert "2 channels, averaged to mono" in recording.notes[0]
    assert "--channel N (1 to 2)" in recording.notes[0]
    assert load_recording(AUDIO / "synth" / "festival" / "balance_16k.wav").notes == ()


def test_a_stereo_wav_of_two_copies_of_one_channel_needs_no_note(tmp_path: Path) -> None:
    # Phone systems often save mono calls as "stereo" copies: averaging loses nothing.
    words = read_wav(AUDIO / "synth" / "festival" / "yes_8k.wav").samples
    write_channels(tmp_path / "dual_mono.wav", 8000, words, words)
    recording = load_recording(tmp_path / "dual_mono.wav")
    assert np.array_equal(recording.samples, words)
    assert recording.notes == ()


def test_the_callers_channel_of_a_dual_channel_recording_replays_alone(tmp_path: Path) -> None:
    caller = read_wav(AUDIO / "synth" / "festival" / "yes_8k.wav").samples
    write_channels(tmp_path / "call.wav", 8000, tone(len(caller), 8000), caller)
    recording = load_recording(tmp_path / "call.wav", channel=2)
    assert np.array_equal(recording.samples, caller)
    assert recording.notes == ()  # nothing was mixed
    with pytest.raises(AudioFormatError, match="no channel 3 in a file of 2 channel"):
        load_recording(tmp_path / "call.wav", channel=3)


def test_only_a_wav_file_has_channels_to_choose_from(tmp_path: Path) -> None:
    (tmp_path / "call.ulaw").write_bytes(bytes(800))
    with pytest.raises(AudioFormatError, match="only a WAV file has channels to choose from"):
        load_recording(tmp_path / "call.ulaw", channel=1)


def test_raw_ulaw_is_8khz() -> None:
    recording = load_recording(WIRE / "twilio" / "festival_balance_8k.ulaw")
    assert recording.sample_rate == 8000
    assert len(recording.samples) == (WIRE / "twilio" / "festival_balance_8k.ulaw").stat().st_size


def test_raw_alaw_and_asterisk_signed_linear_are_read_at_their_rates(tmp_path: Path) -> None:
    tone = (6000 * np.sin(np.arange(1600) * 2 * np.pi / 20)).astype(np.int16)
    (tmp_path / "call.alaw").write_bytes(samples_to_alaw_bytes(tone))
    alaw = load_recording(tmp_path / "call.alaw")
    assert alaw.sample_rate == 8000
    assert np.array_equal(alaw.samples, alaw_bytes_to_samples(samples_to_alaw_bytes(tone)))
    (tmp_path / "call.sln16").write_bytes(tone.astype("<i2").tobytes() + b"\x01")
    slin = load_recording(tmp_path / "call.sln16")
    assert slin.sample_rate == 16000
    assert np.array_equal(slin.samples, tone)  # the stray byte of a cut capture is dropped


def test_a_twilio_recording_yields_its_inbound_payloads_and_call_identity() -> None:
    recording = load_recording(WIRE / "twilio" / "festival_balance.twilio.jsonl")
    ulaw = load_recording(WIRE / "twilio" / "festival_balance_8k.ulaw")
    assert (recording.samples == ulaw.samples).all()
    assert recording.call_id == "CA00000000000000000000000000000001"
    assert recording.parameters == {}


def media(at_ms: int, payload: bytes, track: str = "inbound") -> str:
    body = {"track": track, "timestamp": str(at_ms), "payload": base64.b64encode(payload).decode()}
    return json.dumps({"event": "media", "media": body})


def test_twilio_timestamps_place_the_audio_and_other_tracks_are_left_out(tmp_path: Path) -> None:
    loud = samples_to_ulaw_bytes(np.full(160, 5000, dtype=np.int16))
    start = {"callSid": "CA9", "customParameters": {"tenant": "acme"}}
    lines = [
        json.dumps({"event": "start", "start": start}),
        media(0, loud),
        media(0, loud, track="outbound"),
        media(60, loud),  # 40 ms of the caller's audio never arrived
    ]
    path = tmp_path / "call.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    recording = load_recording(path)
    assert recording.call_id == "CA9"
    assert recording.parameters == {"tenant": "acme"}
    assert len(recording.samples) == 8 * 80
    assert (recording.samples[:160] > 4000).all()
    assert (np.abs(recording.samples[160:480]) < 10).all()
    assert (recording.samples[480:] > 4000).all()


def test_a_both_tracks_recording_gives_the_caller_only_its_inbound_track(tmp_path: Path) -> None:
    # <Start><Stream track="both_tracks"> forks the caller ("inbound") and what the call
    # played to them ("outbound") into one stream, each track with its own chunk counter
    # (shared/spec/providers.md, Twilio `start.tracks` and `media.track`).
    caller = [np.full(160, level, dtype=np.int16) for level in (1000, 2000, 3000)]
    agent = [np.full(160, -9000, dtype=np.int16)] * 3
    start = {"callSid": "CA7", "tracks": ["inbound", "outbound"]}
    lines = [json.dumps({"event": "start", "start": start})]
    for i, (heard, played) in enumerate(zip(caller, agent, strict=True)):
        lines.append(media_message(20 * i, i + 1, samples_to_ulaw_bytes(played), "outbound"))
        lines.append(media_message(20 * i, i + 1, samples_to_ulaw_bytes(heard)))
    path = tmp_path / "both.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    samples = load_recording(path).samples
    expected = ulaw_bytes_to_samples(samples_to_ulaw_bytes(np.concatenate(caller)))
    assert np.array_equal(samples, expected)


def media_message(at_ms: int, chunk: int, payload: bytes, track: str = "inbound") -> str:
    """A Twilio media message with its chunk number."""
    body = {
        "track": track,
        "chunk": str(chunk),
        "timestamp": str(at_ms),
        "payload": base64.b64encode(payload).decode(),
    }
    return json.dumps({"event": "media", "media": body})


def test_twilio_media_out_of_order_or_written_twice_is_placed_by_its_timestamp(
    tmp_path: Path,
) -> None:
    frames = [np.full(160, level, dtype=np.int16) for level in (1000, 3000, 6000, 9000)]
    lines = [media_message(20 * i, i + 1, samples_to_ulaw_bytes(f)) for i, f in enumerate(frames)]
    in_order = tmp_path / "in_order.jsonl"
    in_order.write_text("\n".join(lines) + "\n", encoding="utf-8")
    shuffled = tmp_path / "shuffled.jsonl"
    # A logger that wrote asynchronously: chunk 3 before 2, and chunk 4 written twice.
    shuffled.write_text("\n".join(lines[i] for i in (0, 2, 1, 3, 3)) + "\n", encoding="utf-8")
    expected = load_recording(in_order).samples
    assert len(expected) == 640
    assert np.array_equal(load_recording(shuffled).samples, expected)


@pytest.mark.parametrize(
    ("name", "content"),
    [("header.wav", None), ("one.ulaw", b"\x00" * 159), ("one_sample.wav", np.ones(1))],
)
def test_a_recording_shorter_than_a_frame_is_refused(
    tmp_path: Path, name: str, content: object
) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        count = 0 if content is None else 1
        write_wav(path, np.ones(count, dtype=np.int16), 16000)
    with pytest.raises(AudioFormatError, match=r"less than one 20 ms frame: nothing to replay"):
        load_recording(path)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("not json\n", "not JSON"),
        ("[1, 2]\n", "JSON object"),
        ('{"event": "media", "media": {"payload": "***"}}\n', "bad media payload"),
        ('{"event": "connected"}\n', "no inbound media"),
        ('{"event": "start", "start": {"mediaFormat": {"encoding": "audio/l16"}}}\n', "μ-law"),
    ],
)
def test_a_malformed_twilio_recording_is_refused(
    tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(AudioFormatError, match=problem):
        load_recording(path)


def test_an_unknown_suffix_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "call.mp3"
    path.write_bytes(b"ID3")
    with pytest.raises(AudioFormatError, match=r"suffix '\.mp3'"):
        load_recording(path)


def test_labels_come_from_the_nearest_tables() -> None:
    labels = labels_of(AUDIO / "human" / "asterisk" / "please-try-again.wav")
    assert labels.transcript == "please try again"
    assert labels.onset_ms == 93
    synth = labels_of(AUDIO / "synth" / "festival" / "balance_8k.wav")
    assert (synth.transcript, synth.onset_ms) == ("check my balance", None)
    assert labels_of(AUDIO / "human" / "alsa" / "Noise_8k.wav").transcript is None


def test_a_wav_cut_short_replays_what_it_holds_with_a_note(tmp_path: Path) -> None:
    content = (AUDIO / "synth" / "festival" / "balance_8k.wav").read_bytes()
    cut = tmp_path / "cut.wav"
    cut.write_bytes(content[:16044])  # the header and 1 s of audio
    recording = load_recording(cut)
    assert recording.duration_ms == 1000
    (note,) = recording.notes
    assert note.startswith("the file is cut short: its header promises ")
    assert note.endswith(" ms more audio than the 1000 ms it holds")


def test_twilio_media_on_a_loggers_epoch_clock_is_placed_from_its_first_payload(
    tmp_path: Path,
) -> None:
    frames = [np.full(160, level, dtype=np.int16) for level in (1000, 3000)]
    epoch_ms = 1_733_130_000_000  # laid out from 0, this was 14 TB of silence: MemoryError
    lines = [
        media_message(epoch_ms + 40 * i, i + 1, samples_to_ulaw_bytes(f))
        for i, f in enumerate(frames)
    ]
    path = tmp_path / "epoch.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    recording = load_recording(path)
    assert len(recording.samples) == 480  # the first frame, 20 ms missing, the second
    assert recording.notes == (
        f"the media timestamps start at {epoch_ms} ms: placed from the first",
    )


def test_twilio_media_with_a_jump_no_stream_leaves_is_refused(tmp_path: Path) -> None:
    frame = samples_to_ulaw_bytes(np.full(160, 1000, dtype=np.int16))
    lines = [media_message(0, 1, frame), media_message(2 * 3_600_000, 2, frame)]  # 2 h later
    path = tmp_path / "jump.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(AudioFormatError, match=r"jump from 0 ms to 7200000 ms; a stream leaves"):
        load_recording(path)


def test_a_twilio_recording_cut_mid_line_keeps_its_whole_messages(tmp_path: Path) -> None:
    frames = [samples_to_ulaw_bytes(np.full(160, level, dtype=np.int16)) for level in (1, 2)]
    lines = [media_message(20 * i, i + 1, frame) for i, frame in enumerate(frames)]
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(lines) + "\n" + lines[1][:30], encoding="utf-8")  # no newline
    recording = load_recording(path)
    assert len(recording.samples) == 320
    assert recording.notes == ("the last line (3) is cut short: left out",)
    path.write_text("\n\n".join([lines[0], "{not json", lines[1]]) + "\n", encoding="utf-8")
    with pytest.raises(
        AudioFormatError, match=r"cut\.jsonl:3: not JSON"
    ):  # the line, not the message
        load_recording(path)


def test_label_tables_with_foreign_bytes_or_a_bad_onset_are_read_or_named(tmp_path: Path) -> None:
    # A stray table up the tree (someone else's, not UTF-8) was a UnicodeDecodeError traceback.
    (tmp_path / "sub").mkdir()
    recording = tmp_path / "sub" / "mine.wav"
    write_wav(recording, np.zeros(800, dtype=np.int16), 8000)
    (tmp_path / "transcripts.tsv").write_bytes(
        b"path\ttranscript\n\xff\xfe not utf-8\nsub/mine.wav\thello there\n"
    )
    assert labels_of(recording) == Labels("hello there", None)
    (tmp_path / "onsets.tsv").write_text("path\tonset_ms\nsub/mine.wav\tsoon\n", "utf-8")
    with pytest.raises(ConfigError, match=r"onsets\.tsv:2: onset 'soon' is not a whole number"):
        labels_of(recording)
