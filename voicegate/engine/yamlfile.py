"""Reading YAML files of a project or a script, with line numbers kept for error messages.

Every mapping read through :func:`load_yaml` is a :class:`LineDict`, which remembers the line
it starts on and the line of each key; every sequence is a :class:`LineList`, which remembers
the line of each item. So a loader can say ``skills/x/memory.yml:12: ...`` (contract §9:
error messages name the file and key).

Plain scalars are typed as YAML 1.2 (the core schema) types them, as Mantle's loader reads
them, not as PyYAML's YAML 1.1 does:

- only ``true``/``false`` (in any of the usual capitalisations) are booleans, so ``on:
  activate`` (an ``utter`` trigger), ``then: no`` or a value ``yes`` stay strings;
- ``1e3``, ``1.0e3`` and ``1E-3`` are floats (YAML 1.1 wants a point and a signed exponent);
- ``10:30`` is the text ``10:30`` (YAML 1.1: the sexagesimal 630), ``2026-12-05`` the text
  ``2026-12-05`` (YAML 1.1: a date, which memory cannot hold), ``0755`` the integer 755
  (YAML 1.1: octal); ``0o755`` and ``0x1F`` are octal and hexadecimal. ``_`` between digits
  is still read, as both PyYAML and ruamel read it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from voicegate.errors import ProjectError


class LineDict(dict[Any, Any]):
    """A YAML mapping that knows the 1-based line it starts on (0 when built in code).

    ``text_spans`` keeps, for each value written over several lines (a block scalar such as
    ``instructions: |``, or a folded plain/quoted one), its first and last source line and the
    document's lines, so a finding inside the text can name the line it is on.
    """

    line: int = 0
    key_lines: dict[Any, int]
    text_spans: dict[Any, tuple[int, int, tuple[str, ...]]]

    def line_of_key(self, key: Any) -> int | None:
        """The line ``key`` is written on, else the mapping's own line (None if unknown)."""
        found = getattr(self, "key_lines", {}).get(key) or self.line
        return found if found > 0 else None

    def line_in_text(self, key: Any, text: str, offset: int) -> int | None:
        """The source line of ``text[offset:]``, ``text`` being (a stripped copy of) the
        string value of ``key``; the key's line when the value sits on one line.

        Folding (``>``, plain and quoted scalars) moves line breaks, so the line is found by
        the word at ``offset``: its n-th occurrence in the value is its n-th in the source.
        """
        span = getattr(self, "text_spans", {}).get(key)
        word = text[offset:].split(maxsplit=1)[0] if text[offset:].strip() else ""
        if span is None or not word:
            return self.line_of_key(key)
        first, last, lines = span
        wanted, seen = text.count(word, 0, offset), 0
        for number in range(first, min(last, len(lines)) + 1):
            seen += lines[number - 1].count(word)
            if seen > wanted:
                return number
        return self.line_of_key(key)


class LineList(list[Any]):
    """A YAML sequence that knows the 1-based line of itself and of each item.

    The sequence's own line is ``start_line``, not ``line``: :func:`line_of` reports mappings
    only, as it always has.
    """

    start_line: int = 0
    item_lines: list[int]

    def line_of_item(self, index: int) -> int | None:
        """The line item ``index`` starts on, else the sequence's own line (None if unknown)."""
        lines = getattr(self, "item_lines", [])
        found = lines[index] if 0 <= index < len(lines) else self.start_line
        return found if found > 0 else None


# libyaml's C parser when PyYAML was built with it (several times faster on a large project);
# the constructors and resolvers below are the Python ones either way.
FastSafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(FastSafeLoader):  # type: ignore[valid-type, misc]
    """SafeLoader whose mappings are :class:`LineDict` and sequences :class:`LineList`."""


_BOOL_TAG = "tag:yaml.org,2002:bool"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_YAML_11_ONLY = frozenset({_BOOL_TAG, _INT_TAG, _FLOAT_TAG, _TIMESTAMP_TAG})
# Own copy of the resolver table with YAML 1.2 core booleans and numbers, and no timestamps.
_LineLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag not in _YAML_11_ONLY]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_LineLoader.add_implicit_resolver(
    _BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_DIGITS = "[0-9][0-9_]*"
_EXPONENT = "[eE][-+]?[0-9]+"
_LineLoader.add_implicit_resolver(
    _FLOAT_TAG,
    re.compile(
        rf"^(?:[-+]?{_DIGITS}(?:\.[0-9_]*)?{_EXPONENT}|[-+]?{_DIGITS}\.[0-9_]*"
        rf"|[-+]?\.[0-9_]+(?:{_EXPONENT})?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+.0123456789"),
)
_LineLoader.add_implicit_resolver(
    _INT_TAG,
    re.compile(rf"^(?:[-+]?{_DIGITS}|0o[0-7_]+|0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)


def _construct_int(loader: _LineLoader, node: ScalarNode) -> int:
    """A YAML 1.2 integer: decimal (a leading zero is not octal), ``0o`` octal, ``0x`` hex."""
    text = str(loader.construct_scalar(node)).replace("_", "")
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    for prefix, base in (("0x", 16), ("0o", 8)):
        if digits.startswith(prefix):
            return sign * int(digits[len(prefix) :], base)
    return sign * int(digits, 10)


_LineLoader.add_constructor(_INT_TAG, _construct_int)


def _construct_line_dict(loader: _LineLoader, node: MappingNode) -> LineDict:
    mapping = LineDict(loader.construct_mapping(node, deep=True))
    mapping.line = node.start_mark.line + 1
    # construct_mapping has flattened merge keys into node.value; keys are cached objects.
    mapping.key_lines = {}
    mapping.text_spans = {}
    source: tuple[str, ...] = getattr(loader, "source_lines", ())
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, str | int | float | bool) or key is None:
            mapping.key_lines.setdefault(key, key_node.start_mark.line + 1)
            multiline = value_node.end_mark.line > value_node.start_mark.line
            if isinstance(value_node, ScalarNode) and multiline and source:
                span = (value_node.start_mark.line + 1, value_node.end_mark.line + 1, source)
                mapping.text_spans.setdefault(key, span)
    return mapping


def _construct_line_list(loader: _LineLoader, node: SequenceNode) -> LineList:
    sequence = LineList(loader.construct_sequence(node, deep=True))
    sequence.start_line = node.start_mark.line + 1
    sequence.item_lines = [item.start_mark.line + 1 for item in node.value]
    return sequence


_LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_line_dict,
)
_LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG,
    _construct_line_list,
)


def parse_yaml(text: str, path: str) -> Any:
    """Parse YAML text; a syntax error becomes a ProjectError naming ``path`` and the line."""
    loader = _LineLoader(text)  # a SafeLoader subclass
    loader.source_lines = tuple(text.splitlines())  # for LineDict.line_in_text
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = error.problem or str(error)
        raise ProjectError(f"invalid YAML: {problem}", path=path, line=line) from None
    except yaml.YAMLError as error:
        raise ProjectError(f"invalid YAML: {error}", path=path) from None
    finally:
        loader.dispose()


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
