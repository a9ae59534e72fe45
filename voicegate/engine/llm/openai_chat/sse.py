"""Server-sent events, sans-I/O: bytes in, the ``data`` payloads of complete events out.

The rules are the WHATWG HTML standard's "Interpreting an event stream" (§9.2.6), narrowed to
what a Chat Completions stream uses: lines end with LF or CR LF; a line starting with ``:`` is
a comment (proxies and some hosts send keep-alives like that); ``data:`` lines (one optional
space after the colon) accumulate, joined by LF; a blank line dispatches the event; other
fields (``event``, ``id``, ``retry``) are ignored. Unlike the standard, an event still
unterminated when the body ends is dispatched (``close``), since some servers omit the final
blank line after ``data: [DONE]``.
"""

from __future__ import annotations

from voicegate.errors import LLMError

#: A line longer than this (no line break in 1 MiB) is not an event stream.
MAX_LINE_BYTES = 1 << 20
#: Nor is an event whose ``data`` lines add up to more than this: a stream of ``data:`` lines
#: that never ends its event would otherwise grow without bound while the bytes keep flowing.
MAX_EVENT_BYTES = 1 << 20


class SseParser:
    """Feed body bytes; get back the data of each event they complete."""

    def __init__(self) -> None:
        self._partial = b""
        self._data: list[str] = []
        self._data_bytes = 0

    def feed(self, chunk: bytes) -> list[str]:
        """Add body bytes; return the data payloads of the events they completed."""
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        if len(self._partial) > MAX_LINE_BYTES:
            raise LLMError(f"the event stream has a line longer than {MAX_LINE_BYTES} bytes")
        events: list[str] = []
        for line in lines:
            event = self._line(line.removesuffix(b"\r"))
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[str]:
        """The body ended: the event still being read, if any."""
        events = self.feed(b"\n") if self._partial else []
        if self._data:
            events.append(self._dispatch())
        return events

    def _line(self, raw: bytes) -> str | None:
        if not raw:
            return self._dispatch() if self._data else None
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise LLMError(f"the event stream has a line that is not UTF-8: {raw[:80]!r}") from None
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value.removeprefix(" "))
            self._data_bytes += len(raw)
            if self._data_bytes > MAX_EVENT_BYTES:
                raise LLMError(f"the event stream has an event longer than {MAX_EVENT_BYTES} bytes")
        return None

    def _dispatch(self) -> str:
        data, self._data, self._data_bytes = "\n".join(self._data), [], 0
        return data
