"""The embedded recogniser behind the STT port: interims while speaking, a final after, off-loop.

Real Whisper where the words matter; a scripted transcriber (blocking on a threading.Event,
like a long decode) where the scheduling matters.
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from tests.speech.speech_kit import (
    HUMAN,
    next_final,
    phone_payload,
    say_utterance,
    session_frames,
)
from tests.speech.wordscore import normalise
from voicegate.audio.pcm import Samples
from voicegate.errors import AudioFormatError, SpeechError
from voicegate.speech.embedded.whisper_model import WhisperRecognizer
from voicegate.speech.embedded.whisper_stt import StreamOptions, WhisperSpeechToText
from voicegate.speech.ports import TranscriptResult

LIBRIVOX = HUMAN / "pocketsphinx" / "librivox-austen-0930_16k.wav"
LIBRIVOX_WORDS = ["he", "might", "even", "have", "been", "made", "amiable", "himself"]
SILENCE = np.zeros(320, dtype=np.int16)


class GatedTranscriber:
    """Answers "heard N ms" for an utterance of N ms, once its gate opens (per call)."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers
        self.gate = threading.Semaphore(0)
        self.started = threading.Semaphore(0)
        self.fail = False

    def transcribe(self, samples: Samples, sample_rate: int) -> str:
        self.started.release()
        self.gate.acquire()
        if self.fail:
            raise SpeechError("whisper: decoding failed: out of memory")
        return f"heard {len(samples) * 1000 // sample_rate} ms"


async def wait_started(transcriber: GatedTranscriber) -> None:
    await asyncio.to_thread(transcriber.started.acquire)


async def test_interim_transcripts_while_speaking_then_the_final(
    recognizer: WhisperRecognizer,
) -> None:
    stt = WhisperSpeechToText(recognizer, StreamOptions(interim_interval_ms=1000))
    stream = stt.open(16000)
    frames = session_frames(phone_payload(LIBRIVOX))
    results = stream.results()
    stream.speech_started(0)
    for n, frame in enumerate(frames[:110], start=1):  # 2.2 s of 3.3
        stream.push(frame, n * 20)
    interim = await anext(results)
    for n, frame in enumerate(frames[110:], start=111):
        stream.push(frame, n * 20)
    stream.speech_ended(len(frames) * 20)
    final = await next_final(stream)
    await stream.aclose()
    stt.close()
    assert not interim.final
    assert interim.at_ms <= 2200
    assert 2 <= len(normalise(interim.text)) < len(LIBRIVOX_WORDS)
    assert normalise(interim.text)[:2] == LIBRIVOX_WORDS[:2]
    assert final == TranscriptResult(final.text, True, len(frames) * 20)
    assert normalise(final.text) == LIBRIVOX_WORDS


async def test_an_8khz_stream_recognises_telephone_audio(recognizer: WhisperRecognizer) -> None:
    stt = WhisperSpeechToText(recognizer)
    stream = stt.open(8000)
    frames = session_frames(phone_payload(HUMAN / "asterisk" / "please-try-again.wav"), 8000)
    say_utterance(stream, frames)
    assert normalise((await next_final(stream)).text) == ["please", "try", "again"]
    await stream.aclose()
    stt.close()


async def test_the_utterance_starts_with_pre_roll_before_the_onset() -> None:
    transcriber = GatedTranscriber()
    stt = WhisperSpeechToText(transcriber, StreamOptions(interim_interval_ms=0, preroll_ms=300))
    stream = stt.open(16000)
    for n in range(1, 51):  # a second of audio before the VAD speaks up
        stream.push(SILENCE, n * 20)
    stream.speech_started(800)  # onset dated 200 ms back: utterance from 500 ms
    for n in range(51, 76):
        stream.push(SILENCE, n * 20)
    stream.speech_ended(1500)
    transcriber.gate.release()
    assert await next_final(stream) == TranscriptResult("heard 1000 ms", True, 1500)
    await stream.aclose()


async def test_an_interim_that_falls_due_after_speech_ended_is_dropped_as_stale() -> None:
    transcriber = GatedTranscriber()
    stt = WhisperSpeechToText(transcriber, StreamOptions(interim_interval_ms=200))
    stream = stt.open(16000)
    say_utterance(stream, [SILENCE] * 50)  # interims fell due, but nobody decoded them yet
    transcriber.gate.release()
    results = stream.results()
    assert await anext(results) == TranscriptResult("heard 1000 ms", True, 1000)
    await stream.aclose()
    with pytest.raises(StopAsyncIteration):
        await anext(results)


async def test_an_interim_decodes_the_freshest_audio_when_its_slot_comes() -> None:
    transcriber = GatedTranscriber()
    stt = WhisperSpeechToText(transcriber, StreamOptions(interim_interval_ms=200))
    stream = stt.open(16000)
    results = stream.results()
    stream.speech_started(0)
    for n in range(1, 11):
        stream.push(SILENCE, n * 20)
    first = asyncio.ensure_future(anext(results))
    await wait_started(transcriber)  # decoding the first 200 ms
    for n in range(11, 41):  # three more interims fall due meanwhile
        stream.push(SILENCE, n * 20)
    transcriber.gate.release()
    assert await first == TranscriptResult("heard 200 ms", False, 200)
    transcriber.gate.release()
    assert await anext(results) == TranscriptResult("heard 800 ms", False, 800)
    await stream.aclose()


async def test_decoding_runs_off_the_event_loop_and_calls_decode_in_parallel() -> None:
    transcriber = GatedTranscriber(workers=2)
    stt = WhisperSpeechToText(transcriber, StreamOptions(interim_interval_ms=0))
    first, second = stt.open(16000), stt.open(16000)
    say_utterance(first, [SILENCE] * 10)
    first_final = asyncio.ensure_future(next_final(first))
    await wait_started(transcriber)
    # The first call's decode is blocked in its thread; the loop still takes the second call's
    # audio and decodes it on the other worker.
    say_utterance(second, [SILENCE] * 20)
    second_final = asyncio.ensure_future(next_final(second))
    await wait_started(transcriber)
    transcriber.gate.release()
    done, _ = await asyncio.wait([first_final, second_final], return_when="FIRST_COMPLETED")
    transcriber.gate.release()
    assert {(await first_final).text, (await second_final).text} == {"heard 200 ms", "heard 400 ms"}
    assert len(done) == 1
    for stream in (first, second):
        await stream.aclose()


async def test_a_failed_decode_still_ends_the_utterance_with_an_empty_final() -> None:
    transcriber = GatedTranscriber()
    transcriber.fail = True
    stream = WhisperSpeechToText(transcriber).open(16000)
    say_utterance(stream, [SILENCE] * 10)
    transcriber.gate.release()
    assert await next_final(stream) == TranscriptResult("", True, 200)
    await stream.aclose()


async def test_speech_ended_without_speech_gives_nothing_and_aclose_ends_results() -> None:
    stream = WhisperSpeechToText(GatedTranscriber()).open(16000)
    stream.push(SILENCE, 20)
    stream.speech_ended(20)
    reader = asyncio.ensure_future(anext(stream.results()))
    await asyncio.sleep(0)
    assert not reader.done()
    await stream.aclose()
    with pytest.raises(StopAsyncIteration):
        await reader


def test_an_unsupported_rate_is_refused() -> None:
    with pytest.raises(AudioFormatError, match="11025 Hz"):
        WhisperSpeechToText(GatedTranscriber()).open(11025)


async def test_an_interim_still_decoding_when_speech_ends_is_not_reported() -> None:
    transcriber = GatedTranscriber()
    stt = WhisperSpeechToText(transcriber, StreamOptions(interim_interval_ms=200))
    stream = stt.open(16000)
    results = stream.results()
    stream.speech_started(0)
    for n in range(1, 11):
        stream.push(SILENCE, n * 20)
    interim = asyncio.ensure_future(anext(results))
    await wait_started(transcriber)
    stream.speech_ended(200)
    transcriber.gate.release()
    transcriber.gate.release()
    assert await interim == TranscriptResult("heard 200 ms", True, 200)
    await stream.aclose()


async def test_the_pause_decode_becomes_the_final_without_decoding_again() -> None:
    transcriber = GatedTranscriber()
    stream = WhisperSpeechToText(transcriber, StreamOptions(interim_interval_ms=0)).open(16000)
    results = stream.results()
    stream.speech_started(0)
    for n in range(1, 41):
        stream.push(SILENCE, n * 20)
    stream.speech_paused(600)  # speech stopped at 600 ms; 200 ms of pause so far
    transcriber.gate.release()
    assert await anext(results) == TranscriptResult("heard 800 ms", False, 800)
    for n in range(41, 51):  # the end-of-turn wait
        stream.push(SILENCE, n * 20)
    stream.speech_ended(600)
    assert await anext(results) == TranscriptResult("heard 800 ms", True, 600)
    decodes = 0
    while transcriber.started.acquire(blocking=False):
        decodes += 1
    assert decodes == 1
    await stream.aclose()


async def test_speech_after_the_pause_decode_is_decoded_for_the_final() -> None:
    transcriber = GatedTranscriber()
    stream = WhisperSpeechToText(transcriber, StreamOptions(interim_interval_ms=0)).open(16000)
    results = stream.results()
    stream.speech_started(0)
    for n in range(1, 41):
        stream.push(SILENCE, n * 20)
    stream.speech_paused(600)
    transcriber.gate.release()
    assert (await anext(results)).text == "heard 800 ms"
    for n in range(41, 81):  # the caller went on after the pause
        stream.push(SILENCE, n * 20)
    stream.speech_ended(1400)
    transcriber.gate.release()
    assert await anext(results) == TranscriptResult("heard 1600 ms", True, 1400)
    await stream.aclose()


class StuckFirst:
    """Two decode threads; the first decode hangs until released, the others answer at once."""

    workers = 2

    def __init__(self) -> None:
        self.started = threading.Semaphore(0)
        self.release_first = threading.Event()
        self.decoded_ms: list[int] = []

    def transcribe(self, samples: Samples, sample_rate: int) -> str:
        ms = len(samples) * 1000 // sample_rate
        self.decoded_ms.append(ms)
        self.started.release()
        if len(self.decoded_ms) == 1:
            self.release_first.wait(30)
        return f"heard {ms} ms"


async def test_a_pause_overtakes_an_interim_in_flight_and_its_decode_is_the_final() -> None:
    transcriber = StuckFirst()
    stream = WhisperSpeechToText(transcriber, StreamOptions(interim_interval_ms=500)).open(16000)
    results = stream.results()
    stream.speech_started(0)
    for n in range(1, 26):
        stream.push(SILENCE, n * 20)
    first = asyncio.ensure_future(anext(results))
    await asyncio.to_thread(transcriber.started.acquire)  # the 500 ms interim hangs
    for n in range(26, 41):
        stream.push(SILENCE, n * 20)
    stream.speech_paused(600)
    # The pause is decoded on the other thread at once, not after the stale interim.
    assert await first == TranscriptResult("heard 800 ms", False, 800)
    stream.speech_ended(600)
    assert await anext(results) == TranscriptResult("heard 800 ms", True, 600)
    transcriber.release_first.set()
    assert transcriber.decoded_ms == [500, 800]
    await stream.aclose()


async def test_an_interim_in_flight_that_reaches_the_pause_is_the_pause_decode() -> None:
    transcriber = GatedTranscriber()
    stream = WhisperSpeechToText(transcriber, StreamOptions(interim_interval_ms=500)).open(16000)
    results = stream.results()
    stream.speech_started(0)
    for n in range(1, 26):  # the 500 ms interim starts: speech stopped at 400 ms
        stream.push(SILENCE, n * 20)
    interim = asyncio.ensure_future(anext(results))
    await wait_started(transcriber)
    for n in range(26, 31):
        stream.push(SILENCE, n * 20)
    stream.speech_paused(400)  # the interim decoding already heard the speech to its end
    transcriber.gate.release()
    assert await interim == TranscriptResult("heard 500 ms", False, 500)
    final = asyncio.ensure_future(anext(results))
    for n in range(31, 36):  # the end-of-turn wait
        stream.push(SILENCE, n * 20)
        await asyncio.sleep(0)
    stream.speech_ended(400)
    # No second decode of the same speech (the gate stays shut): the final reuses the interim.
    assert await asyncio.wait_for(final, 5) == TranscriptResult("heard 500 ms", True, 400)
    assert not transcriber.started.acquire(blocking=False)
    await stream.aclose()
