"""The SSE parser: events from bytes however the bytes are cut."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicegate.engine.llm.openai_chat.sse import MAX_LINE_BYTES, SseParser
from voicegate.errors import LLMError

STREAM = (
    b": keep-alive comment\n\n"
    b'data: {"a": "caf\xc3\xa9"}\n\n'
    b"event: ignored\r\nid: 7\r\ndata:no-space\r\n\r\n"
    b"data: first line\ndata:  second, one space kept\n\n"
    b"retry: 100\n\n"
    b"data: [DONE]\n\n"
)
EVENTS = ['{"a": "café"}', "no-space", "first line\n second, one space kept", "[DONE]"]


def parse(pieces: list[bytes]) -> list[str]:
    parser = SseParser()
    events = [event for piece in pieces for event in parser.feed(piece)]
    return events + parser.close()


def test_events_comments_crlf_and_multiline_data() -> None:
    assert parse([STREAM]) == EVENTS


def test_every_single_cut_gives_the_same_events() -> None:
    for cut in range(len(STREAM) + 1):
        assert parse([STREAM[:cut], STREAM[cut:]]) == EVENTS, cut


@settings(max_examples=300)
@given(st.lists(st.integers(0, len(STREAM)), max_size=12))
def test_any_cuts_give_the_same_events(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    assert parse([STREAM[a:b] for a, b in itertools.pairwise(bounds)]) == EVENTS


def test_an_unterminated_last_event_is_still_delivered_at_close() -> None:
    parser = SseParser()
    assert parser.feed(b"data: [DONE]") == []
    assert parser.close() == ["[DONE]"]


def test_a_blank_line_without_data_dispatches_nothing() -> None:
    assert parse([b"\n\n\r\n: only a comment\n\n"]) == []


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(LLMError, match="not UTF-8"):
        parse([b"data: \xff\n\n"])


def test_an_endless_line_is_refused() -> None:
    with pytest.raises(LLMError, match="longer than"):
        SseParser().feed(b"data: " + b"x" * MAX_LINE_BYTES)
