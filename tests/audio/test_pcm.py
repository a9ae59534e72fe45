"""PCM16 bytes <-> samples, and the small sample/ms helpers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicegate.audio.pcm import (
    ms_for_samples,
    pcm16le_to_samples,
    require_samples,
    samples_for_ms,
    samples_to_pcm16le,
    silence,
)
from voicegate.errors import AudioFormatError


def test_bytes_are_little_endian() -> None:
    assert pcm16le_to_samples(b"\x01\x00\xff\xff\x00\x80").tolist() == [1, -1, -32768]
    assert (
        samples_to_pcm16le(np.array([1, -1, 32767], dtype=np.int16)) == b"\x01\x00\xff\xff\xff\x7f"
    )


@settings(max_examples=200)
@given(data=st.binary(max_size=400).map(lambda b: b[: len(b) // 2 * 2]))
def test_bytes_round_trip(data: bytes) -> None:
    assert samples_to_pcm16le(pcm16le_to_samples(data)) == data


@pytest.mark.parametrize("size", [1, 3, 321])
def test_odd_byte_counts_are_refused(size: int) -> None:
    with pytest.raises(AudioFormatError, match=f"got {size} bytes"):
        pcm16le_to_samples(bytes(size))


def test_decoded_samples_are_a_writable_copy() -> None:
    data = bytearray(b"\x01\x00")
    samples = pcm16le_to_samples(data)
    samples[0] = 5
    data[0] = 9
    assert samples.tolist() == [5]


def test_memoryview_is_accepted() -> None:
    assert pcm16le_to_samples(memoryview(b"\x02\x00")).tolist() == [2]


def test_require_samples_refuses_other_arrays() -> None:
    with pytest.raises(AudioFormatError, match="float64"):
        require_samples(np.zeros(3))
    with pytest.raises(AudioFormatError, match="2-D"):
        require_samples(np.zeros((2, 2), dtype=np.int16))


def test_helpers() -> None:
    assert silence(3).tolist() == [0, 0, 0]
    assert samples_for_ms(8000, 20) == 160
    assert samples_for_ms(44100, 10) == 441
    assert ms_for_samples(16000, 320) == 20
    assert ms_for_samples(8000, 159) == 19
