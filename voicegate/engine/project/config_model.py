"""What ``agent.yml`` and ``integrations.yml`` say, as frozen values (contract §2.1, §2.2)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: ``references.chunking`` defaults, in characters (contract §2.1).
DEFAULT_CHUNK_SIZE = 1000
DEFAULT_CHUNK_OVERLAP = 20


@dataclass(frozen=True, slots=True)
class ReferenceSettings:
    """``agent.yml`` ``references:``: the embedder id and the chunking windows."""

    embeddings: str | None = None
    chunk_size: int = DEFAULT_CHUNK_SIZE
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP


@dataclass(frozen=True, slots=True)
class McpServer:
    """One ``mcp_servers`` entry: a server id tools are imported from (contract §10.1).

    ``auth`` holds the one auth key given (``token``, ``api_key``, ``oauth`` or ``module``)
    with its value unexpanded: ``${ENV}`` references are resolved when the server is
    connected, never at load (design §7: no module reads the environment).
    """

    name: str
    url: str  # empty for a stdio server, whose `command`, `args`, `env` are in ``options``
    tool_timeout: float | None = None
    auth: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Integrations:
    """``integrations.yml``: the LLM selection, model groups, channels, MCP servers, tracing."""

    llm: Mapping[str, Any] = field(default_factory=dict)
    model_groups: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    channels: Mapping[str, Any] = field(default_factory=dict)
    mcp_servers: Mapping[str, McpServer] = field(default_factory=dict)
    tracing: Mapping[str, Any] | None = None
