"""Opening the embedded SQLite file that several processes share (``serve --workers N``).

Every worker opens the same file as it starts, so on a fresh data directory they race to
switch it to WAL. SQLite answers that race with ``SQLITE_BUSY`` at once rather than through the
busy handler (the switch needs an exclusive lock and may run recovery; SQLite docs, "Write-Ahead
Logging" and ``sqlite3_busy_timeout``: the handler is not called where waiting could deadlock),
so a worker failed to start with "database is locked" in about one start in ten. The switch
is retried here until the busy timeout, and the schema is created in one ``BEGIN IMMEDIATE``
transaction, which takes the write lock through the busy handler.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

#: How long an open waits for another process holding the file (sqlite3's own default).
BUSY_TIMEOUT_S = 5.0

_RETRY_PAUSE_S = 0.01


def open_shared(path: Path, schema: str) -> sqlite3.Connection:
    """An autocommit connection usable from any thread, in WAL mode, with ``schema`` created.

    Raises ``OSError`` or ``sqlite3.Error``; the stores turn them into their own errors.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    # isolation_level=None: autocommit, every statement is committed when it returns.
    # check_same_thread=False: the engine may run on its own thread (issue 12); only one
    # thread uses a connection at a time.
    db = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
    )
    try:
        _switch_to_wal(db)
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(f"BEGIN IMMEDIATE;\n{schema};\nCOMMIT;")
    except BaseException:
        db.close()
        raise
    return db


def _switch_to_wal(db: sqlite3.Connection) -> None:
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if not _is_busy(error) or time.monotonic() >= deadline:
                raise
        # A blocking pause, as sqlite3's own busy handler takes: a store is opened once, as a
        # worker starts and before it admits a call, so no call's media waits on it.
        time.sleep(_RETRY_PAUSE_S)


def _is_busy(error: sqlite3.OperationalError) -> bool:
    # The extended codes (SQLITE_BUSY_RECOVERY, ...) keep the primary code in the low byte.
    return error.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
