"""The embedded synthesiser behind the TTS port: streamed, at the asked rate, abortable."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from voicegate.audio.pcm import Samples
from voicegate.errors import SpeechError
from voicegate.speech.embedded.espeak_lib import EspeakLibrary, Voice
from voicegate.speech.embedded.espeak_tts import EspeakTextToSpeech

SHORT = "Your balance is 1250.75 dollars. Anything else?"
#: About eight minutes of speech: far longer than it takes to hand over a first chunk.
LONG = " ".join(f"This is sentence number {n} of a very long reply." for n in range(200))


async def speak(tts: EspeakTextToSpeech, text: str) -> list[Samples]:
    return [chunk async for chunk in tts.synthesize(text)]


def rms(samples: Samples) -> float:
    return float(np.sqrt(np.mean(samples.astype(np.float64) ** 2)))


@pytest.mark.parametrize("rate", [8000, 16000, 22050, 24000, 48000])
async def test_chunks_are_int16_speech_at_the_engine_rate(espeak: EspeakLibrary, rate: int) -> None:
    tts = EspeakTextToSpeech(espeak, rate)
    chunks = await speak(tts, SHORT)
    audio = np.concatenate(chunks)
    assert tts.sample_rate == rate
    assert all(chunk.dtype == np.int16 for chunk in chunks)
    assert len(chunks) > 20  # streamed in ~50 ms pieces, not one block
    assert 3.0 < len(audio) / rate < 6.0  # about 4.9 s of speech at 175 words per minute
    assert rms(audio) > 1000


async def test_resampled_audio_keeps_its_length(espeak: EspeakLibrary) -> None:
    native = np.concatenate(await speak(EspeakTextToSpeech(espeak, espeak.sample_rate), SHORT))
    phone = np.concatenate(await speak(EspeakTextToSpeech(espeak, 8000), SHORT))
    # espeak-ng is not bit-deterministic between runs (a few ms of difference have been seen
    # under load), so two syntheses are compared to within 1 %: a wrong rate would be far off.
    expected = len(native) * 8000 / espeak.sample_rate
    assert abs(len(phone) - expected) <= 0.01 * expected


def same_speech(first: Samples, second: Samples) -> bool:
    """Two syntheses of one text: espeak-ng varies a few samples (its voice has random noise)."""
    return abs(len(first) - len(second)) <= len(first) // 100


async def test_the_first_chunk_arrives_while_the_rest_is_still_being_synthesised(
    espeak: EspeakLibrary,
) -> None:
    job = espeak.start(LONG, Voice())
    first = await job.chunks()
    assert first is not None
    assert len(first) < espeak.sample_rate  # under a second of audio
    assert not job.finished.is_set()
    job.stop()
    await asyncio.to_thread(job.finished.wait)
    assert job.aborted


async def test_cancelling_the_consumer_stops_espeak_and_the_next_synthesis_works(
    espeak: EspeakLibrary,
) -> None:
    tts = EspeakTextToSpeech(espeak, 16000)
    expected = np.concatenate(await speak(tts, SHORT))
    first_chunk = asyncio.Event()

    async def consume_long() -> None:
        async for _chunk in tts.synthesize(LONG):
            first_chunk.set()

    consumer = asyncio.ensure_future(consume_long())
    await first_chunk.wait()
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    # espeak's worker is free again long before the eight minutes of LONG could be made: the
    # next sentence comes out whole and unchanged (nothing of LONG left in espeak's buffers).
    assert same_speech(np.concatenate(await speak(tts, SHORT)), expected)


async def test_closing_the_iterator_early_stops_the_job(espeak: EspeakLibrary) -> None:
    job = espeak.start(LONG, Voice())
    assert await job.chunks() is not None
    job.stop()
    await asyncio.to_thread(job.finished.wait)
    full_seconds = 8 * 60
    assert job.produced_samples < full_seconds * espeak.sample_rate // 2
    tts = EspeakTextToSpeech(espeak, 16000)
    stream = tts.synthesize(LONG)
    assert len(await anext(stream)) > 0
    await stream.aclose()
    assert len(np.concatenate(await speak(tts, "Goodbye."))) > 0


async def test_concurrent_syntheses_are_serialised_and_each_is_whole(
    espeak: EspeakLibrary,
) -> None:
    slow = EspeakTextToSpeech(espeak, 16000, Voice("en-us", 120))
    fast = EspeakTextToSpeech(espeak, 16000, Voice("en", 220))
    alone = [np.concatenate(await speak(tts, SHORT)) for tts in (slow, fast)]
    together = await asyncio.gather(speak(slow, SHORT), speak(fast, SHORT))
    heard = [np.concatenate(chunks) for chunks in together]
    assert same_speech(heard[0], alone[0])
    assert same_speech(heard[1], alone[1])
    assert len(alone[0]) > len(alone[1])


async def test_empty_text_gives_no_audio(espeak: EspeakLibrary) -> None:
    assert await speak(EspeakTextToSpeech(espeak, 16000), "  ") == []


def test_an_unknown_voice_or_rate_is_refused(espeak: EspeakLibrary) -> None:
    with pytest.raises(SpeechError, match="no voice named 'xx-nowhere'"):
        EspeakTextToSpeech(espeak, 16000, Voice("xx-nowhere"))
    with pytest.raises(SpeechError, match="output rate"):
        EspeakTextToSpeech(espeak, 4000)
