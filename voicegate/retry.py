"""When a failed request to a model, speech service or store is worth another try, and how long
to wait before it (the OpenAI-compatible chat client, the OpenAI speech engine and the Redis
store use it).

A caller waits in silence while a request is retried, so retries live within a time budget:
exponential backoff with jitter (AWS Architecture Blog, "Exponential Backoff And Jitter",
the "equal jitter" variant), a ``Retry-After`` the server sends taking precedence (RFC 9110
§10.2.3) unless it would overrun the budget, in which case the error is reported at once and
the caller hears the apology instead.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import aiohttp

log = logging.getLogger(__name__)

#: Statuses a retry may cure: rate limits and the provider's own failures (OpenAI API docs,
#: "Error codes": 429, 500, 503; gateways in front of it answer 502 and 504).
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many attempts, the backoff's base and cap, and the whole wait's budget."""

    attempts: int = 3
    base_s: float = 0.25
    max_s: float = 2.0
    budget_s: float = 4.0
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def delay_s(self, attempt: int, elapsed_s: float, retry_after_s: float | None) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` (0-based ``attempt`` just failed),
        or None when no retry fits: attempts used up, or the wait would pass the budget."""
        if attempt + 1 >= self.attempts:
            return None
        cap = min(self.max_s, self.base_s * 2**attempt)
        delay = cap / 2 + self.rng.uniform(0, cap / 2)
        if retry_after_s is not None:
            delay = max(delay, retry_after_s)
        return delay if elapsed_s + delay <= self.budget_s else None


NO_RETRY = RetryPolicy(attempts=1)

T = TypeVar("T")


def call_retrying(
    call: Callable[[], T],
    policy: RetryPolicy,
    retryable: tuple[type[Exception], ...],
    what: str,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run a blocking ``call``, retrying the ``retryable`` errors within ``policy`` (each
    retry logged); the result, or the last error once no retry fits.

    For clients that block their own thread (the Redis store on the dialogue plane); the
    caller bounds each attempt (e.g. a socket timeout), the policy bounds how many and the wait.
    """
    started, attempt = time.monotonic(), 0
    while True:
        try:
            return call()
        except retryable as error:
            delay = policy.delay_s(attempt, time.monotonic() - started, None)
            if delay is None:
                raise
            attempt += 1
            log.warning("%s failed (%s); attempt %d in %.2f s", what, error, attempt + 1, delay)
            sleep(delay)


def retry_after_s(value: str | None, now: datetime | None = None) -> float | None:
    """A ``Retry-After`` header in seconds: delay-seconds or an HTTP date (None: absent/bad)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


async def post_retrying(
    http: aiohttp.ClientSession,
    url: str,
    policy: RetryPolicy,
    *,
    json: Any,
    headers: Mapping[str, str],
    redact: Callable[[str], str] = str,
) -> aiohttp.ClientResponse:
    """POST ``json`` to ``url``, retrying what a retry may cure (:data:`RETRY_STATUSES`,
    refused or reset connections) within ``policy``; the last response, or the last error.

    A read timeout is not retried: a service too slow to answer would be as slow again.
    ``redact`` scrubs a logged cause (e.g. of an API key).
    """
    started, attempt = time.monotonic(), 0
    while True:
        try:
            response = await http.post(url, json=json, headers=headers, allow_redirects=False)
        except aiohttp.ClientConnectionError as error:  # refused, reset, connect timeout
            delay = policy.delay_s(attempt, time.monotonic() - started, None)
            if delay is None or isinstance(error, aiohttp.SocketTimeoutError):
                raise
            cause = redact(f"{type(error).__name__}: {error}")
        else:
            if response.status not in RETRY_STATUSES:
                return response
            waited = retry_after_s(response.headers.get("Retry-After"))
            delay = policy.delay_s(attempt, time.monotonic() - started, waited)
            if delay is None:
                return response  # the caller reports it, with the server's text
            response.close()
            cause = f"HTTP {response.status}"
        attempt += 1
        log.warning("%s failed (%s); attempt %d in %.2f s", url, cause, attempt + 1, delay)
        await asyncio.sleep(delay)
