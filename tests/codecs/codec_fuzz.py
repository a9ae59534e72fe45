"""Hypothesis strategies that throw random and mutated messages (and commands) at a codec.

Seeds are every JSON message the golden transcripts feed a codec (valid and invalid), so the
mutations start from realistic shapes: drop a key, change a value's type, corrupt a string
(base64 payloads included), or replay a whole session in a random order.
"""

from __future__ import annotations

import copy
import json
from typing import Any, get_args

from hypothesis import strategies as st

from tests.codecs.codec_transcripts import read_steps, transcript_paths
from voicegate.codecs import (
    AcceptCall,
    ClearAudio,
    Codec,
    Command,
    Event,
    Hangup,
    PausePlayback,
    PlayAudio,
    ResumePlayback,
    SetMark,
)
from voicegate.errors import LocalProtocolError, RemoteProtocolError

EVENT_CLASSES = get_args(Event)
# Keys the dialects know, so random objects sometimes look almost right.
KNOWN_KEYS = [
    "event",
    "streamSid",
    "sequenceNumber",
    "start",
    "media",
    "payload",
    "track",
    "chunk",
    "timestamp",
    "dtmf",
    "digit",
    "mark",
    "name",
    "stop",
    "callSid",
    "accountSid",
    "mediaFormat",
    "encoding",
    "sampleRate",
    "channels",
    "customParameters",
    "type",
    "version",
    "metadata",
    "reason",
    # snake_case dialects (Telnyx, providers.md §b.4)
    "stream_id",
    "sequence_number",
    "call_control_id",
    "media_format",
    "sample_rate",
    "custom_parameters",
    # Plivo (providers.md §b.5)
    "streamId",
    "callId",
    "extra_headers",
    # Vonage (providers.md §b.3)
    "content-type",
    "uuid",
    "action",
    # Exotel (providers.md §b.6)
    "stream_sid",
    "call_sid",
    "bit_rate",
    # Jambonz (providers.md §b.9)
    "sampleRate",
    "mixType",
    # FreeSWITCH mod_audio_fork (providers.md §b.9)
    "audioContent",
    "callid",
    # Genesys AudioHook (providers.md §b.7)
    "seq",
    "serverseq",
    "parameters",
    "conversationId",
    "participant",
    "entities",
    # Asterisk chan_websocket, JSON control format (providers.md §b.10)
    "command",
    "correlation_id",
    "connection_id",
    "channel_id",
    "optimal_frame_size",
    "ptime",
    "channel_variables",
]
Path = tuple[str | int, ...]


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def seed_messages(provider: str, name: str = "*") -> list[str]:
    """Every JSON text message the transcripts of ``provider`` (or just ``name``) feed a codec."""
    seeds = []
    for path in transcript_paths(provider):
        if name not in ("*", path.stem):
            continue
        for step in read_steps(path):
            message = step.line.get("receive", {})
            if "json" in message:
                seeds.append(_dumps(message["json"]))
    return seeds


def valid_start(provider: str) -> str:
    """The first message of the provider's transcripts that starts a call."""
    for path in transcript_paths(provider):
        for step in read_steps(path):
            events = step.line.get("events", [])
            if any(event["type"] == "CallStarted" for event in events):
                return _dumps(step.line["receive"]["json"])
    raise AssertionError(f"no transcript of {provider} starts a call")


json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KNOWN_KEYS) | st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


def _paths(value: Any, prefix: Path = ()) -> list[Path]:
    """Paths to every nested node below ``value`` (not the root itself)."""
    children: list[tuple[str | int, Any]] = []
    if isinstance(value, dict):
        children = list(value.items())
    elif isinstance(value, list):
        children = list(enumerate(value))
    found: list[Path] = []
    for key, child in children:
        found.append((*prefix, key))
        found.extend(_paths(child, (*prefix, key)))
    return found


def _corrupt(text: str, draw: st.DrawFn) -> str:
    """Truncate, or insert a character that is rarely valid (base64 or otherwise)."""
    at = draw(st.integers(0, len(text)))
    if draw(st.booleans()):
        return text[:at]
    return (
        text[:at] + draw(st.sampled_from(["=", "!", " ", "\n", "é", "\x00", "-", "_"])) + text[at:]
    )


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> str:
    """A seed message with one to three mutations applied at random places."""
    value = copy.deepcopy(json.loads(draw(st.sampled_from(seeds))))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(value)
        if not paths:
            break
        *parent_path, key = draw(st.sampled_from(paths))
        parent = value
        for step in parent_path:
            parent = parent[step]
        action = draw(st.sampled_from(["drop", "replace", "stringify", "corrupt"]))
        if action == "drop":
            del parent[key]
        elif action == "replace":
            parent[key] = draw(json_values)
        elif action == "stringify":  # "8000" for 8000, "[...]" for a list: a type change
            parent[key] = _dumps(parent[key])
        elif isinstance(parent[key], str):
            parent[key] = _corrupt(parent[key], draw)
    return _dumps(value)


commands: st.SearchStrategy[Command] = st.one_of(
    st.builds(PlayAudio, st.binary(max_size=64)),
    st.builds(SetMark, st.text(max_size=10)),
    st.builds(Hangup, st.text(max_size=10)),
    st.sampled_from([AcceptCall(), ClearAudio(), PausePlayback(), ResumePlayback()]),
)

Step = str | bytes | Command


def codec_inputs(seeds: list[str], session: list[str]) -> st.SearchStrategy[list[Step]]:
    """Steps to run: random text/bytes/JSON, mutated seeds and commands, or a session reordered."""
    one_step: st.SearchStrategy[Step] = st.one_of(
        st.text(max_size=200),
        st.binary(max_size=400),
        st.binary(max_size=200).map(lambda half: half + half),  # even: PCM16-shaped
        json_values.map(_dumps),
        mutated(seeds),
        st.sampled_from(seeds),
        commands,
    )
    reordered = st.permutations(session).map(list)
    return st.lists(one_step, min_size=1, max_size=8) | reordered


def assert_only_events_or_protocol_errors(codec: Codec, steps: list[Step]) -> None:
    """Each step gives events/messages, or a protocol error that leaves the codec untouched.

    Messages in may only fail with RemoteProtocolError, commands out with LocalProtocolError.
    """
    for step in steps:
        before = dict(vars(codec))
        rejection: Exception | None = None
        outputs: list[Any] = []
        try:
            outputs = codec.receive(step) if isinstance(step, str | bytes) else codec.send(step)
        except (RemoteProtocolError, LocalProtocolError) as error:
            rejection = error
        if rejection is not None:
            expected = RemoteProtocolError if isinstance(step, str | bytes) else LocalProtocolError
            assert type(rejection) is expected, f"{step!r} raised {rejection!r}"
            assert str(rejection), "a protocol error must say what was wrong"
            assert vars(codec) == before, f"rejected {step!r} but changed the codec"
        assert isinstance(outputs, list)
        output_types = EVENT_CLASSES if isinstance(step, str | bytes) else (str, bytes)
        assert all(isinstance(output, output_types) for output in outputs), outputs
