"""When a failed model request is worth another try, and how long to wait before it.

A caller waits in silence while the model is retried, so retries live within a time budget:
exponential backoff with jitter (AWS Architecture Blog, "Exponential Backoff And Jitter",
the "equal jitter" variant), a ``Retry-After`` the server sends taking precedence (RFC 9110
§10.2.3) unless it would overrun the budget, in which case the error is reported at once and
the caller hears the apology instead.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

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
