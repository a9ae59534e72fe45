"""Which memory fields a condition, token or template may read (contract §3.3, §4.2).

For a skill S: S's public and private fields, every other skill's public fields and all
project fields. For project-level files (the root ``responses.yml``) no skill is active:
project fields and every skill's public fields. ``system`` is never readable. Namespaces
whose ``memory.yml`` failed to load are not judged, so one broken file does not cascade.

voicegate's choice on an open question (§11 question 2): referencing an undeclared field is
a load error, not a condition that is silently false at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from voicegate.engine.memory.fields import PROJECT, SYSTEM, Visibility
from voicegate.engine.memory.schema import FieldRef, MemorySchema

UNDECLARED = "undeclared"
UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class ReadScope:
    """The readable memory of one skill (or of project-level text when ``skill_id`` is None)."""

    schema: MemorySchema
    skill_id: str | None = None
    unjudged: frozenset[str] = field(default_factory=frozenset)

    def complaint(self, ref: FieldRef) -> tuple[str, str] | None:
        """``(UNDECLARED | UNREADABLE, message)`` when ``ref`` may not be read, else None."""
        if ref.namespace in self.unjudged:
            return None
        if ref.namespace == SYSTEM:
            return UNREADABLE, "the system namespace is reserved to the engine"
        if ref.namespace != PROJECT and ref.namespace not in self.schema.skills:
            return (
                UNDECLARED,
                f"there is no skill {ref.namespace!r} (namespaces: project or a skill id)",
            )
        declared = self.schema.field(ref)
        if declared is None:
            return (
                UNDECLARED,
                f"{ref.namespace}.{ref.entry} is not declared in {_file(ref.namespace)}",
            )
        private = declared.visibility is Visibility.PRIVATE
        if private and ref.namespace not in (PROJECT, self.skill_id):
            return UNREADABLE, f"{ref.qualified} is a private field of skill {ref.namespace!r}"
        return None

    def bare(self, entry: str) -> FieldRef | None:
        """Resolve a bare template ``{entry}``: this skill's field first, then project."""
        if self.skill_id is not None:
            return self.schema.readable(entry, self.skill_id)
        if entry in self.schema.project:
            return FieldRef(PROJECT, entry)
        for skill_id in sorted(self.schema.skills):
            declared = self.schema.skills[skill_id].get(entry)
            if declared is not None and declared.visibility is Visibility.PUBLIC:
                return FieldRef(skill_id, entry)
        return None


def _file(namespace: str) -> str:
    return "the project memory.yml" if namespace == PROJECT else f"skills/{namespace}/memory.yml"
