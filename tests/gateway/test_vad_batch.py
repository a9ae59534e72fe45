"""The worker's Silero batcher: calls' windows scored together, each call's VAD as if alone."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tests.vad.vad_kit import HUMAN
from voicegate.audio.g711 import samples_to_ulaw_bytes
from voicegate.audio.wav import read_wav
from voicegate.gateway.media import CallMedia, MediaFactory, VoiceEvent
from voicegate.gateway.vad_batch import SileroBatcher
from voicegate.types import TELEPHONE_ULAW
from voicegate.vad import SileroModel, SileroScorer, VadSettings

CALLERS = ["digit-5.wav", "agent-pass.wav", "goodbye.wav", "auth-thankyou.wav"]


@pytest.fixture(scope="module")
def model() -> SileroModel:
    return SileroModel()


def wire(name: str, lead_ms: int) -> list[bytes]:
    """20 ms μ-law payloads: ``lead_ms`` of silence, the recording, one second of silence."""
    speech = read_wav(HUMAN / "asterisk" / name).samples
    quiet = np.zeros(lead_ms * 8, np.int16)
    ulaw = samples_to_ulaw_bytes(np.concatenate([quiet, speech, np.zeros(8000, np.int16)]))
    return [ulaw[i : i + 160] for i in range(0, len(ulaw) - 159, 160)]


async def run_call(media: CallMedia, payloads: list[bytes]) -> list[VoiceEvent]:
    events = []
    for payload in payloads:
        for frame in media.inbound(payload):
            events.extend(await media.detect(frame))
    return events


async def alone(model: SileroModel, payloads: list[bytes]) -> list[VoiceEvent]:
    media = MediaFactory(silero=model, batch_silero=False).open(TELEPHONE_ULAW, TELEPHONE_ULAW)
    return await run_call(media, payloads)


@pytest.mark.parametrize("deadline_ms", [0, 2])
async def test_concurrent_calls_detect_as_alone_with_fewer_inferences(
    model: SileroModel, deadline_ms: int
) -> None:
    calls = [wire(name, lead_ms=40 * i) for i, name in enumerate(CALLERS)]
    expected = [await alone(model, payloads) for payloads in calls]
    factory = MediaFactory(silero=model, vad=VadSettings(silero_batch_ms=deadline_ms))
    opened = [factory.open(TELEPHONE_ULAW, TELEPHONE_ULAW) for _ in calls]
    got = await asyncio.gather(*(run_call(m, p) for m, p in zip(opened, calls, strict=True)))
    assert got == expected
    assert all(len(events) == 2 for events in got)  # a start and an end per caller
    windows = sum(m._detector.waiting.windows_run for m in opened)  # type: ignore[union-attr]
    assert factory.batcher is not None
    assert factory.batcher.batches < windows


async def test_a_full_batch_is_scored_at_once(model: SileroModel) -> None:
    batcher = SileroBatcher(deadline_ms=60_000, max_streams=3)
    scorers = [SileroScorer(8000, model=model) for _ in range(3)]
    frame = (np.sin(np.arange(160) / 3) * 8000).astype(np.int16)
    for scorer in scorers:
        scorer.feed(frame)
        scorer.feed(frame)
    # The deadline is a minute away: only a full batch lets these finish.
    await asyncio.gather(*(batcher.score(scorer) for scorer in scorers))
    assert batcher.batches == 1
    assert all(s.windows_run == 1 and not s.queued for s in scorers)


async def test_a_call_that_ends_while_waiting_is_left_out_of_the_batch(
    model: SileroModel,
) -> None:
    calls = [wire(name, lead_ms=0) for name in CALLERS[:3]]
    expected = [await alone(model, payloads) for payloads in calls]
    factory = MediaFactory(silero=model)
    opened = [factory.open(TELEPHONE_ULAW, TELEPHONE_ULAW) for _ in calls]
    ending = factory.open(TELEPHONE_ULAW, TELEPHONE_ULAW)
    ended = asyncio.Event()

    async def hang_up_mid_batch() -> None:
        frames = [f for payload in calls[0] for f in ending.inbound(payload)]
        for frame in frames:
            detected = asyncio.ensure_future(ending.detect(frame))
            await asyncio.sleep(0)  # the frame's windows now wait in the batch
            if not detected.done():
                detected.cancel()  # the call ends while its windows wait
                ended.set()
                return

    async with asyncio.TaskGroup() as group:
        hung_up = group.create_task(hang_up_mid_batch())
        runs = [group.create_task(run_call(m, p)) for m, p in zip(opened, calls, strict=True)]
    await hung_up
    assert ended.is_set()
    waiting = ending._detector.waiting
    assert waiting is not None
    assert waiting.queued
    assert [run.result() for run in runs] == expected


async def test_a_failed_inference_fails_every_waiting_call(model: SileroModel) -> None:
    batcher = SileroBatcher()
    scorers = [SileroScorer(8000, model=model), SileroScorer(16000, model=model)]
    for scorer in scorers:
        while not scorer.queued:
            scorer.feed(np.zeros(scorer.sample_rate // 50, np.int16))
    scorers[1].queued[0] = np.zeros(7, np.float32)  # a window of the wrong length
    results = await asyncio.gather(*(batcher.score(s) for s in scorers), return_exceptions=True)
    assert all(isinstance(result, Exception) for result in results)
