"""The MCP servers a project declares in ``integrations.yml`` (contract §2.2, §10).

Reading them needs no ``mcp`` package, which costs about a second of imports: a project none
of whose skills imports an MCP tool starts no server, and never loads it (cli/wiring.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from voicegate.engine.yamlfile import load_yaml
from voicegate.mcp.config import McpServerConfig, parse_mcp_servers
from voicegate.mcp.secrets import resolve_secrets

#: The file ``mcp_servers`` is read from, in the project folder (contract §2.2).
INTEGRATIONS_FILE = "integrations.yml"


def declared_servers(project_root: Path, environ: Mapping[str, str]) -> dict[str, McpServerConfig]:
    """``integrations.yml``'s ``mcp_servers`` with their ``${ENV_VAR}`` references expanded.

    Read from the live project folder (contract §2.2: a change takes effect at restart). No
    file means no servers. ConfigError for a bad entry or an unset variable.
    """
    path = project_root / INTEGRATIONS_FILE
    if not path.is_file():
        return {}
    return resolve_secrets(parse_mcp_servers(load_yaml(path), str(path)), environ)
