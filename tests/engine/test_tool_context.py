"""ToolContext members (tools reference, "ToolContext"; contract §8.4)."""

from collections.abc import Callable

import pytest

from tests.engine.engine_kit import ContextKit
from voicegate.engine.history import UserUttered
from voicegate.engine.tools.buttons import Button
from voicegate.engine.tools.context import ButtonCollector

Build = Callable[..., ContextKit]


async def test_send_is_a_coroutine_that_surfaces_the_message(make_context: Build) -> None:
    kit = make_context()
    pending = kit.context.send("One moment.")
    assert kit.turn.said == []  # nothing happens until it is awaited
    await pending
    assert kit.turn.said == ["One moment."]


async def test_send_drops_its_message_once_the_turn_is_cancelled(make_context: Build) -> None:
    kit = make_context()
    kit.turn.cancelled = True
    await kit.context.send("too late")
    assert kit.turn.said == []


async def test_send_refuses_non_text(make_context: Build) -> None:
    with pytest.raises(TypeError):
        await make_context().context.send(42)


def test_is_cancelled_follows_the_turn(make_context: Build) -> None:
    kit = make_context()
    assert kit.context.is_cancelled is False
    kit.turn.cancelled = True
    assert kit.context.is_cancelled is True


def test_set_buttons_outside_a_button_source_raises_runtime_error(make_context: Build) -> None:
    with pytest.raises(RuntimeError, match="response button source"):
        make_context().context.set_buttons([Button(title="Yes", value="yes")])


def test_set_buttons_replaces_the_previous_list(make_context: Build) -> None:
    collector = ButtonCollector()
    kit = make_context(buttons=collector)
    kit.context.set_buttons([Button(title="A", value="a"), Button(title="B", value="b")])
    kit.context.set_buttons(
        [Button(title="Later", value="later", ref="session.cards.selected_card_id")]
    )
    assert collector.buttons == (
        Button(title="Later", value="later", ref="session.cards.selected_card_id"),
    )


def test_set_buttons_takes_only_buttons(make_context: Build) -> None:
    kit = make_context(buttons=ButtonCollector())
    with pytest.raises(TypeError):
        kit.context.set_buttons(["yes"])


@pytest.mark.parametrize("ref", ["cards.selected_card_id", "session.cards", "session..x"])
def test_button_ref_must_be_fully_qualified(ref: str) -> None:
    with pytest.raises(ValueError, match="session"):
        Button(title="Pick", value="1", ref=ref)


def test_events_is_a_fresh_copy_every_time(make_context: Build) -> None:
    kit = make_context()
    kit.history.append(UserUttered("t1", "hello"))
    first = kit.context.events
    first.append(UserUttered("t9", "injected"))
    first.clear()
    assert kit.context.events == [UserUttered("t1", "hello")]
    assert kit.context.events is not kit.context.events


def test_events_reflect_the_history_at_each_access(make_context: Build) -> None:
    kit = make_context()
    kit.history.append(UserUttered("t1", "first"))
    kit.history.append(UserUttered("t2", "second"))
    assert [event.text for event in kit.context.events] == ["first", "second"]  # type: ignore[union-attr]


def test_model_carries_llm_config_and_references_index(make_context: Build) -> None:
    kit = make_context(llm_config={"llm": {"model_group": "main"}})
    assert kit.context.model.llm_config == {"llm": {"model_group": "main"}}
    assert kit.context.model.references_index is None


def test_memory_is_scoped_to_the_active_skill(make_context: Build) -> None:
    kit = make_context(skill="cards")
    kit.context.memory.set("selected_card_id", "c-1")
    assert kit.context.memory.active_skill == "cards"
    assert kit.writes == [("cards.selected_card_id", "c-1")]
