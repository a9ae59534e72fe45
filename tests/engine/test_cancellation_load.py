"""The cancellation contract under load: 200 turns cancelled at random points (bench: 1,000)."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from voicegate.engine.memory.sqlite_store import SqliteMemoryStore

BENCH = Path(__file__).resolve().parents[2] / "bench" / "turn_cancellation.py"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The bench script, imported as a module for this test."""
    spec = importlib.util.spec_from_file_location("turn_cancellation_bench", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_cancellations_leak_nothing_lose_nothing_record_nothing_cancelled(
    bench: ModuleType, tmp_path: Path, seed: int
) -> None:
    path = tmp_path / "memory.sqlite3"
    store = SqliteMemoryStore(path)
    drill = await bench.run_drill(200, seed, store, lambda: SqliteMemoryStore(path))
    store.close()

    # the drill exercised every case: cancels inside tools, completed tools, cancelled turns
    assert drill.cancelled
    assert drill.completed
    assert 0 < drill.cancelled_turns < 200
    assert drill.leaked_tasks == 0
    # every write made before a cancel is in the store, read back as after a restart
    assert drill.stored_attempts == drill.written_before_await == drill.started
    # completed calls are recorded, in order; cancelled ones never are
    assert drill.recorded == drill.completed
    assert not set(drill.recorded) & set(drill.cancelled)
    assert sorted(drill.completed + drill.cancelled) == drill.started
    # the timeline learned about each cancelled call through the undelivered events
    assert drill.cancel_events_seen == len(drill.cancelled)
