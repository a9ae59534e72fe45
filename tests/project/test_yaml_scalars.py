"""Plain YAML scalars are typed as YAML 1.2 types them, as Mantle's loader reads them.

PyYAML reads YAML 1.1: ``10:30`` is the sexagesimal 630, ``2026-12-05`` a date, ``1e3`` a
string and ``0755`` octal. A third-party probe's ``set_memory`` step with an opening time, a
date and a limit failed to load with four errors.
"""

from pathlib import Path
from typing import Any

import pytest

from tests.project.project_kit import INTEGRATIONS, problems, skill_md, write
from voicegate.engine.project.loader import load_project
from voicegate.engine.project.step_model import SetMemoryStep
from voicegate.engine.yamlfile import parse_yaml


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("10:30", "10:30"),
        ("2026-12-05", "2026-12-05"),
        ("2026-12-05T10:00:00", "2026-12-05T10:00:00"),
        ("1e3", 1000.0),
        ("1.0e3", 1000.0),
        ("-2.5E-1", -0.25),
        (".5", 0.5),
        ("5.", 5.0),
        ("3.10", 3.1),
        ("0755", 755),
        ("0o755", 493),
        ("0x1F", 31),
        ("1_000", 1000),
        ("-2", -2),
        ("+15550100", 15550100),
        ("1.2.3", "1.2.3"),
        ("yes", "yes"),
        ("on", "on"),
        ("True", True),
        ("null", None),
    ],
)
def test_plain_scalars_are_typed_as_yaml_1_2_types_them(text: str, value: Any) -> None:
    parsed = parse_yaml(f"key: {text}\n", "x.yml")["key"]
    assert parsed == value
    assert type(parsed) is type(value)


def test_a_set_memory_step_with_a_time_a_date_and_an_exponent_loads(tmp_path: Path) -> None:
    memory = (
        "schema:\n  public:\n    opens: {type: text}\n    day: {type: text}\n"
        "    limit: {type: float}\n"
    )
    body = (
        ":::ordered_block id=main\nsteps:\n  - id: set\n"
        "    set_memory: {opens: 10:30, day: 2026-12-05, limit: 1e3}\n:::\n"
    )
    root = write(
        tmp_path,
        {
            "integrations.yml": INTEGRATIONS,
            "skills/cards/skill.md": skill_md(body=body),
            "skills/cards/memory.yml": memory,
        },
    )
    assert problems(root) == []
    [step] = load_project(root).skills["cards"].body.blocks["main"].steps
    assert isinstance(step, SetMemoryStep)
    assert dict(step.values) == {"opens": "10:30", "day": "2026-12-05", "limit": 1000.0}
