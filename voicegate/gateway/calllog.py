"""Every call's timeline on disk: one JSONL file per call under the data directory (issue 18).

The media loop only encodes a record and appends it to the call's pending lines; one writer
thread per gateway appends them to ``<directory>/<gateway call id>.jsonl`` (a write to disk
can stall for milliseconds, which the media loop must never wait for, design §10). The writer
lets records gather for ``WRITE_INTERVAL_S`` and then writes every call that has new ones:
one thread wake-up per interval for all calls, and one open/append/close per call, instead
of a job per burst of records per call (bench/call_logs.py). A file
starts with a ``call_connected`` record and ends with ``call_closed``; a file without the
latter belongs to a live call, or to a worker that died (docs/timeline.md, "Call logs").

Each file is bounded (``max_bytes``: records past it are counted in one
``call_log_truncated`` record), and the directory is pruned as calls end: files older than
``max_age_s``, and the oldest closed ones beyond ``keep``, are deleted. A prune lists and
stats the whole directory (about 2 s of CPU per 300 calls when done after each one, issue
12), so it runs once every ``keep // PRUNE_SHARE`` ended calls: the directory may hold that
many files over ``keep`` in between. Every worker of ``voicegate serve --workers N`` writes
into the same directory, so any of them can show every call (gateway/callviews.py); a prune
therefore deletes an open log only once the worker that wrote it is gone (else it may be
another worker's live call).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voicegate.gateway.transport import CLOSE_ABNORMAL

log = logging.getLogger(__name__)

#: What a call id must look like to name a file: the gateway's own ids (``twilio-3f2a...``).
#: Anything else (a hostile ``/calls/{id}``, ``..``, a NUL) never reaches the file system.
SAFE_CALL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
SUFFIX = ".jsonl"
OPENED = "call_connected"
CLOSED = "call_closed"
TRUNCATED = "call_log_truncated"
#: A prune runs once every ``keep // PRUNE_SHARE`` ended calls (at least every call).
PRUNE_SHARE = 20
#: How long records gather before the writer writes them. A worker that dies loses at most
#: this much of its calls' last records; /calls shows a live call this much behind.
WRITE_INTERVAL_S = 0.25
#: How much of a log's end a prune reads to find its ``call_closed`` record.
CLOSED_TAIL_BYTES = 4096


def safe_call_id(call_id: str) -> bool:
    """Whether ``call_id`` may name a call log (letters, digits, ``-`` and ``_`` only)."""
    return SAFE_CALL_ID.fullmatch(call_id) is not None


@dataclass(frozen=True, slots=True)
class CallLogOptions:
    """Where call logs go and how much of them is kept."""

    directory: Path
    #: Bytes written per call; later records are only counted.
    max_bytes: int = 1024 * 1024
    #: Call logs kept in the directory (the oldest are deleted first).
    keep: int = 1000
    #: Call logs older than this are deleted (seconds).
    max_age_s: float = 7 * 24 * 3600.0

    def path(self, call_id: str) -> Path | None:
        """The file of ``call_id``'s log, or None for an id that cannot name one."""
        return self.directory / f"{call_id}{SUFFIX}" if safe_call_id(call_id) else None


class CallLogs:
    """The writer of every call log of one gateway process (owns one thread)."""

    def __init__(self, options: CallLogOptions) -> None:
        self.options = options
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="call-logs")
        self._live: set[str] = set()
        self._closed = False
        self._closing = threading.Event()  # cuts the gathering short: write now
        self._lock = threading.Lock()
        #: Logs with lines to write, in the order they got them; True once the call ended.
        self._dirty: dict[CallLog, bool] = {}
        self._ended_since_prune = 0  # touched on the writer thread only

    def open(self, call_id: str, dialect: str) -> CallLog | None:
        """Start the log of a new call (None when the id cannot name a file)."""
        path = self.options.path(call_id)
        if path is None or self._closed:
            log.warning("call %s: no call log for this id", call_id)
            return None
        self._live.add(call_id)
        call_log = CallLog(self, call_id, path)
        call_log.record(
            {
                "t_ms": 0,
                "event": OPENED,
                "gateway_call_id": call_id,
                "dialect": dialect,
                "started_at": time.time(),
                "pid": os.getpid(),
            }
        )
        return call_log

    def schedule(self, call_log: CallLog) -> None:
        """Have the writer thread append ``call_log``'s pending lines at its next write."""
        self._mark(call_log, ended=False)

    def finished(self, call_log: CallLog) -> None:
        """The call is over: write what is left, then prune the directory."""
        self._live.discard(call_log.call_id)
        self._mark(call_log, ended=True)

    def _mark(self, call_log: CallLog, *, ended: bool) -> None:
        if self._closed:
            return
        with self._lock:
            idle = not self._dirty  # no write is waiting: start one
            self._dirty[call_log] = ended or self._dirty.get(call_log, False)
        if idle:
            try:
                self._watch(self._writer.submit(self._write))
            except RuntimeError:  # closed meanwhile: close() wrote what it could
                log.warning("call %s: records after the call logs closed", call_log.call_id)

    def _write(self) -> None:
        """Let records gather, then write every log that has some (on the writer thread)."""
        self._closing.wait(WRITE_INTERVAL_S)
        with self._lock:
            dirty, self._dirty = self._dirty, {}
        for call_log, ended in dirty.items():
            call_log.flush()
            if ended:
                self._ended()

    def _ended(self) -> None:
        self._ended_since_prune += 1
        if self._ended_since_prune >= max(1, self.options.keep // PRUNE_SHARE):
            self._ended_since_prune = 0
            self.prune()

    def prune(self) -> None:
        """Delete logs past ``max_age_s`` and the oldest closed ones beyond ``keep``."""
        options = self.options
        try:
            files = _by_age(options.directory.glob("*" + SUFFIX))
        except OSError as error:
            log.warning("call logs: cannot list %s: %s", options.directory, error)
            return
        oldest_kept = time.time() - options.max_age_s
        for index, (mtime, path) in enumerate(files):
            if path.stem in self._live:
                continue
            # Past ``keep``, only the log of a call that is over goes: an open one may be
            # another worker's live call, which this worker's ``_live`` does not know (they
            # share the directory).
            if mtime < oldest_kept or (index >= options.keep and _over(path)):
                path.unlink(missing_ok=True)

    def close(self) -> None:
        """Write what is pending and stop the writer thread (blocks: call it off the loop)."""
        self._closed = True
        self._closing.set()
        self._writer.shutdown(wait=True)

    @staticmethod
    def _watch(future: Future[None]) -> None:
        # The writer's jobs catch their own OSErrors; anything else is a bug worth a trace.
        future.add_done_callback(_log_failure)


def _by_age(paths: Iterable[Path]) -> list[tuple[float, Path]]:
    """``(mtime, path)`` of each file, newest first; files deleted meanwhile (another
    worker's prune) are left out."""
    files = []
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            files.append((path.stat().st_mtime, path))
    return sorted(files, reverse=True)


def _over(path: Path) -> bool:
    """Whether the call of the log at ``path`` is over: it ends with ``call_closed``, or the
    worker that ran it is gone (a log it left open: the call is lost, /calls says so)."""
    try:
        with path.open("rb") as file:
            first = file.readline(CLOSED_TAIL_BYTES)
            file.seek(max(0, file.seek(0, os.SEEK_END) - CLOSED_TAIL_BYTES))
            last = file.read().rstrip(b"\n").rpartition(b"\n")[2]
        if json.loads(last).get("event") == CLOSED:
            return True
        pid = json.loads(first).get("pid")
        return isinstance(pid, int) and not process_alive(pid)
    except (OSError, ValueError, AttributeError):
        return False  # gone, unreadable, or a cut line: not known to be over


def close_lost_logs(directory: Path, pid: int, reason: str, since: float) -> int:
    """End the logs worker ``pid`` left open when it died (call it once the process is gone):
    each gets its ``call_closed``, 1006 and ``reason``, as its peer got no close frame.

    Only logs written since ``since`` (the worker's start, Unix s) are read; how many closed.
    """
    closed = 0
    for mtime, path in _by_age(directory.glob("*" + SUFFIX)):
        if mtime < since:
            break  # newest first: the rest were last written before the worker started
        try:
            closed += _close_lost(path, pid, reason)
        except OSError as error:
            log.warning("call logs: cannot close %s: %s", path.name, error)
    return closed


def _close_lost(path: Path, pid: int, reason: str) -> bool:
    data = path.read_bytes()
    records = whole_records(data)
    if not records or records[0].get("event") != OPENED or records[0].get("pid") != pid:
        return False  # another worker's call
    if records[-1].get("event") == CLOSED:
        return False
    started = next((r for r in records if r.get("event") == "call_started"), {})
    last_ms = max((r["t_ms"] for r in records if isinstance(r.get("t_ms"), int)), default=0)
    closing = {
        "t_ms": last_ms,
        "event": CLOSED,
        "code": CLOSE_ABNORMAL,
        "reason": reason,
        "provider_call_id": started.get("call_id"),
        "ended_at": time.time(),
    }
    line = (json.dumps(closing) + "\n").encode("utf-8")
    with path.open("ab") as file:  # after a line the worker died writing, on its own line
        file.write(line if data.endswith(b"\n") else b"\n" + line)
    return True


def whole_records(data: bytes) -> list[dict[str, Any]]:
    """The whole JSON lines in ``data`` (a cut first or last line is skipped)."""
    out = []
    for line in data.split(b"\n"):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (the worker that wrote a log)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _log_failure(future: Future[None]) -> None:
    error = future.exception()
    if error is not None:
        log.error("call logs: writer failed", exc_info=error)


class CallLog:
    """One call's log: records in from the media loop, lines out to the writer thread."""

    def __init__(self, logs: CallLogs, call_id: str, path: Path) -> None:
        self.call_id = call_id
        self._logs = logs
        self._path = path
        self._pending: list[bytes] = []
        self._lock = threading.Lock()
        self._written = 0
        self._dropped: dict[str, Any] | None = None
        self._last_ms = 0

    def record(self, record: dict[str, Any]) -> None:
        """Queue one timeline record (a timeline listener; never blocks on the disk)."""
        self._last_ms = max(self._last_ms, int(record.get("t_ms", 0)))
        line = (json.dumps(record, default=str) + "\n").encode("utf-8")
        if self._written + len(line) > self._logs.options.max_bytes:
            self._count_dropped()
            return
        self._written += len(line)
        self._append(line)

    def _count_dropped(self) -> None:
        if self._dropped is None:
            self._dropped = {"t_ms": self._last_ms, "event": TRUNCATED, "dropped": 0}
        self._dropped["dropped"] += 1
        self._dropped["t_ms"] = self._last_ms

    def _append(self, line: bytes) -> None:
        with self._lock:
            first = not self._pending
            self._pending.append(line)
        if first:
            self._logs.schedule(self)

    def close(self, code: int, reason: str, provider_call_id: str | None) -> None:
        """The call ended with this WebSocket close: the log's last records."""
        if self._dropped is not None:
            self._append((json.dumps(self._dropped) + "\n").encode("utf-8"))
        closed = {
            "t_ms": self._last_ms,
            "event": CLOSED,
            "code": code,
            "reason": reason,
            "provider_call_id": provider_call_id,
            "ended_at": time.time(),
        }
        with self._lock:
            self._pending.append((json.dumps(closed) + "\n").encode("utf-8"))
        self._logs.finished(self)

    def flush(self) -> None:
        """Append the pending lines to the file (in the writer thread)."""
        with self._lock:
            lines, self._pending = self._pending, []
        if not lines:
            return
        try:
            self._append_to_file(b"".join(lines))
        except OSError as error:
            log.warning("call %s: cannot write its call log: %s", self.call_id, error)

    def _append_to_file(self, data: bytes) -> None:
        try:
            file = self._path.open("ab")
        except FileNotFoundError:  # the directory is made (or made again) when first needed
            self._path.parent.mkdir(parents=True, exist_ok=True)
            file = self._path.open("ab")
        with file:
            file.write(data)
