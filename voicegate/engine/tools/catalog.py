"""Which tools exist, which the model may call, and where hooks are found.

Until skills are routed (issue 6), every skill-local tool is offered and runs with its own
skill as the active skill, which scopes its ``context.memory``. When two skills define the
same name, the skill first in id order wins and the clash is logged; post-write hooks
(``run_after_setting_*``) are never offered (contract §7.3). A skill's tools may be local
``@tool`` functions or remote tools (MCP imports): anything :class:`InvocableTool`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from voicegate.engine.tools.invocable import InvocableTool
from voicegate.engine.tools.reserved import hook_name, is_hook

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BoundTool:
    """A tool and the skill it belongs to (None for a tool outside any skill)."""

    tool: InvocableTool
    skill_id: str | None

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.tool.name


class ToolCatalog:
    """The project's local tools, by skill."""

    def __init__(self, skills: Mapping[str, Mapping[str, InvocableTool]]) -> None:
        self._skills = {skill_id: dict(tools) for skill_id, tools in skills.items()}
        self._offered: dict[str, BoundTool] = {}
        for skill_id in sorted(self._skills):
            for name, tool in sorted(self._skills[skill_id].items()):
                if is_hook(name):
                    continue
                if name in self._offered:
                    log.warning(
                        "tool %r of skill %r is shadowed by skill %r's tool of the same name",
                        name,
                        skill_id,
                        self._offered[name].skill_id,
                    )
                    continue
                self._offered[name] = BoundTool(tool, skill_id)

    def offered(self) -> list[BoundTool]:
        """The tools the model may call, in name order."""
        return [self._offered[name] for name in sorted(self._offered)]

    def find(self, name: str) -> BoundTool | None:
        """The model-callable tool called ``name``, if any (hooks are not model-callable)."""
        return self._offered.get(name)

    def local(self, skill_id: str, name: str) -> BoundTool | None:
        """A skill's own tool by name, hooks included."""
        found = self._skills.get(skill_id, {}).get(name)
        return BoundTool(found, skill_id) if found is not None else None

    def hook(self, skill_id: str, entry: str) -> BoundTool | None:
        """The post-write hook ``run_after_setting_<entry>`` of a skill, if it defines one."""
        return self.local(skill_id, hook_name(entry))
