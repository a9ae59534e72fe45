"""Memory and resumable call state on a Redis server shared by every node (issue 13).

Why the synchronous client: the engine calls its store synchronously from the dialogue
plane's thread (``context.memory.set`` is synchronous in the tools reference, and
``MemoryState.write`` runs on the engine loop, ``engine/tools/isolation.py``). Making the
store port async would ripple through ``MemorySlice``, ``EngineCalls`` and every tool's
``memory.set``; a synchronous round trip to Redis (~0.1-0.5 ms on a LAN) blocks only the
dialogue plane, never the media plane (design §10), exactly as the SQLite commit does. Every
command has a timeout and a bounded retry (``voicegate/retry.py``, each retry logged), so a
write either lands or raises ``StoreError``; nothing waits on Redis without a bound.

Keys (docs/redis.md), ``<ns>`` being ``<key_prefix>:<project>``:

- ``<ns>:mem:<conversation>``: a hash ``[namespace, entry]`` (JSON) -> value (JSON text);
  its TTL is renewed on every write and every load.
- ``<ns>:call:<call id>``: a hash with ``epoch`` (the fencing token) and ``state`` (the
  resumable dialogue state, JSON); its TTL is renewed on every claim and save.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.client import Pipeline
from redis.retry import Retry

from voicegate.errors import StaleCallError, StoreError
from voicegate.retry import RetryPolicy, call_retrying

# Atomic claim of a call: bump the epoch, return it with the saved state (KEYS[1] the call
# hash, ARGV[1] the TTL in ms). A node that claims is from now on the only writer.
_CLAIM = """
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
local state = redis.call('HGET', KEYS[1], 'state')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {epoch, state}
"""

# Fenced save: written only while ARGV[1] is still the call's epoch (a stale node that comes
# back after another node claimed the call is refused, issue 13). Returns 1 or 0. A call hash
# that is gone (its TTL passed, or a Redis without persistence restarted) is written again
# with this epoch: no node holds a newer claim it could overwrite.
_SAVE = """
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if epoch and epoch ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'epoch', ARGV[1], 'state', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

# Fenced memory write, the same check: KEYS[1] the call hash, KEYS[2] the memory hash; ARGV:
# epoch, field, value, memory TTL ms. Returns 1, or 0 when another node claimed the call.
_SAVE_MEMORY = """
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if epoch and epoch ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1
"""

#: The errors a retry may cure: the server unreachable, or too slow for one attempt.
_RETRYABLE = (redis.ConnectionError, redis.TimeoutError)


@dataclass(frozen=True, slots=True)
class RedisOptions:
    """How the store talks to Redis and how long keys live (``store`` settings)."""

    namespace: str
    memory_ttl_s: float = 30 * 24 * 3600.0
    call_ttl_s: float = 3600.0
    timeout_s: float = 0.5
    retries: int = 2

    @property
    def retry(self) -> RetryPolicy:
        """``retries`` more attempts, waits from 50 ms, all within ``(retries + 1) * timeout_s``."""
        return RetryPolicy(
            attempts=self.retries + 1,
            base_s=0.05,
            max_s=self.timeout_s,
            budget_s=(self.retries + 1) * self.timeout_s,
        )


class RedisStore:
    """A ``MemoryStore`` and ``CallStateStore`` on one Redis server."""

    def __init__(self, url: str, options: RedisOptions) -> None:
        self.options = options
        # The client's own retries are off: ours are bounded by a budget and logged.
        retry = Retry(NoBackoff(), 0)
        try:
            self._redis: redis.Redis = redis.Redis.from_url(
                url,
                socket_timeout=options.timeout_s,
                socket_connect_timeout=options.timeout_s,
                retry=retry,
                decode_responses=True,
            )
        except ValueError as error:
            raise StoreError(f"bad Redis URL: {error}") from None
        self._claim = self._redis.register_script(_CLAIM)
        self._save = self._redis.register_script(_SAVE)
        self._save_memory = self._redis.register_script(_SAVE_MEMORY)

    def memory_key(self, conversation_id: str) -> str:
        """The hash holding a conversation's memory."""
        return f"{self.options.namespace}:mem:{conversation_id}"

    def call_key(self, call_id: str) -> str:
        """The hash holding a call's epoch and resumable state."""
        return f"{self.options.namespace}:call:{call_id}"

    def ping(self) -> None:
        """Fail now with ``StoreError`` when the server cannot be reached."""
        self._run("ping", self._redis.ping)

    # --- MemoryStore ----------------------------------------------------------------------------

    def load(self, conversation_id: str) -> dict[tuple[str, str], str]:
        """Every stored value of a conversation; reading renews its TTL."""
        key, ttl = self.memory_key(conversation_id), _ms(self.options.memory_ttl_s)
        rows, _ = self._run("read", self._transaction, lambda p: p.hgetall(key).pexpire(key, ttl))
        return {_field(name): value for name, value in rows.items()}

    def save(self, conversation_id: str, namespace: str, entry: str, json_value: str) -> None:
        """Store one value before returning (HSET is idempotent, so a retry applies it once)."""
        key, ttl = self.memory_key(conversation_id), _ms(self.options.memory_ttl_s)
        field = json.dumps([namespace, entry])
        self._run(
            "write", self._transaction, lambda p: p.hset(key, field, json_value).pexpire(key, ttl)
        )

    def _transaction(self, queue: Callable[[Pipeline], object]) -> list[Any]:
        """The commands ``queue`` adds, in one MULTI/EXEC. A fresh pipeline per attempt: one
        that failed is emptied, and executing it again would send nothing."""
        pipe = self._redis.pipeline(transaction=True)
        queue(pipe)
        return pipe.execute()

    def close(self) -> None:
        """Release the connection pool."""
        self._redis.close()

    # --- CallStateStore -------------------------------------------------------------------------

    def claim(self, call_id: str) -> tuple[int, str | None]:
        """Take the call over: a new epoch, and the state a previous node saved (if any)."""
        ttl = _ms(self.options.call_ttl_s)
        epoch, state = self._run("claim", self._claim, [self.call_key(call_id)], [ttl])
        return int(epoch), state

    def save_state(self, call_id: str, epoch: int, state_json: str) -> None:
        """Save the call's state unless another node claimed it since (``StaleCallError``)."""
        ttl = _ms(self.options.call_ttl_s)
        args = [epoch, state_json, ttl]
        if not self._run("state write", self._save, [self.call_key(call_id)], args):
            raise StaleCallError(f"call {call_id!r} was taken over by another node")

    def save_memory(
        self,
        call_id: str,
        epoch: int,
        conversation_id: str,
        namespace: str,
        entry: str,
        json_value: str,
    ) -> None:
        """Store one memory value unless another node claimed the call (``StaleCallError``)."""
        keys = [self.call_key(call_id), self.memory_key(conversation_id)]
        field = json.dumps([namespace, entry])
        args = [epoch, field, json_value, _ms(self.options.memory_ttl_s)]
        if not self._run("write", self._save_memory, keys, args):
            raise StaleCallError(f"call {call_id!r} was taken over by another node")

    def _run(self, what: str, command: Any, *args: Any) -> Any:
        """Run one command, retried within the options' bound; a failure is a ``StoreError``.

        Every command here is safe to repeat: HSET sets the same value, a fenced script
        checks the same epoch, and a claim repeated after a lost reply only bumps the
        epoch once more (the later claim is the one this node holds).
        """
        try:
            return call_retrying(
                lambda: command(*args), self.options.retry, _RETRYABLE, f"Redis {what}"
            )
        except redis.RedisError as error:
            raise StoreError(f"Redis {what} failed: {error}") from error


def _field(name: str) -> tuple[str, str]:
    namespace, entry = json.loads(name)
    return str(namespace), str(entry)


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))
