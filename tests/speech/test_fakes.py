"""The speech fakes behave like the engines they stand in for, deterministically."""

import asyncio

import numpy as np

from voicegate.speech.fakes import ScriptedSpeechToText, ToneTextToSpeech
from voicegate.speech.ports import TranscriptResult

FRAME = np.zeros(160, dtype=np.int16)


async def collect(stream_results: object, count: int) -> list[TranscriptResult]:
    got: list[TranscriptResult] = []
    async for result in stream_results:  # type: ignore[attr-defined]
        got.append(result)
        if len(got) == count:
            break
    return got


async def test_scripted_stt_gives_one_final_per_utterance_in_order() -> None:
    stream = ScriptedSpeechToText(["check my balance", "yes"], interim_words=False).open(8000)
    for first in (0, 2000):
        stream.speech_started(first)
        stream.push(FRAME, first + 20)
        stream.speech_ended(first + 800)
    results = await collect(stream.results(), 2)
    assert results == [
        TranscriptResult("check my balance", True, 800),
        TranscriptResult("yes", True, 2800),
    ]
    await stream.aclose()


async def test_scripted_stt_reveals_words_as_interims_while_speaking() -> None:
    stream = ScriptedSpeechToText(["stop right there"]).open(8000)
    stream.speech_started(0)
    for n in range(1, 31):
        stream.push(FRAME, n * 20)
    stream.speech_ended(620)
    results = await collect(stream.results(), 4)
    assert [(r.text, r.final) for r in results] == [
        ("stop", False),
        ("stop right", False),
        ("stop right there", False),
        ("stop right there", True),
    ]


async def test_scripted_stt_without_script_left_stays_silent() -> None:
    stream = ScriptedSpeechToText([]).open(8000)
    stream.speech_started(0)
    stream.speech_ended(500)
    await stream.aclose()
    assert await collect(stream.results(), 1) == []


async def test_tone_tts_length_is_proportional_to_text() -> None:
    tts = ToneTextToSpeech(8000, ms_per_char=50, chunk_ms=100)
    chunks = [chunk async for chunk in tts.synthesize("Hello there.")]
    assert sum(len(c) for c in chunks) == 8000 * 12 * 50 // 1000
    assert all(len(c) <= 800 for c in chunks)
    again = np.concatenate([c async for c in tts.synthesize("Hello there.")])
    assert np.array_equal(np.concatenate(chunks), again)
    assert tts.duration_ms("Hello there.") == 600


async def test_tone_tts_stops_when_the_consumer_stops() -> None:
    tts = ToneTextToSpeech(8000, ms_per_char=100, chunk_ms=20)
    produced = 0

    async def consume() -> None:
        nonlocal produced
        async for _ in tts.synthesize("a long sentence that takes a while"):
            produced += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(consume())
    for _ in range(5):
        await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert 0 < produced < 170
