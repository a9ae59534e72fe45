"""The workers' scoreboard, the capacity gates and the supervisor's pure helpers."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.server_kit import NullTransport
from voicegate.gateway.calls import ActiveCall, CallRegistry, LocalCapacityGate, Seat
from voicegate.gateway.loopwatch import LAG_BUCKET_UPPER_MS, lag_bucket
from voicegate.gateway.scoreboard import Scoreboard, SharedCapacityGate
from voicegate.gateway.supervisor import BACKOFF_MAX_S, backoff_s, describe_exit, reserve_port


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Scoreboard]:
    """A two-worker board of capacity 3, as the supervisor creates it."""
    created = Scoreboard.create(2, 3, directory=tmp_path)
    yield created
    created.close()


def attached(board: Scoreboard) -> Scoreboard:
    assert board.path is not None
    return Scoreboard.attach(board.path)


def test_admission_counts_the_calls_of_every_worker(board: Scoreboard) -> None:
    first, second = attached(board), attached(board)
    gate0, gate1 = SharedCapacityGate(first, 0), SharedCapacityGate(second, 1)
    assert [gate0.try_admit(), gate0.try_admit(), gate1.try_admit()] == [Seat.TAKEN] * 3
    assert gate1.try_admit() is Seat.FULL
    assert gate0.try_admit() is Seat.FULL
    assert gate1.active_calls() == 3
    gate0.release()
    assert gate1.try_admit() is Seat.TAKEN
    report = board.report()
    assert [w.active_calls for w in report.workers] == [1, 2]
    assert [w.calls_total for w in report.workers] == [2, 2]
    first.close()
    second.close()


def test_a_dead_worker_frees_its_capacity_and_a_restart_keeps_its_count(
    board: Scoreboard,
) -> None:
    worker = attached(board)
    gate = SharedCapacityGate(worker, 0)
    board.spawned(0, 1234)
    assert gate.try_admit("CA1") is Seat.TAKEN
    assert gate.try_admit() is Seat.TAKEN
    board.exited(0)
    # Its calls ended with it: the same call may start again on another worker.
    assert SharedCapacityGate(board, 1).try_admit("CA1") is Seat.TAKEN
    board.release(1, "CA1")
    assert board.active_calls() == 0
    assert board.report().workers[0].alive is False
    board.restarted(0)
    board.reset(0)
    board.spawned(0, 5678)
    slot = board.report().workers[0]
    assert (slot.pid, slot.alive, slot.restarts, slot.calls_total) == (5678, True, 1, 0)
    worker.close()


def test_a_call_live_on_one_worker_is_refused_on_another_and_the_first_goes_on(
    board: Scoreboard,
) -> None:
    """Issue 15 #1 across workers: a second stream of a live CallSid that the kernel hands to
    the other worker is refused at its `start` (1008), like one on the same worker. It was
    admitted, and the store then gave the call to it: the live stream ended with 1011."""
    first, second = attached(board), attached(board)
    worker0 = CallRegistry(SharedCapacityGate(first, 0))
    worker1 = CallRegistry(SharedCapacityGate(second, 1))
    worker0.open()
    worker1.open()
    live = worker0.admit("twilio-1", "twilio", NullTransport())
    again = worker1.admit("twilio-2", "twilio", NullTransport())
    other = worker1.admit("twilio-3", "twilio", NullTransport())
    assert isinstance(live, ActiveCall)
    assert isinstance(again, ActiveCall)
    assert isinstance(other, ActiveCall)
    assert worker0.start(live, "CA-LIVE") is None
    refusal = worker1.start(again, "CA-LIVE")
    assert refusal is not None
    assert (refusal.code, refusal.reason) == (1008, "a stream for this call id is already live")
    assert worker1.start(other, "CA-OTHER") is None  # other calls are admitted as before
    assert board.active_calls() == 2  # the refused stream holds no place
    worker1.release(again)
    worker0.release(live)  # the call ended: a new stream of it may start anywhere
    retry = worker1.admit("twilio-4", "twilio", NullTransport())
    assert isinstance(retry, ActiveCall)
    assert worker1.start(retry, "CA-LIVE") is None
    first.close()
    second.close()


def test_lag_samples_fill_the_histogram_of_their_worker(board: Scoreboard) -> None:
    worker = attached(board)
    for lag_ms in (0.1, 0.4, 12.0, 9999.0):
        worker.record_lag(1, lag_ms)
    lag = board.report().workers[1].loop_lag
    assert lag.samples == 4
    assert lag.max_ms == pytest.approx(9999.0)
    assert len(lag.counts) == len(LAG_BUCKET_UPPER_MS) + 1
    assert lag.counts[0] == 2
    assert lag.counts[lag_bucket(12.0)] == 1
    assert lag.counts[-1] == 1  # above every bound
    assert board.report().workers[0].loop_lag.samples == 0
    worker.close()


def test_lag_buckets_include_their_upper_bound() -> None:
    assert lag_bucket(0.0) == 0
    assert lag_bucket(0.5) == 0
    assert lag_bucket(0.51) == 1
    assert lag_bucket(20.0) == LAG_BUCKET_UPPER_MS.index(20)


def test_the_report_has_the_documented_json_shape(board: Scoreboard) -> None:
    board.spawned(0, 42)
    data = json.loads(json.dumps(board.report().to_json()))
    assert data["capacity"] == 3
    assert data["active_calls"] == 0
    assert [w["index"] for w in data["workers"]] == [0, 1]
    first = data["workers"][0]
    assert set(first) == {
        "index",
        "pid",
        "alive",
        "restarts",
        "active_calls",
        "calls_total",
        "loop_lag",
    }
    assert (first["pid"], first["alive"]) == (42, True)
    assert set(first["loop_lag"]) == {"bucket_upper_ms", "counts", "samples", "max_ms"}


def test_the_creator_removes_the_file(tmp_path: Path) -> None:
    board = Scoreboard.create(1, 1, directory=tmp_path)
    assert board.path is not None
    assert board.path.exists()
    path = board.path
    board.close()
    assert not path.exists()


def test_a_file_that_is_not_a_board_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.write_bytes(bytes(4096))
    with pytest.raises(ValueError, match="not a voicegate scoreboard"):
        Scoreboard.attach(other)


def test_a_private_board_is_this_process_alone() -> None:
    board = Scoreboard.private(capacity=1)
    gate = SharedCapacityGate(board, 0)
    assert gate.try_admit() is Seat.TAKEN
    assert gate.try_admit() is Seat.FULL
    assert board.report().workers[0].alive


def test_the_local_gate_counts_this_process() -> None:
    gate = LocalCapacityGate(1)
    assert gate.try_admit() is Seat.TAKEN
    assert gate.try_admit() is Seat.FULL
    gate.release()
    assert gate.active_calls() == 0
    assert gate.try_admit() is Seat.TAKEN
    with pytest.raises(ValueError, match="at least 1"):
        LocalCapacityGate(0)


def test_readiness_counts_calls_admitted_by_other_workers(board: Scoreboard) -> None:
    other = SharedCapacityGate(attached(board), 1)
    registry = CallRegistry(SharedCapacityGate(attached(board), 0))
    registry.open()
    for _ in range(3):
        assert other.try_admit() is Seat.TAKEN
    readiness = registry.readiness()
    assert (readiness.ready, readiness.active_calls, readiness.capacity) == (False, 3, 3)
    assert readiness.reason == "at capacity (3 calls)"


def test_restarts_back_off_while_workers_die_young() -> None:
    delays = [backoff_s(deaths) for deaths in range(10)]
    assert delays == sorted(delays)
    assert delays[-1] == BACKOFF_MAX_S


def test_exits_are_described_for_the_logs() -> None:
    assert describe_exit(1) == "code 1"
    assert describe_exit(-9) == "killed by SIGKILL"


def test_a_port_another_program_listens_on_is_not_reserved() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError, match="in use"):
            reserve_port("127.0.0.1", taken.getsockname()[1])


def test_port_0_reserves_a_free_port_that_workers_can_share() -> None:
    with reserve_port("127.0.0.1", 0) as reserved:
        port = reserved.getsockname()[1]
        assert port > 0
        with socket.socket() as worker:
            worker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            worker.bind(("127.0.0.1", port))
            worker.listen()
