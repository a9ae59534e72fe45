"""The workers' scoreboard: one slot per worker process, in memory they all map.

The supervisor creates it (a small file in ``/dev/shm``), the workers map the same file. A
slot holds the worker's pid, whether it is alive, its restarts, its active and total calls
and its media-loop lag histogram (gateway/loopwatch.py). Any worker can therefore answer
``GET /workers`` and ``/readyz`` for all of them, and admission counts calls across them.

Each slot also lists the provider call ids (a 63-bit hash of each) of its worker's live
calls, so that a second stream of a call that is live on another worker is refused at its
``start`` like one on the same worker (issue 15 #1), instead of taking the call's stored
state over from under the live stream. A worker that dies frees its ids with its slot.

Admission reads every slot and bumps its own under an ``flock`` of the file: the kernel
releases that lock when its holder dies, so a worker killed inside the few microseconds it
holds it cannot wedge the others (a semaphore would stay taken). Lag samples are written
without the lock: only the slot's own worker writes them, one aligned 64-bit word at a time.
A one-slot private board (anonymous memory, no lock) serves a single in-process gateway.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import mmap
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voicegate.gateway.calls import Seat
from voicegate.gateway.loopwatch import LAG_BUCKET_UPPER_MS, lag_bucket

#: Where the shared file goes when the system has a RAM-backed directory for it.
SHM_DIR = Path("/dev/shm")

_MAGIC = 0x766F696365676174  # "voicegat": a file that is not a scoreboard is refused
_HEADER_WORDS = 4  # magic, workers, capacity, buckets
# Words of a slot, then the lag histogram's bucket counts.
_PID, _ALIVE, _RESTARTS, _ACTIVE, _TOTAL, _SAMPLES, _MAX_US = range(7)
_FIELDS = 7
_BUCKETS = len(LAG_BUCKET_UPPER_MS) + 1
_STRIDE = _FIELDS + _BUCKETS


@dataclass(frozen=True, slots=True)
class LagReport:
    """One worker's loop-lag histogram since it started."""

    bucket_upper_ms: tuple[float, ...]
    counts: tuple[int, ...]  # one more than the bounds: the last counts samples above them
    samples: int
    max_ms: float


@dataclass(frozen=True, slots=True)
class WorkerReport:
    """One worker's slot."""

    index: int
    pid: int
    alive: bool
    restarts: int
    active_calls: int
    calls_total: int
    loop_lag: LagReport


@dataclass(frozen=True, slots=True)
class WorkersReport:
    """What ``GET /workers`` answers: capacity, calls across workers, and each worker."""

    capacity: int
    active_calls: int
    workers: tuple[WorkerReport, ...]

    def to_json(self) -> dict[str, Any]:
        """The documented JSON shape (README, "Worker processes")."""
        return {
            "capacity": self.capacity,
            "active_calls": self.active_calls,
            "workers": [_worker_json(worker) for worker in self.workers],
        }


def _worker_json(worker: WorkerReport) -> dict[str, Any]:
    lag = worker.loop_lag
    return {
        "index": worker.index,
        "pid": worker.pid,
        "alive": worker.alive,
        "restarts": worker.restarts,
        "active_calls": worker.active_calls,
        "calls_total": worker.calls_total,
        "loop_lag": {
            "bucket_upper_ms": [float(bound) for bound in lag.bucket_upper_ms],
            "counts": list(lag.counts),
            "samples": lag.samples,
            "max_ms": lag.max_ms,
        },
    }


class Scoreboard:
    """Worker slots in shared memory; see the module docstring for who writes what."""

    def __init__(self, memory: mmap.mmap, lock_fd: int | None, path: Path | None) -> None:
        self._memory = memory
        self._words = memoryview(memory).cast("q")
        self._lock_fd = lock_fd  # None: a private board, one process, no lock needed
        self._path = path
        self._ids: np.ndarray[Any, np.dtype[np.int64]] | None = None
        if self._words[0] != _MAGIC or self._words[3] != _BUCKETS:
            self.close()
            raise ValueError("not a voicegate scoreboard of this version")
        # Live call ids, one row of ``capacity`` per worker (at most that many calls each).
        table = _table_at(self.workers)
        self._ids = np.frombuffer(memory, np.int64, self.workers * self.capacity, 8 * table)

    @classmethod
    def create(cls, workers: int, capacity: int, directory: Path | None = None) -> Scoreboard:
        """A new shared board in a file; :meth:`close` on the creator removes the file."""
        directory = directory or (SHM_DIR if SHM_DIR.is_dir() else None)
        fd, name = tempfile.mkstemp(prefix="voicegate-workers-", dir=directory)
        try:
            os.ftruncate(fd, _size(workers, capacity))
            memory = mmap.mmap(fd, _size(workers, capacity))
        except BaseException:
            os.close(fd)
            os.unlink(name)
            raise
        _write_header(memory, workers, capacity)
        return cls(memory, fd, Path(name))

    @classmethod
    def attach(cls, path: Path) -> Scoreboard:
        """Map a board the supervisor created (in a worker); :meth:`close` leaves the file."""
        fd = os.open(path, os.O_RDWR)  # its own open file, so flock excludes the others
        try:
            memory = mmap.mmap(fd, os.fstat(fd).st_size)
        except BaseException:
            os.close(fd)
            raise
        return cls(memory, fd, None)

    @classmethod
    def private(cls, capacity: int) -> Scoreboard:
        """A one-slot board for a gateway that is its own only worker; slot 0 is this process."""
        memory = mmap.mmap(-1, _size(1, capacity))
        _write_header(memory, 1, capacity)
        board = cls(memory, None, None)
        board.spawned(0, os.getpid())
        return board

    @property
    def path(self) -> Path | None:
        """The shared file (on the creator's board), for workers to attach."""
        return self._path

    @property
    def workers(self) -> int:
        """Number of slots."""
        return int(self._words[1])

    @property
    def capacity(self) -> int:
        """Calls admitted at once across every worker."""
        return int(self._words[2])

    def close(self) -> None:
        """Unmap; the creator also removes the file."""
        self._ids = None  # a view of the mapping: it must go before the mapping closes
        self._words.release()
        self._memory.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        if self._path is not None:
            with contextlib.suppress(FileNotFoundError):
                self._path.unlink()
            self._path = None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclude every other process from the board while inside."""
        if self._lock_fd is None:
            yield
            return
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def active_calls(self) -> int:
        """Calls running across every worker (a consistent sum needs :meth:`locked`)."""
        return sum(self._words[self._at(i, _ACTIVE)] for i in range(self.workers))

    def active_calls_of(self, index: int) -> int:
        """Calls running on worker ``index`` (those a dead worker took with it, before
        :meth:`exited` zeroes its row)."""
        with self.locked():
            return int(self._words[self._at(index, _ACTIVE)])

    def try_admit(self, index: int, call_id: str = "") -> Seat:
        """Count one more call on worker ``index`` unless the board is at capacity or (with
        ``call_id``, the provider's) that call is live on a worker already."""
        key = call_key(call_id) if call_id else 0
        with self.locked():
            if key and bool((self._table() == key).any()):
                return Seat.LIVE
            if self.active_calls() >= self.capacity:
                return Seat.FULL
            self._words[self._at(index, _ACTIVE)] += 1
            self._words[self._at(index, _TOTAL)] += 1
            if key:
                row = self._row(index)
                free = np.flatnonzero(row == 0)  # a worker holds at most ``capacity`` calls
                row[free[0]] = key
            return Seat.TAKEN

    def release(self, index: int, call_id: str = "") -> None:
        """Count one call fewer on worker ``index`` (and forget its ``call_id``)."""
        with self.locked():
            at = self._at(index, _ACTIVE)
            self._words[at] = max(0, self._words[at] - 1)
            if call_id:
                row = self._row(index)
                row[np.flatnonzero(row == call_key(call_id))[:1]] = 0

    def record_lag(self, index: int, lag_ms: float) -> None:
        """Add one loop-lag sample to worker ``index``'s histogram (its own worker only)."""
        base = self._at(index, 0)
        self._words[base + _FIELDS + lag_bucket(lag_ms)] += 1
        self._words[base + _SAMPLES] += 1
        lag_us = int(lag_ms * 1000)
        if lag_us > self._words[base + _MAX_US]:
            self._words[base + _MAX_US] = lag_us

    def reset(self, index: int) -> None:
        """Clear a slot before its worker (re)starts, keeping the restart count."""
        with self.locked():
            base = self._at(index, 0)
            restarts = self._words[base + _RESTARTS]
            self._words[base : base + _STRIDE] = memoryview(bytes(8 * _STRIDE)).cast("q")
            self._words[base + _RESTARTS] = restarts
            self._row(index)[:] = 0

    def spawned(self, index: int, pid: int) -> None:
        """Mark worker ``index`` alive as process ``pid``."""
        with self.locked():
            self._words[self._at(index, _PID)] = pid
            self._words[self._at(index, _ALIVE)] = 1

    def exited(self, index: int) -> None:
        """Mark worker ``index`` dead; its calls ended with it, so they free their capacity."""
        with self.locked():
            self._words[self._at(index, _ALIVE)] = 0
            self._words[self._at(index, _ACTIVE)] = 0
            self._row(index)[:] = 0  # its calls ended with it: their ids may start again

    def restarted(self, index: int) -> None:
        """Count one restart of worker ``index``."""
        with self.locked():
            self._words[self._at(index, _RESTARTS)] += 1

    def report(self) -> WorkersReport:
        """Every slot, read under the lock so calls add up."""
        with self.locked():
            workers = tuple(self._worker(i) for i in range(self.workers))
        active = sum(worker.active_calls for worker in workers)
        return WorkersReport(self.capacity, active, workers)

    def _worker(self, index: int) -> WorkerReport:
        base = self._at(index, 0)
        words = self._words
        lag = LagReport(
            bucket_upper_ms=LAG_BUCKET_UPPER_MS,
            counts=tuple(words[base + _FIELDS : base + _STRIDE]),
            samples=int(words[base + _SAMPLES]),
            max_ms=words[base + _MAX_US] / 1000,
        )
        return WorkerReport(
            index=index,
            pid=int(words[base + _PID]),
            alive=bool(words[base + _ALIVE]),
            restarts=int(words[base + _RESTARTS]),
            active_calls=int(words[base + _ACTIVE]),
            calls_total=int(words[base + _TOTAL]),
            loop_lag=lag,
        )

    def _table(self) -> np.ndarray[Any, np.dtype[np.int64]]:
        assert self._ids is not None, "the board is closed"
        return self._ids

    def _row(self, index: int) -> np.ndarray[Any, np.dtype[np.int64]]:
        """Worker ``index``'s live call ids (0: a free entry)."""
        self._at(index, 0)  # checks the index
        return self._table()[index * self.capacity : (index + 1) * self.capacity]

    def _at(self, index: int, field: int) -> int:
        if not 0 <= index < self.workers:
            raise IndexError(f"no worker {index} on a board of {self.workers}")
        return _HEADER_WORDS + index * _STRIDE + field


class SharedCapacityGate:
    """Admission counted across every worker on a board (see ``calls.CapacityGate``)."""

    def __init__(self, board: Scoreboard, index: int) -> None:
        self._board = board
        self._index = index

    @property
    def capacity(self) -> int:
        """Calls admitted at once across the workers."""
        return self._board.capacity

    def active_calls(self) -> int:
        """Calls running across the workers."""
        return self._board.active_calls()

    def try_admit(self, call_id: str = "") -> Seat:
        """Count a new call on this worker unless the workers are at capacity or ``call_id``
        is live on one of them (checked and counted atomically)."""
        return self._board.try_admit(self._index, call_id)

    def release(self, call_id: str = "") -> None:
        """Count a call of this worker as ended."""
        self._board.release(self._index, call_id)


def call_key(call_id: str) -> int:
    """The board's key for a provider call id: a nonzero 63-bit hash (0 marks a free entry)."""
    digest = hashlib.blake2b(call_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1 or 1


def _table_at(workers: int) -> int:
    """The word where the live call ids start, after the header and the slots."""
    return _HEADER_WORDS + workers * _STRIDE


def _size(workers: int, capacity: int) -> int:
    return 8 * (_table_at(workers) + workers * capacity)


def _write_header(memory: mmap.mmap, workers: int, capacity: int) -> None:
    words = memoryview(memory).cast("q")
    words[0:_HEADER_WORDS] = memoryview(bytes(8 * _HEADER_WORDS)).cast("q")
    words[0], words[1], words[2], words[3] = _MAGIC, workers, capacity, _BUCKETS
    words.release()
