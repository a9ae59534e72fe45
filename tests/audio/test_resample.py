"""Streaming resampler: exact output counts, chunking-independent output, and fidelity."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import numpy.typing as npt
import pytest
import soxr
from hypothesis import given, settings
from hypothesis import strategies as st

from voicegate.audio.pcm import Samples
from voicegate.audio.resample import SUPPORTED_RATES, StreamResampler, convert, resample_all
from voicegate.errors import AudioFormatError

RATES = sorted(SUPPORTED_RATES)
PAIRS = [(a, b) for a, b in itertools.product(RATES, RATES) if a != b]
UP_PAIRS = [(a, b) for a, b in PAIRS if a < b]
DOWN_PAIRS = [(a, b) for a, b in PAIRS if a > b]
FULL_SCALE = 32768.0


def pair_id(pair: tuple[int, int]) -> str:
    return f"{pair[0] // 1000}k-{pair[1] // 1000}k"


def sweep(rate: int, seconds: float, top_hz: float, amplitude: float = 0.5) -> Samples:
    """An exponential sine sweep from 50 Hz to ``top_hz``, as int16."""
    t = np.arange(int(rate * seconds)) / rate
    growth = np.log(top_hz / 50.0) / seconds
    phase = 2 * np.pi * 50.0 * (np.exp(growth * t) - 1) / growth
    samples: Samples = np.rint(amplitude * FULL_SCALE * np.sin(phase)).astype(np.int16)
    return samples


def tone(rate: int, seconds: float, hz: float, amplitude: float = 0.5) -> Samples:
    """A pure sine, as int16."""
    t = np.arange(int(rate * seconds)) / rate
    return np.rint(amplitude * FULL_SCALE * np.sin(2 * np.pi * hz * t)).astype(np.int16)


@functools.cache
def speechlike(rate: int, seconds: float, seed: int) -> Samples:
    """A full-band sweep plus bursts of white noise: content everywhere up to Nyquist.

    Cached (read-only) because several tests stream the same minute of audio per rate.
    """
    rng = np.random.default_rng(seed)
    n = int(rate * seconds)
    envelope = np.repeat(rng.uniform(0, 1, size=n // (rate // 10) + 1), rate // 10)[:n]
    noise = rng.standard_normal(n) * 0.15 * envelope * FULL_SCALE
    mixed = 0.5 * sweep(rate, seconds, 0.45 * rate).astype(np.float64) + noise
    signal = np.clip(np.rint(mixed), -32768, 32767).astype(np.int16)
    signal.flags.writeable = False
    return signal


def random_sizes(total: int, max_size: int, seed: int) -> list[int]:
    """Chunk sizes (zeros included) that add up to ``total``."""
    rng = np.random.default_rng(seed)
    sizes: list[int] = []
    remaining = total
    while remaining:
        sizes.append(min(int(rng.integers(0, max_size + 1)), remaining))
        remaining -= sizes[-1]
    return sizes


def push_in_chunks(resampler: StreamResampler, signal: Samples, sizes: list[int]) -> list[Samples]:
    """Push ``signal`` split as ``sizes``; assert the exact count after every push."""
    outputs, pushed, released = [], 0, 0
    for size in sizes:
        out = resampler.push(signal[pushed : pushed + size])
        pushed += size
        released += len(out)
        assert released == pushed * resampler.out_rate // resampler.in_rate
        outputs.append(out)
    return outputs


def stream_output(pair: tuple[int, int], signal: Samples, seed: int) -> Samples:
    """The whole output (flush included) of ``signal`` pushed in random chunks."""
    resampler = StreamResampler(*pair)
    sizes = random_sizes(len(signal), pair[0] // 10, seed)
    return np.concatenate([*push_in_chunks(resampler, signal, sizes), resampler.flush()])


def one_push_output(pair: tuple[int, int], signal: Samples) -> Samples:
    """The whole output (flush included) of ``signal`` pushed at once."""
    resampler = StreamResampler(*pair)
    return np.concatenate([resampler.push(signal), resampler.flush()])


def snr_db(reference: npt.NDArray[np.float64], actual: npt.NDArray[np.float64]) -> float:
    """Signal-to-error ratio of ``actual`` against ``reference``."""
    error = reference - actual
    return float(10 * np.log10(np.sum(reference**2) / np.sum(error**2)))


def best_aligned_snr(reference: Samples, actual: Samples, rate: int) -> float:
    """SNR after the best sub-sample alignment (±1 sample in 1/8 steps), edges excluded.

    The reference is delayed by a linear phase in frequency, which shifts it by any fraction
    of a sample.
    """
    size = min(len(reference), len(actual))
    edge = rate // 20
    fft_size = 1 << int(np.ceil(np.log2(2 * size)))
    spectrum = np.fft.rfft(reference[:size].astype(np.float64), fft_size)
    frequencies = np.fft.rfftfreq(fft_size)
    act = actual[:size].astype(np.float64)[edge:-edge]
    best = -np.inf
    for delay in np.arange(-1.0, 1.0 + 1e-9, 0.125):
        shifted = np.fft.irfft(spectrum * np.exp(-2j * np.pi * frequencies * delay), fft_size)
        best = max(best, snr_db(shifted[edge : size - edge], act))
    return float(best)


def fitted_tone(samples: Samples, rate: int, hz: float) -> tuple[float, float]:
    """Least-squares amplitude of a ``hz`` sine in ``samples``, and the residual power in dB."""
    t = np.arange(len(samples)) / rate
    basis = np.stack([np.sin(2 * np.pi * hz * t), np.cos(2 * np.pi * hz * t)], axis=1)
    values = samples.astype(np.float64)
    coefficients = np.linalg.lstsq(basis, values, rcond=None)[0]
    residual = values - basis @ coefficients
    return float(np.hypot(*coefficients)), float(
        10 * np.log10(np.sum(residual**2) / np.sum(values**2))
    )


def test_unsupported_rates_are_refused() -> None:
    with pytest.raises(AudioFormatError, match="44100"):
        StreamResampler(44100, 16000)
    with pytest.raises(AudioFormatError, match="supported"):
        StreamResampler(8000, 11025)


@pytest.mark.parametrize("rate", RATES)
def test_same_rate_is_a_pass_through(rate: int) -> None:
    resampler = StreamResampler(rate, rate)
    signal = speechlike(rate, 0.3, seed=rate)
    assert resampler.delay_samples == 0
    assert np.array_equal(
        np.concatenate(push_in_chunks(resampler, signal, [7, 0, 1000])), signal[:1007]
    )
    assert len(resampler.flush()) == 0


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_latency_is_at_most_30_ms(pair: tuple[int, int]) -> None:
    resampler = StreamResampler(*pair)
    assert 0 < resampler.delay_samples * 1000 <= 30 * pair[1]


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 3000), max_size=25))
def test_released_count_is_exact_after_any_pushes(pair: tuple[int, int], sizes: list[int]) -> None:
    signal = np.resize(speechlike(pair[0], 1.0, seed=1), sum(sizes))
    resampler = StreamResampler(*pair)
    push_in_chunks(resampler, signal, sizes)
    assert len(resampler.flush()) == resampler.delay_samples


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_every_20_ms_frame_yields_one_20_ms_frame(pair: tuple[int, int]) -> None:
    in_rate, out_rate = pair
    resampler = StreamResampler(in_rate, out_rate)
    signal = speechlike(in_rate, 5.0, seed=2)
    frame = in_rate // 50
    for start in range(0, len(signal), frame):
        assert len(resampler.push(signal[start : start + frame])) == out_rate // 50


# A minute for the gateway's main paths and for ratios whose count wobbles by one sample
# within a period (16->24, 48->8); ten seconds for the other pairs keeps the suite fast.
LONG_PAIRS = [(8000, 16000), (16000, 8000), (16000, 24000), (48000, 8000)]
STREAM_CASES = [(pair, 60.0 if pair in LONG_PAIRS else 10.0) for pair in PAIRS]


@pytest.mark.parametrize(
    ("pair", "seconds"), STREAM_CASES, ids=[pair_id(p) for p, _ in STREAM_CASES]
)
def test_a_long_stream_in_random_chunks_equals_one_push(
    pair: tuple[int, int], seconds: float
) -> None:
    # Bit-identical output however the input was split: no gap, no click, no drift at any
    # chunk edge (and the exact count is asserted after every push).
    signal = speechlike(pair[0], seconds, seed=3)
    streamed = stream_output(pair, signal, seed=4)
    assert np.array_equal(streamed, one_push_output(pair, signal))
    assert len(streamed) == len(signal) * pair[1] // pair[0] + StreamResampler(*pair).delay_samples


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_a_sine_has_no_discontinuity_at_chunk_edges(pair: tuple[int, int]) -> None:
    in_rate, out_rate = pair
    hz, amplitude = 440.0, 0.5 * FULL_SCALE
    out = stream_output(pair, tone(in_rate, 3.0, hz), seed=5)
    steady = out[StreamResampler(*pair).delay_samples + out_rate // 20 : -out_rate // 5]
    # A sine's steepest step between neighbouring samples, plus rounding.
    steepest = 2 * np.pi * hz * amplitude / out_rate
    assert np.max(np.abs(np.diff(steady.astype(np.int32)))) <= steepest + 2


@pytest.mark.parametrize("pair", UP_PAIRS, ids=pair_id)
def test_upsampling_matches_one_shot_soxr(pair: tuple[int, int]) -> None:
    in_rate, out_rate = pair
    signal = sweep(in_rate, 2.0, 0.4 * in_rate)
    streamed = stream_output(pair, signal, seed=6)[StreamResampler(*pair).delay_samples :]
    one_shot = soxr.resample(signal.astype(np.float32) / FULL_SCALE, in_rate, out_rate)
    reference = np.clip(np.rint(one_shot * FULL_SCALE), -32768, 32767).astype(np.int16)
    assert best_aligned_snr(reference, streamed, out_rate) > 60.0


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
@pytest.mark.parametrize("fraction", [0.02, 0.15, 0.3, 0.45])
def test_tones_in_the_passband_keep_level_and_purity(
    pair: tuple[int, int], fraction: float
) -> None:
    in_rate, out_rate = pair
    hz = fraction * min(in_rate, out_rate)
    out = stream_output(pair, tone(in_rate, 2.0, hz), seed=7)
    steady = out[StreamResampler(*pair).delay_samples + out_rate // 10 : -out_rate // 5]
    amplitude, residual_db = fitted_tone(steady, out_rate, hz)
    assert abs(20 * np.log10(amplitude / (0.5 * FULL_SCALE))) < 0.05
    assert residual_db < -80.0


# Tones between the output's Nyquist frequency and the input's (1.1x, 1.4x, 1.8x the former).
ALIAS_CASES = [
    (pair, factor * pair[1] / 2)
    for pair in DOWN_PAIRS
    for factor in (1.1, 1.4, 1.8)
    if factor * pair[1] / 2 < 0.48 * pair[0]
]


@pytest.mark.parametrize(
    ("pair", "hz"), ALIAS_CASES, ids=lambda v: pair_id(v) if isinstance(v, tuple) else f"{v:.0f}Hz"
)
def test_downsampling_rejects_aliases(pair: tuple[int, int], hz: float) -> None:
    in_rate, out_rate = pair
    out = stream_output(pair, tone(in_rate, 1.0, hz), seed=8)
    # Away from the tone's abrupt start and end, which are broadband clicks of their own.
    steady = out[StreamResampler(*pair).delay_samples + out_rate // 10 : -out_rate // 5]
    level = np.sqrt(np.mean(steady.astype(np.float64) ** 2)) / (0.5 * FULL_SCALE / np.sqrt(2))
    assert 20 * np.log10(max(level, 1e-12)) < -80.0


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_flush_releases_the_tail_then_starts_afresh(pair: tuple[int, int]) -> None:
    in_rate, _ = pair
    signal = tone(in_rate, 0.5, 300.0)
    resampler = StreamResampler(*pair)
    first = resampler.push(signal)
    tail = resampler.flush()
    assert len(tail) == resampler.delay_samples
    assert np.max(np.abs(tail)) > 1000  # the end of the tone, not padding
    assert np.array_equal(resampler.push(signal), first)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_reset_discards_buffered_audio(pair: tuple[int, int]) -> None:
    in_rate, out_rate = pair
    resampler = StreamResampler(*pair)
    resampler.push(tone(in_rate, 0.5, 300.0))
    resampler.reset()
    after = resampler.push(np.zeros(in_rate // 10, dtype=np.int16))
    assert len(after) == out_rate // 10
    assert not np.any(after)


@pytest.mark.parametrize("pair", [*PAIRS, (16000, 16000)], ids=pair_id)
def test_resample_all_is_the_stream_without_its_latency(pair: tuple[int, int]) -> None:
    in_rate, out_rate = pair
    signal = speechlike(in_rate, 1.0, seed=9)[:-7]
    converted = resample_all(signal, in_rate, out_rate)
    assert len(converted) == len(signal) * out_rate // in_rate
    delay = StreamResampler(*pair).delay_samples
    assert np.array_equal(converted, stream_output(pair, signal, seed=10)[delay:])


@pytest.mark.parametrize(("in_rate", "out_rate"), [(16000, 8000), (24000, 8000), (8000, 16000)])
def test_convert_keeps_the_length_and_the_tone(in_rate: int, out_rate: int) -> None:
    seconds = 1
    t = np.arange(in_rate * seconds) / in_rate
    tone = (8000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    converted = convert(tone, in_rate, out_rate)
    assert converted.dtype == np.int16
    assert len(converted) == out_rate * seconds
    spectrum = np.abs(np.fft.rfft(converted.astype(np.float64)))
    assert np.argmax(spectrum) * out_rate / len(converted) == pytest.approx(440, abs=2)


def test_convert_at_the_same_rate_is_the_signal_itself() -> None:
    samples = np.arange(100, dtype=np.int16)
    assert convert(samples, 8000, 8000) is samples
