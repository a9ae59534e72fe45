"""Asterisk ``chan_websocket`` control messages: both of its TEXT formats, read and written.

Asterisk's WebSocket channel driver (https://docs.asterisk.org/Configuration/Channel-Drivers/WebSocket,
"Control Commands and Events") speaks one of two formats per call, chosen in
``chan_websocket.conf`` or with the dial string's ``f(json|plain-text)`` option:

* plain text (the default, deprecated since 20.18/22.8/23.2): one line, the name first, then
  ``key:value`` parameters (``MEDIA_START connection_id:... format:ulaw optimal_frame_size:160``)
  or one bare argument (``MARK_MEDIA <correlation_id>``, ``MEDIA_MARK_PROCESSED <id>``);
* JSON: ``{"event": NAME, ...}`` from Asterisk and ``{"command": NAME, ...}`` to it.

The channel driver (``channels/chan_websocket.c``) ignores a TEXT command longer than 128 bytes
(``MAX_TEXT_MESSAGE_LEN``), so :func:`command` refuses to write one. Sans-I/O, like every codec.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from voicegate.codecs.events import JsonValue
from voicegate.codecs.wire import JsonObject, parse_json_object, show
from voicegate.errors import LocalProtocolError, RemoteProtocolError

#: chan_websocket.c MAX_TEXT_MESSAGE_LEN: longer TEXT commands are dropped with a warning.
MAX_COMMAND_BYTES = 128
#: The plain-text ERROR event puts free text last (chan_websocket.c _create_event_ERROR).
_ERROR_TEXT = "error_text:"


class ControlFormat(enum.Enum):
    """Which control message format a call uses (dial string ``f(...)``)."""

    PLAIN = "plain-text"
    JSON = "json"


@dataclass(frozen=True, slots=True)
class Control:
    """One event from Asterisk: its name, its named parameters, and a bare argument if any."""

    name: str
    fields: Mapping[str, JsonValue] = field(default_factory=dict)
    argument: str = ""  # plain text's unnamed parameter (a correlation id)

    def text(self, key: str) -> str:
        """A required string parameter."""
        value = self.fields.get(key)
        if not isinstance(value, str) or not value:
            raise self.error(key, f"must be a non-empty string, got {show(value)}")
        return value

    def optional_text(self, key: str) -> str | None:
        """A string parameter that may be absent."""
        return self.text(key) if key in self.fields else None

    def integer(self, key: str, default: int | None = None) -> int:
        """A whole-number parameter (plain text sends digits, JSON a number)."""
        value = self.fields.get(key)
        if value is None and default is not None:
            return default
        if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 10:
            return int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise self.error(key, f"must be a whole number, got {show(value)}")

    def correlation_id(self) -> str:
        """The id a mark (or buffering) event returns: JSON ``correlation_id``, or the argument."""
        value = self.fields.get("correlation_id", self.argument)
        if not isinstance(value, str):
            raise self.error("correlation_id", f"must be a string, got {show(value)}")
        return value

    def error(self, key: str, problem: str) -> RemoteProtocolError:
        """An error about parameter ``key`` of this event."""
        return RemoteProtocolError(f"asterisk {self.name} event: {key} {problem}")


def format_of(text: str) -> ControlFormat:
    """The format of Asterisk's first TEXT message (MEDIA_START): a JSON object or a line."""
    return ControlFormat.JSON if text.lstrip().startswith("{") else ControlFormat.PLAIN


def parse_event(text: str, control: ControlFormat) -> Control:
    """One TEXT message from Asterisk in the call's format."""
    if control is ControlFormat.JSON:
        data = parse_json_object(text, "asterisk")
        name = JsonObject(data, "asterisk event").text("event")
        # Parsed JSON: every value is a JsonValue.
        return Control(name, {k: cast(JsonValue, v) for k, v in data.items() if k != "event"})
    if text.lstrip().startswith("{"):
        raise RemoteProtocolError("asterisk: a JSON message on a plain-text call")
    return _parse_line(text)


def _parse_line(text: str) -> Control:
    """``NAME key:value key:value`` or ``NAME argument`` (chan_websocket.c _create_event_*)."""
    name, _, rest = text.strip().partition(" ")
    if not name:
        raise RemoteProtocolError("asterisk: an empty control message")
    fields: dict[str, JsonValue] = {}
    if name == "ERROR" and _ERROR_TEXT in rest:  # the free text may hold spaces and colons
        rest, _, error_text = rest.partition(_ERROR_TEXT)
        fields["error_text"] = error_text
    arguments = []
    for token in rest.split():
        key, colon, value = token.partition(":")
        if colon and key:
            fields[key] = value
        else:
            arguments.append(token)
    return Control(name, fields, " ".join(arguments))


def command(control: ControlFormat, name: str, **parameters: str) -> str:
    """A command to Asterisk in the call's format, refused if Asterisk would drop it."""
    if control is ControlFormat.JSON:
        text = json.dumps({"command": name, **parameters}, separators=(",", ":"))
    else:
        values = list(parameters.values())
        if any(not value or any(c.isspace() for c in value) for value in values):
            raise LocalProtocolError(f"asterisk: {name} parameters must be single words")
        text = " ".join([name, *values])
    if len(text.encode("utf-8")) > MAX_COMMAND_BYTES:
        raise LocalProtocolError(
            f"asterisk: {name} command of {len(text.encode('utf-8'))} bytes exceeds "
            f"chan_websocket's {MAX_COMMAND_BYTES}-byte limit for TEXT commands"
        )
    return text
