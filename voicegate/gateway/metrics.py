"""Prometheus metrics of a gateway (issue 18), served at ``GET /metrics``.

Every metric lives in a :class:`~prometheus_client.CollectorRegistry` made here and passed
around, never the library's global one. With ``voicegate serve --workers N`` each worker writes
its values to memory-mapped files in a directory the supervisor made for this run
(prometheus-client's multiprocess mode), and any worker's ``/metrics`` adds them all up. A
single process exposes its registry directly.

Latencies from the call timeline are measured in media time (design §6): a listener per call
(:meth:`GatewayMetrics.call_listener`) reads the same records the browser page draws.
docs/metrics.md lists every metric.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from voicegate.gateway.transport import CLOSE_INTERNAL_ERROR
from voicegate.speech.ports import Samples, TextToSpeech

#: Latency buckets (seconds): fine below a second, where voice latencies matter.
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30)
#: Media-loop lag buckets (seconds), as gateway/loopwatch.py's histogram (20 ms is the target).
LAG_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5)
#: Tool buckets: tools may take seconds (their timeout is the bound).
TOOL_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Listener = Callable[[dict[str, object]], None]


class GatewayMetrics:
    """The gateway's metrics and how to expose them (one per process)."""

    def __init__(self, multiprocess_dir: Path | None = None) -> None:
        """``multiprocess_dir``: the run's directory shared by every worker (None: alone)."""
        self._dir = multiprocess_dir
        self.registry = registry = CollectorRegistry()
        self.calls_active = Gauge(
            "voicegate_calls_active", "Calls running now.", ["provider"],
            registry=registry, multiprocess_mode="livesum",
        )  # fmt: skip
        self.calls = Counter(
            "voicegate_calls", "Calls ended, by close code.", ["provider", "close_code"],
            registry=registry,
        )  # fmt: skip
        self.barge_ins = Counter(
            "voicegate_barge_ins", "Confirmed interruptions of the bot.", registry=registry
        )
        self.false_interruptions = Counter(
            "voicegate_false_interruptions",
            "Caller speech that paused the bot and then resumed it.",
            registry=registry,
        )
        self.errors = Counter("voicegate_errors", "Errors, by kind.", ["kind"], registry=registry)
        self.calls_lost = Counter(
            "voicegate_calls_lost",
            "Calls a worker process took with it when it died (killed, crashed); not in "
            "voicegate_calls. Counted by the worker that replaced it.",
            registry=registry,
        )
        self.end_of_turns = Counter(
            "voicegate_end_of_turns",
            "Turn ends by rule, and what the end-of-turn model did (model=shed: it was busy).",
            ["reason", "model"], registry=registry,
        )  # fmt: skip
        self.bargein_flush = self._latency("bargein_flush", "Caller speech onset to the flush.")
        self.response = self._latency("response", "End of caller speech to the first bot audio.")
        self.stt_final = self._latency("stt_final", "End of caller speech to the final transcript.")
        self.model_first_token = self._latency("model_first_token", "Model request to first token.")
        self.tts_first_chunk = self._latency("tts_first_chunk", "TTS request to its first audio.")
        self.tool = Histogram(
            "voicegate_tool_seconds", "Tool call duration.", ["tool"],
            buckets=TOOL_BUCKETS, registry=registry,
        )  # fmt: skip
        self.loop_lag = Histogram(
            "voicegate_media_loop_lag_seconds", "How late the media loop wakes a 10 ms sleep.",
            buckets=LAG_BUCKETS, registry=registry,
        )  # fmt: skip

    def _latency(self, name: str, text: str) -> Histogram:
        return Histogram(
            f"voicegate_{name}_seconds", text, buckets=LATENCY_BUCKETS, registry=self.registry
        )

    def exposition(self) -> bytes:
        """The text format of every metric, of every worker in multiprocess mode."""
        if self._dir is None:
            return generate_latest(self.registry)
        merged = CollectorRegistry()
        # prometheus-client's multiprocess module has no annotations.
        MultiProcessCollector(merged, path=str(self._dir))  # type: ignore[no-untyped-call]
        return generate_latest(merged)

    def record_lag(self, lag_ms: float) -> None:
        """One media-loop lag sample (gateway/loopwatch.py)."""
        self.loop_lag.observe(lag_ms / 1000)

    def calls_lost_by_predecessor(self, count: int) -> None:
        """Count the calls a dead worker took with it (this worker replaced it)."""
        if count:
            self.calls_lost.inc(count)

    def call_started(self, provider: str) -> None:
        """A call was admitted."""
        self.calls_active.labels(provider).inc()

    def call_ended(self, provider: str, close_code: int) -> None:
        """A call ended with ``close_code``."""
        self.calls_active.labels(provider).dec()
        self.calls.labels(provider, str(close_code)).inc()
        if close_code == CLOSE_INTERNAL_ERROR:  # the call crashed inside the gateway
            self.errors.labels("internal").inc()

    def call_listener(self) -> Listener:
        """A timeline listener for one call (see :class:`CallObserver`)."""
        return CallObserver(self).record


class CallObserver:
    """Turns one call's timeline records (docs/timeline.md) into metrics, in media time."""

    def __init__(self, metrics: GatewayMetrics) -> None:
        self._metrics = metrics
        self._onset_ms: float | None = None  # speech onset not yet followed by a flush
        self._end_ms: float | None = None  # end of speech not yet answered with audio
        self._stt_end_ms: float | None = None  # end of speech not yet given a final transcript
        self._tools: dict[str, float] = {}  # tool call id -> start time

    def record(self, record: dict[str, object]) -> None:
        """Observe one record."""
        t_ms = _number(record.get("t_ms"))
        handler = getattr(self, "_on_" + str(record.get("event")), None)
        if handler is not None and t_ms is not None:
            handler(t_ms, record)

    def _on_speech_started(self, t_ms: float, record: dict[str, object]) -> None:
        self._onset_ms = _number(record.get("onset_ms"))

    def _on_speech_ended(self, t_ms: float, record: dict[str, object]) -> None:
        self._end_ms = self._stt_end_ms = _number(record.get("end_ms"))

    def _on_playout_paused(self, t_ms: float, record: dict[str, object]) -> None:
        # Playout pauses and the provider is flushed at detection (design §5).
        self._flushed(t_ms)

    def _on_flush_sent(self, t_ms: float, record: dict[str, object]) -> None:
        self._flushed(t_ms)

    def _flushed(self, t_ms: float) -> None:
        if self._onset_ms is not None:
            self._metrics.bargein_flush.observe(max(0.0, t_ms - self._onset_ms) / 1000)
            self._onset_ms = None

    def _on_interruption(self, t_ms: float, record: dict[str, object]) -> None:
        self._metrics.barge_ins.inc()

    def _on_playout_resumed(self, t_ms: float, record: dict[str, object]) -> None:
        self._metrics.false_interruptions.inc()

    def _on_transcript(self, t_ms: float, record: dict[str, object]) -> None:
        if record.get("final") and self._stt_end_ms is not None:
            self._metrics.stt_final.observe(max(0.0, t_ms - self._stt_end_ms) / 1000)
            self._stt_end_ms = None

    def _on_bot_speaking(self, t_ms: float, record: dict[str, object]) -> None:
        if self._end_ms is not None:
            self._metrics.response.observe(max(0.0, t_ms - self._end_ms) / 1000)
            self._end_ms = None

    def _on_tool_started(self, t_ms: float, record: dict[str, object]) -> None:
        self._tools[str(record.get("call_id"))] = t_ms

    def _on_tool_finished(self, t_ms: float, record: dict[str, object]) -> None:
        started = self._tools.pop(str(record.get("call_id")), None)
        if started is not None:
            tool = str(record.get("name"))
            self._metrics.tool.labels(tool).observe(max(0.0, t_ms - started) / 1000)
        if record.get("outcome") in ("error", "timeout"):
            self._metrics.errors.labels(f"tool_{record.get('outcome')}").inc()

    def _on_tool_cancelled(self, t_ms: float, record: dict[str, object]) -> None:
        self._tools.pop(str(record.get("call_id")), None)

    def _on_speech_error(self, t_ms: float, record: dict[str, object]) -> None:
        self._metrics.errors.labels(f"{record.get('engine', 'speech')}").inc()

    def _on_protocol_error(self, t_ms: float, record: dict[str, object]) -> None:
        self._metrics.errors.labels("protocol").inc()

    def _on_end_of_turn(self, t_ms: float, record: dict[str, object]) -> None:
        reason, model = str(record.get("reason")), str(record.get("model"))
        self._metrics.end_of_turns.labels(reason, model).inc()

    def _on_turn_ended(self, t_ms: float, record: dict[str, object]) -> None:
        if record.get("reason") == "error":
            self._metrics.errors.labels("turn").inc()


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


class TimedTextToSpeech:
    """A :class:`TextToSpeech` that reports the time to each synthesis's first chunk."""

    def __init__(self, inner: TextToSpeech, observe: Callable[[float], None]) -> None:
        self._inner = inner
        self._observe = observe

    @property
    def sample_rate(self) -> int:
        """The inner engine's rate."""
        return self._inner.sample_rate

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        """The inner engine's chunks; the first one's wall-clock delay is observed."""
        started = time.perf_counter()
        first = True
        chunks = self._inner.synthesize(text)
        try:
            async for chunk in chunks:
                if first:
                    first = False
                    self._observe(time.perf_counter() - started)
                yield chunk
        finally:
            # A barge-in closes this stream: stop the engine at once, not at collection.
            close = getattr(chunks, "aclose", None)
            if close is not None:
                await close()
