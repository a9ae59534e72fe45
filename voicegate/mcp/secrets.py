"""Expanding the ``${ENV_VAR}`` references of ``mcp_servers`` (contract §2.2, §10.1).

The CLI passes the process environment in (design §7: no module reads it); a reference to a
variable that is not set stops startup with an error naming the server, the key and the
variable, never the value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace

from voicegate.errors import ConfigError
from voicegate.mcp.config import ENV_REFERENCE, HttpTransport, McpServerConfig, StdioTransport

#: Expands the references in one value: ``(text, key) -> text``.
_Expander = Callable[[str, str], str]


def resolve_secrets(
    servers: Mapping[str, McpServerConfig], environ: Mapping[str, str]
) -> dict[str, McpServerConfig]:
    """Every server with its ``${NAME}`` references replaced by the variables' values."""
    return {name: _resolved(server, environ) for name, server in servers.items()}


def _resolved(server: McpServerConfig, environ: Mapping[str, str]) -> McpServerConfig:
    def expand(text: str, key: str) -> str:
        return expand_references(text, environ, f"{server.where}: MCP server {server.name!r}", key)

    transport = server.transport
    if isinstance(transport, HttpTransport):
        headers = {
            name: expand(value, f"headers.{name}") for name, value in transport.headers.items()
        }
        return replace(server, transport=HttpTransport(expand(transport.url, "url"), headers))
    return replace(server, transport=_resolved_stdio(transport, expand))


def _resolved_stdio(transport: StdioTransport, expand: _Expander) -> StdioTransport:
    return StdioTransport(
        expand(transport.command, "command"),
        tuple(expand(arg, "args") for arg in transport.args),
        {name: expand(value, f"env.{name}") for name, value in transport.env.items()},
        expand(transport.cwd, "cwd") if transport.cwd is not None else None,
    )


def expand_references(text: str, environ: Mapping[str, str], label: str, key: str) -> str:
    """``text`` with each ``${NAME}`` replaced; an unset variable raises ConfigError."""

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise ConfigError(
                f"{label}: '{key}' refers to the environment variable {name}, which is not set"
            )
        return environ[name]

    return ENV_REFERENCE.sub(value_of, text)
