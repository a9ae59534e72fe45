"""Skills' ``mcp/<server>:<tool>`` imports: checked, then resolved against server listings.

skill.md reference, ``import_tools`` ("Collisions and load failures") and contract §10.2:

- the server must be declared under ``mcp_servers``;
- the tool name is sent to the model as-is, so it must match ``^[A-Za-z0-9_-]{1,64}$``;
- within one skill, bare names are unique across local tools, shared imports and MCP imports
  (``mcp/a:echo`` next to ``mcp/b:echo``, or next to a local ``echo``, is refused);
- at startup, an imported tool the server does not list stops startup [ex R-SARA].

Only allowlisted tools are attached to a skill: a server's other tools are never offered. The
project loader runs the first three checks at validate time without connecting (issue 5);
they are repeated here so a project built in code is held to the same rules.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from voicegate.engine.project.model import Project
from voicegate.engine.tools.catalog import ToolCatalog
from voicegate.engine.tools.invocable import InvocableTool
from voicegate.engine.tools.remote import RemoteTool
from voicegate.engine.tools.schema import ToolSpec
from voicegate.errors import McpServerError
from voicegate.mcp.config import McpServerConfig

if TYPE_CHECKING:  # the mcp package is a second of imports; checking imports needs none of it
    from mcp.types import Tool

    from voicegate.mcp.server import McpServer

MCP_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class McpImport:
    """One skill's ``mcp/<server>:<tool>`` entry; ``where`` locates it (``file:line``)."""

    skill_id: str
    server: str
    tool: str
    where: str = ""

    @property
    def entry(self) -> str:
        """The entry as written in ``import_tools``."""
        return f"mcp/{self.server}:{self.tool}"


def project_imports(project: Project) -> tuple[McpImport, ...]:
    """Every skill's MCP imports, in skill order, as written in ``import_tools``."""
    found: list[McpImport] = []
    for skill_id, skill in sorted(project.skills.items()):
        path = str(skill.path / "skill.md") if skill.path is not None else f"skills/{skill_id}"
        for entry in skill.frontmatter.import_tools:
            if entry.server is not None:
                where = f"{path}:{entry.line}" if entry.line else path
                found.append(McpImport(skill_id, entry.server, entry.name, where))
    return tuple(found)


def project_catalog(
    project: Project, imported: Mapping[str, Mapping[str, RemoteTool]]
) -> ToolCatalog:
    """The catalog of every skill's local tools plus its imported MCP tools."""
    skills: dict[str, dict[str, InvocableTool]] = {}
    for skill_id, skill in project.skills.items():
        skills[skill_id] = {**skill.tools, **imported.get(skill_id, {})}
    return ToolCatalog(skills)


def project_tool_names(project: Project) -> dict[str, frozenset[str]]:
    """Each skill's local tools and shared imports: the names an MCP import may not take."""
    names: dict[str, frozenset[str]] = {}
    for skill_id, skill in project.skills.items():
        shared = {
            entry.name
            for entry in skill.frontmatter.import_tools
            if entry.server is None and entry.name in project.shared_tools
        }
        names[skill_id] = frozenset(skill.tools) | shared
    return names


def check_imports(
    imports: Collection[McpImport],
    servers: Mapping[str, McpServerConfig],
    taken: Mapping[str, Collection[str]],
) -> None:
    """Refuse an unknown server, an invalid tool name or a bare-name collision (no I/O)."""
    claimed: dict[tuple[str, str], McpImport] = {}
    for item in imports:
        _check_one(item, servers, taken.get(item.skill_id, ()))
        earlier = claimed.get((item.skill_id, item.tool))
        if earlier is not None and earlier.server != item.server:
            raise McpServerError(
                f"{item.where}: skill {item.skill_id!r} imports {earlier.entry!r} and "
                f"{item.entry!r}, which both resolve to the bare name {item.tool!r}"
            )
        claimed[(item.skill_id, item.tool)] = item


def _check_one(
    item: McpImport, servers: Mapping[str, McpServerConfig], taken: Collection[str]
) -> None:
    if item.server not in servers:
        declared = ", ".join(sorted(servers)) or "none"
        raise McpServerError(
            f"{item.where}: skill {item.skill_id!r} imports {item.entry!r}, but integrations.yml "
            f"declares no MCP server {item.server!r} under mcp_servers (declared: {declared})"
        )
    if not MCP_TOOL_NAME.match(item.tool):
        raise McpServerError(
            f"{item.where}: {item.entry!r}: the tool name is sent to the model as-is, so it may "
            "only contain letters, digits, '_' and '-' (at most 64 characters)"
        )
    if item.tool in taken:
        raise McpServerError(
            f"{item.where}: skill {item.skill_id!r} imports {item.entry!r}, whose bare name "
            f"collides with the skill's own or shared tool {item.tool!r}"
        )


def resolve_imports(
    imports: Collection[McpImport], servers: Mapping[str, McpServer]
) -> dict[str, dict[str, RemoteTool]]:
    """Each skill's imported tools, by bare name, from the connected servers' listings."""
    by_skill: dict[str, dict[str, RemoteTool]] = {}
    for item in imports:
        server = servers[item.server]
        listed = server.tools.get(item.tool)
        if listed is None:
            offered = ", ".join(sorted(server.tools)) or "no tools"
            raise McpServerError(
                f"{item.where}: skill {item.skill_id!r} imports {item.entry!r}, but MCP server "
                f"{item.server!r} does not list a tool {item.tool!r} (it offers: {offered})"
            )
        by_skill.setdefault(item.skill_id, {})[item.tool] = remote_tool(server, listed)
    return by_skill


def remote_tool(server: McpServer, listed: Tool) -> RemoteTool:
    """The engine's view of a listed tool: bare name, the server's schema, the server's limit."""
    spec = ToolSpec(listed.name, (listed.description or "").strip(), dict(listed.input_schema))
    call = functools.partial(server.run, listed.name)
    return RemoteTool(spec, call, "mcp", server.config.tool_timeout)
