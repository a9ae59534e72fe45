"""The call registry across nodes on Redis: one live session per call id, a global capacity.

Issue 13: behind a load balancer, a CallSid must be live on one node only, and ``capacity``
counts the calls of every node. Each live call holds a *lease* in Redis: a member of a sorted
set scored by its expiry (server time, so node clocks do not matter) and its owner node in a
hash. Admission, in one Lua script: drop expired leases, refuse a call id another node holds,
refuse when the set is full, else take the lease. A node renews its leases every third of the
lease time (:meth:`RedisCallRegistry.keep_alive`, run by its owner); a node that is lost stops
renewing, so after ``lease_s`` its calls may be taken by another node (the resume of
``engine/loop/persistence.py``), and its places count no more.

Redis down or slow: every command is bounded by ``timeout_s``; a new call is then refused with
1013 and the reason (:meth:`check` answers ``/readyz`` the same: a PING at most every
``health_s``, so probes stay cheap), while calls already running go on (their leases lapse only
after ``lease_s`` without renewal). A Redis that restarted empty gets this node's leases back at
the next renewal.

This module implements the small :class:`CallLeases` protocol of its own: the ``CapacityGate``
of ``gateway/calls.py`` (branch ``workers``) is synchronous and knows no call ids, and a Redis
round trip must not block the media loop (design §10).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from voicegate.gateway.transport import CLOSE_TRY_AGAIN_LATER, Refusal

log = logging.getLogger(__name__)

# KEYS: the lease set, the owner hash. ARGV: call id, node, capacity, lease ms.
# Returns {1, ""} admitted, {0, owner} live on another node, {-1, ""} at capacity.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, call in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  redis.call('HDEL', KEYS[2], call)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local owner = redis.call('HGET', KEYS[2], ARGV[1])
if owner and owner ~= ARGV[2] then return {0, owner} end
if not owner and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return {-1, ''} end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return {1, ''}
"""

# KEYS: the lease set, the owner hash. ARGV: node, lease ms, call ids. Renews this node's,
# and takes back a lease nobody holds (a Redis restarted without its data); never another's.
_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local renewed = 0
for i = 3, #ARGV do
  local owner = redis.call('HGET', KEYS[2], ARGV[i])
  if owner == ARGV[1] or not owner then
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[i])
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[1])
    renewed = renewed + 1
  end
end
return renewed
"""

# KEYS: the lease set, the owner hash. ARGV: call id, node. Releases only this node's lease.
_RELEASE = """
if redis.call('HGET', KEYS[2], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[1], ARGV[1])
end
return 1
"""


# KEYS: the lease set. Counts leases not yet expired (server time).
_COUNT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
"""


@dataclass(frozen=True, slots=True)
class RegistryOptions:
    """Key namespace, global capacity, lease time and command timeout."""

    namespace: str
    capacity: int
    lease_s: float = 10.0
    timeout_s: float = 0.5
    node_id: str = ""
    #: How long a health check's answer is reused (``/readyz`` may be polled often).
    health_s: float = 1.0


def default_node_id() -> str:
    """A node id unique to this process: host, pid and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class RedisCallRegistry:
    """:class:`CallLeases` on Redis (the asyncio client, on the media loop)."""

    def __init__(self, url: str, options: RegistryOptions) -> None:
        self.options = options
        self.node_id = options.node_id or default_node_id()
        self._redis = aioredis.Redis.from_url(
            url,
            socket_timeout=options.timeout_s,
            socket_connect_timeout=options.timeout_s,
            # One immediate retry on a fresh connection: a pooled one a restarted Redis
            # closed fails its next command (the whole exchange stays bounded, _bounded).
            retry=Retry(NoBackoff(), 1),
            retry_on_error=[RedisConnectionError],
        )
        self._keys = [f"{options.namespace}:live", f"{options.namespace}:owners"]
        self._acquire = self._redis.register_script(_ACQUIRE)
        self._renew = self._redis.register_script(_RENEW)
        self._release = self._redis.register_script(_RELEASE)
        self._count = self._redis.register_script(_COUNT)
        self._mine: set[str] = set()
        self._problem: str | None = None
        self._checked_at = -float("inf")

    @property
    def lease_ms(self) -> int:
        """How long a lease lives without renewal, in ms."""
        return max(1, round(self.options.lease_s * 1000))

    def refusal(self) -> Refusal | None:
        """Why a new call would be refused now because of the registry (for ``/readyz``)."""
        if self._problem is None:
            return None
        return Refusal(CLOSE_TRY_AGAIN_LATER, f"call registry unavailable: {self._problem}")

    async def check(self) -> Refusal | None:
        """Like :meth:`refusal`, with a fresh PING when the last answer is older than
        ``health_s`` (bounded by the timeout; concurrent probes share one PING)."""
        now = asyncio.get_running_loop().time()
        if now - self._checked_at >= self.options.health_s:
            self._checked_at = now
            await self._bounded(self._redis.ping())
        return self.refusal()

    async def acquire(self, call_id: str) -> Refusal | None:
        """Take the call's lease, or say why not."""
        args = [call_id, self.node_id, self.options.capacity, self.lease_ms]
        result = await self._script(self._acquire, args)
        if result is None:
            return self.refusal()
        admitted, owner = int(result[0]), _text(result[1])
        if admitted == 1:
            self._mine.add(call_id)
            return None
        if admitted == 0:
            return Refusal(CLOSE_TRY_AGAIN_LATER, f"call {call_id} is live on node {owner}")
        return Refusal(CLOSE_TRY_AGAIN_LATER, f"at capacity ({self.options.capacity} calls)")

    async def release(self, call_id: str) -> None:
        """Give the lease back; if Redis is down it lapses by itself after ``lease_s``."""
        self._mine.discard(call_id)
        await self._script(self._release, [call_id, self.node_id])

    async def renew(self) -> int:
        """Renew this node's leases now; how many were renewed."""
        if not self._mine:
            return 0
        renewed = await self._script(self._renew, [self.node_id, self.lease_ms, *self._mine])
        return 0 if renewed is None else int(renewed)

    async def active_calls(self) -> int:
        """Live calls across every node (leases not yet expired)."""
        count = await self._script(self._count, [], keys=self._keys[:1])
        return 0 if count is None else int(count)

    async def keep_alive(self) -> None:
        """Renew this node's leases every third of the lease time, until cancelled; check the
        server too, so a node with no call sees Redis come back without a probe."""
        while True:
            await self.renew()
            await self.check()
            await asyncio.sleep(self.options.lease_s / 3)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._redis.aclose()

    async def _script(
        self, script: AsyncScript, args: list[Any], keys: list[str] | None = None
    ) -> Any:
        """Run a script within a bound; a failure is recorded for :meth:`refusal`."""
        return await self._bounded(script(keys=keys or self._keys, args=args))

    async def _bounded(self, command: Awaitable[Any]) -> Any:
        """Await one command within a bound; its failure is recorded for :meth:`refusal`."""
        try:
            # The socket timeout bounds each read; this bounds the whole exchange too.
            async with asyncio.timeout(self.options.timeout_s * 2):
                result = await command
        except (RedisError, OSError, TimeoutError) as error:
            problem = str(error) or type(error).__name__
            if problem != self._problem:  # once per outage, not once per renewal
                log.warning("call registry unavailable: %s", problem)
            self._problem = problem
            return None
        if self._problem is not None:
            log.info("call registry reachable again")
        self._problem = None
        return result


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
