"""Everything a drawing of one call needs, computed once: lanes, figures, waveforms, time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from voicegate.audio.pcm import Samples
from voicegate.callers.report import Record
from voicegate.callers.views.figures import Figure, call_figures
from voicegate.callers.views.lanes import Lane, call_lanes
from voicegate.callers.views.waveform import Envelope, envelope


@dataclass(frozen=True, slots=True)
class CallRecording:
    """What a replay produced: its timelines and both sides of the audio, as the caller had them."""

    title: str
    records: Sequence[Record]  # the gateway's timeline, or the caller-side one
    observed: Sequence[Record]  # the caller-side timeline
    caller: Samples  # from media time 0, at sample_rate
    bot: Samples
    sample_rate: int


@dataclass(frozen=True, slots=True)
class CallPicture:
    """One call, ready to draw."""

    title: str
    duration_ms: int
    caller: Envelope
    bot: Envelope
    lanes: tuple[Lane, ...]
    figures: list[Figure]


def call_picture(call: CallRecording, columns: int) -> CallPicture:
    """The lanes, figures and ``columns``-wide waveforms of ``call``."""
    duration = _duration_ms(call)
    lanes = call_lanes(call.records, duration)
    figures = call_figures(call.records, call.observed, lanes, duration)
    return CallPicture(
        call.title,
        duration,
        envelope(call.caller, call.sample_rate, duration, columns),
        envelope(call.bot, call.sample_rate, duration, columns),
        lanes,
        figures,
    )


def time_ticks(duration_ms: int, most: int = 15) -> list[int]:
    """Round media times (ms) for an axis over ``duration_ms``: at most ``most`` of them."""
    step = next(
        (s for s in (100, 200, 500, 1000, 2000, 5000, 10_000, 30_000) if duration_ms / s <= most),
        60_000,
    )
    return list(range(0, duration_ms + 1, step))


def _duration_ms(call: CallRecording) -> int:
    audio = max(len(call.caller), len(call.bot)) * 1000 // max(1, call.sample_rate)
    times = [int(r["t_ms"]) for r in (*call.records, *call.observed)]
    return max([audio, 1, *times])
