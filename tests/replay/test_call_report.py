"""``voicegate replay --report``: the HTML page and the PNG picture of a call, and the summary's
transcripts and failure reasons, in process and against ``--url`` (issue 19; issue 18 #12)."""

from __future__ import annotations

import asyncio
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.image import imread

from tests.calls.call_kit import SLOW_BANK, gateway_for
from tests.replay.replay_kit import AUDIO, ROOT
from voicegate.callers.report import summary
from voicegate.callers.views import png_image
from voicegate.callers.views.lanes import bot_sentences
from voicegate.callers.views.picture import CallRecording, call_picture
from voicegate.callers.views.write import write_report
from voicegate.cli.main import main
from voicegate.gateway.options import GatewayOptions, TwilioOptions
from voicegate.gateway.session import SessionSettings

HOSTILE = "<script>alert('x')</script> & \"quoted\""
TAG = "<img src=x onerror=alert(1)>"


def record(t_ms: int, event: str, **fields: Any) -> dict[str, Any]:
    return {"t_ms": t_ms, "event": event, **fields}


# A barge-in cuts turn t1 inside its second sentence (its third is never heard); turn t2 fails.
TIMELINE = [
    record(0, "call_started", call_id="CA1", metadata={}),
    record(640, "speech_started", onset_ms=500),
    record(2100, "speech_ended", end_ms=1600),
    record(2100, "transcript", text=HOSTILE, final=True),
    record(2140, "turn_started", turn_id="t1", input={"text": HOSTILE}),
    record(2140, "say", turn_id="t1", text="Sure.", source="model"),
    record(2140, "bot_speaking", interruptible=True),
    record(2140, "tool_started", turn_id="t1", call_id="c1", name="lookup", arguments={}),
    record(2220, "say", turn_id="t1", text="Let me check that for you.", source="tool"),
    record(2460, "mark_played", name="t1.1"),
    record(2500, "say", turn_id="t1", text="Found it.", source="tool"),
    record(3160, "speech_started", onset_ms=3080),
    record(3160, "playout_paused", flushed=True),
    record(3280, "interruption", reason="caller speech", onset_ms=3080, epoch=1),
    record(3280, "turn_cancelled", turn_id="t1"),
    record(3280, "flush_sent", verb="clear"),
    record(3280, "heard", turn_id="t1", text="Sure. Let me", interrupted=True),
    record(3380, "tool_cancelled", turn_id="t1", call_id="c1", name="lookup"),
    record(3380, "turn_ended", turn_id="t1", reason="cancelled"),
    record(4780, "speech_ended", end_ms=4280),
    record(4780, "transcript", text="what is the weather", final=True),
    record(4780, "turn_started", turn_id="t2", input={"text": "what is the weather"}),
    record(4800, "turn_ended", turn_id="t2", reason="error", detail=TAG),
    record(6000, "call_ended", reason="twilio sent stop"),
]
OBSERVED = [
    record(0, "stream_opened", call_id="CA1"),
    record(3160, "clear_received", dropped_ms=120),
    record(6000, "stream_closed", close_code=1000),
]


def recording(title: str = "a call") -> CallRecording:
    rate = 8000
    seconds = np.arange(6 * rate) / rate
    caller = (8000 * np.sin(2 * np.pi * 300 * seconds) * (seconds < 1.6)).astype(np.int16)
    bot = (6000 * np.sin(2 * np.pi * 500 * seconds) * (seconds > 2.2)).astype(np.int16)
    return CallRecording(title, TIMELINE, OBSERVED, caller, bot, rate)


class Page(HTMLParser):
    """Every start tag with its attributes, and the text inside each element."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[tuple[str, str]] = []  # (innermost open tag, text)
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in ("meta", "path", "br"):
            self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        while self._open and self._open.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        self.text.append((self._open[-1] if self._open else "", data))

    def having(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [
            a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())
        ]


def parsed(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def test_the_bot_lane_tells_heard_cut_and_unheard_sentences() -> None:
    spans = bot_sentences(TIMELINE)
    assert [(s.kind, s.label) for s in spans] == [
        ("heard", "Sure."),
        ("cut", "Let me check that for you."),
        ("unheard", "Found it."),
    ]
    heard, cut, unheard = spans
    assert (heard.start_ms, heard.end_ms) == (2140, 2460)  # said, then its mark came back
    assert (cut.start_ms, cut.end_ms, cut.heard) == (2460, 3160, "Let me")  # to the flush
    assert unheard.start_ms == unheard.end_ms == 3160  # where it would have played
    assert unheard.detail == "generated at 2500 ms, never heard"


def test_the_html_report_is_one_offline_page_with_lanes_waveforms_and_figures(
    tmp_path: Path,
) -> None:
    path = tmp_path / "report.html"
    write_report(recording(HOSTILE), path)
    page = parsed(path)
    lanes = {a["data-lane"] for a in page.having("div") if "data-lane" in a}
    expected = {"caller-audio", "bot-audio", "caller", "transcripts", "turns", "bot", "tools"}
    assert lanes == expected | {"bargein", "axis"}
    waves = page.having("svg")
    assert sorted(str(w["data-channel"]) for w in waves) == ["bot-audio", "caller-audio"]
    paths = page.having("path")
    assert len(paths) == 2
    assert all(str(p["d"]).startswith("M0,") for p in paths)
    assert len(page.having("table", **{"class": "figures"})) == 1
    headers = [text for tag, text in page.text if tag == "th"]
    for name in ("answer latency", "barge-in → flush", "interruptions", "failures"):
        assert name in headers
    # Offline: nothing is fetched, nothing runs.
    assert not [t for t, a in page.tags if t in ("script", "link", "img", "iframe")]
    assert not [a for _, a in page.tags if "src" in a or "href" in a]
    # The hostile texts came through as text, not markup.
    texts = [text for _, text in page.text]
    assert HOSTILE in texts  # the transcript span (and the title and the heading)
    assert any(TAG in text for text in texts)  # the failed turn, in the table
    assert [t for t, a in page.tags if "onerror" in a] == []
    # What the caller never heard is struck through.
    assert ("s", "check that for you.") in page.text
    unheard = [a for a in page.having("div") if "unheard" in str(a.get("class")).split()]
    assert len(unheard) == 1
    assert "never heard" in str(unheard[0]["title"])


def test_the_png_report_has_its_size_and_is_not_blank(tmp_path: Path) -> None:
    path = tmp_path / "report.png"
    write_report(recording("a $call$ with $math$"), path)  # parse_math=False: no mathtext error
    pixels = imread(path)
    assert pixels.shape[:2] == (png_image.HEIGHT, png_image.WIDTH)
    colours = np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0)
    assert len(colours) > 20  # waveforms, lanes, text
    assert pixels[..., :3].std() > 0.05


def test_the_summary_tells_transcripts_and_why_a_turn_failed() -> None:
    lines = summary(TIMELINE)
    assert f"caller at 2100 ms: {HOSTILE!r}" in lines
    assert "caller at 4780 ms: 'what is the weather'" in lines
    assert lines[-1] == f"turn t2 failed at 4800 ms: {TAG}"
    figures = {f.name: f.value for f in call_picture(recording(), 100).figures}
    assert figures["answer latency"] == "540 ms"
    assert figures["barge-in → flush"] == "80 ms"  # the playout was paused and flushed
    assert figures["onset → confirmed"] == "200 ms"
    assert figures["bot sentences"] == "3 generated: 1 heard, 1 cut by a flush, 1 never heard"
    assert figures["clears received"] == "1 (120 ms of bot audio dropped)"


STRICT = "turns:\n  - user: check my balance\n    say: Your balance is 42 dollars.\n"


async def test_against_a_url_a_browser_caller_gets_the_transcripts_and_the_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    project = tmp_path / "bank"
    shutil.copytree(SLOW_BANK, project)
    (project / "strict.yml").write_text(STRICT, encoding="utf-8")
    settings = SessionSettings(error_response="Sorry, say that again?")
    out, html, png = tmp_path / "out", tmp_path / "call.html", tmp_path / "call.png"
    world = gateway_for(
        tmp_path, ["what is the weather"], project=project, conversation="strict.yml",
        settings=settings,
    )  # fmt: skip
    async with world as gateway:
        url = "ws" + gateway.gateway.base_url.removeprefix("http")
        source = AUDIO / "synth" / "festival" / "balance_16k.wav"
        argv = ["replay", str(source), "--provider", "browser", "--url", url, "--out", str(out)]
        argv += ["--speed", "4", "--tail-ms", "500", "--report", str(html), "--report", str(png)]
        assert await asyncio.to_thread(main, argv) == 0
    printed = capsys.readouterr().out
    assert "'what is the weather'" in printed  # what the gateway's recogniser made of it
    assert "turn t1 failed at" in printed
    assert "what is the weather" in printed.split("failed")[-1]
    assert (out / "caller.jsonl").exists()  # timeline.jsonl holds the gateway's records
    assert f"wrote {html}" in printed
    assert f"wrote {png}" in printed
    page = parsed(html)
    assert any(text.startswith("t1: what is the weather") for _, text in page.text)
    assert imread(png).shape[:2] == (png_image.HEIGHT, png_image.WIDTH)


async def test_against_a_url_a_telephone_caller_gets_the_close_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The gateway wants a stream token (issue 15) the replayed caller does not have.
    options = GatewayOptions(port=0, twilio=TwilioOptions(stream_secret="stream secret"))
    async with gateway_for(tmp_path, ["check my balance"], options=options) as world:
        source = AUDIO / "synth" / "festival" / "yes_8k.wav"
        argv = ["replay", str(source), "--url", world.url, "--out", str(tmp_path / "out")]
        argv += ["--report", str(tmp_path / "out" / "call.html")]  # into --out, made by replay
        assert await asyncio.to_thread(main, argv) == 1  # refused: a replay run as a check fails
    captured = capsys.readouterr()
    printed = captured.out
    assert "the gateway closed the call with 1008: no stream token" in captured.err
    assert "caller said at 0 ms: 'yes'" in printed  # the recording's label (transcripts.tsv)
    page = parsed(tmp_path / "out" / "call.html")  # drawn from the caller-side timeline
    assert ("td", "close code 1008") in page.text
    assert ("span", "yes") in page.text  # the cue's transcript, an instant in its lane
    assert "closed: 1008 (refused: " in printed
    reason = "no stream token: connect through the gateway's voice webhook"
    assert f"close reason: {reason!r}" in printed
