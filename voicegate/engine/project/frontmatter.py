"""``skill.md`` frontmatter properties and their types (contract §2.5, skill.md reference).

``name`` and ``description`` are required text; ``requires`` is a condition string (the map
form is refused); ``complete_when`` is a condition string or a ``{condition, criteria}``
mapping (newer builds; both accepted, contract §2.5 [drift]); ``import_tools`` is a list of
shared tool names and ``mcp/<server>:<tool>`` entries; ``disabled`` is a bool; ``routing`` is
``{engine_managed: bool}``. ``tool_constraints`` and ``utter`` are parsed in
:mod:`~voicegate.engine.project.constraints`. Unknown keys are ignored (logged), as Mantle
does.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from voicegate.engine.project import codes
from voicegate.engine.project.condition_sites import parse_at
from voicegate.engine.project.constraints import parse_tool_constraints, parse_utter
from voicegate.engine.project.problems import Problems
from voicegate.engine.project.shapes import is_text, item_line, key_line
from voicegate.engine.project.skill_model import Completion, Frontmatter, ToolImport
from voicegate.engine.yamlfile import LineDict, line_of

log = logging.getLogger(__name__)

KNOWN_KEYS = frozenset(
    {
        "name",
        "description",
        "requires",
        "complete_when",
        "import_tools",
        "tool_constraints",
        "utter",
        "disabled",
        "routing",
    }
)
#: The bundled skill whose override may not go on the normal menu (contract §5.7).
UNSUPPORTED_HANDLER = "default_unsupported_request_handler"
_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MCP_ENTRY = re.compile(r"^mcp/(?P<server>[^:\s]+):(?P<tool>\S+)$")


def parse_frontmatter(data: Any, skill_id: str, path: str, problems: Problems) -> Frontmatter:
    """The frontmatter properties; problems are recorded and bad properties left empty."""
    if data is None:
        data = LineDict()
    if not isinstance(data, Mapping):
        problems.add(codes.FRONTMATTER_INVALID, "the frontmatter must be a YAML mapping", path, 2)
        return Frontmatter()
    unknown = sorted(str(key) for key in set(data) - KNOWN_KEYS)
    if unknown:
        log.info("%s: frontmatter keys %s are not Mantle properties and are ignored", path, unknown)
    return Frontmatter(
        name=_required_text(data, "name", path, problems),
        description=_required_text(data, "description", path, problems),
        requires=_requires(data, path, problems),
        complete_when=_complete_when(data, path, problems),
        import_tools=_import_tools(data, path, problems),
        tool_constraints=parse_tool_constraints(data.get("tool_constraints"), data, path, problems),
        utter=parse_utter(data.get("utter"), data, path, problems),
        disabled=_flag(data, "disabled", path, problems),
        engine_managed=_engine_managed(data, skill_id, path, problems),
        key_lines=dict(getattr(data, "key_lines", {})),
    )


def _required_text(data: Mapping[str, Any], key: str, path: str, problems: Problems) -> str:
    value = data.get(key)
    if is_text(value):
        return str(value).strip()
    problem = "is missing" if key not in data else "must be non-blank text"
    problems.add(
        codes.FRONTMATTER_INVALID, f"'{key}' {problem} (required)", path, key_line(data, key) or 2
    )
    return ""


def _requires(data: Mapping[str, Any], path: str, problems: Problems) -> Any:
    if data.get("requires") is None:
        return None
    return parse_at(data["requires"], "requires", path, key_line(data, "requires"), problems)


def _complete_when(data: Mapping[str, Any], path: str, problems: Problems) -> Completion | None:
    raw = data.get("complete_when")
    line = key_line(data, "complete_when")
    if raw is None:
        return None
    if isinstance(raw, str):
        condition = parse_at(raw, "complete_when", path, line, problems)
        return Completion(condition) if condition else None
    if not isinstance(raw, Mapping) or not raw or set(raw) - {"condition", "criteria"}:
        problems.add(
            codes.COMPLETE_WHEN_INVALID,
            "'complete_when' is a condition string or a mapping with 'condition' and/or 'criteria'",
            path,
            line,
        )
        return None
    condition = None
    if raw.get("condition") is not None:
        condition = parse_at(raw["condition"], "complete_when.condition", path, line, problems)
    criteria = _criteria(raw.get("criteria"), path, line, problems)
    if condition is None and not criteria and raw.get("condition") is None:
        problems.add(
            codes.COMPLETE_WHEN_INVALID,
            "'complete_when' needs a 'condition' or at least one 'criteria' sentence",
            path,
            line,
        )
        return None
    return Completion(condition, criteria)


def _criteria(raw: Any, path: str, line: int | None, problems: Problems) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(is_text(item) for item in raw):
        problems.add(
            codes.COMPLETE_WHEN_INVALID,
            "'complete_when.criteria' must be a list of sentences",
            path,
            line,
        )
        return ()
    duplicates = sorted({item for item in raw if raw.count(item) > 1})
    if duplicates:
        problems.add(
            codes.COMPLETE_WHEN_INVALID,
            f"'complete_when.criteria' repeats {duplicates}",
            path,
            line,
        )
    return tuple(dict.fromkeys(str(item).strip() for item in raw))


def _import_tools(data: Mapping[str, Any], path: str, problems: Problems) -> tuple[ToolImport, ...]:
    raw = data.get("import_tools")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add(
            codes.FRONTMATTER_INVALID,
            "'import_tools' must be a list of tool names",
            path,
            key_line(data, "import_tools"),
        )
        return ()
    imports = []
    for index, entry in enumerate(raw):
        parsed = _tool_import(
            entry, item_line(raw, index) or key_line(data, "import_tools"), path, problems
        )
        if parsed is not None:
            imports.append(parsed)
    return tuple(imports)


def _tool_import(entry: Any, line: int | None, path: str, problems: Problems) -> ToolImport | None:
    if not isinstance(entry, str):
        problems.add(
            codes.TOOL_INVALID_IMPORT,
            f"import_tools entry {entry!r} is not a tool name",
            path,
            line,
        )
        return None
    entry = entry.strip()
    if entry.startswith("mcp/"):
        match = _MCP_ENTRY.match(entry)
        if match is None:
            problems.add(
                codes.TOOL_INVALID_IMPORT,
                f"{entry!r} is not of the form mcp/<server-id>:<tool-name>",
                path,
                line,
            )
            return None
        return ToolImport(entry, match["tool"], match["server"], line)
    if not _TOOL_NAME.match(entry):
        problems.add(
            codes.TOOL_INVALID_IMPORT,
            f"{entry!r} is neither a shared tool name nor an mcp/<server-id>:<tool-name> entry",
            path,
            line,
        )
        return None
    return ToolImport(entry, entry, None, line)


def _flag(data: Mapping[str, Any], key: str, path: str, problems: Problems) -> bool:
    value = data.get(key, False)
    if isinstance(value, bool):
        return value
    problems.add(
        codes.FRONTMATTER_INVALID, f"'{key}' must be true or false", path, key_line(data, key)
    )
    return False


def _engine_managed(
    data: Mapping[str, Any], skill_id: str, path: str, problems: Problems
) -> bool | None:
    routing = data.get("routing")
    line = key_line(data, "routing")
    if routing is None:
        return None
    if not isinstance(routing, Mapping) or set(routing) - {"engine_managed"}:
        problems.add(
            codes.FRONTMATTER_INVALID,
            "'routing' is a mapping with 'engine_managed: true|false'",
            path,
            line,
        )
        return None
    managed = routing.get("engine_managed")
    if managed is not None and not isinstance(managed, bool):
        problems.add(
            codes.FRONTMATTER_INVALID,
            "'routing.engine_managed' must be true or false",
            path,
            line_of(routing) or line,
        )
        return None
    if managed is False and skill_id == UNSUPPORTED_HANDLER:
        problems.add(
            codes.FRONTMATTER_INVALID,
            f"{UNSUPPORTED_HANDLER} must stay engine-managed (routing.engine_managed: false is "
            "refused)",
            path,
            line,
        )
    return managed
