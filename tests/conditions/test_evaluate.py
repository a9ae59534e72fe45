"""Evaluating conditions (contract §3.3): Python semantics, bool() coercion, failing closed."""

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicegate.engine.conditions import evaluate, holds, parse_condition
from voicegate.engine.memory.schema import FieldRef
from voicegate.errors import ConditionError


def memory(**values: Any) -> Any:
    """A reader over ``session.s.<name>`` fields; anything else is unset."""
    return lambda ref: values.get(ref.entry) if ref.namespace == "s" else None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, False),
        (0, False),
        (0.0, False),
        ("", False),
        ([], False),
        (False, False),
        (1, True),
        ("x", True),
        ([0], True),
        (True, True),
    ],
)
def test_a_bare_reference_is_a_truthiness_test(value: Any, expected: bool) -> None:
    assert evaluate(parse_condition("session.s.x"), memory(x=value)) is expected


def test_unset_fields_read_as_none() -> None:
    assert evaluate(parse_condition("session.s.x == None"), memory()) is True
    assert evaluate(parse_condition("session.s.x != None"), memory(x=0)) is True


def test_equality_against_an_unset_field_is_false() -> None:
    # The R-CIVIC bug (contract §3.3): an unmet equality conjunct must keep a tool gated.
    condition = parse_condition("session.project.authenticated and session.s.reason == 'stolen'")
    assert evaluate(condition, lambda ref: True if ref.entry == "authenticated" else None) is False


def test_chained_comparison() -> None:
    condition = parse_condition("1 < session.s.n <= 3")
    assert [evaluate(condition, memory(n=n)) for n in range(5)] == [False, False, True, True, False]


def test_and_or_short_circuit_so_unset_values_are_never_compared() -> None:
    condition = parse_condition("session.s.n and session.s.n > 3")
    assert evaluate(condition, memory()) is False
    assert evaluate(condition, memory(n=5)) is True
    assert evaluate(parse_condition("session.s.n == None or session.s.n > 3"), memory()) is True


def test_an_impossible_comparison_raises_and_holds_fails_closed() -> None:
    condition = parse_condition("session.s.n < 3")
    with pytest.raises(ConditionError, match="cannot compare None < 3"):
        evaluate(condition, memory())
    assert holds(condition, memory()) is False
    assert holds(condition, memory(n=2)) is True


def test_an_unset_field_fails_closed_quietly_and_a_type_mismatch_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # `when: session.s.n >= 8` before n is set is the everyday case (contract §3.3); voicegate
    # chat printed a warning for it on every evaluation
    caplog.set_level(logging.DEBUG, logger="voicegate.engine.conditions.evaluate")
    assert holds(parse_condition("session.s.n >= 8"), memory()) is False
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    caplog.clear()
    assert holds(parse_condition("session.s.n >= 8"), memory(n="eight")) is False
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


def test_memory_is_read_through_the_reader() -> None:
    seen: list[FieldRef] = []

    def reader(ref: FieldRef) -> Any:
        seen.append(ref)
        return "de"

    assert evaluate(parse_condition('session.project.country == "de"'), reader)
    assert seen == [FieldRef("project", "country")]


# --- property: the evaluator agrees with Python on the same expression -------------------------

VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "b", ""]))
OPERATORS = ["==", "!=", "<", "<=", ">", ">="]


def literal_text(value: Any) -> str:
    return repr(value)


@st.composite
def expressions(draw: st.DrawFn, depth: int = 0) -> str:
    """Condition text that is also a valid Python expression over names x, y, z."""
    kind = draw(
        st.sampled_from(["operand", "compare", "not", "and", "or"] if depth < 3 else ["operand"])
    )
    if kind == "operand":
        if draw(st.booleans()):
            return f"session.s.{draw(st.sampled_from('xyz'))}"
        return literal_text(draw(VALUES))
    if kind == "compare":
        count = draw(st.integers(1, 2))
        parts = [draw(expressions(depth + 1))]
        for _ in range(count):
            parts += [draw(st.sampled_from(OPERATORS)), draw(expressions(depth + 1))]
        return "(" + " ".join(parts) + ")"
    if kind == "not":
        return f"(not {draw(expressions(depth + 1))})"
    left, right = draw(expressions(depth + 1)), draw(expressions(depth + 1))
    return f"({left} {kind} {right})"


@settings(max_examples=300, deadline=None)
@given(text=expressions(), x=VALUES, y=VALUES, z=VALUES)
def test_evaluation_matches_python(text: str, x: Any, y: Any, z: Any) -> None:
    python_text = text.replace("session.s.", "")
    try:
        expected: Any = bool(eval(python_text, {}, {"x": x, "y": y, "z": z}))
    except TypeError:
        expected = ConditionError
    condition = parse_condition(text)
    try:
        actual: Any = evaluate(condition, memory(x=x, y=y, z=z))
    except ConditionError:
        actual = ConditionError
    assert actual == expected
