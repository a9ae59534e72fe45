"""G.711 μ-law/A-law: bit-exact on all 65,536 samples and all 256 codes.

Checked against (a) a scalar reference written here from the classic algorithm and (b)
CPython's ``audioop``. The reference works on the G.711 input widths (14-bit μ-law, 13-bit
A-law) reached by an arithmetic shift of the 16-bit sample, as ``audioop`` does; the
better-known 16-bit variant (bias 0x84 added to the 16-bit magnitude) rounds some negative
samples the other way and so is not what ``audioop`` or the Twilio fixtures use.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType

import numpy as np
import pytest

from voicegate.audio import g711
from voicegate.audio.pcm import Samples
from voicegate.errors import AudioFormatError

Encode = Callable[[Samples], g711.Codes]
Decode = Callable[[g711.Codes], Samples]

EVERY_SAMPLE = np.arange(-32768, 32768, dtype=np.int16)
EVERY_CODE = np.arange(256, dtype=np.uint8)

# Classic constants: μ-law bias 0x84 and clip 32635, A-law even-bit inversion 0x55.
ULAW_BIAS = 0x84
ULAW_CLIP = 32635
ULAW_SEGMENT_TOPS = (0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF)  # 14-bit
ALAW_SEGMENT_TOPS = (0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF)  # 13-bit


def reference_ulaw_encode(sample: int) -> int:
    """Scalar μ-law encoder: segment search on the biased 14-bit magnitude."""
    value = sample >> 2
    mask = 0x7F if value < 0 else 0xFF
    magnitude = min(abs(value), ULAW_CLIP >> 2) + (ULAW_BIAS >> 2)
    for segment, top in enumerate(ULAW_SEGMENT_TOPS):
        if magnitude <= top:
            return ((segment << 4) | ((magnitude >> (segment + 1)) & 0x0F)) ^ mask
    return 0x7F ^ mask


def reference_ulaw_decode(code: int) -> int:
    """Scalar μ-law decoder."""
    bits = ~code & 0xFF
    value = (((bits & 0x0F) << 3) + ULAW_BIAS) << ((bits >> 4) & 0x07)
    return ULAW_BIAS - value if bits & 0x80 else value - ULAW_BIAS


def reference_alaw_encode(sample: int) -> int:
    """Scalar A-law encoder: segment search on the 13-bit magnitude, XOR 0x55."""
    value = sample >> 3
    mask, magnitude = (0xD5, value) if value >= 0 else (0x55, -value - 1)
    for segment, top in enumerate(ALAW_SEGMENT_TOPS):
        if magnitude <= top:
            shift = 1 if segment < 2 else segment
            return ((segment << 4) | ((magnitude >> shift) & 0x0F)) ^ mask
    return 0x7F ^ mask


def reference_alaw_decode(code: int) -> int:
    """Scalar A-law decoder."""
    bits = code ^ 0x55
    segment = (bits >> 4) & 0x07
    value = (bits & 0x0F) << 4
    value = value + 8 if segment == 0 else (value + 0x108) << (segment - 1)
    return value if bits & 0x80 else -value


def audioop_module() -> ModuleType:
    """CPython's audioop (deprecated in 3.11, removed in 3.13: skip only where it is gone)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module: ModuleType = pytest.importorskip("audioop")
    return module


def test_ulaw_encode_matches_reference_for_every_sample() -> None:
    expected = [reference_ulaw_encode(int(s)) for s in EVERY_SAMPLE]
    assert g711.ulaw_encode(EVERY_SAMPLE).tolist() == expected


def test_ulaw_decode_matches_reference_for_every_code() -> None:
    expected = [reference_ulaw_decode(int(c)) for c in EVERY_CODE]
    assert g711.ulaw_decode(EVERY_CODE).tolist() == expected


def test_alaw_encode_matches_reference_for_every_sample() -> None:
    expected = [reference_alaw_encode(int(s)) for s in EVERY_SAMPLE]
    assert g711.alaw_encode(EVERY_SAMPLE).tolist() == expected


def test_alaw_decode_matches_reference_for_every_code() -> None:
    expected = [reference_alaw_decode(int(c)) for c in EVERY_CODE]
    assert g711.alaw_decode(EVERY_CODE).tolist() == expected


def test_every_value_matches_audioop() -> None:
    audioop = audioop_module()
    pcm = EVERY_SAMPLE.astype("<i2").tobytes()
    codes = EVERY_CODE.tobytes()
    assert g711.samples_to_ulaw_bytes(EVERY_SAMPLE) == audioop.lin2ulaw(pcm, 2)
    assert g711.samples_to_alaw_bytes(EVERY_SAMPLE) == audioop.lin2alaw(pcm, 2)
    assert g711.ulaw_bytes_to_samples(codes).astype("<i2").tobytes() == audioop.ulaw2lin(codes, 2)
    assert g711.alaw_bytes_to_samples(codes).astype("<i2").tobytes() == audioop.alaw2lin(codes, 2)


@pytest.mark.parametrize(
    ("encode", "decode"),
    [(g711.ulaw_encode, g711.ulaw_decode), (g711.alaw_encode, g711.alaw_decode)],
    ids=["ulaw", "alaw"],
)
class TestRoundTrip:
    def test_decoded_values_are_fixed_points(self, encode: Encode, decode: Decode) -> None:
        decoded = decode(EVERY_CODE)
        assert np.array_equal(decode(encode(decoded)), decoded)

    def test_codes_survive_a_round_trip_except_negative_zero(
        self, encode: Encode, decode: Decode
    ) -> None:
        # μ-law has a +0 and a -0 code (0xFF, 0x7F); both decode to 0, which encodes as +0.
        round_trip = encode(decode(EVERY_CODE))
        changed = EVERY_CODE[round_trip != EVERY_CODE]
        assert all(decode(np.array([c], dtype=np.uint8))[0] == 0 for c in changed)
        assert len(changed) <= 1

    def test_quantisation_is_monotonic(self, encode: Encode, decode: Decode) -> None:
        assert np.all(np.diff(decode(encode(EVERY_SAMPLE)).astype(np.int32)) >= 0)

    def test_error_stays_within_half_a_logarithmic_step(
        self, encode: Encode, decode: Decode
    ) -> None:
        # 4-bit steps per segment: a step is at most 1/16 of the value (+ the truncation to
        # 13/14 bits and the smallest step), so the error is at most ~1/32 of the value.
        samples = EVERY_SAMPLE[np.abs(EVERY_SAMPLE.astype(np.int32)) <= 32000].astype(np.int32)
        error = np.abs(decode(encode(samples.astype(np.int16))).astype(np.int32) - samples)
        assert np.all(error <= (np.abs(samples) + 132) / 32 + 16)


def test_silence_constants_are_the_codes_of_zero() -> None:
    zero = np.zeros(1, dtype=np.int16)
    assert g711.ulaw_encode(zero)[0] == g711.ULAW_SILENCE
    assert g711.alaw_encode(zero)[0] == g711.ALAW_SILENCE


def test_bytes_functions_agree_with_array_functions() -> None:
    rng = np.random.default_rng(711)
    samples = rng.integers(-32768, 32768, size=4000).astype(np.int16)
    ulaw = g711.samples_to_ulaw_bytes(samples)
    alaw = g711.samples_to_alaw_bytes(samples)
    assert ulaw == g711.ulaw_encode(samples).tobytes()
    assert alaw == g711.alaw_encode(samples).tobytes()
    assert np.array_equal(
        g711.ulaw_bytes_to_samples(ulaw), g711.ulaw_decode(g711.ulaw_encode(samples))
    )
    assert np.array_equal(
        g711.alaw_bytes_to_samples(alaw), g711.alaw_decode(g711.alaw_encode(samples))
    )


def test_tables_are_read_only() -> None:
    for table in (g711.ulaw_encode_table(), g711.alaw_encode_table(), g711.ulaw_decode_table()):
        with pytest.raises(ValueError, match="read-only"):
            table[0] = 1


def test_decoded_samples_are_writable_copies() -> None:
    decoded = g711.ulaw_bytes_to_samples(b"\x00\x80")
    decoded[0] = 7
    assert g711.ulaw_decode_table()[0] != 7


def test_wrong_array_types_are_refused() -> None:
    with pytest.raises(AudioFormatError, match="int16"):
        g711.ulaw_encode(np.zeros(4, dtype=np.int32))
    with pytest.raises(AudioFormatError, match="uint8"):
        g711.alaw_decode(np.zeros(4, dtype=np.int16))
