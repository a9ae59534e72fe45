"""Reading a peer's JSON text messages field by field, with errors that say what was wrong.

Every check raises :class:`RemoteProtocolError` naming the dialect, the message and the dotted
path of the field, e.g. ``twilio 'start' message: start.mediaFormat.sampleRate must be 8000,
got 16000``. Unknown keys are never an error (providers add fields; providers.md asks parsers
to be lenient there); wrong types, missing required fields and undecodable payloads are.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import cast

from voicegate.codecs.events import JsonValue
from voicegate.errors import RemoteProtocolError

#: Keys a caller can press (RFC 4733 events 0-15); every provider reports one per message.
DTMF_DIGITS = frozenset("0123456789*#ABCD")

# Counters such as Twilio's chunk and timestamp fit easily; longer digit strings are garbage.
_MAX_COUNTER_DIGITS = 18
_SHOWN_CHARS = 40


def show(value: object) -> str:
    """A short description of a JSON value for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= _SHOWN_CHARS else value[:_SHOWN_CHARS] + "..."
        return repr(text)
    if isinstance(value, int | float):
        return f"the number {value!r}"
    return "a list" if isinstance(value, list) else "an object"


def check_size(message: str | bytes, limit: int, context: str) -> None:
    """Refuse a message longer than ``limit`` bytes before doing any work on it."""
    if isinstance(message, str):
        # Cheap for the usual ASCII JSON; surrogatepass so any str can be measured.
        size = len(message) if message.isascii() else len(message.encode("utf-8", "surrogatepass"))
    else:
        size = len(message)
    if size > limit:
        raise RemoteProtocolError(
            f"{context}: message of {size} bytes exceeds the limit of {limit}"
        )


def json_text_frame(
    message: str | bytes, limit: int, dialect: str, protocol: str
) -> dict[str, object]:
    """A dialect's JSON text frame as an object; binary, oversize or malformed ones refused."""
    if isinstance(message, bytes):
        raise RemoteProtocolError(
            f"{dialect}: got a binary frame of {len(message)} bytes; "
            f"{protocol} sends only JSON text frames"
        )
    check_size(message, limit, dialect)
    return parse_json_object(message, dialect)


def parse_json_object(text: str, context: str) -> dict[str, object]:
    """Decode one text frame that must hold a JSON object."""
    try:
        value = _loads(text)
    except (ValueError, RecursionError) as error:
        # ValueError covers JSONDecodeError and over-long integers; RecursionError deep nesting.
        raise RemoteProtocolError(f"{context}: text frame is not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise RemoteProtocolError(f"{context}: expected a JSON object, got {show(value)}")
    if "\\u" in text or not text.isascii():
        _refuse_lone_surrogates(value, context)
    return cast(dict[str, object], value)


#: Decodes a message that is one JSON object and nothing else (see :func:`_loads`).
_DECODER = json.JSONDecoder()


def _loads(text: str) -> object:
    """``json.loads(text)``, without its two whitespace scans for the usual message.

    A message that starts with ``{`` and whose object ends the text (every provider's media
    message, 50 a second per call) is decoded as ``json.loads`` would decode it; anything
    else (whitespace around it, trailing data, an error) goes through ``json.loads`` itself,
    so results and error messages are unchanged.
    """
    if text[:1] == "{":
        try:
            value, end = _DECODER.raw_decode(text)
        except ValueError:
            pass  # json.loads raises the same error below
        else:
            if end == len(text):
                return value
    return json.loads(text)


def _refuse_lone_surrogates(value: object, context: str) -> None:
    """Refuse JSON whose strings hold a lone surrogate (``"\\ud800"``), which is no Unicode text.

    RFC 8259 §8.2 leaves such strings' behaviour unpredictable; passed on, they break every
    UTF-8 encoder downstream (close reasons, logs, SQLite; issue 15 #2). Only messages with
    an escape or non-ASCII text are walked, so 20 ms media messages pay nothing.
    """
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, RecursionError):
        raise RemoteProtocolError(
            f"{context}: a string holds a lone UTF-16 surrogate, which is not Unicode text"
        ) from None


class JsonObject:
    """One JSON object of a peer's message, read with typed accessors that fail clearly."""

    def __init__(self, data: Mapping[str, object], context: str, path: str = "") -> None:
        self._data = data
        self._context = context
        self._path = path

    def error(self, key: str, problem: str) -> RemoteProtocolError:
        """An error about ``key`` of this object, e.g. ``ctx: media.payload <problem>``."""
        return RemoteProtocolError(f"{self._context}: {self._path}{key} {problem}")

    def has(self, key: str) -> bool:
        """Whether ``key`` is present with a non-null value."""
        return self._data.get(key) is not None

    def _required(self, key: str) -> object:
        if key not in self._data:
            raise self.error(key, "is missing")
        return self._data[key]

    def _typed(self, key: str, value: object, kind: type, name: str) -> object:
        # bool is an int in Python but never a number on the wire.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(key, f"must be {name}, got {show(value)}")
        return value

    def text(self, key: str) -> str:
        """A required string field."""
        return cast(str, self._typed(key, self._required(key), str, "a string"))

    def optional_text(self, key: str) -> str | None:
        """A string field that may be absent or null."""
        if not self.has(key):
            return None
        return cast(str, self._typed(key, self._data[key], str, "a string"))

    def integer(self, key: str) -> int:
        """A required integer field (JSON number without fraction, not a boolean)."""
        return cast(int, self._typed(key, self._required(key), int, "an integer"))

    def optional_integer(self, key: str) -> int | None:
        """An integer field that may be absent or null."""
        return self.integer(key) if self.has(key) else None

    def optional_bool(self, key: str, default: bool) -> bool:
        """A boolean field; absent or null means ``default``."""
        if not self.has(key):
            return default
        return cast(bool, self._typed(key, self._data[key], bool, "true or false"))

    def child(self, key: str) -> JsonObject:
        """A required nested object."""
        value = self._typed(key, self._required(key), dict, "an object")
        return JsonObject(cast(dict[str, object], value), self._context, f"{self._path}{key}.")

    def optional_child(self, key: str) -> JsonObject | None:
        """A nested object that may be absent or null."""
        return self.child(key) if self.has(key) else None

    def value(self, key: str) -> JsonValue:
        """A field as plain JSON (None when absent), for comparing against a known value."""
        return cast(JsonValue, self._data.get(key))

    def object_list(self, key: str) -> list[JsonObject]:
        """A required list of objects (e.g. Genesys media offers), each read the same way."""
        values = cast(list[object], self._typed(key, self._required(key), list, "a list"))
        objects = []
        for index, value in enumerate(values):
            item = self._typed(f"{key}[{index}]", value, dict, "an object")
            path = f"{self._path}{key}[{index}]."
            objects.append(JsonObject(cast(dict[str, object], item), self._context, path))
        return objects

    def json_mapping(self, key: str) -> dict[str, JsonValue]:
        """An optional object of arbitrary JSON values (metadata); absent means empty."""
        if not self.has(key):
            return {}
        return cast(dict[str, JsonValue], self._typed(key, self._data[key], dict, "an object"))

    def string_mapping(self, key: str) -> dict[str, str]:
        """An optional object whose values must all be strings; absent means empty."""
        values = self.json_mapping(key)
        for name, value in values.items():
            if not isinstance(value, str):
                raise self.error(f"{key}.{name}", f"must be a string, got {show(value)}")
        return cast(dict[str, str], values)

    def optional_counter(self, key: str) -> int | None:
        """A non-negative counter sent as a digit string (Twilio) or an integer (clones)."""
        if not self.has(key):
            return None
        value = self._data[key]
        if isinstance(value, str) and value.isascii() and value.isdigit():
            if len(value) <= _MAX_COUNTER_DIGITS:
                return int(value)
        elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        raise self.error(key, f"must be a non-negative whole number, got {show(value)}")

    def base64(self, key: str) -> bytes:
        """A required base64 string field, decoded strictly (no stray characters)."""
        encoded = self.text(key)
        try:
            return base64.b64decode(encoded, validate=True)
        except ValueError as error:  # binascii.Error, or non-ASCII characters
            raise self.error(key, f"is not valid base64 ({error})") from None

    def dtmf_digit(self, key: str) -> str:
        """A required DTMF key: one of ``0-9 * # A-D`` (letters in either case)."""
        digit = self.text(key).upper()
        if digit not in DTMF_DIGITS:
            raise self.error(key, f"must be one of 0-9 * # A-D, got {show(digit)}")
        return digit
