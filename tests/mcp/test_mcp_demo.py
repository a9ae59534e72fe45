"""The demo project's MCP server (config/agent/mcp/branches) and reading integrations.yml."""

from dataclasses import replace
from pathlib import Path

import pytest

from tests.mcp.mcp_kit import bounded, launch_options
from voicegate.cli import wiring
from voicegate.config import StoreSettings, load_settings
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.tools.result import ToolResult
from voicegate.errors import ConfigError, ToolExecutionError
from voicegate.gateway.dialogue import ThreadedEngine
from voicegate.mcp.config import StdioTransport
from voicegate.mcp.declared import declared_servers
from voicegate.mcp.imports import McpImport
from voicegate.mcp.runtime import McpRuntime

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "config" / "agent"


async def test_the_demo_server_runs_in_the_project_folder_and_answers() -> None:
    servers = declared_servers(DEMO, {})  # config/agent/integrations.yml as shipped
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


async def test_the_gateway_runner_starts_the_demo_server_and_offers_its_tool(
    tmp_path: Path,
) -> None:
    """What `make run` does: `voicegate serve` opens the runner, the MCP server starts with it."""
    settings = replace(
        load_settings(ROOT / "fixtures" / "config" / "deterministic.yml"),
        store=StoreSettings(data_dir=tmp_path),
    )
    async with wiring.open_runner(settings) as runner:
        threaded = runner.services.engine
        # The engine and its MCP sessions live on the dialogue plane (issue 12).
        assert isinstance(threaded, ThreadedEngine)
        engine = threaded.inner
        assert isinstance(engine, ProjectEngine)
        bound = engine.catalog.local("branch_hours", "branch_hours")
        assert bound is not None
        assert bound.tool.source == "mcp"
        result = await threaded.plane.run(bounded(bound.tool.call({"town": "shelbyville"})))
        assert result.llm_response["address"] == "4 Harbour Road"
