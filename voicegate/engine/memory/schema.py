"""The whole project's memory declarations and the name rules of ``context.memory``.

Contract §4.1-§4.3 and the tools reference ("context.memory"): a bare name resolves against the
active skill first, then the project; ``project.<entry>`` always means project memory;
``<skill_id>.<entry>`` names a skill field. Reads see the active skill's public and private
fields, other skills' public fields and project fields. Writes reach only the active skill and
the project.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from voicegate.engine.memory.fields import PROJECT, SYSTEM, MemoryField, SkillMemory, Visibility
from voicegate.errors import MemoryWriteError


@dataclass(frozen=True, slots=True)
class FieldRef:
    """A resolved memory field: namespace (a skill id or ``project``) and entry name."""

    namespace: str
    entry: str

    @property
    def qualified(self) -> str:
        """``<namespace>.<entry>``, the tool-side fully-qualified name."""
        return f"{self.namespace}.{self.entry}"


@dataclass(frozen=True, slots=True)
class MemorySchema:
    """Project fields (root ``memory.yml``) and every skill's declared fields."""

    project: Mapping[str, MemoryField] = field(default_factory=dict)
    skills: Mapping[str, SkillMemory] = field(default_factory=dict)

    def field(self, ref: FieldRef) -> MemoryField | None:
        """The declaration behind ``ref``, if any."""
        if ref.namespace == PROJECT:
            return self.project.get(ref.entry)
        skill = self.skills.get(ref.namespace)
        return skill.get(ref.entry) if skill is not None else None

    def all_refs(self) -> list[FieldRef]:
        """Every declared field, project first, then skills in id order."""
        refs = [FieldRef(PROJECT, entry) for entry in self.project]
        for skill_id in sorted(self.skills):
            refs.extend(FieldRef(skill_id, entry) for entry in self.skills[skill_id].fields)
        return refs

    def readable(self, name: str, active_skill: str | None) -> FieldRef | None:
        """Resolve a name for ``get``; None when it is undeclared or not readable."""
        parts = name.split(".")
        if len(parts) == 1:
            return self._bare(name, active_skill)
        if len(parts) != 2 or parts[0] in ("session", SYSTEM):
            return None
        ref = FieldRef(parts[0], parts[1])
        declared = self.field(ref)
        if declared is None:
            return None
        if ref.namespace in (PROJECT, active_skill) or declared.visibility is Visibility.PUBLIC:
            return ref
        return None  # another skill's private field reads as unset (tools reference)

    def writable(self, name: str, active_skill: str | None) -> FieldRef:
        """Resolve a name for ``set``; raises MemoryWriteError saying why it may not be written."""
        parts = name.split(".")
        if parts[0] == "session":
            raise MemoryWriteError(
                f"{name!r}: drop the 'session.' prefix in context.memory (it is for conditions)"
            )
        if parts[0] == SYSTEM:
            raise MemoryWriteError(f"{name!r}: the 'system' namespace is reserved to the engine")
        if len(parts) > 2 or not all(parts):
            raise MemoryWriteError(f"{name!r} is not a memory entry name")
        if len(parts) == 1:
            ref = self._bare(name, active_skill)
            if ref is None:
                raise MemoryWriteError(f"{name!r} is not declared in {self._where(active_skill)}")
            return ref
        return self._qualified_write(name, parts[0], parts[1], active_skill)

    def _qualified_write(
        self, name: str, namespace: str, entry: str, active_skill: str | None
    ) -> FieldRef:
        ref = FieldRef(namespace, entry)
        if namespace != PROJECT and namespace != active_skill:
            if namespace in self.skills:
                raise MemoryWriteError(
                    f"{name!r} belongs to skill {namespace!r}; cross-skill writes are not allowed"
                )
            raise MemoryWriteError(f"{name!r}: unknown memory namespace {namespace!r}")
        if self.field(ref) is None:
            raise MemoryWriteError(f"{name!r} is not declared in {namespace}'s memory.yml")
        return ref

    def _bare(self, entry: str, active_skill: str | None) -> FieldRef | None:
        if active_skill is not None and self.field(FieldRef(active_skill, entry)) is not None:
            return FieldRef(active_skill, entry)
        if entry in self.project:
            return FieldRef(PROJECT, entry)
        return None

    @staticmethod
    def _where(active_skill: str | None) -> str:
        if active_skill is None:
            return "the project memory.yml"
        return f"skills/{active_skill}/memory.yml or the project memory.yml"
