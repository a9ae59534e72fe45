"""The demo project's MCP server (config/agent/mcp/branches) and reading integrations.yml."""

from pathlib import Path

import pytest

from tests.mcp.mcp_kit import bounded, launch_options
from voicegate.engine.tools.result import ToolResult
from voicegate.engine.yamlfile import parse_yaml
from voicegate.errors import ConfigError, ToolExecutionError
from voicegate.mcp.config import StdioTransport, parse_mcp_servers
from voicegate.mcp.imports import McpImport
from voicegate.mcp.runtime import McpRuntime, declared_servers

DEMO = Path(__file__).resolve().parents[2] / "config" / "agent"

#: The entry the demo's integrations.yml declares the server with.
DEMO_SERVERS = """\
mcp_servers:
  - name: branches
    command: python
    args: [mcp/branches/server.py]
    tool_timeout: 5
"""


async def test_the_demo_server_runs_in_the_project_folder_and_answers() -> None:
    servers = parse_mcp_servers(parse_yaml(DEMO_SERVERS, "integrations.yml"), "integrations.yml")
    wanted = [McpImport("branch_hours", "branches", "branch_hours")]
    async with McpRuntime(servers, launch_options(project_root=DEMO)) as runtime:
        tools = await bounded(runtime.connect(wanted))
        assert set(runtime.servers["branches"].tools) == {"branch_hours", "list_branches"}
        branch_hours = tools["branch_hours"]["branch_hours"]
        assert branch_hours.spec.parameters["required"] == ["town"]
        assert await bounded(branch_hours.call({"town": "springfield"})) == ToolResult(
            {
                "town": "Springfield",
                "address": "12 Main Street",
                "weekdays": "9:00 to 17:00",
                "saturday": "9:00 to 12:00",
                "sunday": "closed",
            }
        )
        with pytest.raises(ToolExecutionError, match="there is no branch in Ogdenville"):
            await bounded(branch_hours.call({"town": "Ogdenville"}))


def test_declared_servers_reads_the_project_file_and_expands_secrets(tmp_path: Path) -> None:
    assert declared_servers(tmp_path, {}) == {}  # no integrations.yml: no servers
    (tmp_path / "integrations.yml").write_text(
        "llm: {model_group: main}\n"
        "mcp_servers:\n"
        "  - name: local\n"
        "    command: python\n"
        "    args: [server.py, --region, '${REGION}']\n",
        encoding="utf-8",
    )
    servers = declared_servers(tmp_path, {"REGION": "eu"})
    assert servers["local"].transport == StdioTransport("python", ("server.py", "--region", "eu"))
    assert servers["local"].where == f"{tmp_path / 'integrations.yml'}:3"
    with pytest.raises(ConfigError, match="environment variable REGION, which is not set"):
        declared_servers(tmp_path, {})
