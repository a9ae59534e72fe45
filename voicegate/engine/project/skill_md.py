"""Splitting ``skill.md`` into its YAML frontmatter and markdown body (contract §2.5).

The file must open with ``---`` on line 1 and close the frontmatter with a second ``---``
line; otherwise ``skill.markdown.invalid_frontmatter_delimiter``. Trailing spaces on a
delimiter line and a UTF-8 byte-order mark are tolerated. The frontmatter text is padded with
empty lines so that YAML line numbers are the file's line numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from voicegate.engine.project import codes
from voicegate.errors import ProjectError

DELIMITER = "---"


@dataclass(frozen=True, slots=True)
class SkillFile:
    """The two parts of a ``skill.md``: frontmatter YAML text and body lines."""

    frontmatter: str
    body: tuple[str, ...]
    body_first_line: int


def split_skill_file(text: str, path: str) -> SkillFile:
    """Split a ``skill.md`` text; raises ProjectError with the delimiter code when malformed."""
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].rstrip() != DELIMITER:
        raise ProjectError(
            "skill.md must open with '---' on line 1 (YAML frontmatter, then a closing '---')",
            code=codes.FRONTMATTER_DELIMITER,
            path=path,
            line=1,
        )
    for index in range(1, len(lines)):
        if lines[index].rstrip() == DELIMITER:
            padded = "\n" + "\n".join(lines[1:index]) + "\n"
            return SkillFile(padded, tuple(lines[index + 1 :]), index + 2)
    raise ProjectError(
        "the frontmatter opened on line 1 is never closed with a '---' line",
        code=codes.FRONTMATTER_DELIMITER,
        path=path,
        line=1,
    )
