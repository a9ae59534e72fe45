"""The durable stores from the ``store`` settings: embedded SQLite, or Redis (issue 13).

The CLI resolves the Redis URL from the environment variable ``store.redis_url_env`` names
(design §7: no module reads the environment). A Redis that cannot be reached stops startup
with a ``ConfigError`` naming it, rather than failing the first call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from voicegate.config.settings import StoreBackend, StoreSettings
from voicegate.engine.loop.persistence import CallStateStore, ResumeOptions
from voicegate.engine.memory.redis_store import RedisOptions, RedisStore
from voicegate.engine.memory.sqlite_calls import SqliteCallStates
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore
from voicegate.engine.memory.store import MemoryStore
from voicegate.errors import ConfigError, StoreError


@dataclass(frozen=True, slots=True)
class Stores:
    """Memory (written through) and resumable call state, with the resume line."""

    memory: MemoryStore
    calls: CallStateStore
    resume_line: str

    @property
    def resume(self) -> ResumeOptions:
        """What the engine needs to checkpoint and resume calls."""
        return ResumeOptions(self.calls, self.resume_line)

    def close(self) -> None:
        """Release both stores (every write was already committed)."""
        self.memory.close()
        self.calls.close()  # closing a Redis store twice (one object, both roles) is harmless


def open_stores(settings: StoreSettings, environ: Mapping[str, str], project: str) -> Stores:
    """The stores ``settings`` choose; Redis keys live under ``<key_prefix>:<project>``."""
    if settings.backend is StoreBackend.REDIS:
        redis = RedisStore(redis_url(settings, environ), redis_options(settings, project))
        try:
            redis.ping()
        except StoreError as error:
            redis.close()
            raise ConfigError(f"store: {error}") from None
        return Stores(redis, redis, settings.resume_line)
    path = settings.data_dir / "memory.sqlite3"
    calls = SqliteCallStates(path, settings.call_ttl_s)
    return Stores(SqliteMemoryStore(path), calls, settings.resume_line)


def redis_url(settings: StoreSettings, environ: Mapping[str, str]) -> str:
    """The URL in the variable ``store.redis_url_env`` names; a ``ConfigError`` when unset."""
    url = environ.get(settings.redis_url_env, "")
    if not url:
        raise ConfigError(
            f"store.redis_url_env: the Redis URL comes from the environment variable "
            f"{settings.redis_url_env}, which is unset"
        )
    return url


def redis_options(settings: StoreSettings, project: str) -> RedisOptions:
    """Key namespace, TTLs, timeout and retries from the ``store`` settings."""
    return RedisOptions(
        namespace=f"{settings.key_prefix}:{project}",
        memory_ttl_s=settings.memory_ttl_s,
        call_ttl_s=settings.call_ttl_s,
        timeout_s=settings.timeout_s,
        retries=settings.retries,
    )
