"""CPU of the call-log writer (gateway/calllog.py) at many live calls (issue 12, issue 18).

N calls each hand their timeline records to ``CallLogs`` from the event loop, in bursts, at
real time, as a busy worker's calls do (a bot sentence gives ``say``, ``bot_speaking``, a mark
or two; a caller turn gives ``speech_started``, ``transcript``, ``end_of_turn``, ...). The
figures are CPU per call-second: the whole process (the loop and the writer thread), and the
loop thread alone (what the media path pays). Every call's file is checked at the end: all
its records are there. The machine is shared, so the figures are medians over ``--runs``.

    python bench/call_logs.py [--calls 300] [--seconds 5] [--bursts 3] [--records 6]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from voicegate.gateway.calllog import CallLog, CallLogOptions, CallLogs


async def one_call(call_log: CallLog, seconds: float, bursts: int, per_burst: int) -> None:
    """Bursts of records at a steady rate for ``seconds``, then the call's close."""
    gap = 1.0 / bursts
    t_ms = 0
    for _ in range(int(seconds * bursts)):
        await asyncio.sleep(gap)
        t_ms += int(gap * 1000)
        for index in range(per_burst):
            call_log.record({"t_ms": t_ms, "event": "say", "turn_id": "t1", "text": f"s{index}"})
    call_log.close(1000, "call ended", "CA1")


async def run_once(calls: int, seconds: float, bursts: int, records: int) -> dict[str, Any]:
    """One pass; CPU in µs per call-second (process and loop thread), and a check."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        logs = CallLogs(CallLogOptions(directory))
        opened = [logs.open(f"twilio-{i:04d}", "twilio") for i in range(calls)]
        call_logs = [call_log for call_log in opened if call_log is not None]
        per_burst = max(1, records // bursts)
        process0, thread0, wall0 = time.process_time(), time.thread_time(), time.perf_counter()
        await asyncio.gather(*(one_call(c, seconds, bursts, per_burst) for c in call_logs))
        thread_s = time.thread_time() - thread0
        await asyncio.to_thread(logs.close)
        process_s = time.process_time() - process0
        wall_s = time.perf_counter() - wall0
        call_seconds = calls * seconds
        expected = 2 + int(seconds * bursts) * per_burst  # call_connected ... call_closed
        complete = sum(
            len((directory / f"twilio-{i:04d}.jsonl").read_bytes().splitlines()) == expected
            for i in range(calls)
        )
    return {
        "process_us_per_call_second": process_s / call_seconds * 1e6,
        "loop_thread_us_per_call_second": thread_s / call_seconds * 1e6,
        "wall_s": wall_s,
        "complete_logs": complete,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--bursts", type=int, default=3, help="record bursts per call-second")
    parser.add_argument("--records", type=int, default=6, help="records per call-second")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = [
        asyncio.run(run_once(args.calls, args.seconds, args.bursts, args.records))
        for _ in range(args.runs)
    ]
    report = {
        "benchmark": "call_logs",
        "calls": args.calls,
        "seconds": args.seconds,
        "bursts_per_call_second": args.bursts,
        "records_per_call_second": args.records,
        "runs": args.runs,
        **{key: statistics.median(float(run[key]) for run in runs) for key in runs[0]},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
