"""memory.yml parsing (contract §2.3, §2.4)."""

import re

import pytest

from voicegate.engine.memory.declarations import parse_project_memory, parse_skill_memory
from voicegate.engine.memory.fields import FieldType, MemoryField, Visibility
from voicegate.engine.yamlfile import parse_yaml
from voicegate.errors import ProjectError


def parse_project(text: str) -> dict[str, MemoryField]:
    return parse_project_memory(parse_yaml(text, "memory.yml"), "memory.yml")


def test_project_memory_is_a_flat_map_with_every_field_option() -> None:
    fields = parse_project(
        """
caller_phone:
  type: text
  seed: true
  pii: true
  description: Caller number.
visits:
  type: int
  mutable: true
  initial_value: 0
tier:
  type: categorical
  enum_values: [gold, silver]
"""
    )
    phone, visits, tier = fields["caller_phone"], fields["visits"], fields["tier"]
    assert (phone.type, phone.seed, phone.pii) == (FieldType.TEXT, True, True)
    assert (visits.mutable, visits.initial_value) == (True, 0)
    assert tier.enum_values == ("gold", "silver")


def test_skill_memory_has_public_and_private_sections() -> None:
    text = """
schema:
  public:
    selected: {type: text, llm_settable: true}
  private:
    attempts: {type: int, initial_value: 0}
access:
  deny_read: [other.secret]
ignored_top_level: true
"""
    skill = parse_skill_memory("cards", parse_yaml(text, "m.yml"), "m.yml")
    assert skill.fields["selected"].visibility is Visibility.PUBLIC
    assert skill.fields["selected"].llm_settable
    assert skill.fields["attempts"].visibility is Visibility.PRIVATE
    assert skill.deny_read == ("other.secret",)


def test_empty_files_declare_nothing() -> None:
    assert parse_project_memory(None, "memory.yml") == {}
    assert parse_skill_memory("s", None, "m.yml").fields == {}


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("a:\n  type: string\n", "type 'string' is not one of", 2),
        ("a:\n  type: text\n  llm_settable: true\n", "llm_settable is skill-only", 2),
        ("a:\n  type: text\n  pii_: true\n", "unknown keys ['pii_']", 2),
        ("a:\n  type: text\n  pii: 'yes'\n", "'pii' must be true or false", 2),
        ("a: text\n", "must be a mapping", None),
        ("- a\n", "must be a mapping of entries", None),
        ("a:\n  type: text\n   bad: [\n", "invalid YAML", 3),
        ("a.b:\n  type: text\n", "not a valid memory entry name", None),
    ],
)
def test_bad_project_memory_names_file_and_line(text: str, message: str, line: int | None) -> None:
    with pytest.raises(ProjectError, match=re.escape(message)) as raised:
        parse_project(text)
    assert raised.value.path == "memory.yml"
    assert raised.value.line == line


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("schema:\n  public:\n    a: {type: text, mutable: true}\n", "only valid on project"),
        ("schema:\n  public:\n    a: {type: text, seed: true}\n", "only valid on project"),
        (
            "schema:\n  public:\n    a: {type: text}\n  private:\n    a: {type: text}\n",
            "both public and private",
        ),
        ("schema: [a]\n", "'schema' must be a mapping"),
    ],
)
def test_bad_skill_memory_is_refused(text: str, message: str) -> None:
    with pytest.raises(ProjectError, match=message):
        parse_skill_memory("cards", parse_yaml(text, "m.yml"), "m.yml")


def test_an_initial_value_is_coerced_to_the_declared_type_as_set_fields_coerces() -> None:
    # Written as strings (quoted YAML), as authors do: stored as the declared type, so that
    # conditions read False and 0, not a truthy "false" and an incomparable "0".
    fields = parse_project(
        """
retries: {type: int, initial_value: "0"}
ok: {type: bool, initial_value: "false"}
ratio: {type: float, initial_value: 1}
tier: {type: categorical, enum_values: [gold, silver], initial_value: Gold}
"""
    )
    values = {name: field.initial_value for name, field in fields.items()}
    assert values == {"retries": 0, "ok": False, "ratio": 1.0, "tier": "gold"}
    assert type(values["ratio"]) is float


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('a: {type: int, initial_value: "abc"}', "initial_value 'abc' does not fit: 'int' field"),
        ("b: {type: categorical, enum_values: [x, y], initial_value: z}", "'z' is not one of"),
        ("c: {type: bool, initial_value: maybe}", "'bool' field cannot hold a str value"),
    ],
)
def test_an_initial_value_that_does_not_fit_is_a_validation_error(text: str, message: str) -> None:
    with pytest.raises(ProjectError, match=re.escape(message)):
        parse_project(text)
