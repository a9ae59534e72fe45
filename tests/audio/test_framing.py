"""Re-framing: frames depend only on the stream, never on how it was split."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicegate.audio import g711
from voicegate.audio.framing import BytesReframer, Reframer
from voicegate.audio.pcm import Samples
from voicegate.errors import AudioFormatError

FRAME = 160  # 20 ms at 8 kHz
STREAM = np.random.default_rng(20).integers(-32768, 32768, size=5 * FRAME + 37).astype(np.int16)
BYTE_STREAM = STREAM.astype("<i2").tobytes()


def frames_of(reframer: Reframer, parts: list[Samples]) -> list[list[int]]:
    """All frames produced by pushing ``parts`` in order, as lists for easy comparison."""
    return [frame.tolist() for part in parts for frame in reframer.push(part)]


def one_shot_frames(stream: Samples, size: int) -> list[list[int]]:
    """Frames cut from the whole stream at once, by plain slicing."""
    whole = len(stream) - len(stream) % size
    return [stream[i : i + size].tolist() for i in range(0, whole, size)]


def split_at(sequence: Samples, cuts: list[int]) -> list[Samples]:
    """``sequence`` cut at the sorted positions ``cuts`` (empty pieces allowed)."""
    edges = [0, *sorted(cuts), len(sequence)]
    return [sequence[a:b] for a, b in itertools.pairwise(edges)]


def test_every_two_way_split_gives_the_one_shot_frames() -> None:
    expected = one_shot_frames(STREAM, FRAME)
    for cut in range(len(STREAM) + 1):
        reframer = Reframer(FRAME)
        assert frames_of(reframer, [STREAM[:cut], STREAM[cut:]]) == expected, f"split at {cut}"
        assert reframer.pending == len(STREAM) % FRAME


@settings(max_examples=300, deadline=None)
@given(cuts=st.lists(st.integers(0, len(STREAM)), max_size=40))
def test_every_multi_way_split_gives_the_one_shot_frames(cuts: list[int]) -> None:
    reframer = Reframer(FRAME)
    assert frames_of(reframer, split_at(STREAM, cuts)) == one_shot_frames(STREAM, FRAME)
    assert reframer.pending == len(STREAM) % FRAME


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 400), cuts=st.lists(st.integers(0, len(STREAM)), max_size=10))
def test_any_frame_size_works(size: int, cuts: list[int]) -> None:
    reframer = Reframer(size)
    frames = frames_of(reframer, split_at(STREAM, cuts))
    assert frames == one_shot_frames(STREAM, size)
    assert all(len(frame) == size for frame in frames)


def test_pending_counts_the_incomplete_frame() -> None:
    reframer = Reframer(FRAME)
    assert reframer.pending == 0
    assert reframer.push(STREAM[:100]) == []
    assert reframer.pending == 100
    assert len(reframer.push(STREAM[100:250])) == 1
    assert reframer.pending == 90


def test_flush_pads_the_partial_frame_with_silence() -> None:
    reframer = Reframer(FRAME)
    reframer.push(STREAM[:50])
    frame = reframer.flush()
    assert frame is not None
    assert frame.tolist() == [*STREAM[:50].tolist(), *[0] * (FRAME - 50)]
    assert reframer.pending == 0
    assert reframer.flush() is None


def test_flush_of_nothing_is_none() -> None:
    reframer = Reframer(FRAME)
    reframer.push(STREAM[: 2 * FRAME])
    assert reframer.flush() is None


def test_reset_drops_the_partial_frame() -> None:
    reframer = Reframer(FRAME)
    reframer.push(STREAM[:70])
    reframer.reset()
    assert reframer.pending == 0
    assert frames_of(reframer, [STREAM[70:]]) == one_shot_frames(STREAM[70:], FRAME)


def test_frames_do_not_alias_the_callers_input() -> None:
    reframer = Reframer(FRAME)
    data = STREAM[: 2 * FRAME].copy()
    frames = reframer.push(data)
    data[:] = 0
    assert frames[0].tolist() == STREAM[:FRAME].tolist()


@pytest.mark.parametrize(("rate", "frame"), [(8000, 160), (16000, 320), (24000, 480), (48000, 960)])
def test_for_rate_defaults_to_20_ms(rate: int, frame: int) -> None:
    assert Reframer.for_rate(rate).frame_samples == frame
    assert Reframer.for_rate(rate, frame_ms=10).frame_samples == frame // 2


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        Reframer(0)
    with pytest.raises(AudioFormatError, match="int16"):
        Reframer(FRAME).push(np.zeros(10, dtype=np.float32))
    with pytest.raises(ValueError, match="positive"):
        BytesReframer(-1)
    with pytest.raises(ValueError, match="byte value"):
        BytesReframer(160, silence_byte=256)


# Bytes: outbound audio to providers is an encoded payload (PCM16 or G.711).
BYTE_FRAME = 2 * FRAME


def byte_frames_of(reframer: BytesReframer, parts: list[bytes]) -> list[bytes]:
    """All frames produced by pushing ``parts`` in order."""
    return [frame for part in parts for frame in reframer.push(part)]


def one_shot_byte_frames(stream: bytes, size: int) -> list[bytes]:
    """Frames cut from the whole byte stream at once."""
    return [stream[i : i + size] for i in range(0, len(stream) - len(stream) % size, size)]


def test_every_two_way_byte_split_gives_the_one_shot_frames() -> None:
    expected = one_shot_byte_frames(BYTE_STREAM, BYTE_FRAME)
    for cut in range(len(BYTE_STREAM) + 1):
        reframer = BytesReframer(BYTE_FRAME)
        parts = [BYTE_STREAM[:cut], BYTE_STREAM[cut:]]
        assert byte_frames_of(reframer, parts) == expected, f"split at {cut}"
        assert reframer.pending == len(BYTE_STREAM) % BYTE_FRAME


@settings(max_examples=300, deadline=None)
@given(cuts=st.lists(st.integers(0, len(BYTE_STREAM)), max_size=40))
def test_every_multi_way_byte_split_gives_the_one_shot_frames(cuts: list[int]) -> None:
    edges = [0, *sorted(cuts), len(BYTE_STREAM)]
    parts = [BYTE_STREAM[a:b] for a, b in itertools.pairwise(edges)]
    reframer = BytesReframer(BYTE_FRAME)
    assert byte_frames_of(reframer, parts) == one_shot_byte_frames(BYTE_STREAM, BYTE_FRAME)
    assert reframer.pending == len(BYTE_STREAM) % BYTE_FRAME


def test_byte_flush_pads_with_the_silence_byte() -> None:
    reframer = BytesReframer(FRAME, silence_byte=g711.ULAW_SILENCE)
    reframer.push(b"\x01\x02\x03")
    frame = reframer.flush()
    assert frame == b"\x01\x02\x03" + b"\xff" * (FRAME - 3)
    assert reframer.pending == 0
    assert reframer.flush() is None


def test_byte_reset_drops_the_partial_frame() -> None:
    reframer = BytesReframer(4)
    reframer.push(b"abc")
    reframer.reset()
    assert reframer.pending == 0
    assert reframer.push(bytearray(b"defgh")) == [b"defg"]
    assert reframer.pending == 1
