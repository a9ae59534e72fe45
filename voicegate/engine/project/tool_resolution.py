"""Which tools a skill may use, by bare name (tools reference; contract §8.3, §10.2).

Resolution order: the skill's own tools (``tools.py`` and ``tools/*.py``, no declaration),
then shared root tools listed in ``import_tools``, then ``mcp/<server>:<tool>`` entries. First
match wins between local and shared (a local tool shadows a shared one, logged). Refused:

- two ``import_tools`` entries with the same bare name (``mcp/a:echo`` + ``mcp/b:echo``);
- an MCP bare name colliding with a local tool;
- an MCP server id that ``integrations.yml`` does not declare under ``mcp_servers``;
- an MCP tool name that is not a valid LLM function name (letters, digits, ``_``, ``-``; at
  most 64 characters) — the server id itself may contain dots;
- a shared name with no such tool in ``tools/*.py``; listing one of the skill's own tools
  (local tools are discovered and must not be listed) is reported the same way.

Post-write hooks (``run_after_setting_<entry>``) are kept apart from the toolset: the LLM never
sees them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass

from voicegate.engine.project import codes
from voicegate.engine.project.config_model import McpServer
from voicegate.engine.project.model import ResolvedTool, ToolOrigin
from voicegate.engine.project.problems import Problems
from voicegate.engine.project.skill_model import ToolImport
from voicegate.engine.project.tool_modules import LoadedTools
from voicegate.engine.tools.reserved import is_hook

log = logging.getLogger(__name__)

_MCP_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class Toolset:
    """A skill's resolved tools and hooks, and whether the list is known to be complete."""

    tools: Mapping[str, ResolvedTool]
    hooks: Mapping[str, ResolvedTool]
    complete: bool


def resolve_tools(
    local: LoadedTools,
    shared: LoadedTools,
    imports: tuple[ToolImport, ...],
    servers: Mapping[str, McpServer] | None,
    path: str,
    problems: Problems,
) -> Toolset:
    """Resolve one skill's tools; ``servers`` is None when integrations.yml did not load."""
    tools: dict[str, ResolvedTool] = {}
    hooks: dict[str, ResolvedTool] = {}
    for name, found in local.tools.items():
        (hooks if is_hook(name) else tools)[name] = ResolvedTool(name, ToolOrigin.LOCAL, found)
    claimed: dict[str, ToolImport] = {}
    for entry in imports:
        if entry.name in claimed:
            problems.add(
                codes.TOOL_DUPLICATE_NAME,
                f"import_tools entries {claimed[entry.name].entry!r} and {entry.entry!r} both "
                f"resolve to the bare name {entry.name!r}",
                path,
                entry.line,
            )
            continue
        claimed[entry.name] = entry
        resolved = (
            _mcp(entry, local, servers, path, problems)
            if entry.server
            else _shared(entry, local, shared, path, problems)
        )
        if resolved is not None and resolved.name not in local.tools:
            (hooks if is_hook(resolved.name) else tools)[resolved.name] = resolved
    return Toolset(tools, hooks, local.complete and shared.complete and servers is not None)


def _mcp(
    entry: ToolImport,
    local: LoadedTools,
    servers: Mapping[str, McpServer] | None,
    path: str,
    problems: Problems,
) -> ResolvedTool | None:
    if not _MCP_TOOL_NAME.match(entry.name):
        problems.add(
            codes.TOOL_INVALID_MCP_NAME,
            f"{entry.entry!r}: the tool name {entry.name!r} is sent to the model as-is, so it may "
            "only contain letters, digits, '_' and '-' (at most 64 characters)",
            path,
            entry.line,
        )
        return None
    if servers is not None and entry.server not in servers:
        declared = ", ".join(sorted(servers)) or "none"
        problems.add(
            codes.TOOL_UNKNOWN_MCP_SERVER,
            f"{entry.entry!r}: no MCP server {entry.server!r} in integrations.yml mcp_servers "
            f"(declared: {declared})",
            path,
            entry.line,
        )
        return None
    if entry.name in local.tools:
        problems.add(
            codes.TOOL_DUPLICATE_NAME,
            f"{entry.entry!r} has the same bare name as this skill's own tool {entry.name!r}",
            path,
            entry.line,
        )
        return None
    return ResolvedTool(entry.name, ToolOrigin.MCP, None, entry.server)


def _shared(
    entry: ToolImport, local: LoadedTools, shared: LoadedTools, path: str, problems: Problems
) -> ResolvedTool | None:
    found = shared.tools.get(entry.name)
    if found is not None:
        if entry.name in local.tools:
            log.info("%s: local tool %r shadows the shared one", path, entry.name)
        return ResolvedTool(entry.name, ToolOrigin.SHARED, found)
    if entry.name in local.tools:
        problems.add(
            codes.UNRESOLVED_TOOL,
            f"{entry.name!r} is this skill's own tool: local tools are discovered automatically "
            "and must not be listed in import_tools",
            path,
            entry.line,
        )
    elif shared.complete:
        problems.add(
            codes.UNRESOLVED_TOOL,
            f"import_tools lists {entry.name!r}, but no matching @tool function was found in the "
            "shared tools/*.py",
            path,
            entry.line,
        )
    return None
