"""context.memory rules: names, visibility, write rules, write-once, get defaults (§4)."""

from collections.abc import Callable
from typing import Any

import pytest

from tests.engine.engine_kit import ContextKit
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.memory.slice import MemorySlice
from voicegate.errors import MemoryWriteError, ProjectMemoryAlreadySetError

Build = Callable[..., ContextKit]


# --- get: defaults exactly as the reference says --------------------------------------------


def test_get_returns_the_default_when_unset(make_context: Build) -> None:
    memory = make_context().context.memory
    assert memory.get("card_list", []) == []
    assert memory.get("card_list") is None


def test_get_treats_a_stored_none_like_unset(make_context: Build) -> None:
    memory = make_context().context.memory
    memory.set("card_list", ["a"])
    memory.set("card_list", None)
    assert memory.get("card_list", ["default"]) == ["default"]


@pytest.mark.parametrize(("name", "value"), [("visits", 0), ("authenticated", False)])
def test_get_returns_falsy_stored_values(make_context: Build, name: str, value: Any) -> None:
    memory = make_context().context.memory
    memory.set(name, value)
    assert memory.get(name, "default") == value


def test_get_returns_empty_text_over_the_default(make_context: Build) -> None:
    memory = make_context().context.memory
    memory.set("selected_card_id", "")
    assert memory.get("selected_card_id", "default") == ""


@pytest.mark.parametrize(
    "name",
    ["undeclared", "profile.secret", "system.__discovered__", "session.cards.card_list", "a.b.c"],
)
def test_get_never_raises_and_gives_the_default(make_context: Build, name: str) -> None:
    assert make_context().context.memory.get(name, "default") == "default"


def test_get_with_a_non_text_name_gives_the_default(make_context: Build) -> None:
    assert make_context().context.memory.get(42, "default") == "default"


def test_get_returns_a_copy_so_mutating_it_changes_nothing(make_context: Build) -> None:
    memory = make_context().context.memory
    memory.set("card_list", ["a"])
    memory.get("card_list").append("b")
    assert memory.get("card_list") == ["a"]


# --- names and visibility --------------------------------------------------------------------


def test_bare_name_prefers_the_active_skill_then_project(make_context: Build) -> None:
    kit = make_context(skill="cards")
    kit.context.memory.set("selected_card_id", "skill-value")
    kit.state.write(FieldRef("project", "selected_card_id"), "project-value")
    assert kit.context.memory.get("selected_card_id") == "skill-value"
    assert kit.context.memory.get("project.selected_card_id") == "project-value"
    assert kit.context.memory.get("customer_id") is None
    kit.context.memory.set("customer_id", "C-7")  # not in the skill: falls through to project
    assert kit.state.value(FieldRef("project", "customer_id")) == "C-7"


def test_project_prefix_always_targets_project_memory(make_context: Build) -> None:
    kit = make_context(skill="cards")
    kit.context.memory.set("project.selected_card_id", "p-1")
    assert kit.state.value(FieldRef("project", "selected_card_id")) == "p-1"
    assert kit.state.value(FieldRef("cards", "selected_card_id")) is None


def test_active_skill_prefix_targets_the_skill_field(make_context: Build) -> None:
    kit = make_context(skill="cards")
    kit.context.memory.set("cards.selected_card_id", "s-1")
    assert kit.state.value(FieldRef("cards", "selected_card_id")) == "s-1"
    with pytest.raises(MemoryWriteError, match="not declared"):
        kit.context.memory.set("cards.customer_id", "x")  # never falls through to project


def test_reads_of_other_skills_see_public_fields_only(make_context: Build) -> None:
    kit = make_context(skill="cards")
    kit.state.write(FieldRef("profile", "nickname"), "Sam")
    kit.state.write(FieldRef("profile", "secret"), "hidden")
    assert kit.context.memory.get("profile.nickname") == "Sam"
    assert kit.context.memory.get("profile.secret", "unreadable") == "unreadable"


def test_the_active_skill_reads_its_own_private_fields(make_context: Build) -> None:
    kit = make_context(skill="cards")
    kit.context.memory.set("pin_attempts", 2)
    assert kit.context.memory.get("pin_attempts") == 2
    assert kit.context.memory.get("cards.pin_attempts") == 2
    other = MemorySlice(kit.state, "profile")
    assert other.get("cards.pin_attempts", "unreadable") == "unreadable"


# --- write rules -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("undeclared", "not declared"),
        ("profile.nickname", "cross-skill"),
        ("system.flag", "reserved"),
        ("system", "reserved"),
        ("session.cards.card_list", "session."),
        ("nowhere.entry", "unknown memory namespace"),
        ("project.undeclared", "not declared"),
        ("a.b.c", "not a memory entry name"),
    ],
)
def test_forbidden_writes_raise_memory_write_error(
    make_context: Build, name: str, message: str
) -> None:
    kit = make_context(skill="cards")
    with pytest.raises(MemoryWriteError, match=message):
        kit.context.memory.set(name, "x")
    assert kit.writes == []


def test_project_fields_are_write_once(make_context: Build) -> None:
    memory = make_context().context.memory
    memory.set("authenticated", True)
    with pytest.raises(ProjectMemoryAlreadySetError):
        memory.set("project.authenticated", False)
    with pytest.raises(ProjectMemoryAlreadySetError):
        memory.set("authenticated", None)  # clearing is a write too
    assert memory.get("authenticated") is True


def test_already_set_means_not_none(make_context: Build) -> None:
    memory = make_context().context.memory
    memory.set("authenticated", None)
    memory.set("authenticated", False)  # None did not count as set
    with pytest.raises(ProjectMemoryAlreadySetError):
        memory.set("authenticated", True)


def test_mutable_project_fields_can_be_overwritten(make_context: Build) -> None:
    memory = make_context().context.memory
    memory.set("visits", 1)
    memory.set("visits", 2)
    assert memory.get("visits") == 2


def test_project_memory_error_is_a_memory_write_error(make_context: Build) -> None:
    memory = make_context().context.memory
    memory.set("customer_id", "C-1")
    with pytest.raises(MemoryWriteError):
        memory.set("customer_id", "C-2")


def test_hook_slices_skip_an_already_set_project_field(make_context: Build) -> None:
    kit = make_context()
    kit.context.memory.set("customer_id", "C-1")
    hook_memory = MemorySlice(kit.state, "cards", skip_set_project_fields=True)
    hook_memory.set("customer_id", "C-2")  # no error, no change
    assert kit.context.memory.get("customer_id") == "C-1"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("selected_card_id", 5, "'text' field cannot hold a int"),
        ("visits", "3", "'int' field cannot hold a str"),
        ("visits", True, "'int' field cannot hold a bool"),
        ("authenticated", "yes", "'bool' field cannot hold a str"),
        ("card_list", "a", "'list' field cannot hold a str"),
        ("color", "green", "not one of the declared enum_values"),
        ("card_list", [object()], "not JSON-serialisable"),
    ],
)
def test_values_must_fit_the_declared_type(
    make_context: Build, name: str, value: Any, message: str
) -> None:
    with pytest.raises(MemoryWriteError, match=message):
        make_context().context.memory.set(name, value)


def test_tuples_are_stored_as_lists(make_context: Build) -> None:
    memory = make_context().context.memory
    memory.set("card_list", ("a", "b"))
    assert memory.get("card_list") == ["a", "b"]


def test_a_tool_without_an_active_skill_reaches_project_memory_only(make_context: Build) -> None:
    memory = make_context(skill=None).context.memory
    memory.set("customer_id", "C-3")
    assert memory.get("customer_id") == "C-3"
    with pytest.raises(MemoryWriteError):
        memory.set("card_list", [])
