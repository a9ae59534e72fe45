"""Many streams' Silero windows in one inference (issue 12: Silero batched across calls).

One Silero window costs ~200 µs of CPU alone, most of it onnxruntime's fixed cost per run;
rows of one batch cost ~65 µs each from 8 rows on (measured at 8 kHz, one intra-op thread).
The network treats every row on its own (the state is [2, B, 128], one column per row), so a
window scored in a batch gets the same probability and next state as scored alone.

A stream may have several windows queued (the combined scorer replays its pre-roll when the
gate opens); they depend on each other through the state, so they go in *rounds*: round ``r``
scores the ``r``-th queued window of every stream that has one. Streams at different rates
never share an inference (the window length and the ``sr`` input differ).

This module is sans-I/O: who gathers the streams, and when, is the gateway's business
(``gateway/vad_batch.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from voicegate.vad.frames import Frame
from voicegate.vad.scoring import FrameEvidence
from voicegate.vad.silero import SileroScorer


class BatchableScorer(Protocol):
    """A scorer whose Silero windows can be scored elsewhere, e.g. with other calls' windows.

    ``prepare(frame)`` does everything but the Silero inference. When it returns None, the
    frame finished windows that wait in ``silero.queued``: score them (:func:`score_together`
    or ``silero.score_queued()``), then ``scored()`` is the frame's evidence.
    """

    @property
    def silero(self) -> SileroScorer:
        """The Silero stream whose queued windows must be scored."""
        ...

    def prepare(self, frame: Frame) -> FrameEvidence | None:
        """The frame's evidence, or None while its windows wait to be scored."""
        ...

    def scored(self) -> FrameEvidence:
        """The prepared frame's evidence, once its windows were scored."""
        ...


def score_together(scorers: Sequence[SileroScorer]) -> None:
    """Score every scorer's queued windows, in order, batched across scorers; settle each."""
    by_rate: dict[int, list[SileroScorer]] = {}
    for scorer in scorers:
        if scorer.queued:
            by_rate.setdefault(scorer.sample_rate, []).append(scorer)
    for rate, group in by_rate.items():
        latest = [scorer.latest for scorer in group]
        depth = max(len(scorer.queued) for scorer in group)
        for round_ in range(depth):
            members = [i for i, scorer in enumerate(group) if len(scorer.queued) > round_]
            scores = _score_round(rate, group, members, round_)
            for i, probability in zip(members, scores, strict=True):
                latest[i] = probability
        for scorer, probability in zip(group, latest, strict=True):
            scorer.settle(probability)


def _score_round(
    rate: int, group: list[SileroScorer], members: list[int], round_: int
) -> list[float]:
    """The ``round_``-th queued window of each member, in one inference (alone: the bound path)."""
    if len(members) == 1:
        scorer = group[members[0]]
        return [scorer.stream.process(scorer.queued[round_])]
    first = group[members[0]]
    inputs, states = first.stream.batch_arrays(len(members))
    for column, i in enumerate(members):
        group[i].stream.load_row(inputs[column], group[i].queued[round_], states, column)
    probabilities, next_states = first.stream.model.run_batch(rate, inputs, states)
    for column, i in enumerate(members):
        group[i].stream.advance(group[i].queued[round_], next_states, column)
    return [float(p) for p in probabilities[:, 0]]
