"""Mutated provider messages through every codec: messages per second, and any exception
outside voicegate's error tree (issue 15; there must be none).

Seeds are the messages of the golden transcripts (fixtures/wire/<provider>/*.jsonl). Each
round replays a seed session through a fresh codec with some messages mutated: a key dropped,
a value's type changed, a string corrupted (lone surrogates, control characters, huge
numbers, deep nesting), bytes of the JSON text flipped, or a binary frame. Bounded by
``--count`` messages per codec. Prints one JSON object.

    python bench/fuzz_codecs.py [--count 1000000] [--seed 1] [--only asterisk ...]
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from voicegate.codecs import (  # noqa: E402
    AsteriskCodec,
    BrowserCodec,
    ExotelCodec,
    FreeSwitchCodec,
    GenesysCodec,
    JambonzCodec,
    PlivoCodec,
    TelnyxCodec,
    TwilioCodec,
    VonageCodec,
)
from voicegate.codecs.conversationrelay import ConversationRelayCodec  # noqa: E402
from voicegate.errors import VoicegateError  # noqa: E402


class Receiving(Protocol):
    """What the fuzzer drives: a codec's inbound side (ConversationRelay is text-only)."""

    def receive(self, message: str | bytes) -> Any: ...


CODECS: dict[str, Callable[[], Receiving]] = {
    "twilio": TwilioCodec,
    "browser": lambda: BrowserCodec("fuzz-call"),
    "telnyx": TelnyxCodec,
    "plivo": PlivoCodec,
    "vonage": lambda: VonageCodec(call_id="fuzz-call"),
    "exotel": ExotelCodec,
    "jambonz": lambda: JambonzCodec(call_id="fuzz-call"),
    "genesys": GenesysCodec,
    "freeswitch": lambda: FreeSwitchCodec("fuzz-call"),
    "conversationrelay": ConversationRelayCodec,
    "asterisk": lambda: AsteriskCodec("fuzz-call"),  # its JSON control format's sessions
}
ODD_STRINGS = ["", "\ud800", "a\udfffb", "\x00\x1b[2J", "é" * 50, "9" * 40, "CA" + "x" * 5000]
ODD_VALUES: list[Any] = [None, True, 0, -1, 1.5, 10**40, [], {}, [[[[[]]]]], "null"]


def seed_sessions(provider: str) -> list[list[str | bytes]]:
    """Each transcript's inbound frames (JSON text, verbatim text or binary), in order."""
    sessions = []
    for path in sorted((ROOT / "fixtures" / "wire" / provider).glob("*.jsonl")):
        messages: list[str | bytes] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            step = json.loads(line)
            receive = step.get("receive") if isinstance(step, dict) else None
            if isinstance(receive, dict) and "json" in receive:
                messages.append(json.dumps(receive["json"]))
            elif isinstance(receive, dict) and "text" in receive:
                messages.append(receive["text"])
            elif isinstance(receive, dict) and "binary" in receive:
                messages.append(base64.b64decode(receive["binary"]))
            elif isinstance(step, dict) and ("event" in step or "type" in step):
                messages.append(line)
        if messages:
            sessions.append(messages)
    return sessions


def mutate_value(value: Any, rng: random.Random, depth: int = 0) -> Any:
    """``value`` with one random change somewhere inside it."""
    if isinstance(value, dict) and value and depth < 6:
        key = rng.choice(list(value))
        changed = dict(value)
        roll = rng.random()
        if roll < 0.2:
            del changed[key]
        elif roll < 0.3:
            changed[rng.choice(ODD_STRINGS)] = rng.choice(ODD_VALUES + ODD_STRINGS)
        else:
            changed[key] = mutate_value(value[key], rng, depth + 1)
        return changed
    if isinstance(value, list) and value and depth < 6:
        index = rng.randrange(len(value))
        return [*value[:index], mutate_value(value[index], rng, depth + 1), *value[index + 1 :]]
    if isinstance(value, str) and value and rng.random() < 0.5:
        cut = rng.randrange(len(value))
        return value[:cut] + rng.choice(ODD_STRINGS) + value[cut + 1 :]
    return rng.choice(ODD_VALUES + ODD_STRINGS)


def mutate_binary(message: bytes, rng: random.Random) -> str | bytes:
    """A mutated binary frame: cut, flipped, emptied, grown, or sent as text."""
    roll = rng.random()
    if roll < 0.3:
        return message[: rng.randrange(len(message) + 1)]
    if roll < 0.6 and message:
        data = bytearray(message)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if roll < 0.7:
        return b""
    if roll < 0.85:
        return message * rng.randint(2, 40) + b"\x01"
    return message.decode("latin-1")


def mutate(message: str | bytes, rng: random.Random) -> str | bytes:
    """A mutated message: structure, text bytes, or frame type."""
    if isinstance(message, bytes):
        return mutate_binary(message, rng)
    roll = rng.random()
    if roll < 0.6:
        try:
            return json.dumps(mutate_value(json.loads(message), rng))
        except (ValueError, RecursionError):  # a verbatim malformed seed: corrupt its text
            roll = 0.7
    if roll < 0.8 and message:
        chars = list(message)
        for _ in range(rng.randint(1, 4)):
            chars[rng.randrange(len(chars))] = chr(rng.choice([0, 34, 92, 123, 125, 0xD800, 0xE9]))
        return "".join(chars)
    if roll < 0.9:
        return message.encode("utf-8", "surrogatepass")
    return "[" * 5000 + "]" * 5000


def fuzz(provider: str, count: int, rng: random.Random) -> dict[str, Any]:
    """Run ``count`` messages through fresh codecs of ``provider``; the tally."""
    sessions = seed_sessions(provider)
    sent = refused = 0
    escaped: dict[str, str] = {}
    began = time.perf_counter()
    while sent < count:
        codec = CODECS[provider]()
        for message in rng.choice(sessions):
            wire = mutate(message, rng) if rng.random() < 0.3 else message
            sent += 1
            try:
                codec.receive(wire)
            except VoicegateError:
                refused += 1
            except Exception as error:  # the finding this bench exists for
                escaped.setdefault(type(error).__name__, "".join(traceback.format_exception(error)))
    seconds = time.perf_counter() - began
    return {
        "messages": sent,
        "refused": refused,
        "messages_per_s": round(sent / seconds),
        "exceptions_outside_the_tree": len(escaped),
        "examples": escaped,
    }


def main() -> int:
    """Fuzz every codec; exit 1 if any exception escaped the error tree."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000, help="messages per codec")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=sorted(CODECS), action="append", help="these codecs")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    report = {provider: fuzz(provider, args.count, rng) for provider in args.only or CODECS}
    print(json.dumps(report, indent=2))
    return 1 if any(r["exceptions_outside_the_tree"] for r in report.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
