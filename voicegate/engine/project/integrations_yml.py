"""``integrations.yml`` (contract §2.2, §10.1): LLM selection, model groups, MCP servers.

Checked: ``llm`` is a mapping whose ``model_group`` names a declared group; every model group has
an ``id`` and a list of model mappings; every MCP server has a unique ``name`` (``id`` is
accepted as the older spelling), a ``url``, at most one auth key (``token``, ``api_key``,
``oauth``, ``module``), secrets written as ``${ENV_VAR}`` references, and a positive
``tool_timeout`` when set. Nothing is connected and no environment variable is read.

Tolerated with a warning (``config.integrations.inline_llm``): the 3.19 inline form
``llm: {provider, model, api_key_env, temperature, ...}`` that published projects use (§2.2
[drift]; Mantle's current validator fails it), and request settings beside ``model_group``.
The selection itself is resolved in :mod:`voicegate.engine.llm.selection`.

voicegate's own choice: the file is optional, since voicegate picks its model from its own
settings (``voicegate.yml`` / ``--llm``); when present it must follow the contract.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from voicegate.engine.project import codes
from voicegate.engine.project.config_model import Integrations, McpServer
from voicegate.engine.project.problems import Problems
from voicegate.engine.project.shapes import is_number, is_text, item_line, key_line
from voicegate.engine.yamlfile import line_of

_LLM_KEYS = frozenset({"model_group", "max_prompt_tokens"})
_INLINE_LLM_KEYS = ("provider", "model", "deployment", "api_key_env", "api_base")
_AUTH_KEYS = ("token", "api_key", "oauth", "module")
_SECRET = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")


def parse_integrations(data: Any, path: str, problems: Problems) -> Integrations:
    """The integrations ``integrations.yml`` declares; problems are recorded."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        problems.add(
            codes.INTEGRATIONS_INVALID, "integrations.yml must be a mapping", path, line_of(data)
        )
        return Integrations()
    known = len(problems)
    groups = _model_groups(data.get("model_groups"), data, path, problems)
    # A malformed model_groups section was reported; do not also call llm's group unknown.
    judged = groups if len(problems) == known else None
    return Integrations(
        llm=_llm(data, judged, path, problems),
        model_groups=groups,
        channels=_section(data, "channels", path, problems),
        mcp_servers=_mcp_servers(data.get("mcp_servers"), data, path, problems),
        tracing=_section(data, "tracing", path, problems) or None,
    )


def _section(data: Mapping[str, Any], key: str, path: str, problems: Problems) -> Mapping[str, Any]:
    value = data.get(key)
    if value is None or isinstance(value, Mapping):
        return value or {}
    problems.add(
        codes.INTEGRATIONS_INVALID, f"'{key}' must be a mapping", path, key_line(data, key)
    )
    return {}


def _llm(
    data: Mapping[str, Any], groups: Mapping[str, Any] | None, path: str, problems: Problems
) -> Mapping[str, Any]:
    llm = data.get("llm")
    line = key_line(data, "llm")
    if not isinstance(llm, Mapping):
        problems.add(
            codes.INTEGRATIONS_INVALID, "'llm' must be a mapping with a 'model_group'", path, line
        )
        return {}
    if "model_group" not in llm and any(key in llm for key in _INLINE_LLM_KEYS):
        return _inline_llm(llm, path, problems)
    extra = sorted(str(key) for key in set(llm) - _LLM_KEYS)
    if extra:
        # Contract §2.2 allows only max_prompt_tokens beside model_group; tolerated (with a
        # warning) as request settings layered over the group's model, like inline extras.
        problems.warn(
            codes.INTEGRATIONS_INLINE_LLM,
            f"'llm' sets {extra} beside model_group; voicegate applies them to the selected "
            "model, but the contract form puts them on the model entry under 'model_groups'",
            path,
            key_line(llm, extra[0]),
        )
    group = llm.get("model_group")
    if not is_text(group):
        problems.add(
            codes.INTEGRATIONS_INVALID, "'llm.model_group' must name a model group", path, line
        )
    elif groups is not None and group not in groups:
        problems.add(
            codes.INTEGRATIONS_UNKNOWN_MODEL_GROUP,
            f"'llm.model_group' is {group!r}, but no model group has that id",
            path,
            key_line(llm, "model_group"),
        )
    return llm


def _inline_llm(llm: Mapping[str, Any], path: str, problems: Problems) -> Mapping[str, Any]:
    """The 3.19 form ``llm: {provider, model, api_key_env, ...}`` (contract §2.2 [drift]).

    Accepted with a warning naming the current form: published projects use it, and it says
    everything a model entry says. It must still name a model (or an Azure deployment).
    """
    inline = [key for key in _INLINE_LLM_KEYS if key in llm]
    problems.warn(
        codes.INTEGRATIONS_INLINE_LLM,
        f"'llm' sets {inline} inline (the 3.19 form); voicegate accepts it, but the current "
        "form is 'llm: {model_group: ID}' with the model under 'model_groups'",
        path,
        key_line(llm, inline[0]),
    )
    _warn_key_in_model(llm, path, problems)
    if not (is_text(llm.get("model")) or is_text(llm.get("deployment"))):
        problems.add(
            codes.INTEGRATIONS_INVALID,
            "an inline 'llm' needs a 'model' (or an Azure 'deployment')",
            path,
            line_of(llm),
        )
    return llm


def _model_groups(
    raw: Any, data: Mapping[str, Any], path: str, problems: Problems
) -> dict[str, tuple[Mapping[str, Any], ...]]:
    if raw is None:
        return {}
    if not isinstance(raw, list):
        problems.add(
            codes.INTEGRATIONS_INVALID,
            "'model_groups' must be a list",
            path,
            key_line(data, "model_groups"),
        )
        return {}
    groups: dict[str, tuple[Mapping[str, Any], ...]] = {}
    for index, group in enumerate(raw):
        line = line_of(group) or item_line(raw, index)
        models = group.get("models") if isinstance(group, Mapping) else None
        if not isinstance(group, Mapping) or not is_text(group.get("id")):
            problems.add(codes.INTEGRATIONS_INVALID, "each model group needs an 'id'", path, line)
        elif (
            not isinstance(models, list)
            or not models
            or not all(isinstance(m, Mapping) for m in models)
        ):
            problems.add(
                codes.INTEGRATIONS_INVALID,
                f"model group {group['id']!r} needs a list of 'models'",
                path,
                line,
            )
        elif group["id"] in groups:
            problems.add(
                codes.INTEGRATIONS_INVALID,
                f"model group id {group['id']!r} is used twice",
                path,
                line,
            )
        else:
            groups[group["id"]] = tuple(models)
            for model in models:
                _warn_key_in_model(model, path, problems)
    return groups


def _warn_key_in_model(entry: Mapping[str, Any], path: str, problems: Problems) -> None:
    """An ``api_key`` on a model: §2.2 expands nothing there and wants ``api_key_env``."""
    if "api_key" in entry:
        problems.warn(
            codes.INTEGRATIONS_KEY_IN_MODEL,
            "a model sets 'api_key', which voicegate neither expands nor sends (llm and "
            "model_groups are not expanded, and keys must not be committed); put the key in an "
            "environment variable and name it with 'api_key_env'",
            path,
            key_line(entry, "api_key"),
        )


def _mcp_servers(
    raw: Any, data: Mapping[str, Any], path: str, problems: Problems
) -> dict[str, McpServer]:
    if raw is None:
        return {}
    if not isinstance(raw, list):
        problems.add(
            codes.INTEGRATIONS_INVALID_MCP_SERVER,
            "'mcp_servers' must be a list",
            path,
            key_line(data, "mcp_servers"),
        )
        return {}
    servers: dict[str, McpServer] = {}
    for index, entry in enumerate(raw):
        server = _mcp_server(entry, line_of(entry) or item_line(raw, index), path, problems)
        if server is None:
            continue
        if server.name in servers:
            problems.add(
                codes.INTEGRATIONS_INVALID_MCP_SERVER,
                f"MCP server {server.name!r} is declared twice",
                path,
                server.line,
            )
            continue
        servers[server.name] = server
    return servers


def _mcp_server(entry: Any, line: int | None, path: str, problems: Problems) -> McpServer | None:
    if not isinstance(entry, Mapping):
        problems.add(
            codes.INTEGRATIONS_INVALID_MCP_SERVER,
            "each MCP server is a mapping with 'name' and 'url'",
            path,
            line,
        )
        return None
    name = entry.get("name", entry.get("id"))
    complaint = _mcp_complaint(entry, name)
    if complaint:
        problems.add(codes.INTEGRATIONS_INVALID_MCP_SERVER, complaint, path, line)
        return None
    auth = {key: entry[key] for key in _AUTH_KEYS if key in entry}
    timeout = entry.get("tool_timeout")
    options = {
        key: value
        for key, value in entry.items()
        if key not in {"name", "id", "url", "tool_timeout", *_AUTH_KEYS}
    }
    return McpServer(
        str(name),
        str(entry.get("url", "")),
        float(timeout) if timeout is not None else None,
        auth,
        options,
        line,
    )


def _mcp_complaint(entry: Mapping[str, Any], name: Any) -> str | None:
    if not is_text(name):
        return "an MCP server needs a 'name' (the id used in mcp/<server>:<tool>)"
    # Contract §10.1: a server is reached over Streamable HTTP (`url`) or started as a stdio
    # subprocess (`command`, with optional `args`, `env`, `cwd`); exactly one of the two.
    if is_text(entry.get("url")) == is_text(entry.get("command")):
        return (
            f"MCP server {name!r} needs exactly one of 'url' (Streamable HTTP) or 'command' (stdio)"
        )
    auth = [key for key in _AUTH_KEYS if key in entry]
    if len(auth) > 1:
        return f"MCP server {name!r} sets {auth}; use at most one auth strategy"
    timeout = entry.get("tool_timeout")
    if timeout is not None and (not is_number(timeout) or timeout <= 0):
        return f"MCP server {name!r}: 'tool_timeout' must be a positive number of seconds"
    for key, value in _secrets(entry):
        if not (isinstance(value, str) and _SECRET.match(value.strip())):
            return (
                f"MCP server {name!r}: '{key}' must be an ${{ENV_VAR}} reference, "
                "never a literal secret"
            )
    return None


def _secrets(entry: Mapping[str, Any]) -> list[tuple[str, Any]]:
    found = [(key, entry[key]) for key in ("token", "api_key") if key in entry]
    oauth = entry.get("oauth")
    if isinstance(oauth, Mapping) and "client_secret" in oauth:
        found.append(("oauth.client_secret", oauth["client_secret"]))
    return found
