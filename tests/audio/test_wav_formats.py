"""read_wav on the WAV files other people's recorders and tools write, not only mono PCM16.

Each file is built byte by byte here (RIFF: chunk id, little-endian size, body, pad byte), so
the tests say exactly which header field or chunk layout they exercise.
"""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from voicegate.audio.g711 import (
    alaw_bytes_to_samples,
    samples_to_alaw_bytes,
    samples_to_ulaw_bytes,
    ulaw_bytes_to_samples,
)
from voicegate.audio.pcm import Samples
from voicegate.audio.wav import read_wav
from voicegate.errors import AudioFormatError

PCM, FLOAT, ALAW, ULAW, EXTENSIBLE = 1, 3, 6, 7, 0xFFFE
# KSDATAFORMAT_SUBTYPE_* GUIDs: the format tag, then a fixed tail.
_GUID_TAIL = bytes.fromhex("000000001000800000aa00389b71")

SPEECHLIKE = np.array([0, 1200, -32768, 32767, -5, 7, 16000, -16001], dtype=np.int16)


def chunk(chunk_id: bytes, body: bytes) -> bytes:
    """One RIFF chunk, with its pad byte when the body is odd."""
    return chunk_id + struct.pack("<I", len(body)) + body + b"\0" * (len(body) % 2)


def wave_file(
    tag: int,
    data: bytes,
    *,
    channels: int = 1,
    rate: int = 16000,
    bits: int = 16,
    before: bytes = b"",
    after: bytes = b"",
    data_size: int | None = None,
) -> bytes:
    """A RIFF/WAVE file: ``fmt ``, the ``before`` chunks, ``data`` (its size may lie), ``after``."""
    block = max(1, channels * bits // 8)
    fmt = struct.pack("<HHIIHH", tag, channels, rate, rate * block, block, bits)
    if tag == EXTENSIBLE:  # cbSize, valid bits, channel mask, then the sub-format GUID
        fmt += struct.pack("<HHI", 22, bits, 0) + struct.pack("<I", PCM) + _GUID_TAIL
    size = len(data) if data_size is None else data_size
    body = chunk(b"fmt ", fmt) + before + b"data" + struct.pack("<I", size) + data
    body += b"\0" * (len(data) % 2) + after
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WAVE" + body


def read(tmp_path: Path, content: bytes) -> tuple[Samples, int]:
    """The samples and rate read_wav makes of ``content``."""
    path = tmp_path / "in.wav"
    path.write_bytes(content)
    audio = read_wav(path)
    assert audio.samples.dtype == np.int16
    assert audio.samples.ndim == 1
    return audio.samples, audio.sample_rate


def test_8_bit_is_unsigned_and_scaled_to_16_bits(tmp_path: Path) -> None:
    samples, _ = read(tmp_path, wave_file(PCM, bytes([0, 128, 255, 129]), bits=8))
    assert samples.tolist() == [-32768, 0, 32512, 256]


def test_24_bit_keeps_its_top_16_bits_rounded(tmp_path: Path) -> None:
    values = [0x7FFFFF, -0x800000, 0x000180, -0x000180, 0x123456]
    data = b"".join(v.to_bytes(3, "little", signed=True) for v in values)
    samples, _ = read(tmp_path, wave_file(PCM, data, bits=24))
    # 0x7FFFFF / 256 rounds to 32768, one past full scale: clipped.
    assert samples.tolist() == [32767, -32768, 2, -2, 0x1234]


def test_32_bit_integer_scales_down_to_16_bits(tmp_path: Path) -> None:
    data = np.array([2**31 - 1, -(2**31), 0x12340000, 0x8000], dtype="<i4").tobytes()
    samples, _ = read(tmp_path, wave_file(PCM, data, bits=32))
    assert samples.tolist() == [32767, -32768, 0x1234, 0]


def bits_in_32(data: bytes, bits: int) -> bytes:
    """A plain PCM file of 4-byte containers whose header declares ``bits`` valid bits."""
    content = bytearray(wave_file(PCM, data, bits=32))
    content[34:36] = struct.pack("<H", bits)  # wBitsPerSample, after tag .. nBlockAlign
    return bytes(content)


def test_24_bits_at_the_bottom_of_32_bit_containers_read_at_full_level(tmp_path: Path) -> None:
    # ALSA's S24_LE (arecord -f S24_LE): the value in the low three bytes, the top byte a sign
    # extension or zero. Read as 32-bit samples, it was 48 dB too quiet.
    values = [0x7FFFFF, -0x800000, 0x000180, -0x000180, 0x123456]
    extended = np.array(values, dtype="<i4").tobytes()
    zero_top = np.array(values, dtype="<i4").view("<u4") & 0xFFFFFF
    expected = [32767, -32768, 2, -2, 0x1234]  # as the same values in 3-byte containers
    for data in (extended, zero_top.astype("<u4").tobytes()):
        path = tmp_path / "s24.wav"
        path.write_bytes(bits_in_32(b"\0" * 4 * 20_000 + data, 24))  # silence first
        audio = read_wav(path)
        assert audio.samples[20_000:].tolist() == expected
        assert audio.notes() == (
            "its 24-bit samples sit in the low bits of 32-bit containers (as ALSA's S24_LE): "
            "read so",
        )


def test_24_bits_at_the_top_of_32_bit_containers_read_as_32_bit_samples(tmp_path: Path) -> None:
    # Where WAVE_FORMAT_EXTENSIBLE puts valid bits: the top of the container, zeros below.
    data = (np.array([0x7FFFFF, -0x800000, 0x000100, 0x123456], dtype="<i4") << 8).tobytes()
    path = tmp_path / "top.wav"
    path.write_bytes(bits_in_32(data, 24))
    audio = read_wav(path)
    assert audio.samples.tolist() == [32767, -32768, 1, 0x1234]
    assert audio.notes() == ()


def test_audio_in_a_second_data_chunk_is_named_not_dropped_silently(tmp_path: Path) -> None:
    # A WAVE form holds one data chunk (RIFF); readers play the first, so does voicegate, and
    # it says how much audio the second one holds instead of losing it without a word.
    first = SPEECHLIKE.astype("<i2").tobytes()
    second = chunk(b"data", b"\1\0" * 1600)  # 100 ms at 16 kHz
    path = tmp_path / "two.wav"
    path.write_bytes(wave_file(PCM, first, after=chunk(b"LIST", b"INFOxxxx") + second))
    audio = read_wav(path)
    assert audio.samples.tolist() == SPEECHLIKE.tolist()
    assert audio.notes() == (
        "100 ms of audio in a second data chunk is not read: a WAV file holds one (RIFF/WAVE), "
        "and only the first is played",
    )


@pytest.mark.parametrize(("dtype", "bits"), [("<f4", 32), ("<f8", 64)])
def test_float_is_clipped_to_full_scale_and_nan_is_silence(
    tmp_path: Path, dtype: str, bits: int
) -> None:
    data = np.array([0.0, 0.5, -0.5, 1.0, -1.0, 3.0, np.nan], dtype=dtype).tobytes()
    fact = chunk(b"fact", struct.pack("<I", 7))  # float WAV carries a fact chunk
    samples, _ = read(tmp_path, wave_file(FLOAT, data, bits=bits, before=fact))
    assert samples.tolist() == [0, 16384, -16384, 32767, -32768, 32767, 0]


def test_extensible_pcm16_reads_as_plain_pcm16(tmp_path: Path) -> None:
    data = SPEECHLIKE.astype("<i2").tobytes()
    samples, rate = read(tmp_path, wave_file(EXTENSIBLE, data, rate=48000))
    assert rate == 48000
    assert np.array_equal(samples, SPEECHLIKE)


def test_ulaw_wav_decodes_like_the_codec(tmp_path: Path) -> None:
    codes = samples_to_ulaw_bytes(SPEECHLIKE)
    samples, rate = read(tmp_path, wave_file(ULAW, codes, rate=8000, bits=8))
    assert rate == 8000
    assert np.array_equal(samples, ulaw_bytes_to_samples(codes))


def test_alaw_wav_decodes_like_the_codec(tmp_path: Path) -> None:
    codes = samples_to_alaw_bytes(SPEECHLIKE)
    samples, rate = read(tmp_path, wave_file(ALAW, codes, rate=8000, bits=8))
    assert rate == 8000
    assert np.array_equal(samples, alaw_bytes_to_samples(codes))


def test_channels_are_averaged(tmp_path: Path) -> None:
    frames = np.array([[1000, 3000], [-32768, -32768], [32767, 32767], [5, 6]], dtype="<i2")
    samples, _ = read(tmp_path, wave_file(PCM, frames.tobytes(), channels=2))
    assert samples.tolist() == [2000, -32768, 32767, 6]  # 5.5 rounds half to even


def test_six_channels_are_averaged(tmp_path: Path) -> None:
    frames = np.zeros((4, 6), dtype="<i2")
    frames[:, 0] = 6000
    samples, rate = read(tmp_path, wave_file(EXTENSIBLE, frames.tobytes(), channels=6))
    assert rate == 16000
    assert samples.tolist() == [1000] * 4


def test_chunks_around_data_are_skipped_with_their_pad_bytes(tmp_path: Path) -> None:
    info = chunk(b"LIST", b"INFO" + chunk(b"INAM", b"a call\0") + chunk(b"ISFT", b"odd"))
    before = chunk(b"junk", b"abc") + info  # odd-sized: a pad byte follows it
    data = SPEECHLIKE.astype("<i2").tobytes()
    samples, _ = read(tmp_path, wave_file(PCM, data, before=before, after=info))
    assert samples.tolist() == SPEECHLIKE.tolist()


@pytest.mark.parametrize(
    "size", [0, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000], ids=["zero", "all-ones", "2GiB-1", "2GiB"]
)
def test_a_streaming_writers_data_size_reads_to_the_end(tmp_path: Path, size: int) -> None:
    data = SPEECHLIKE.astype("<i2").tobytes()
    path = tmp_path / "streamed.wav"
    path.write_bytes(wave_file(PCM, data, data_size=size))
    audio = read_wav(path)
    assert audio.samples.tolist() == SPEECHLIKE.tolist()
    assert audio.missing_ms == 0  # a placeholder (arecord to a pipe: 2 GiB), not a file cut short


def test_rf64_takes_its_data_size_from_ds64_when_chunks_follow_the_audio(tmp_path: Path) -> None:
    data = SPEECHLIKE.astype("<i2").tobytes()
    ds64 = chunk(b"ds64", struct.pack("<QQQI", 0, len(data), len(SPEECHLIKE), 0))
    ixml = chunk(b"iXML", b"<BWFXML>a recorder's metadata</BWFXML>")  # read as audio before
    content = wave_file(PCM, data, before=ds64, after=ixml, data_size=0xFFFFFFFF)
    samples, _ = read(tmp_path, b"RF64" + b"\xff\xff\xff\xff" + content[8:])
    assert samples.tolist() == SPEECHLIKE.tolist()


def test_rf64_reads_its_data_to_the_end(tmp_path: Path) -> None:
    data = SPEECHLIKE.astype("<i2").tobytes()
    ds64 = chunk(b"ds64", struct.pack("<QQQI", 0, len(data), len(SPEECHLIKE), 0))
    content = wave_file(PCM, data, before=ds64, data_size=0xFFFFFFFF)
    samples, _ = read(tmp_path, b"RF64" + b"\xff\xff\xff\xff" + content[8:])
    assert samples.tolist() == SPEECHLIKE.tolist()


@pytest.mark.parametrize("cut", [0, 1], ids=["whole-sample", "mid-sample"])
def test_a_file_cut_short_keeps_its_whole_samples(tmp_path: Path, cut: int) -> None:
    content = wave_file(PCM, SPEECHLIKE.astype("<i2").tobytes())
    samples, _ = read(tmp_path, content[: len(content) - 6 + cut])
    assert samples.tolist() == SPEECHLIKE.tolist()[:5]


def test_an_odd_data_chunk_drops_the_partial_sample(tmp_path: Path) -> None:
    data = SPEECHLIKE.astype("<i2").tobytes() + b"\x01"
    samples, _ = read(tmp_path, wave_file(PCM, data, after=chunk(b"LIST", b"INFO")))
    assert samples.tolist() == SPEECHLIKE.tolist()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (wave_file(2, bytes(64), bits=4), r"format tag 0x0002 is not supported"),
        (wave_file(PCM, bytes(60), bits=12, channels=5), r"12 bits .* not supported"),
        (wave_file(FLOAT, bytes(64), bits=16), r"IEEE float of 16 bits"),
        (b"RIFF\x20\0\0\0WAVEdata\x04\0\0\0abcd", r"data chunk comes before any fmt"),
        (wave_file(PCM, b"")[:36], r"no data chunk"),
        (wave_file(PCM, bytes(64), rate=1), r"says 1 Hz, outside 1000-768000 Hz"),
    ],
    ids=["adpcm", "12-bit", "float16", "data-first", "no-data", "rate-1-hz"],
)
def test_what_cannot_be_decoded_is_named(tmp_path: Path, content: bytes, message: str) -> None:
    with pytest.raises(AudioFormatError, match=message):
        read(tmp_path, content)


def test_a_block_align_without_the_channels_reads_by_the_bits_and_byte_rate(
    tmp_path: Path,
) -> None:
    frames = np.array([[1000, 3000], [-2000, -4000], [5, 7]], dtype="<i2")
    content = bytearray(wave_file(PCM, frames.tobytes(), channels=2))
    struct.pack_into("<H", content, 32, 2)  # block_align 2: one channel's worth, not two
    samples, _ = read(tmp_path, bytes(content))  # the byte rate (64000) still says 4
    assert samples.tolist() == [2000, -3000, 6]


def test_a_header_whose_sizes_all_disagree_is_refused(tmp_path: Path) -> None:
    content = bytearray(wave_file(PCM, bytes(64), channels=2))
    struct.pack_into("<IH", content, 28, 16000 * 2, 2)  # byte rate and block_align: 8 bits
    with pytest.raises(AudioFormatError, match=r"contradicts itself: 16-bit samples do not fit"):
        read(tmp_path, bytes(content))


def test_a_missing_pad_byte_after_an_odd_chunk_is_forgiven(tmp_path: Path) -> None:
    odd = b"LIST" + struct.pack("<I", 5) + b"INFOx"  # no pad byte after it
    samples, _ = read(tmp_path, wave_file(PCM, SPEECHLIKE.astype("<i2").tobytes(), before=odd))
    assert samples.tolist() == SPEECHLIKE.tolist()


def test_a_file_cut_short_says_how_much_audio_its_header_promised(tmp_path: Path) -> None:
    content = wave_file(PCM, np.zeros(8000, dtype="<i2").tobytes(), rate=8000)
    path = tmp_path / "cut.wav"
    path.write_bytes(content[: len(content) - 4000])  # the last 2000 samples: 250 ms
    audio = read_wav(path)
    assert (audio.duration_ms, audio.missing_ms) == (750, 250)
    assert audio.notes() == (
        "the file is cut short: its header promises 250 ms more audio than the 750 ms it holds",
    )


def test_a_long_wide_file_is_decoded_without_holding_it_in_memory(tmp_path: Path) -> None:
    # 40 s of 48 kHz stereo float (15 MB): decoded whole, its float64 copies took ~6x that.
    frames = 40 * 48000
    tone = np.sin(np.arange(frames) * 0.05).astype("<f4") * 0.5
    data = np.stack([tone, -tone], axis=1).tobytes()
    path = tmp_path / "long.wav"
    path.write_bytes(wave_file(FLOAT, data, channels=2, rate=48000, bits=32))
    tracemalloc.start()
    try:
        audio = read_wav(path, channel=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(audio.samples) == frames
    assert np.array_equal(audio.samples[:3], np.rint(tone[:3] * 32768).astype(np.int16))
    assert peak < len(data) // 2  # the mono PCM16 result (3.8 MB) and a few blocks of scratch


@pytest.mark.parametrize(
    ("head", "name"),
    [
        (b"ID3\x04\x00\x00\x00\x00\x00\x00", "an MP3 file"),
        (b"\xff\xfb\x90\x64" + bytes(8), "an MP3 file"),
        (b"fLaC\x00\x00\x00\x22" + bytes(8), "a FLAC file"),
        (b"OggS\x00\x02" + bytes(10), "an Ogg file"),
        (b"\x00\x00\x00\x20ftypM4A " + bytes(4), "an MP4/M4A file"),
    ],
    ids=["mp3-id3", "mp3-frame", "flac", "ogg", "m4a"],
)
def test_a_compressed_file_named_wav_is_named_with_how_to_convert_it(
    tmp_path: Path, head: bytes, name: str
) -> None:
    with pytest.raises(AudioFormatError, match=rf"\({name}.*not a RIFF/WAVE file; convert it"):
        read(tmp_path, head + bytes(64))


def test_a_chunk_that_runs_past_the_end_is_named_when_no_data_follows(tmp_path: Path) -> None:
    damaged = b"LIST" + struct.pack("<I", 0xFFFFFF00) + b"INFO"  # a size far past the end
    content = wave_file(PCM, b"")
    content = content[: content.index(b"data")] + damaged
    with pytest.raises(AudioFormatError, match=r"no data chunk: a 'LIST' chunk runs past the end"):
        read(tmp_path, content)


def test_float_samples_written_in_16_bit_scale_are_read_as_such(tmp_path: Path) -> None:
    data = SPEECHLIKE.astype("<f4").tobytes()  # int16 values stored as float: all "clipped"
    path = tmp_path / "int_scaled.wav"
    path.write_bytes(wave_file(FLOAT, data, bits=32))
    audio = read_wav(path)
    assert audio.samples.tolist() == SPEECHLIKE.tolist()
    assert audio.notes() == (
        "its float samples reach 32768 where 1.0 is full scale: read as the 16-bit values "
        "they were written as",
    )


def test_float_samples_far_over_full_scale_are_clipped_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "hot.wav"
    path.write_bytes(wave_file(FLOAT, np.array([0.5, -3.0], dtype="<f4").tobytes(), bits=32))
    audio = read_wav(path)
    assert audio.samples.tolist() == [16384, -32768]
    assert audio.notes() == ("its float samples reach 3.0 times full scale: clipped there",)
