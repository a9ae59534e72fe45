"""Where memory values live: one protocol, an in-memory store for tests.

Every ``context.memory.set`` is written through at once (tools reference; contract §4.7), so a
write made by a tool that is then cancelled is kept, also across a restart (design §4 point 4).
The interface is synchronous because ``context.memory.set`` is: a store that talks to a server
(a later Redis store) implements it with a synchronous client or its own durable buffer.
Values cross the interface as JSON text, so no caller can alias a stored list or dict.
"""

from __future__ import annotations

from typing import Protocol


class MemoryStore(Protocol):
    """Durable memory values, keyed by conversation, namespace and entry."""

    def load(self, conversation_id: str) -> dict[tuple[str, str], str]:
        """Every stored value of a conversation as ``{(namespace, entry): json_text}``."""
        ...

    def save(self, conversation_id: str, namespace: str, entry: str, json_value: str) -> None:
        """Store one value durably before returning."""
        ...

    def close(self) -> None:
        """Release the store's resources."""
        ...


class InMemoryStore:
    """A store in a dict: fast and isolated, for tests; gone when the process ends."""

    def __init__(self) -> None:
        self._values: dict[str, dict[tuple[str, str], str]] = {}
        self.saves = 0

    def load(self, conversation_id: str) -> dict[tuple[str, str], str]:
        """Every stored value of a conversation."""
        return dict(self._values.get(conversation_id, {}))

    def save(self, conversation_id: str, namespace: str, entry: str, json_value: str) -> None:
        """Store one value."""
        self._values.setdefault(conversation_id, {})[(namespace, entry)] = json_value
        self.saves += 1

    def close(self) -> None:
        """Nothing to release."""
