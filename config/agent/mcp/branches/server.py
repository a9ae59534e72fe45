"""Example Bank's branch directory: a small MCP server shipped with the demo project.

voicegate starts it over stdio when the gateway starts (integrations.yml ``mcp_servers``:
``command: python`` runs it on voicegate's own interpreter, in the project folder) and stops
it on shutdown. Skills allowlist its tools with ``import_tools: [mcp/branches:<tool>]``.
Written with the ``mcp`` package; run it by hand with ``python mcp/branches/server.py``.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

BRANCHES: dict[str, dict[str, str]] = {
    "springfield": {
        "address": "12 Main Street",
        "weekdays": "9:00 to 17:00",
        "saturday": "9:00 to 12:00",
        "sunday": "closed",
    },
    "shelbyville": {
        "address": "4 Harbour Road",
        "weekdays": "8:30 to 16:30",
        "saturday": "closed",
        "sunday": "closed",
    },
}

server = MCPServer("branches", log_level="WARNING")


@server.tool(description="Opening hours and address of the bank's branch in a town")
async def branch_hours(town: str) -> dict[str, str]:
    """The branch's address and opening hours; an unknown town is an error result."""
    branch = BRANCHES.get(town.strip().lower())
    if branch is None:
        known = ", ".join(name.title() for name in sorted(BRANCHES))
        raise ToolError(f"there is no branch in {town}; branches: {known}")
    return {"town": town.strip().title(), **branch}


@server.tool(description="The towns where the bank has a branch")
async def list_branches() -> list[str]:
    """Every town with a branch."""
    return [name.title() for name in sorted(BRANCHES)]


if __name__ == "__main__":
    server.run()
