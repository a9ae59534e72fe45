"""Memory stores: write-through, SQLite across restarts, seeding and initial values (§4)."""

import multiprocessing
import multiprocessing.synchronize
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.redis_kit import RedisServer, redis_server  # noqa: F401 - the fixture
from voicegate.engine.memory.fields import FieldType, MemoryField, SkillMemory
from voicegate.engine.memory.redis_store import RedisOptions, RedisStore
from voicegate.engine.memory.render import PII_MASK, masked, project_memory_lines, render_value
from voicegate.engine.memory.schema import FieldRef, MemorySchema
from voicegate.engine.memory.slice import MemorySlice
from voicegate.engine.memory.sqlite_calls import SqliteCallStates
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore
from voicegate.engine.memory.state import MemoryState
from voicegate.engine.memory.store import InMemoryStore, MemoryStore
from voicegate.errors import EngineError


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    made: MemoryStore
    if request.param == "redis":  # issue 13: the same contract on a real redis-server
        server: RedisServer = request.getfixturevalue("redis_server")
        made = RedisStore(server.url, RedisOptions("vg:test"))
    elif request.param == "sqlite":
        made = SqliteMemoryStore(tmp_path / "m.db")
    else:
        made = InMemoryStore()
    yield made
    made.close()


def test_stores_round_trip_and_overwrite(store: MemoryStore) -> None:
    store.save("c1", "project", "visits", "1")
    store.save("c1", "project", "visits", "2")
    store.save("c1", "cards", "card_list", '["a"]')
    store.save("c2", "project", "visits", "9")
    assert store.load("c1") == {("project", "visits"): "2", ("cards", "card_list"): '["a"]'}
    assert store.load("c2") == {("project", "visits"): "9"}
    assert store.load("unknown") == {}


def test_sqlite_values_survive_a_restart(tmp_path: Path, schema: MemorySchema) -> None:
    path = tmp_path / "data" / "memory.sqlite3"
    first = SqliteMemoryStore(path)
    MemorySlice(MemoryState(schema, first, "conv"), "cards").set("card_list", ["x", "y"])
    # no close(): a crash right after the write must not lose it
    second = SqliteMemoryStore(path)
    assert MemorySlice(MemoryState(schema, second, "conv"), "cards").get("card_list") == ["x", "y"]
    first.close()
    second.close()


def test_every_write_reaches_the_store_at_once(schema: MemorySchema) -> None:
    store = InMemoryStore()
    memory = MemorySlice(MemoryState(schema, store, "conv"), "cards")
    memory.set("selected_card_id", "c-1")
    assert store.load("conv") == {("cards", "selected_card_id"): '"c-1"'}
    memory.set("selected_card_id", None)
    assert store.load("conv") == {("cards", "selected_card_id"): "null"}


def test_an_unusable_sqlite_path_raises_engine_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(EngineError, match="cannot open the memory store"):
        SqliteMemoryStore(tmp_path / "file" / "memory.sqlite3")


def _open_both_stores(path: Path, start: "multiprocessing.synchronize.Barrier") -> None:
    start.wait()
    SqliteMemoryStore(path).close()
    SqliteCallStates(path).close()


def test_workers_opening_a_fresh_sqlite_file_at_once_all_start(tmp_path: Path) -> None:
    # serve --workers N: every worker opens the same new file as it starts. The WAL switch
    # used to fail one of them with "database is locked" in about one start in ten.
    context = multiprocessing.get_context("fork")
    for attempt in range(8):
        path = tmp_path / str(attempt) / "data" / "memory.sqlite3"
        start = context.Barrier(4)
        workers = [context.Process(target=_open_both_stores, args=(path, start)) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=30)
        assert [worker.exitcode for worker in workers] == [0, 0, 0, 0], f"attempt {attempt}"


def seeded_schema() -> MemorySchema:
    project = {
        "phone": MemoryField("phone", FieldType.TEXT, seed=True, pii=True),
        "visits": MemoryField("visits", FieldType.INT, seed=True),
        "tier": MemoryField("tier", FieldType.TEXT, initial_value="basic"),
        "note": MemoryField("note", FieldType.TEXT),
    }
    skill = SkillMemory("cards", {"step": MemoryField("step", FieldType.INT, initial_value=1)})
    return MemorySchema(project, {"cards": skill})


def test_session_start_seeds_seed_fields_from_metadata() -> None:
    state = MemoryState(seeded_schema(), InMemoryStore(), "conv")
    written = state.start_session({"phone": "+15550100", "note": "not a seed field"})
    assert state.value(FieldRef("project", "phone")) == "+15550100"
    assert state.value(FieldRef("project", "note")) is None
    assert FieldRef("project", "phone") in written


def test_seeding_never_overwrites_a_resumed_value_or_stores_a_bad_one() -> None:
    store = InMemoryStore()
    MemoryState(seeded_schema(), store, "conv").start_session({"phone": "+1"})
    resumed = MemoryState(seeded_schema(), store, "conv")
    resumed.start_session({"phone": "+2", "visits": "three"})
    assert resumed.value(FieldRef("project", "phone")) == "+1"
    assert resumed.value(FieldRef("project", "visits")) is None


def test_seeds_from_channel_text_are_read_as_the_declared_type() -> None:
    # Call metadata arrives as text (Twilio <Parameter>, SIP headers): "3" seeds an int field
    # as set_fields would record it; it was refused as a str before.
    schema = seeded_schema()
    extra = {
        "vip": MemoryField("vip", FieldType.BOOL, seed=True),
        "meter_kw": MemoryField("meter_kw", FieldType.FLOAT, seed=True),
        "level": MemoryField(
            "level", FieldType.CATEGORICAL, seed=True, enum_values=("basic", "gold")
        ),
    }
    schema = MemorySchema({**schema.project, **extra}, schema.skills)
    state = MemoryState(schema, InMemoryStore(), "conv")
    state.start_session({"visits": "3", "vip": "true", "meter_kw": "0.7", "level": "Gold"})
    values = {entry: state.value(FieldRef("project", entry)) for entry in (*extra, "visits")}
    assert values == {"vip": True, "meter_kw": 0.7, "level": "gold", "visits": 3}


def test_initial_values_apply_at_session_start_and_on_skill_reset() -> None:
    state = MemoryState(seeded_schema(), InMemoryStore(), "conv")
    state.start_session({})
    assert state.value(FieldRef("project", "tier")) == "basic"
    assert state.value(FieldRef("cards", "step")) == 1
    state.write(FieldRef("cards", "step"), 3)
    state.reset_skill("cards")
    assert state.value(FieldRef("cards", "step")) == 1


def test_pii_values_are_masked_and_long_values_cut() -> None:
    phone = MemoryField("phone", FieldType.TEXT, pii=True)
    note = MemoryField("note", FieldType.TEXT)
    assert render_value("+15550100", phone) == PII_MASK
    assert masked("+15550100", phone) == PII_MASK
    assert masked(None, phone) is None
    assert masked("x", note) == "x"
    assert len(render_value("y" * 500, note)) == 100
    assert render_value({"a": 1}, note) == '{"a": 1}'


def test_project_memory_lines_list_set_values_with_pii_masked() -> None:
    state = MemoryState(seeded_schema(), InMemoryStore(), "conv")
    assert project_memory_lines(state) == []
    state.start_session({"phone": "+15550100"})
    assert project_memory_lines(state) == ["project.phone: [set]", "project.tier: basic"]
