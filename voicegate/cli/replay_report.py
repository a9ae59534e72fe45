"""``voicegate replay --report FILE``: draw the replayed call (docs/replay.md, "Report")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from voicegate.callers.views.picture import CallRecording
from voicegate.callers.views.write import REPORT_SUFFIXES, write_report
from voicegate.cli.paths import check_output_file
from voicegate.cli.replaying import ReplayResult


def check_reports(paths: Sequence[Path], out: Path) -> None:
    """Each ``--report`` can be written as one of the report formats (before the call); it
    may go into ``out``, which the replay creates."""
    for path in paths:
        check_output_file(path, REPORT_SUFFIXES, made=out)


def write_reports(
    paths: Sequence[Path], result: ReplayResult, title: str, sample_rate: int
) -> list[str]:
    """Draw the call into each of ``paths``; a summary line per file written."""
    caller, bot = result.caller.tracks()
    call = CallRecording(title, result.records, result.caller_records, caller, bot, sample_rate)
    for path in paths:
        write_report(call, path)
    return [f"wrote {path} (the call's report)" for path in paths]
