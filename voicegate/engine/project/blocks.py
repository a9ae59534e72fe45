"""Ordered-block fences in a ``skill.md`` body (contract §6.1).

```
:::ordered_block id=<block_id>
steps:
  - id: <step_id>
    <kind key>: ...
:::
```

The id is a fence attribute (``id=x`` or ``id="x"``); an ``id:`` key in the YAML is not the
block id. Duplicate block ids in one file and ``routable`` (as a YAML key or a fence
attribute) are refused; ``name:``/``description:`` beside ``steps:`` (older examples) are
accepted and ignored; any other key next to ``steps:`` is refused. The fence body is YAML,
parsed with the file's line numbers (a tab fails the parse, as in Mantle).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from voicegate.engine.project import codes
from voicegate.engine.project.problems import Problems
from voicegate.engine.project.shapes import key_line
from voicegate.engine.project.step_model import OrderedBlock
from voicegate.engine.project.steps import parse_steps
from voicegate.engine.yamlfile import parse_yaml

_OPENER = re.compile(r"^:::ordered_block(?:\s+(?P<attributes>.*?))?\s*$")
#: An opener spelled the way other markdown directives allow (``::: ordered_block``,
#: ``:::ordered-block``): reported, since the block would otherwise become prose silently.
_NEAR_OPENER = re.compile(r"^\s*:::\s*ordered[\s_-]?block\b", re.IGNORECASE)
_CLOSER = re.compile(r"^:::\s*$")
_BLOCK_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")
_IGNORED_KEYS = frozenset({"name", "description"})


@dataclass(frozen=True, slots=True)
class Fence:
    """One fence as written: its id, the opener's line and the YAML lines inside."""

    block_id: str
    line: int
    lines: tuple[tuple[int, str], ...]


def is_fence_opener(text: str) -> bool:
    """Whether a body line opens an ordered block."""
    return _OPENER.match(text) is not None


def split_fences(
    lines: Sequence[tuple[int, str]], path: str, problems: Problems
) -> tuple[list[tuple[int, str]], list[Fence]]:
    """Separate prose lines from ordered-block fences; malformed fences are reported."""
    prose: list[tuple[int, str]] = []
    fences: list[Fence] = []
    index = 0
    while index < len(lines):
        number, text = lines[index]
        opener = _OPENER.match(text)
        if opener is None:
            if _NEAR_OPENER.match(text):
                problems.add(
                    codes.ORDERED_BLOCK_INVALID,
                    "an ordered block opens with ':::ordered_block id=<block_id>' at the start "
                    f"of the line, no space after ':::'; got {text.strip()!r}",
                    path,
                    number,
                )
            prose.append((number, text))
            index += 1
            continue
        end = _closing(lines, index)
        if end is None:
            problems.add(
                codes.ORDERED_BLOCK_INVALID,
                "this ordered block is never closed with a ':::' line",
                path,
                number,
            )
            return prose, fences
        block_id = _fence_id(opener["attributes"] or "", path, number, problems)
        if block_id is not None:
            fences.append(Fence(block_id, number, tuple(lines[index + 1 : end])))
        index = end + 1
    return prose, fences


def _closing(lines: Sequence[tuple[int, str]], opener: int) -> int | None:
    for index in range(opener + 1, len(lines)):
        if _CLOSER.match(lines[index][1]):
            return index
        if _OPENER.match(lines[index][1]):
            return None
    return None


def _fence_id(attributes: str, path: str, line: int, problems: Problems) -> str | None:
    try:
        pairs = [item.partition("=") for item in shlex.split(attributes)]
    except ValueError as error:
        problems.add(
            codes.ORDERED_BLOCK_INVALID, f"cannot read the fence attributes: {error}", path, line
        )
        return None
    found = {key: value for key, _, value in pairs}
    if "routable" in found:
        problems.add(
            codes.ROUTABLE_IN_BLOCK, "'routable' cannot be set on an ordered block", path, line
        )
        return None
    unknown = sorted(set(found) - {"id"})
    block_id = found.get("id", "")
    if unknown or not _BLOCK_ID.match(block_id):
        problems.add(
            codes.ORDERED_BLOCK_INVALID,
            "an ordered block opens with ':::ordered_block id=<block_id>'"
            + (f" (unknown attributes {unknown})" if unknown else ""),
            path,
            line,
        )
        return None
    return block_id


def parse_blocks(fences: Sequence[Fence], path: str, problems: Problems) -> dict[str, OrderedBlock]:
    """The blocks of a file by id; duplicates and malformed blocks are reported."""
    blocks: dict[str, OrderedBlock] = {}
    for fence in fences:
        if fence.block_id in blocks:
            problems.add(
                codes.DUPLICATE_BLOCK_ID,
                f"block id {fence.block_id!r} is already used on line "
                f"{blocks[fence.block_id].line}",
                path,
                fence.line,
            )
            continue
        block = _block(fence, path, problems)
        if block is not None:
            blocks[fence.block_id] = block
    return blocks


def _block(fence: Fence, path: str, problems: Problems) -> OrderedBlock | None:
    text = "\n" * fence.line + "\n".join(line for _, line in fence.lines)
    known = len(problems)
    data = problems.capture(codes.ORDERED_BLOCK_INVALID, path, lambda: parse_yaml(text, path))
    if len(problems) > known:
        return None  # the YAML did not parse; the problem names the line
    if not isinstance(data, Mapping):
        problems.add(
            codes.ORDERED_BLOCK_INVALID,
            f"block {fence.block_id!r} must be YAML with a 'steps:' list",
            path,
            fence.line,
        )
        return None
    if not _block_keys_valid(data, fence, path, problems):
        return None
    steps = parse_steps(data["steps"], fence.block_id, path, problems)
    return OrderedBlock(fence.block_id, steps, fence.line)


def _block_keys_valid(data: Mapping[str, Any], fence: Fence, path: str, problems: Problems) -> bool:
    if "routable" in data:
        problems.add(
            codes.ROUTABLE_IN_BLOCK,
            "'routable' cannot be set inside an ordered block",
            path,
            key_line(data, "routable"),
        )
        return False
    unknown = sorted(str(key) for key in set(data) - _IGNORED_KEYS - {"steps"})
    if unknown:
        problems.add(
            codes.ORDERED_BLOCK_INVALID,
            f"unknown keys {unknown} beside 'steps:'",
            path,
            key_line(data, unknown[0]),
        )
        return False
    if not isinstance(data.get("steps"), list) or not data["steps"]:
        problems.add(
            codes.ORDERED_BLOCK_INVALID,
            f"block {fence.block_id!r} needs a non-empty 'steps:' list",
            path,
            fence.line,
        )
        return False
    return True
