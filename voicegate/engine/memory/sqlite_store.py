"""The default memory store: one embedded SQLite file under the data directory.

Each write is its own committed transaction, so a value set by a tool survives the tool's
cancellation and a restart of the gateway (design §4 point 4). WAL journaling with
``synchronous=NORMAL`` keeps a committed write across a process crash at a fraction of a
millisecond per write (SQLite docs, "Write-Ahead Logging"; only a power loss may drop the last
transactions).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from voicegate.engine.memory.sqlite_file import open_shared
from voicegate.errors import EngineError

MEMORY_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory (
    conversation_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    entry TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (conversation_id, namespace, entry)
)
"""


class SqliteMemoryStore:
    """Memory values in a SQLite database file (created on first use)."""

    def __init__(self, path: Path) -> None:
        try:
            self._db = open_shared(path, MEMORY_SCHEMA)
        except (OSError, sqlite3.Error) as error:
            raise EngineError(f"cannot open the memory store {path}: {error}") from error
        self.path = path

    def load(self, conversation_id: str) -> dict[tuple[str, str], str]:
        """Every stored value of a conversation."""
        try:
            rows = self._db.execute(
                "SELECT namespace, entry, value FROM memory WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchall()
        except sqlite3.Error as error:
            raise EngineError(f"memory store {self.path}: read failed: {error}") from error
        return {(namespace, entry): value for namespace, entry, value in rows}

    def save(self, conversation_id: str, namespace: str, entry: str, json_value: str) -> None:
        """Store one value in its own committed transaction."""
        try:
            self._db.execute(
                "INSERT INTO memory (conversation_id, namespace, entry, value) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (conversation_id, namespace, entry) "
                "DO UPDATE SET value = excluded.value",
                (conversation_id, namespace, entry, json_value),
            )
        except sqlite3.Error as error:
            raise EngineError(f"memory store {self.path}: write failed: {error}") from error

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()
