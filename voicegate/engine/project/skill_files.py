"""Reading one ``skills/<id>/skill.md`` into its frontmatter and body (contract §2.5, §2.6)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from voicegate.engine.project import codes
from voicegate.engine.project.blocks import is_fence_opener, parse_blocks, split_fences
from voicegate.engine.project.frontmatter import parse_frontmatter
from voicegate.engine.project.problems import Problems
from voicegate.engine.project.prose import parse_paragraphs
from voicegate.engine.project.skill_md import split_skill_file
from voicegate.engine.project.skill_model import BodyShape, Frontmatter, SkillBody
from voicegate.engine.yamlfile import parse_yaml

#: The id of the entry block of a blocks-only skill (contract §2.6).
MAIN_BLOCK = "main"


@dataclass(frozen=True, slots=True)
class SkillSource:
    """A parsed ``skill.md``."""

    frontmatter: Frontmatter
    body: SkillBody


def read_skill_md(path: Path, skill_id: str, problems: Problems) -> SkillSource | None:
    """Parse ``path``; None when the file cannot be split into frontmatter and body."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        problems.add(codes.FRONTMATTER_INVALID, f"cannot read skill.md: {error}", where)
        return None
    parts = problems.capture(
        codes.FRONTMATTER_DELIMITER, where, lambda: split_skill_file(text, where)
    )
    if parts is None:
        return None
    known = len(problems)
    data = problems.capture(
        codes.FRONTMATTER_INVALID, where, lambda: parse_yaml(parts.frontmatter, where)
    )
    frontmatter = (
        parse_frontmatter(data, skill_id, where, problems)
        if len(problems) == known
        else Frontmatter()
    )
    numbered = [(parts.body_first_line + index, line) for index, line in enumerate(parts.body)]
    return SkillSource(
        frontmatter, parse_body(numbered, parts.body_first_line - 1, where, problems)
    )


def parse_body(
    lines: list[tuple[int, str]], delimiter_line: int, path: str, problems: Problems
) -> SkillBody:
    """The body: paragraphs, blocks, its shape and the entry block of a blocks-only skill."""
    prose_lines, fences = split_fences(lines, path, problems)
    paragraphs = parse_paragraphs(prose_lines, path, problems)
    blocks = parse_blocks(fences, path, problems)
    has_prose = any(text.strip() for _, text in prose_lines)
    if not has_prose and not any(is_fence_opener(text) for _, text in lines):
        problems.add(
            codes.MISSING_INSTRUCTIONS,
            "skill.md has neither prose instructions nor an ordered block",
            path,
            delimiter_line,
        )
    if has_prose:
        shape = BodyShape.HYBRID if fences else BodyShape.PROSE
        return SkillBody(tuple(paragraphs), blocks, shape, None)
    entry = (
        MAIN_BLOCK if MAIN_BLOCK in blocks else (next(iter(blocks)) if len(blocks) == 1 else None)
    )
    return SkillBody(tuple(paragraphs), blocks, BodyShape.BLOCKS, entry)
