"""Reference documents: every ``*.md`` under ``references/`` folders, chunked (contract §2.8).

The root ``references/`` folder and each ``skills/<id>/references/`` feed one index. A chunk
keeps its ``source`` (the file, relative to the project root) and its ``scope`` (``global``
for the root folder, else the owning skill id). Empty and whitespace-only files are skipped.

Chunks are character windows of ``chunk_size`` with ``chunk_overlap`` characters shared by
neighbours (``agent.yml`` ``references.chunking``). A window that would cut a word ends at the
last whitespace in its second half instead, so chunks rarely split words; the overlap is then
taken back from that end.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

#: The scope of chunks from the root ``references/`` folder.
GLOBAL_SCOPE = "global"


@dataclass(frozen=True, slots=True)
class ReferenceChunk:
    """One window of a reference file: its text, file, scope and offset in the file."""

    text: str
    source: str
    scope: str
    start: int


@dataclass(frozen=True, slots=True)
class ReferenceHit:
    """A chunk returned by a search, with its relevance score (higher is better)."""

    chunk: ReferenceChunk
    score: float


class ReferenceIndex(Protocol):
    """A searchable knowledge index: BM25 here; an embedding index can implement the same."""

    @property
    def chunks(self) -> Sequence[ReferenceChunk]:
        """Every indexed chunk."""
        ...

    def search(self, query: str, limit: int = 5) -> list[ReferenceHit]:
        """The best ``limit`` chunks for ``query``, best first; none when nothing matches."""
        ...


def reference_files(root: Path, skill_ids: Sequence[str]) -> Iterator[tuple[Path, str]]:
    """Every ``*.md`` under the root and skill ``references/`` folders, with its scope."""
    folders = [(root / "references", GLOBAL_SCOPE)]
    folders += [(root / "skills" / skill_id / "references", skill_id) for skill_id in skill_ids]
    for folder, scope in folders:
        if folder.is_dir():
            for path in sorted(folder.rglob("*.md")):
                if path.is_file():
                    yield path, scope


def chunk_file(text: str, source: str, scope: str, size: int, overlap: int) -> list[ReferenceChunk]:
    """The chunks of one file's text (none for an empty or whitespace-only file)."""
    return [
        ReferenceChunk(text[start:end], source, scope, start)
        for start, end in chunk_spans(text, size, overlap)
        if text[start:end].strip()
    ]


def chunk_spans(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """``(start, end)`` windows covering ``text``: at most ``size`` long, ``overlap`` shared."""
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError(f"chunk_size {size} / chunk_overlap {overlap} are not usable")
    spans: list[tuple[int, int]] = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            end = _word_end(text, start, end, overlap)
        spans.append((start, end))
        if end >= len(text):
            break
        start = end - overlap
    return spans


def _word_end(text: str, start: int, end: int, overlap: int) -> int:
    # Cut after the last whitespace in the window's second half, but never so early that
    # the next window (which starts ``overlap`` before the cut) would not move forward.
    if text[end].isspace() or text[end - 1].isspace():
        return end
    earliest = start + max(overlap + 1, (end - start) // 2)
    for position in range(end - 1, earliest - 1, -1):
        if text[position].isspace():
            return position + 1
    return end
