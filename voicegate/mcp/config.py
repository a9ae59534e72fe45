"""``integrations.yml`` ``mcp_servers``: the MCP servers a project may import tools from.

Contract §10.1 (and §2.2 for ``${ENV_VAR}`` secrets). Each entry names a server (``name``;
``id`` is accepted as the older spelling) and one transport:

- **Streamable HTTP**: ``url``, optional ``headers`` (name -> value), and at most one auth key:
  ``token`` (sent as ``Authorization: Bearer <token>``) or ``api_key`` (sent the same way
  unless ``header_name`` / ``header_format`` say otherwise, as CALM's MCP config does);
- **stdio** (voicegate's addition, §11 q26 leaves transports open): ``command``, optional
  ``args`` (list of strings), ``env`` (name -> value) and ``cwd``; the server runs as a child
  process in the project folder (or ``cwd``, relative to it).

Optional ``tool_timeout`` (seconds, > 0) overrides ``agent.yml``'s for this server's tools.

Secrets are never written in the file: ``token`` and ``api_key`` must be ``${ENV_VAR}``
references, and so must an ``Authorization`` header. ``${NAME}`` references may appear in any
string value of an entry; they stay unexpanded here (no module reads the environment, design
§7) and :func:`~voicegate.mcp.secrets.resolve_secrets` expands them with the environment the
CLI passes in. ``oauth`` and ``module`` auth are refused: voicegate does not implement them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from voicegate.errors import ConfigError

#: ``${NAME}``: a reference to an environment variable.
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

_COMMON_KEYS = frozenset({"name", "id", "tool_timeout"})
_HTTP_KEYS = frozenset({"url", "headers", "token", "api_key", "header_name", "header_format"})
_STDIO_KEYS = frozenset({"command", "args", "env", "cwd"})
_UNSUPPORTED_AUTH = ("oauth", "module")
_DEFAULT_KEY_FORMAT = "Bearer {key}"


@dataclass(frozen=True, slots=True)
class StdioTransport:
    """Run the server as a child process and talk JSON-RPC over its stdin and stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None


@dataclass(frozen=True, slots=True)
class HttpTransport:
    """Talk to a running server over Streamable HTTP; ``headers`` go with every request."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)


Transport = StdioTransport | HttpTransport


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One ``mcp_servers`` entry; ``where`` (``file:line``) locates it in error messages."""

    name: str
    transport: Transport
    tool_timeout: float | None = None
    where: str = ""


def parse_mcp_servers(data: Any, source: str) -> dict[str, McpServerConfig]:
    """The servers of an ``integrations.yml`` mapping, by name; the first problem raises.

    ``data`` is the whole file as read from YAML (None or a mapping); ``source`` names the
    file in messages, which carry the entry's line when the mapping knows it.
    """
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: integrations.yml must be a mapping")
    raw = data.get("mcp_servers")
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise ConfigError(f"{_where(source, data, 'mcp_servers')}: 'mcp_servers' must be a list")
    servers: dict[str, McpServerConfig] = {}
    for index, entry in enumerate(raw):
        where = _item_where(source, raw, index, entry)
        server = _server(entry, where)
        if server.name in servers:
            raise ConfigError(f"{where}: MCP server {server.name!r} is declared twice")
        servers[server.name] = server
    return servers


def _server(entry: Any, where: str) -> McpServerConfig:
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: each MCP server is a mapping with a 'name'")
    name = entry.get("name", entry.get("id"))
    if not _is_text(name):
        raise ConfigError(f"{where}: an MCP server needs a 'name' (the id in mcp/<name>:<tool>)")
    label = f"{where}: MCP server {name!r}"
    _check_keys(entry, label)
    transport = _http(entry, label) if "url" in entry else _stdio(entry, label)
    return McpServerConfig(str(name), transport, _timeout(entry, label), where)


def _check_keys(entry: Mapping[str, Any], label: str) -> None:
    refused = [key for key in _UNSUPPORTED_AUTH if key in entry]
    if refused:
        raise ConfigError(
            f"{label}: {refused[0]!r} auth is not supported by voicegate; "
            "use 'token', 'api_key' or 'headers' with ${ENV_VAR} references"
        )
    if "url" in entry and "command" in entry:
        raise ConfigError(f"{label}: give either 'url' (Streamable HTTP) or 'command' (stdio)")
    if "url" not in entry and "command" not in entry:
        raise ConfigError(f"{label}: needs a 'url' (Streamable HTTP) or a 'command' (stdio)")
    allowed = _COMMON_KEYS | (_HTTP_KEYS if "url" in entry else _STDIO_KEYS)
    unknown = sorted(str(key) for key in entry if key not in allowed)
    if unknown:
        raise ConfigError(f"{label}: unknown keys {unknown} (allowed: {sorted(allowed)})")


def _http(entry: Mapping[str, Any], label: str) -> HttpTransport:
    url = entry["url"]
    if not _is_text(url) or not str(url).startswith(("http://", "https://", "${")):
        raise ConfigError(f"{label}: 'url' must be an http:// or https:// address")
    headers = dict(_text_mapping(entry.get("headers"), "headers", label))
    auth = [key for key in ("token", "api_key") if key in entry]
    if len(auth) > 1:
        raise ConfigError(f"{label}: sets {auth}; use at most one auth strategy")
    if auth:
        header, value = _auth_header(entry, auth[0], label)
        headers[header] = value
    for header, value in headers.items():
        if header.lower() == "authorization" and not ENV_REFERENCE.search(value):
            raise ConfigError(
                f"{label}: the Authorization header must take its secret from an "
                "${ENV_VAR} reference, never a literal value"
            )
    return HttpTransport(str(url), headers)


def _auth_header(entry: Mapping[str, Any], key: str, label: str) -> tuple[str, str]:
    secret = entry[key]
    if not isinstance(secret, str) or not ENV_REFERENCE.fullmatch(secret.strip()):
        raise ConfigError(
            f"{label}: '{key}' must be an ${{ENV_VAR}} reference, never a literal secret"
        )
    if key == "token":
        return "Authorization", f"Bearer {secret.strip()}"
    header = entry.get("header_name", "Authorization")
    template = entry.get("header_format", _DEFAULT_KEY_FORMAT)
    if not _is_text(header) or not isinstance(template, str) or "{key}" not in template:
        raise ConfigError(
            f"{label}: 'header_name' must be a header name and 'header_format' a text "
            "containing {key}"
        )
    return str(header), template.replace("{key}", secret.strip())


def _stdio(entry: Mapping[str, Any], label: str) -> StdioTransport:
    command = entry["command"]
    if not _is_text(command):
        raise ConfigError(f"{label}: 'command' must be a non-empty text")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str | int | float) for arg in args):
        raise ConfigError(f"{label}: 'args' must be a list of texts")
    cwd = entry.get("cwd")
    if cwd is not None and not _is_text(cwd):
        raise ConfigError(f"{label}: 'cwd' must be a folder path")
    env = _text_mapping(entry.get("env"), "env", label)
    return StdioTransport(str(command), tuple(str(arg) for arg in args), env, cwd)


def _timeout(entry: Mapping[str, Any], label: str) -> float | None:
    timeout = entry.get("tool_timeout")
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError(f"{label}: 'tool_timeout' must be a positive number of seconds")
    return float(timeout)


def _text_mapping(value: Any, key: str, label: str) -> dict[str, str]:
    if value is None:
        return {}
    scalar = (str, int, float)
    if not isinstance(value, Mapping) or not all(
        isinstance(name, str) and isinstance(item, scalar) and not isinstance(item, bool)
        for name, item in value.items()
    ):
        raise ConfigError(f"{label}: '{key}' must map names to texts")
    return {name: str(item) for name, item in value.items()}


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _where(source: str, mapping: Any, key: str) -> str:
    line_of_key = getattr(mapping, "line_of_key", None)
    line = line_of_key(key) if callable(line_of_key) else None
    return f"{source}:{line}" if line else source


def _item_where(source: str, sequence: Any, index: int, entry: Any) -> str:
    line = getattr(entry, "line", 0) or 0
    if not line:
        line_of_item = getattr(sequence, "line_of_item", None)
        line = (line_of_item(index) if callable(line_of_item) else None) or 0
    return f"{source}:{line}" if line else f"{source} (mcp_servers item {index + 1})"
