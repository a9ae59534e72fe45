"""Choosing a flow by lexical similarity of the utterance to the flows' descriptions.

Each flow is a small document: its id's words and its description (the skill's ``description``,
which the skill.md reference says is "the only thing the orchestrator matches against").
A flow's score is the sum, over the utterance's distinct topic stems found in the document,
of ``log(1 + N / df)``: words that name one flow weigh more than words every flow shares.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from voicegate.engine.llm.rules.extract import content_stems


def best_flow(utterance: str, flows: Sequence[tuple[str, str]]) -> tuple[str, float] | None:
    """The flow whose description shares the most weight with the utterance, if any does."""
    scores = flow_scores(utterance, flows)
    if not scores:
        return None
    flow, score = max(scores.items(), key=lambda item: item[1])
    return (flow, score) if score > 0 else None


def flow_scores(utterance: str, flows: Sequence[tuple[str, str]]) -> dict[str, float]:
    """Every flow's score for the utterance."""
    documents = {
        flow: set(content_stems(f"{flow.replace('_', ' ')} {description}"))
        for flow, description in flows
    }
    count = len(documents)
    frequency: dict[str, int] = {}
    for stems in documents.values():
        for word in stems:
            frequency[word] = frequency.get(word, 0) + 1
    query = set(content_stems(utterance))
    return {
        flow: sum(math.log(1 + count / frequency[word]) for word in query & stems)
        for flow, stems in documents.items()
    }
