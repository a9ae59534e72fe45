"""Replays golden wire transcripts (fixtures/wire/README.md) against a codec, line by line."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from enum import Enum
from pathlib import Path
from typing import Any, get_args

import pytest

from voicegate.codecs import Codec, Command, Event
from voicegate.errors import LocalProtocolError, RemoteProtocolError
from voicegate.types import AudioEncoding, AudioFormat

WIRE = Path(__file__).resolve().parents[2] / "fixtures" / "wire"
ALL_EVENT_TYPES: dict[str, type] = {cls.__name__: cls for cls in get_args(Event)}
#: Events only a protocol that demands immediate answers reports (Genesys pong and closed).
PROTOCOL_EVENTS = frozenset({"ProtocolReply"})
#: Events only a provider that transcribes and speaks itself reports (ConversationRelay).
TEXT_EVENTS = frozenset({"TranscriptReceived", "PlaybackInterrupted", "ProviderError"})
#: The events every audio dialect reports (the coverage tests ask each one for all of them).
EVENT_TYPES = {
    name: cls for name, cls in ALL_EVENT_TYPES.items() if name not in PROTOCOL_EVENTS | TEXT_EVENTS
}
COMMAND_TYPES: dict[str, type] = {cls.__name__: cls for cls in get_args(Command)}
# Raw recordings (one provider message per line) share the folder; they are not transcripts.
RECORDING_SUFFIX = ".twilio.jsonl"

CodecFactory = Callable[..., Codec]


def transcript_paths(provider: str) -> list[Path]:
    """Every golden transcript of ``provider``, sorted, recordings excluded."""
    paths = sorted((WIRE / provider).glob("*.jsonl"))
    return [path for path in paths if not path.name.endswith(RECORDING_SUFFIX)]


@dataclass(frozen=True)
class Step:
    """One transcript line, with where it came from for failure messages."""

    where: str
    line: dict[str, Any]


def read_steps(path: Path) -> list[Step]:
    """The lines of a transcript as parsed JSON objects."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [Step(f"{path.name}:{n}", json.loads(text)) for n, text in enumerate(lines, 1) if text]


# -- JSON <-> values --------------------------------------------------------------------------


def decode_value(name: str, value: Any) -> Any:
    """A field value from its transcript spelling: ``{"$base64": ...}`` bytes, audio formats."""
    if isinstance(value, dict) and set(value) == {"$base64"}:
        return base64.b64decode(value["$base64"], validate=True)
    if name == "messages":  # ProtocolReply: frames, as in a "messages" line
        return tuple(frame(spec) for spec in value)
    if name == "audio_format":
        encoding = AudioEncoding(value["encoding"])
        return AudioFormat(encoding, value["sample_rate"], value.get("channels", 1))
    return value


def build(spec: dict[str, Any], types: dict[str, type]) -> Any:
    """An event or command from ``{"type": ClassName, field: value, ...}`` (defaults apply)."""
    cls = types[spec["type"]]
    names = {f.name for f in fields(cls)}
    unknown = set(spec) - names - {"type"}
    assert not unknown, f"{spec['type']} has no fields {sorted(unknown)}"
    return cls(**{k: decode_value(k, v) for k, v in spec.items() if k != "type"})


def frame(spec: dict[str, Any]) -> str | bytes:
    """A WebSocket message: ``{"text": str}``, ``{"json": value}`` or ``{"binary": base64}``."""
    (kind, value), *rest = spec.items()
    assert not rest, f"a frame has exactly one key: {spec}"
    if kind == "text":
        return str(value)
    if kind == "json":
        return json.dumps(value, separators=(",", ":"))
    assert kind == "binary", f"unknown frame kind {kind!r}"
    return base64.b64decode(value, validate=True)


def attribute(codec: Codec, name: str) -> Any:
    """A codec attribute for an ``expect`` line; enums compare by value."""
    value = getattr(codec, name)
    return value.value if isinstance(value, Enum) else value


# -- replay -----------------------------------------------------------------------------------


def replay(path: Path, make_codec: CodecFactory, defaults: dict[str, Any]) -> None:
    """Run every line of ``path`` against one codec built from ``defaults`` + ``config``."""
    steps = read_steps(path)
    config = dict(defaults)
    if steps and "config" in steps[0].line:
        config.update(steps.pop(0).line["config"])
    codec = make_codec(**config)
    for step in steps:
        run_step(codec, step)


def run_step(codec: Codec, step: Step) -> None:
    """Check one transcript line against the codec."""
    line = step.line
    if "receive" in line:
        check(codec.receive, frame(line["receive"]), RemoteProtocolError, step)
    elif "send" in line:
        check(codec.send, build(line["send"], COMMAND_TYPES), LocalProtocolError, step)
    elif "expect" in line:
        for name, expected in line["expect"].items():
            assert attribute(codec, name) == expected, f"{step.where}: {name}"
    else:
        raise AssertionError(f"{step.where}: no receive, send or expect in {line}")


def check(call: Callable[[Any], list[Any]], arg: Any, error: type, step: Step) -> None:
    """Either the listed outputs, or ``error`` whose message contains the given text."""
    line = step.line
    if "error" in line:
        with pytest.raises(error) as raised:
            call(arg)
        assert line["error"] in str(raised.value), f"{step.where}: got {raised.value}"
        return
    if "events" in line:
        expected = [build(spec, ALL_EVENT_TYPES) for spec in line["events"]]
    else:
        expected = [frame(spec) for spec in line["messages"]]
    assert call(arg) == expected, step.where


def covered_types(provider: str) -> tuple[set[str], set[str]]:
    """Event and command type names the transcripts of ``provider`` mention (outputs/inputs)."""
    events: set[str] = set()
    commands: set[str] = set()
    for path in transcript_paths(provider):
        for step in read_steps(path):
            events.update(spec["type"] for spec in step.line.get("events", []))
            if "send" in step.line:
                commands.add(step.line["send"]["type"])
    return events, commands
