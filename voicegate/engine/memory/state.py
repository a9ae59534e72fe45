"""One conversation's memory: current values, written through to a store on every change."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from voicegate.engine.memory.coercion import coerce
from voicegate.engine.memory.fields import PROJECT
from voicegate.engine.memory.schema import FieldRef, MemorySchema
from voicegate.engine.memory.store import MemoryStore
from voicegate.errors import StoreError

log = logging.getLogger(__name__)


class MemoryState:
    """Values of the declared fields of one conversation, backed by a store.

    Values are kept as JSON text, so every read returns a fresh object: a tool that mutates a
    list it read does not change memory behind the store's back (memory is the only write
    path, tools reference).
    """

    def __init__(self, schema: MemorySchema, store: MemoryStore, conversation_id: str) -> None:
        self.schema = schema
        self.conversation_id = conversation_id
        self._store = store
        #: The first write the store could not take: the call must end (a tool that catches
        #: the error must not make the write silently lost; docs/redis.md).
        self.failure: StoreError | None = None
        self._values = {
            FieldRef(namespace, entry): text
            for (namespace, entry), text in store.load(conversation_id).items()
        }

    def value(self, ref: FieldRef) -> Any:
        """The stored value of ``ref``, or None when it is unset or cleared."""
        text = self._values.get(ref)
        return None if text is None else json.loads(text)

    def write(self, ref: FieldRef, value: Any) -> None:
        """Store ``value`` (already validated) through to the store, then in this view."""
        text = json.dumps(value)
        try:
            self._store.save(self.conversation_id, ref.namespace, ref.entry, text)
        except StoreError as error:
            self.failure = self.failure or error
            raise
        self._values[ref] = text

    def check(self) -> None:
        """Raise the store failure a write met, if any (the engine ends the call on it)."""
        if self.failure is not None:
            raise self.failure

    def set_values(self) -> dict[FieldRef, Any]:
        """Every field that currently holds a non-None value."""
        values = {ref: json.loads(text) for ref, text in self._values.items()}
        return {ref: value for ref, value in values.items() if value is not None}

    def start_session(self, metadata: Mapping[str, Any]) -> list[FieldRef]:
        """Seed ``seed: true`` project fields from session metadata, then apply initial values.

        Contract §4.4 leaves the metadata mapping open (§11 question 4); here a metadata key
        equal to the entry name seeds it, once, at session start, coerced to the field's type
        as ``set_fields`` coerces. Fields that already hold a
        value (a resumed conversation) are left alone. Returns the fields written.
        """
        written: list[FieldRef] = []
        for entry, declared in self.schema.project.items():
            ref = FieldRef(PROJECT, entry)
            if not declared.seed or entry not in metadata or self.value(ref) is not None:
                continue
            # Channel metadata is text (Twilio <Parameter>, SIP headers, query strings), so a
            # seed is read as set_fields reads a value: "3" for an int, "true" for a bool.
            value, problem = coerce(declared, declared.normalized(metadata[entry]))
            if problem is not None:
                log.warning("session metadata %r not seeded: %s", entry, problem)
                continue
            self.write(ref, value)
            written.append(ref)
        for ref in self.schema.all_refs():
            initial = getattr(self.schema.field(ref), "initial_value", None)
            if initial is not None and self.value(ref) is None:
                self.write(ref, initial)
                written.append(ref)
        return written

    def reset_skill(self, skill_id: str) -> list[FieldRef]:
        """Reset a skill's fields to their initial values, as activation does (contract §4.5)."""
        skill = self.schema.skills.get(skill_id)
        if skill is None:
            return []
        refs = [FieldRef(skill_id, entry) for entry in skill.fields]
        for ref in refs:
            self.write(ref, skill.fields[ref.entry].initial_value)
        return refs
