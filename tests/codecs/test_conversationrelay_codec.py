"""Twilio ConversationRelay codec (providers.md §b.2), driven by the golden transcripts.

Besides the shared lines (fixtures/wire/README.md) these transcripts have ``call`` lines: the
text this dialect sends goes through codec methods (``text``, ``play``, ``send_digits``,
``language``), not through audio commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.codecs.codec_fuzz import (
    Step,
    assert_only_events_or_protocol_errors,
    codec_inputs,
    seed_messages,
    valid_start,
)
from tests.codecs.codec_transcripts import (
    TEXT_EVENTS,
    frame,
    read_steps,
    run_step,
    transcript_paths,
)
from tests.codecs.codec_transcripts import (
    Step as Line,
)
from voicegate.codecs.conversationrelay import ConversationRelayCodec
from voicegate.errors import ConfigError, LocalProtocolError

PROVIDER = "conversationrelay"


def replay(path: Path) -> set[str]:
    """Run a transcript; the event types and codec methods it covered."""
    steps = read_steps(path)
    config = steps.pop(0).line["config"] if steps and "config" in steps[0].line else {}
    codec = ConversationRelayCodec(**config)
    covered: set[str] = set()
    for step in steps:
        if "call" in step.line:
            _call(codec, step)
            covered.add(step.line["call"])
        else:
            run_step(codec, step)  # type: ignore[arg-type]  # the Codec protocol, structurally
        covered.update(event["type"] for event in step.line.get("events", []))
    return covered


def _call(codec: ConversationRelayCodec, step: Line) -> None:
    line: dict[str, Any] = step.line
    method = getattr(codec, line["call"])
    if "error" in line:
        with pytest.raises(LocalProtocolError, match=line["error"]):
            method(**line["args"])
        return
    assert [method(**line["args"])] == [frame(spec) for spec in line["messages"]], step.where


@pytest.mark.parametrize("path", transcript_paths(PROVIDER), ids=lambda path: path.name)
def test_conversationrelay_transcript(path: Path) -> None:
    replay(path)


def test_conversationrelay_transcripts_cover_every_message() -> None:
    covered: set[str] = set()
    for path in transcript_paths(PROVIDER):
        covered |= replay(path)
    assert covered >= TEXT_EVENTS | {"CallStarted", "DtmfReceived"}
    assert covered >= {"text", "play", "send_digits", "language"}


def test_conversationrelay_capabilities() -> None:
    # providers.md §b.0: the flush is Twilio's own (an `interrupt` reports it), no marks.
    capabilities = ConversationRelayCodec().capabilities
    assert capabilities.dialect == PROVIDER
    assert capabilities.hangup_verb == "end"
    assert (capabilities.playback_acks, capabilities.pause, capabilities.dtmf) == (
        False,
        False,
        True,
    )
    assert capabilities.inbound_formats == ()


def test_conversationrelay_refuses_a_nonpositive_message_limit() -> None:
    with pytest.raises(ConfigError, match="max_message_bytes"):
        ConversationRelayCodec(max_message_bytes=0)


@settings(max_examples=300, deadline=None)
@given(
    batch=codec_inputs(seed_messages(PROVIDER), seed_messages(PROVIDER, "session")),
    started=st.booleans(),
)
def test_conversationrelay_only_ever_yields_outputs_or_protocol_errors(
    batch: list[Step], started: bool
) -> None:
    codec = ConversationRelayCodec()
    if started:
        codec.receive(valid_start(PROVIDER))
    assert_only_events_or_protocol_errors(codec, batch)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(token=st.text(max_size=50), last=st.booleans())
def test_any_token_round_trips_as_json_text(token: str, last: bool) -> None:
    import json

    message = ConversationRelayCodec().text(token, last=last)
    assert json.loads(message) == {"type": "text", "token": token, "last": last}
