"""``voicegate validate PROJECT``: check an agent project against the contract.

Prints one line per problem, ``CODE: message (path:line)``, and exits 1; a valid project
prints a one-line summary and exits 0. With ``--json`` the result is one JSON object:
``{"project": ..., "valid": ..., "problems": [{"code", "message", "path", "line"}],
"summary": {...}}``. Paths are shown relative to the current directory through the PROJECT
argument, so they can be opened as printed. MCP servers are not contacted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from voicegate.engine.project.validate import problem_record, summarize, validate_project


def add_parser(subparsers: Any) -> None:
    """Register ``voicegate validate``."""
    parser = subparsers.add_parser(
        "validate", help="check an agent project and list every problem with its file and line"
    )
    parser.add_argument("project", type=Path, help="the project folder")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Validate the project; exit 0 when it is valid, 1 otherwise."""
    report = validate_project(args.project)
    records = [
        _displayed(problem_record(problem, report.root), args.project)
        for problem in report.problems
    ]
    summary = summarize(report.project) if report.project is not None else None
    if args.json:
        print(
            json.dumps(
                {
                    "project": str(args.project),
                    "valid": not records,
                    "problems": records,
                    "summary": dataclasses.asdict(summary) if summary else None,
                }
            )
        )
    elif summary is not None:
        print(f"{args.project}: valid — {summary.describe()}")
    else:
        for record in records:
            where = record["path"] + (f":{record['line']}" if record["line"] is not None else "")
            print(f"{record['code']}: {record['message']} ({where})")
        problems = "problem" if len(records) == 1 else "problems"
        print(f"{args.project}: {len(records)} {problems}")
    return 0 if summary is not None else 1


def _displayed(record: dict[str, Any], project: Path) -> dict[str, Any]:
    path = Path(record["path"])
    shown = path if path.is_absolute() else project / path
    return {**record, "path": shown.as_posix()}
