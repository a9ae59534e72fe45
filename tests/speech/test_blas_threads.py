"""While the gateway runs, numpy's BLAS stays on one thread (cli/engines.py one_blas_thread).

OpenBLAS's pool spins a second thread per Whisper decode (faster-whisper's mel filters are a
BLAS matmul): twice the decode's CPU, on the core the end-of-turn model and the media loop
need. The limit holds for the runner's life and is lifted when it closes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from threadpoolctl import threadpool_info, threadpool_limits

from voicegate.cli import wiring
from voicegate.config import StoreSettings
from voicegate.config.loader import load_settings

ROOT = Path(__file__).resolve().parents[2]


def blas_threads() -> list[int]:
    """The thread count of every BLAS library numpy loaded."""
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


async def test_the_runner_keeps_blas_on_one_thread(tmp_path: Path) -> None:
    settings = replace(
        load_settings(ROOT / "fixtures" / "config" / "deterministic-vad-only.yml"),
        store=StoreSettings(data_dir=tmp_path),
    )
    with threadpool_limits(limits=2, user_api="blas"):  # a pool as on a multi-core machine
        before = blas_threads()
        assert before, "numpy's BLAS is not visible to threadpoolctl"
        async with wiring.open_runner(settings):
            assert blas_threads() == [1] * len(before)
        assert blas_threads() == before
