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

from voicegate.errors import ConfigError

TRANSCRIPTS_FILE = "transcripts.tsv"
ONSETS_FILE = "onsets.tsv"


@dataclass(frozen=True, slots=True)
class Labels:
    """What a recording says (None: unlabelled) and where its speech starts (None: unknown)."""

    transcript: str | None
    onset_ms: int | None


def labels_of(recording: Path) -> Labels:
    """The labels of ``recording`` from the nearest label files above it.

    A label file that cannot be read, or whose row for ``recording`` is malformed, is a
    ``ConfigError`` naming it; rows for other recordings are never parsed.
    """
    transcript = _column(recording, TRANSCRIPTS_FILE, 1)
    said = transcript[0] if transcript else None
    onset = _column(recording, ONSETS_FILE, 1)
    if onset is None or not onset[0]:
        return Labels(said, None)
    value, where = onset
    if not value.isdecimal():
        raise ConfigError(f"{where}: onset {value!r} is not a whole number of ms")
    return Labels(said, int(value))


def _column(recording: Path, table: str, column: int) -> tuple[str, str] | None:
    """Column ``column`` of the row naming ``recording`` in the nearest ``table``, and where
    that row is (``file:line``)."""
    resolved = recording.resolve()
    for folder in resolved.parents:
        path = folder / table
        if not path.is_file():
            continue
        key = resolved.relative_to(folder).as_posix()
        try:
            # Undecodable bytes cannot be in the row that names the recording (a UTF-8 path):
            # a stray table of someone else's (in a home folder, say) must not stop a replay.
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError as error:
            raise ConfigError(f"{path}: cannot read the labels ({error.strerror})") from None
        for number, line in enumerate(text.splitlines()[1:], start=2):
            cells = line.split("\t")
            if cells[0] == key and len(cells) > column:
                return cells[column], f"{path}:{number}"
        return None
    return None
