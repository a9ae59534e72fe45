"""Reading YAML files of a project or a script, with line numbers kept for error messages.

Every mapping read through :func:`load_yaml` is a :class:`LineDict`, which remembers the line
it starts on, so a loader can say ``skills/x/memory.yml:12: ...`` (contract §9: error messages
name the file and key).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode

from voicegate.errors import ProjectError


class LineDict(dict[Any, Any]):
    """A YAML mapping that knows the 1-based line it starts on (0 when built in code)."""

    line: int = 0


class _LineLoader(yaml.SafeLoader):
    """SafeLoader whose mappings are :class:`LineDict` instances."""


def _construct_line_dict(loader: _LineLoader, node: MappingNode) -> LineDict:
    mapping = LineDict(loader.construct_mapping(node, deep=True))
    mapping.line = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_line_dict,
)


def parse_yaml(text: str, path: str) -> Any:
    """Parse YAML text; a syntax error becomes a ProjectError naming ``path`` and the line."""
    try:
        return yaml.load(text, Loader=_LineLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = error.problem or str(error)
        raise ProjectError(f"invalid YAML: {problem}", path=path, line=line) from None
    except yaml.YAMLError as error:
        raise ProjectError(f"invalid YAML: {error}", path=path) from None


def load_yaml(path: Path) -> Any:
    """Read and parse one YAML file; unreadable or malformed files raise ProjectError."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ProjectError(f"cannot read file: {error}", path=str(path)) from None
    return parse_yaml(text, str(path))


def line_of(value: object) -> int | None:
    """The line a mapping read from YAML starts on, if known."""
    line = getattr(value, "line", 0)
    return line if isinstance(line, int) and line > 0 else None
