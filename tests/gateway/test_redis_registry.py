"""The call registry across nodes on a real redis-server (issue 13).

Two :class:`RedisCallRegistry` instances with their own connections and node ids stand for
two gateway nodes sharing one Redis.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.redis_kit import RedisServer, redis_server  # noqa: F401 - the fixture
from voicegate.gateway.calls import Refusal
from voicegate.gateway.redis_registry import RedisCallRegistry, RegistryOptions
from voicegate.gateway.transport import CLOSE_TRY_AGAIN_LATER


@pytest.fixture
async def nodes(
    redis_server: RedisServer,  # noqa: F811
) -> AsyncIterator[tuple[RedisCallRegistry, RedisCallRegistry]]:
    """Two nodes with a global capacity of 2 and a short lease."""
    made = [
        RedisCallRegistry(
            redis_server.url, RegistryOptions("voicegate:bank", 2, lease_s=0.5, node_id=name)
        )
        for name in ("node-a", "node-b")
    ]
    yield made[0], made[1]
    for registry in made:
        await registry.aclose()


async def test_a_call_id_is_live_on_one_node_only(
    nodes: tuple[RedisCallRegistry, RedisCallRegistry],
) -> None:
    a, b = nodes
    assert await a.acquire("CA1") is None
    assert await a.acquire("CA1") is None  # the same node again: still its call
    assert await b.acquire("CA1") == Refusal(
        CLOSE_TRY_AGAIN_LATER, "call CA1 is live on node node-a"
    )
    await b.release("CA1")  # not b's to release: nothing happens
    assert await b.acquire("CA1") is not None
    await a.release("CA1")
    assert await b.acquire("CA1") is None


async def test_the_capacity_counts_every_nodes_calls(
    nodes: tuple[RedisCallRegistry, RedisCallRegistry],
) -> None:
    a, b = nodes
    assert await a.acquire("CA1") is None
    assert await b.acquire("CA2") is None
    assert await a.active_calls() == 2
    assert await a.acquire("CA3") == Refusal(CLOSE_TRY_AGAIN_LATER, "at capacity (2 calls)")
    await b.release("CA2")
    assert await a.acquire("CA3") is None


async def test_a_lost_nodes_leases_lapse_and_renewed_ones_do_not(
    nodes: tuple[RedisCallRegistry, RedisCallRegistry],
) -> None:
    a, b = nodes
    assert await a.acquire("LOST") is None  # a never renews: as if it were SIGKILLed
    assert await b.acquire("KEPT") is None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while await b.acquire("LOST") is not None:
        assert loop.time() < deadline, "the lost node's lease never lapsed"
        assert await b.renew() >= 1
        await asyncio.sleep(0.1)
    assert await a.acquire("KEPT") is not None  # b kept renewing it


async def test_keep_alive_runs_until_cancelled(
    nodes: tuple[RedisCallRegistry, RedisCallRegistry],
) -> None:
    a, _ = nodes
    assert await a.acquire("CA1") is None
    async with asyncio.TaskGroup() as tasks:
        keeper = tasks.create_task(a.keep_alive())
        await asyncio.sleep(0.2)
        keeper.cancel()
    assert await a.active_calls() == 1


async def test_a_stopped_redis_refuses_new_calls_with_the_reason(
    nodes: tuple[RedisCallRegistry, RedisCallRegistry],
    redis_server: RedisServer,  # noqa: F811
) -> None:
    a, _ = nodes
    assert await a.acquire("CA1") is None
    assert a.refusal() is None
    redis_server.stop()
    refused = await a.acquire("CA2")
    assert refused is not None
    assert refused.code == CLOSE_TRY_AGAIN_LATER
    assert refused.reason.startswith("call registry unavailable")
    assert a.refusal() == refused  # what /readyz reports
    await a.release("CA1")  # does not raise: the lease lapses by itself


async def test_check_pings_at_most_once_per_health_period(
    redis_server: RedisServer,  # noqa: F811
) -> None:
    options = RegistryOptions("voicegate:bank", 2, timeout_s=0.2, node_id="n", health_s=3600.0)
    registry = RedisCallRegistry(redis_server.url, options)
    assert await registry.check() is None
    redis_server.stop()
    assert await registry.check() is None  # the answer of a moment ago: no new PING
    refused = await registry.acquire("CA1")  # a command that fails updates it at once
    assert refused is not None
    assert await registry.check() == refused
    await registry.aclose()


async def test_a_restarted_empty_redis_gets_the_nodes_leases_back(
    nodes: tuple[RedisCallRegistry, RedisCallRegistry],
    redis_server: RedisServer,  # noqa: F811
) -> None:
    a, b = nodes
    assert await a.acquire("CA1") is None
    redis_server.stop()
    redis_server.start()  # without its data: no lease is held any more
    assert await a.renew() == 1  # a's running call takes its lease back
    assert await b.acquire("CA1") == Refusal(
        CLOSE_TRY_AGAIN_LATER, "call CA1 is live on node node-a"
    )


async def test_a_frozen_redis_refuses_new_calls_within_the_timeout(
    redis_server: RedisServer,  # noqa: F811
) -> None:
    options = RegistryOptions("voicegate:bank", 2, timeout_s=0.2, node_id="n", health_s=0.0)
    registry = RedisCallRegistry(redis_server.url, options)
    assert await registry.check() is None
    redis_server.pause()  # a Redis too slow to answer: nothing waits past the bound
    try:
        refused = await registry.check()
        assert refused is not None
        assert refused.reason.startswith("call registry unavailable: ")
        assert await registry.acquire("CA1") == refused
    finally:
        redis_server.resume()
    assert await registry.check() is None
    await registry.aclose()
