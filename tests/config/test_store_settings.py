"""The ``store`` section and the stores the CLI opens from it (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.redis_kit import RedisServer, redis_server  # noqa: F401 - the fixture
from voicegate.cli.stores import open_stores
from voicegate.config import parse_settings
from voicegate.config.settings import StoreBackend, StoreSettings
from voicegate.engine.memory.redis_store import RedisStore
from voicegate.engine.memory.sqlite_calls import SqliteCallStates
from voicegate.errors import ConfigError


def test_the_backend_and_the_url_variable_are_read() -> None:
    settings = parse_settings("store:\n  backend: redis\n  redis_url_env: MY_REDIS\n")
    assert settings.store.backend is StoreBackend.REDIS
    assert settings.store.redis_url_env == "MY_REDIS"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("backend: mongo", "expected one of sqlite, redis"),
        ("redis_url_env: not a name", "must name an environment variable"),
        ("key_prefix: 'a:b'", "without ':'"),
        ("call_ttl_s: 0", "must be positive"),
    ],
)
def test_bad_store_settings_are_refused(text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        parse_settings(f"store:\n  {text}\n")


def test_sqlite_is_the_default_and_needs_nothing(tmp_path: Path) -> None:
    stores = open_stores(StoreSettings(data_dir=tmp_path), {}, "bank")
    assert isinstance(stores.calls, SqliteCallStates)
    assert stores.resume.line == StoreSettings().resume_line
    stores.close()


def test_redis_needs_its_url_variable() -> None:
    with pytest.raises(ConfigError, match="VOICEGATE_REDIS_URL, which is unset"):
        open_stores(StoreSettings(backend=StoreBackend.REDIS), {}, "bank")


def test_an_unreachable_redis_stops_startup(redis_server: RedisServer) -> None:  # noqa: F811
    url = redis_server.url
    redis_server.stop()
    settings = StoreSettings(backend=StoreBackend.REDIS, timeout_s=0.2, retries=0)
    with pytest.raises(ConfigError, match="store: Redis ping failed"):
        open_stores(settings, {"VOICEGATE_REDIS_URL": url}, "bank")


def test_redis_keys_live_under_the_prefix_and_project(
    redis_server: RedisServer,  # noqa: F811
) -> None:
    settings = StoreSettings(backend=StoreBackend.REDIS, key_prefix="vg")
    stores = open_stores(settings, {"VOICEGATE_REDIS_URL": redis_server.url}, "bank")
    assert isinstance(stores.memory, RedisStore)
    assert stores.memory is stores.calls
    assert stores.memory.memory_key("conv") == "vg:bank:mem:conv"
    stores.close()
