"""Logging for ``voicegate serve``: level, text or JSON lines, call ids, no secrets (issue 18).

Set up once per process by the CLI (the supervisor and each worker): one handler on the root
logger writing to stderr. Every record gets the ids of the call it is about
(gateway/logcontext.py). Known secret values are replaced in the message and in tracebacks
before a line is written. Chatty libraries log only warnings unless the level is ``debug``.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TextIO

from voicegate.errors import ConfigError
from voicegate.gateway.logcontext import current_call_fields

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "json")
LEVEL_ENV = "VOICEGATE_LOG_LEVEL"
FORMAT_ENV = "VOICEGATE_LOG_FORMAT"
#: Libraries that log per request or per partial decode (faster_whisper: ~2 lines per second
#: of speech): warnings only, unless the level is debug.
CHATTY_LOGGERS = (
    "faster_whisper", "aiohttp.access", "aiohttp.server", "aiohttp.web", "mcp", "httpx",
    "httpx2", "httpcore", "urllib3", "redis", "onnxruntime", "asyncio",
)  # fmt: skip
#: Environment variables whose values are redacted from every line even if no setting names
#: them (e.g. the model's API key, read by the engine's integrations).
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
#: Shorter values would redact ordinary words; real secrets are far longer.
MIN_SECRET_CHARS = 8
REDACTED = "[redacted]"
TEXT_FORMAT = "%(asctime)s %(levelname)s {who}%(name)s: %(message)s"


@dataclass(frozen=True, slots=True)
class LogOptions:
    """How a process logs (picklable: the supervisor hands it to the workers)."""

    level: str = "info"
    format: str = "text"
    secrets: tuple[str, ...] = ()


def resolve_log_options(
    level: str | None, fmt: str | None, environ: Mapping[str, str], secrets: Iterable[str] = ()
) -> LogOptions:
    """Flags over ``VOICEGATE_LOG_LEVEL``/``VOICEGATE_LOG_FORMAT`` over the defaults."""
    chosen_level = (level or environ.get(LEVEL_ENV) or "info").lower()
    chosen_format = (fmt or environ.get(FORMAT_ENV) or "text").lower()
    if chosen_level not in LEVELS:
        raise ConfigError(f"log level {chosen_level!r}: use one of {', '.join(LEVELS)}")
    if chosen_format not in FORMATS:
        raise ConfigError(f"log format {chosen_format!r}: use one of {', '.join(FORMATS)}")
    found = set(secrets) | secret_values(environ)
    kept = sorted((s for s in found if len(s) >= MIN_SECRET_CHARS), key=len, reverse=True)
    return LogOptions(chosen_level, chosen_format, tuple(kept))


def secret_values(environ: Mapping[str, str]) -> set[str]:
    """Values of the environment variables whose names say they hold secrets."""
    return {value for name, value in environ.items() if SECRET_NAME.search(name) and value}


def configure(options: LogOptions, who: str = "", stream: TextIO | None = None) -> None:
    """Route every logger of this process to one stderr handler as ``options`` say."""
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.addFilter(CallFilter())
    if options.format == "json":
        handler.setFormatter(JsonFormatter(options.secrets, who))
    else:
        handler.setFormatter(TextFormatter(options.secrets, who))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    level = getattr(logging, options.level.upper())
    root.setLevel(level)
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(level if level <= logging.DEBUG else logging.WARNING)


class CallFilter(logging.Filter):
    """Stamps each record with the ids of the call it is about (never drops one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Add ``call_id`` and ``provider_call_id`` when a call is being served."""
        for name, value in current_call_fields().items():
            setattr(record, name, value)
        return True


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every secret value replaced (longest first, so none leaks in part)."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


class TextFormatter(logging.Formatter):
    """``time LEVEL [worker] logger: [call ids] message``, secrets redacted."""

    def __init__(self, secrets: tuple[str, ...], who: str = "") -> None:
        super().__init__(TEXT_FORMAT.format(who=f"{who} " if who else ""))
        self._secrets = secrets

    def format(self, record: logging.LogRecord) -> str:
        """The line, with the call's ids before the message."""
        line = super().format(record)
        ids = [getattr(record, name, "") for name in ("call_id", "provider_call_id")]
        shown = printable(" ".join(str(i) for i in ids if i))
        if shown:
            head = f"{record.name}: "
            line = line.replace(head, f"{head}[{shown}] ", 1)
        return redact(line, self._secrets)

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        """The message part, its control characters escaped: peer text (a provider's error
        description, a CallSid) cannot start a forged line or move the terminal's cursor.
        The traceback, appended after it, keeps its lines."""
        message = record.message
        record.message = printable(message)
        try:
            return super().formatMessage(record)
        finally:
            record.message = message


def printable(text: str) -> str:
    """``text`` with every non-printable character (newline, ESC, ...) as its escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, call ids, worker, exception."""

    def __init__(self, secrets: tuple[str, ...], who: str = "") -> None:
        super().__init__()
        self._secrets = secrets
        self._who = who

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON (newlines inside are escaped)."""
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage(), self._secrets),
        }
        for name in ("call_id", "provider_call_id"):
            value = getattr(record, name, None)
            if value:
                entry[name] = value
        if self._who:
            entry["worker"] = self._who
        if record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info), self._secrets)
        return json.dumps(entry, ensure_ascii=False)
