"""``server.workers`` and ``server.uvloop``: the file, the command line, and what serve makes
of them (no process is started here)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.server.serve_with_echo import echo_runner
from voicegate.cli.main import build_parser
from voicegate.cli.serve_command import ServePlan, apply_overrides, worker_count
from voicegate.config import Settings, parse_settings
from voicegate.errors import ConfigError


def test_by_default_one_worker_per_core_on_uvloop() -> None:
    assert (Settings().server.workers, Settings().server.uvloop) == (0, True)
    assert worker_count(0) == len(os.sched_getaffinity(0))
    assert worker_count(3) == 3


def test_the_file_sets_workers_and_the_loop() -> None:
    settings = parse_settings("server: {workers: 4, uvloop: false}")
    assert (settings.server.workers, settings.server.uvloop) == (4, False)


def test_an_absurd_number_of_workers_is_refused_with_its_key() -> None:
    with pytest.raises(ConfigError, match=r"server\.workers: must be between 0 and 256"):
        parse_settings("server: {workers: 10000}")
    with pytest.raises(ConfigError, match="command line: workers must be between 0 and 256"):
        apply_overrides(Settings(), workers=10000)


def test_the_command_line_overrides_the_file(tmp_path: Path) -> None:
    config = tmp_path / "voicegate.yml"
    config.write_text("server: {workers: 4, port: 9000}\n", encoding="utf-8")
    arguments = ["serve", "--config", str(config), "--workers", "1", "--no-uvloop"]
    plan = ServePlan.from_args(build_parser().parse_args(arguments), echo_runner)
    settings = plan.settings()
    assert (settings.server.workers, settings.server.uvloop, settings.server.port) == (
        1,
        False,
        9000,
    )


def test_a_plan_keeps_the_file_as_read(tmp_path: Path) -> None:
    config = tmp_path / "voicegate.yml"
    config.write_text("server: {capacity: 7}\n", encoding="utf-8")
    plan = ServePlan.from_args(
        build_parser().parse_args(["serve", "--config", str(config)]), echo_runner
    )
    config.write_text("server: {capacity: 9}\n", encoding="utf-8")
    assert plan.settings().server.capacity == 7  # a restarted worker serves what the others do
