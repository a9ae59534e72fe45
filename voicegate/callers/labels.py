"""The labels kept beside recordings: what each one says, and where its speech begins.

A folder of recordings may hold ``transcripts.tsv`` (``path<TAB>transcript<TAB>kind``) and
``onsets.tsv`` (``path<TAB>onset_ms<TAB>offset_ms<TAB>how``), with paths relative to that
folder (fixtures/audio/README.md). A recording's labels are looked up in the nearest such
files among its parent folders. The transcript feeds the scripted recogniser; the onset is
the ground truth barge-in latencies are measured from (design §5).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

TRANSCRIPTS_FILE = "transcripts.tsv"
ONSETS_FILE = "onsets.tsv"


@dataclass(frozen=True, slots=True)
class Labels:
    """What a recording says (None: unlabelled) and where its speech starts (None: unknown)."""

    transcript: str | None
    onset_ms: int | None


def labels_of(recording: Path) -> Labels:
    """The labels of ``recording`` from the nearest label files above it."""
    transcript = _column(recording, TRANSCRIPTS_FILE, 1)
    onset = _column(recording, ONSETS_FILE, 1)
    return Labels(transcript, int(onset) if onset else None)


def _column(recording: Path, table: str, column: int) -> str | None:
    """Column ``column`` of the row naming ``recording`` in the nearest ``table``."""
    resolved = recording.resolve()
    for folder in resolved.parents:
        path = folder / table
        if not path.is_file():
            continue
        key = resolved.relative_to(folder).as_posix()
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            cells = line.split("\t")
            if cells[0] == key and len(cells) > column:
                return cells[column]
        return None
    return None
