"""The condition grammar of contract §3.2: what parses, into what, and what is refused."""

import re

import pytest

from voicegate.engine.conditions import (
    BooleanOp,
    Comparison,
    Literal,
    MemoryRead,
    Negation,
    parse_condition,
)
from voicegate.engine.memory.schema import FieldRef
from voicegate.errors import ConditionError


def read(namespace: str, entry: str) -> MemoryRead:
    return MemoryRead(FieldRef(namespace, entry))


def test_a_bare_reference_is_a_memory_read() -> None:
    condition = parse_condition("  session.card_replace.selected_card_id  ")
    assert condition.root == read("card_replace", "selected_card_id")
    assert condition.source == "session.card_replace.selected_card_id"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("'stolen'", "stolen"),
        ('"stolen"', "stolen"),
        (r"'it\'s'", "it's"),
        ('"a \\"b\\""', 'a "b"'),
        ("3", 3),
        ("-3", -3),
        ("2.5", 2.5),
        # every way Python writes a number (conditions behave like Python, contract §3.2)
        (".5", 0.5),
        ("-.5", -0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("1E3", 1000.0),
        ("1.5e-2", 0.015),
        ("-2E+1", -20.0),
        ("+2", 2),
        ("1_000", 1000),
        ("True", True),
        ("False", False),
        ("None", None),
        ("true", True),
        ("false", False),
    ],
)
def test_literals(text: str, value: object) -> None:
    root = parse_condition(f"session.a.b == {text}").root
    assert root == Comparison(read("a", "b"), (("==", Literal(value)),))
    literal = root.rest[0][1]
    assert isinstance(literal, Literal)
    assert type(literal.value) is type(value)  # 1e3 is a float, as in Python


def test_numbers_in_every_form_parse_where_a_number_may_stand() -> None:
    root = parse_condition(".5 < session.a.n <= 1e3 and session.a.m > -2").root
    assert root == BooleanOp(
        "and",
        (
            Comparison(Literal(0.5), (("<", read("a", "n")), ("<=", Literal(1000.0)))),
            Comparison(read("a", "m"), ((">", Literal(-2)),)),
        ),
    )


def test_or_binds_weaker_than_and_and_not_binds_tightest() -> None:
    root = parse_condition("not session.a.x and session.a.y or session.a.z").root
    assert root == BooleanOp(
        "or",
        (BooleanOp("and", (Negation(read("a", "x")), read("a", "y"))), read("a", "z")),
    )


def test_parentheses_group() -> None:
    root = parse_condition("session.a.x and (session.a.y or session.a.z)").root
    assert root == BooleanOp(
        "and", (read("a", "x"), BooleanOp("or", (read("a", "y"), read("a", "z"))))
    )


def test_comparisons_chain_like_python() -> None:
    root = parse_condition("1 < session.a.n <= 10").root
    assert root == Comparison(Literal(1), (("<", read("a", "n")), ("<=", Literal(10))))


@pytest.mark.parametrize("operator", ["==", "!=", "<", "<=", ">", ">="])
def test_every_comparison_operator(operator: str) -> None:
    root = parse_condition(f"session.a.n {operator} 1").root
    assert root == Comparison(read("a", "n"), ((operator, Literal(1)),))


def test_skill_ids_may_contain_hyphens() -> None:
    assert parse_condition("session.card-replace.x").root == read("card-replace", "x")


def test_references_lists_each_field_once_in_order() -> None:
    condition = parse_condition("session.a.x == 1 or (session.p.y and session.a.x != 2)")
    assert condition.references() == (FieldRef("a", "x"), FieldRef("p", "y"))


@pytest.mark.parametrize(
    "name",
    ["authenticated", "card_replace.selected_card_id", "session.project", "a.b.c", "session.a.b.c"],
)
def test_names_that_are_not_three_segment_references_are_unknown(name: str) -> None:
    with pytest.raises(ConditionError) as raised:
        parse_condition(f"{name} == True")
    assert str(raised.value).startswith(f"Unknown name '{name}' in condition expression")
    assert raised.value.name == name


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("session.system.flag", "reserved"),
        ("session.a.b in x", "'in' is not supported"),
        # the advice comes first, not the list or tuple the lexer cannot read
        ('session.a.b in ["a", "b"]', "'in' is not supported"),
        ("session.a.b in ('a', 'b')", "'in' is not supported"),
        ("session.a.b not in ['a']", "'in' is not supported"),
        ("session.a.b is None", "== None"),
        ("session.a.b = 1", "write '=='"),
        ("session.a.b ==", "ends too early"),
        ("(session.a.b", "expected ')'"),
        ("session.a.b)", "unexpected ')'"),
        ("session.a.b session.a.c", "unexpected 'session.a.c'"),
        ("'open", "not closed"),
        ("len(session.a.b) > 1", "function calls"),
        ("session.a.b + 1", "unexpected character '+'"),
        ("session.a.b[0]", "unexpected character '['"),
        ("session.a.b == 1e", "unexpected character '1'"),
        ("session.a.b == 1.2.3", "unexpected character '1'"),
        ("session.a.b == 1__0", "unexpected character '1'"),
        ("and session.a.b", "unexpected 'and'"),
        (">", "unexpected '>'"),
    ],
)
def test_malformed_conditions_are_refused_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(ConditionError, match=re.escape(message)) as raised:
        parse_condition(text)
    assert raised.value.name is None
