"""``context.memory``: a tool's scoped view of memory (tools reference, contract §4.7)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from voicegate.engine.memory.fields import PROJECT, MemoryField
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.memory.state import MemoryState
from voicegate.errors import MemoryWriteError, ProjectMemoryAlreadySetError

log = logging.getLogger(__name__)

#: Called after every write that reached the store (history, timeline).
WriteObserver = Callable[[FieldRef, Any, MemoryField], None]


class MemorySlice:
    """Reads and writes on behalf of one tool invocation, scoped to the active skill."""

    def __init__(
        self,
        state: MemoryState,
        active_skill: str | None,
        *,
        on_write: WriteObserver | None = None,
        skip_set_project_fields: bool = False,
    ) -> None:
        self._state = state
        self._skill = active_skill
        self._on_write = on_write
        # Post-write hooks leave an already-set project field untouched instead of failing
        # (tools reference, "context.memory"; contract §4.4).
        self._skip_set_project = skip_set_project_fields

    @property
    def active_skill(self) -> str | None:
        """The skill bare names resolve against first."""
        return self._skill

    def get(self, name: str, default: Any = None) -> Any:
        """The value of ``name``; ``default`` when unset, stored as None, or unreadable.

        Never raises (tools reference): an undeclared or malformed name reads as unset.
        """
        if not isinstance(name, str):
            return default
        ref = self._state.schema.readable(name, self._skill)
        if ref is None:
            return default
        value = self._state.value(ref)
        return default if value is None else value

    def set(self, name: str, value: Any) -> None:
        """Write through at once; raises MemoryWriteError when a declared rule forbids it."""
        if not isinstance(name, str):
            raise MemoryWriteError(f"memory entry names are strings, got {name!r}")
        ref = self._state.schema.writable(name, self._skill)
        declared = self._state.schema.field(ref)
        assert declared is not None  # writable() only returns declared fields
        value = declared.normalized(value)
        problem = declared.value_problem(value)
        if problem is not None:
            raise MemoryWriteError(f"{ref.qualified}: {problem}")
        if self._is_set_once(ref, declared):
            if self._skip_set_project:
                log.info("%s is already set; a post-write hook leaves it", ref.qualified)
                return
            raise ProjectMemoryAlreadySetError(
                f"{ref.qualified} is already set and is not declared mutable"
            )
        stored = list(value) if isinstance(value, tuple) else value
        self._state.write(ref, stored)
        if self._on_write is not None:
            self._on_write(ref, stored, declared)

    def _is_set_once(self, ref: FieldRef, declared: MemoryField) -> bool:
        # "Already set" means "current value is not None" (contract §4.4 [ex R-NOUR]).
        if ref.namespace != PROJECT or declared.mutable:
            return False
        return self._state.value(ref) is not None
