"""The Redis store on a real redis-server: keys, TTLs, write-through, epochs, failures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.redis_kit import RedisServer, redis_server  # noqa: F401 - the fixture
from voicegate.engine.memory.redis_store import RedisOptions, RedisStore
from voicegate.engine.memory.schema import MemorySchema
from voicegate.engine.memory.slice import MemorySlice
from voicegate.engine.memory.state import MemoryState
from voicegate.errors import StaleCallError, StoreError

OPTIONS = RedisOptions("voicegate:bank", memory_ttl_s=600.0, call_ttl_s=60.0)


@pytest.fixture
def store(redis_server: RedisServer) -> Iterator[RedisStore]:  # noqa: F811 - the fixture
    made = RedisStore(redis_server.url, OPTIONS)
    yield made
    made.close()


def test_memory_is_namespaced_per_project_and_conversation_with_a_ttl(
    store: RedisStore,
    redis_server: RedisServer,  # noqa: F811
) -> None:
    store.save("conv-1", "cards", "card_list", '["a"]')
    client = redis_server.client()
    assert client.keys("*") == ["voicegate:bank:mem:conv-1"]
    assert client.hgetall("voicegate:bank:mem:conv-1") == {'["cards", "card_list"]': '["a"]'}
    assert 0 < client.pttl("voicegate:bank:mem:conv-1") <= 600_000
    client.close()


def test_a_write_through_survives_a_reopen(
    store: RedisStore,
    redis_server: RedisServer,  # noqa: F811
    schema: MemorySchema,
) -> None:
    MemorySlice(MemoryState(schema, store, "conv"), "cards").set("card_list", ["x", "y"])
    # no close(): a node lost right after the write must not lose it
    other = RedisStore(redis_server.url, OPTIONS)
    assert MemorySlice(MemoryState(schema, other, "conv"), "cards").get("card_list") == ["x", "y"]
    other.close()


def test_projects_do_not_see_each_others_memory(
    store: RedisStore,
    redis_server: RedisServer,  # noqa: F811
) -> None:
    store.save("conv", "project", "visits", "1")
    other = RedisStore(redis_server.url, RedisOptions("voicegate:other"))
    assert other.load("conv") == {}
    other.close()


def test_a_claim_bumps_the_epoch_and_returns_the_saved_state(
    store: RedisStore,
    redis_server: RedisServer,  # noqa: F811
) -> None:
    assert store.claim("CA1") == (1, None)
    store.save_state("CA1", 1, '{"state": 1}')
    assert store.claim("CA1") == (2, '{"state": 1}')
    client = redis_server.client()
    assert client.hget("voicegate:bank:call:CA1", "epoch") == "2"
    assert 0 < client.pttl("voicegate:bank:call:CA1") <= 60_000
    client.close()


def test_a_stale_epoch_cannot_write(store: RedisStore) -> None:
    store.claim("CA1")
    store.save_state("CA1", 1, "first node")
    store.claim("CA1")  # another node took the call over
    with pytest.raises(StaleCallError):
        store.save_state("CA1", 1, "stale write")
    store.save_state("CA1", 2, "new node")
    assert store.claim("CA1") == (3, "new node")


def test_a_write_to_a_stopped_server_fails_with_a_store_error(
    store: RedisStore,
    redis_server: RedisServer,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    store.save("conv", "project", "visits", "1")
    redis_server.stop()
    with pytest.raises(StoreError, match="Redis write failed"):
        store.save("conv", "project", "visits", "2")
    assert "Redis write failed (" in caplog.text  # each retry is logged
    assert "attempt 3 in" in caplog.text  # retries=2 (the default)
    with pytest.raises(StoreError, match="Redis claim failed"):
        store.claim("CA1")


def test_a_write_to_a_frozen_server_fails_within_its_bound(
    redis_server: RedisServer,  # noqa: F811
) -> None:
    store = RedisStore(redis_server.url, RedisOptions("voicegate:bank", timeout_s=0.1))
    store.save("conv", "project", "visits", "1")
    redis_server.pause()
    try:
        with pytest.raises(StoreError, match="Redis write failed: Timeout"):
            store.save("conv", "project", "visits", "2")
    finally:
        redis_server.resume()
    store.save("conv", "project", "visits", "3")
    assert store.load("conv") == {("project", "visits"): "3"}
    store.close()


def test_a_call_hash_lost_with_its_server_is_written_again(
    store: RedisStore,
    redis_server: RedisServer,  # noqa: F811
) -> None:
    store.claim("CA1")
    store.claim("CA1")
    redis_server.stop()
    redis_server.start()  # empty: tests run Redis without persistence
    store.save_state("CA1", 2, "after the restart")
    store.save_memory("CA1", 2, "CA1", "project", "visits", "3")
    assert store.claim("CA1") == (3, "after the restart")
    with pytest.raises(StaleCallError):
        store.save_memory("CA1", 2, "CA1", "project", "visits", "4")
    assert store.load("CA1") == {("project", "visits"): "3"}


def test_a_bad_url_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="bad Redis URL"):
        RedisStore("http://nowhere", OPTIONS)
