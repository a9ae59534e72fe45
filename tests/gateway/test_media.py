"""Per-call media state: cheap to open, the VAD model shared, telephony kept at 8 kHz."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.vad.vad_kit import HUMAN
from voicegate.audio.g711 import samples_to_ulaw_bytes
from voicegate.audio.wav import read_wav
from voicegate.gateway.media import MediaFactory
from voicegate.types import TELEPHONE_ULAW, AudioEncoding, AudioFormat
from voicegate.vad import ScorerKind, SileroModel, VadSettings

WIDE = AudioFormat(AudioEncoding.L16, 16000)
FULL_BAND = AudioFormat(AudioEncoding.L16, 48000)


def test_the_factory_loads_the_model_once_and_calls_share_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loads = []
    load = SileroModel.__init__

    def counted(self: SileroModel, *args: Any, **kwargs: Any) -> None:
        loads.append(self)
        load(self, *args, **kwargs)

    monkeypatch.setattr(SileroModel, "__init__", counted)
    factory = MediaFactory()
    for _ in range(3):
        factory.open(TELEPHONE_ULAW, TELEPHONE_ULAW)
        factory.open(WIDE, WIDE)
    assert loads == [factory.silero]


def test_a_webrtc_only_factory_loads_no_model() -> None:
    assert MediaFactory(vad=VadSettings(scorer=ScorerKind.WEBRTC)).silero is None


def test_telephony_stays_at_its_own_rate_and_wider_audio_is_converted() -> None:
    factory = MediaFactory(sample_rate=16000)
    assert factory.open(TELEPHONE_ULAW, TELEPHONE_ULAW).sample_rate == 8000
    assert factory.open(WIDE, WIDE).sample_rate == 16000
    assert factory.open(FULL_BAND, WIDE).sample_rate == 16000
    assert MediaFactory(sample_rate=8000).open(WIDE, WIDE).sample_rate == 8000


async def test_a_telephone_call_is_detected_at_8_khz() -> None:
    audio = read_wav(HUMAN / "asterisk" / "digit-5.wav").samples
    media = MediaFactory().open(TELEPHONE_ULAW, TELEPHONE_ULAW)
    wire = samples_to_ulaw_bytes(np.concatenate([audio, np.zeros(8000, np.int16)]))
    events = []
    for start in range(0, len(wire), 160):
        for frame in media.inbound(wire[start : start + 160]):
            assert len(frame) == 160
            events.extend(await media.detect(frame))
    assert [event.started for event in events] == [True, False]
