"""Which call a log line is about: a context variable the gateway sets for each call.

The request handler that runs a call sets :data:`CURRENT_CALL` to its ``ActiveCall`` (through
:func:`about_call`); every task of the call inherits it. It also crosses threads without any
help: ``call_soon_threadsafe`` and ``run_coroutine_threadsafe`` run their callback in a copy of
the caller's context, so the engine's work on the dialogue loop (gateway/dialogue.py) and a
tool's on its tool loop (engine/tools/isolation.py) log with the ids of the call they serve.
The variable holds the call itself, not a copy of its ids, so the provider's call id, known
only at the peer's ``start``, appears on every later line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Protocol


class CallIds(Protocol):
    """What a log line shows of a call (``calls.ActiveCall`` has both)."""

    @property
    def call_id(self) -> str:
        """The gateway's own id for the connection (``twilio-...``)."""
        ...

    @property
    def provider_call_id(self) -> str | None:
        """The provider's id (Twilio CallSid), once the call has started."""
        ...


# A context variable must exist once per process to be shared by every task and thread;
# it holds no state of its own (each context has its value).
CURRENT_CALL: ContextVar[CallIds | None] = ContextVar("voicegate_call", default=None)


@contextlib.contextmanager
def about_call(call: CallIds) -> Iterator[None]:
    """While inside (and in every task or thread callback started inside), log about ``call``."""
    token = CURRENT_CALL.set(call)
    try:
        yield
    finally:
        # aiohttp may run the next request of a keep-alive connection in this same task.
        CURRENT_CALL.reset(token)


def current_call_fields() -> dict[str, str]:
    """``call_id`` and ``provider_call_id`` of the call being served here (empty if none)."""
    call = CURRENT_CALL.get()
    if call is None:
        return {}
    fields = {"call_id": call.call_id}
    if call.provider_call_id:
        fields["provider_call_id"] = call.provider_call_id
    return fields
