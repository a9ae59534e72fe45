"""``voicegate validate PROJECT``: check an agent project against the contract.

Prints one line per problem, ``CODE: message (path:line)``, and exits 1; a valid project
prints a one-line summary and exits 0. Warnings (forms voicegate accepts that the contract no
longer documents, such as the inline ``llm:`` form) are printed ``warning: CODE: ...`` and do
not fail validation unless ``--strict`` is given. With ``--json`` the result is one JSON
object: ``{"project": ..., "valid": ..., "strict": ..., "problems": [{"code", "message",
"path", "line", "severity"}], "summary": {...}}``. Paths are shown relative to the current
directory through the PROJECT argument, so they can be opened as printed. MCP servers are
not contacted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from voicegate.engine.project.problems import ERROR
from voicegate.engine.project.validate import (
    ProjectSummary,
    problem_record,
    summarize,
    validate_project,
)


def add_parser(subparsers: Any) -> None:
    """Register ``voicegate validate``."""
    parser = subparsers.add_parser(
        "validate", help="check an agent project and list every problem with its file and line"
    )
    parser.add_argument("project", type=Path, help="the project folder")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.add_argument(
        "--strict", action="store_true", help="treat warnings as errors (exit 1 on any)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Validate the project; exit 0 when it is valid, 1 otherwise."""
    report = validate_project(args.project)
    records = [
        _displayed(problem_record(problem, report.root), args.project)
        for problem in report.problems
    ]
    failing = [r for r in records if args.strict or r["severity"] == ERROR]
    valid = report.project is not None and not failing
    summary = summarize(report.project) if report.project is not None else None
    if args.json:
        print(
            json.dumps(
                {
                    "project": str(args.project),
                    "valid": valid,
                    "strict": args.strict,
                    "problems": records,
                    "summary": dataclasses.asdict(summary) if summary else None,
                }
            )
        )
    else:
        _print_text(args.project, records, failing, summary if valid else None)
    return 0 if valid else 1


def _print_text(
    project: Path,
    records: list[dict[str, Any]],
    failing: list[dict[str, Any]],
    summary: ProjectSummary | None,
) -> None:
    """Errors as ``CODE: message (where)``, warnings prefixed ``warning:``, then a verdict."""
    for record in records:
        where = record["path"] + (f":{record['line']}" if record["line"] is not None else "")
        prefix = "" if record in failing else "warning: "
        print(f"{prefix}{record['code']}: {record['message']} ({where})")
    if summary is not None:
        warned = len(records)
        note = f" ({warned} warning{'' if warned == 1 else 's'})" if warned else ""
        print(f"{project}: valid — {summary.describe()}{note}")
        return
    problems = "problem" if len(failing) == 1 else "problems"
    print(f"{project}: {len(failing)} {problems}")


def _displayed(record: dict[str, Any], project: Path) -> dict[str, Any]:
    path = Path(record["path"])
    shown = path if path.is_absolute() else project / path
    return {**record, "path": shown.as_posix()}
