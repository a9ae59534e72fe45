"""The report as one self-contained HTML page: inline CSS and SVG, no script, no network.

Every text from the call (transcripts, sentences, tool arguments, failure reasons) comes from
a peer or the agent and is escaped (``html.escape``, quotes included) before it is written;
the only values written unescaped are numbers this module computes and its own class names.
"""

from __future__ import annotations

from html import escape

import numpy as np

from voicegate.callers.views.figures import Figure
from voicegate.callers.views.lanes import KINDS, Lane, Span
from voicegate.callers.views.picture import CallPicture, time_ticks
from voicegate.callers.views.waveform import Envelope

#: Waveform columns: enough for a wide screen, small enough for a 60 s call (~30 KB a channel).
COLUMNS = 1200

_STYLE = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.3em;margin:0 0 .2em}.meta{color:#666;margin:0 0 1em}
.timeline{border:1px solid #ccc;padding:.5em 0}
.lane{display:flex;align-items:stretch;min-height:30px;border-bottom:1px solid #eee}
.lane.wave{height:64px}.name{flex:0 0 9em;padding:0 .5em;color:#555;font-size:12px;
align-self:center}.track{position:relative;flex:1;overflow:hidden}
.track svg{position:absolute;inset:0;width:100%;height:100%}
.caller-audio path{fill:#2b6cb0}.bot-audio path{fill:#c05621}
.span{position:absolute;top:4px;bottom:4px;min-width:3px;border-radius:3px;font-size:11px;
line-height:22px;padding:0 3px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;
box-sizing:border-box}
.instant{min-width:2px;width:2px!important;padding:0;overflow:visible}
.instant span{position:absolute;left:4px;white-space:nowrap}
.echo{color:#718096}.turn-error,.failure{color:#9b2c2c;border:1px solid #fc8181}
.unheard{color:#a0aec0;overflow:visible}
.unheard span,.cut s{text-decoration:line-through;color:#a0aec0}
.tool-cancelled{text-decoration:line-through}.bargein{color:#9b2c2c;overflow:visible}
.bargein span{position:absolute;left:100%;padding-left:3px}
.transcript{border:1px solid #90cdf4}
.axis .track{height:18px;font-size:11px;color:#666}.tick{position:absolute;top:0;
border-left:1px solid #bbb;padding-left:2px}
table{border-collapse:collapse;margin-top:1.2em}td,th{border:1px solid #ddd;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f7fafc}td.note{color:#777}
h2{font-size:1.1em;margin:1.2em 0 .3em}.conversation{padding-left:1.5em}
.conversation small{color:#777}.conversation .unheard{background:none}
.legend{margin-top:.8em;font-size:12px;color:#555}
.legend i{display:inline-block;width:1.2em;height:.8em;margin:0 .3em 0 1em}
"""

_LEGEND = (
    ("heard", "bot sentence heard"),
    ("cut", "cut by a flush"),
    ("unheard", "generated, never heard"),
    ("bargein", "barge-in: onset → confirmed"),
    ("flush", "flush sent"),
    ("turn-error", "failure"),
)


def render_html(picture: CallPicture) -> str:
    """The whole page."""
    title = escape(picture.title)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{title}</title><style>{_STYLE}{_colours()}</style></head><body>",
            f"<h1>{title}</h1>",
            f'<p class="meta">{picture.duration_ms} ms of media; times are media time '
            "(docs/timeline.md). Hover a span for its full text.</p>",
            '<section class="timeline">',
            _wave_lane("caller-audio", "caller audio", picture.caller),
            _wave_lane("bot-audio", "bot audio", picture.bot),
            *(_lane(lane, picture.duration_ms) for lane in picture.lanes),
            _axis(picture.duration_ms),
            "</section>",
            _legend(),
            _table(picture.figures),
            _conversation(picture.lanes),
            "</body></html>",
        ]
    )


def _wave_lane(key: str, title: str, wave: Envelope) -> str:
    columns = len(wave.high)
    path = _outline(wave)
    svg = (
        f'<svg class="waveform" data-channel="{key}" viewBox="0 -1 {columns} 2" '
        f'preserveAspectRatio="none" role="img" aria-label="{title}">'
        f'<path d="{path}"/></svg>'
    )
    return _row(key, f"wave {key}", title, svg)


def _outline(wave: Envelope) -> str:
    """An SVG path around the envelope: the highs left to right, the lows back (y is down)."""
    high = np.maximum(wave.high, 1 / 256)  # silence still shows as a hairline
    low = np.minimum(wave.low, -1 / 256)
    points = [f"{x},{-y:.3f}" for x, y in enumerate(high)]
    points += [f"{x},{-y:.3f}" for x, y in reversed(list(enumerate(low)))]
    return "M" + " L".join(points) + " Z"


def _lane(lane: Lane, duration_ms: int) -> str:
    spans = "".join(_span(span, duration_ms) for span in lane.spans)
    return _row(lane.key, "", lane.title, spans)


def _row(key: str, extra: str, title: str, inner: str) -> str:
    return (
        f'<div class="lane {extra}" data-lane="{escape(key)}"><div class="name">'
        f'{escape(title)}</div><div class="track">{inner}</div></div>'
    )


def _span(span: Span, duration_ms: int) -> str:
    left = 100 * span.start_ms / duration_ms
    width = 100 * (span.end_ms - span.start_ms) / duration_ms
    instant = " instant" if span.end_ms == span.start_ms else ""
    tip = escape(" — ".join(part for part in (span.label, span.detail) if part))
    style = f"left:{left:.3f}%;width:{width:.3f}%"
    body = _span_text(span)
    return f'<div class="span {span.kind}{instant}" style="{style}" title="{tip}">{body}</div>'


def _span_text(span: Span) -> str:
    if span.kind == "cut":  # the heard words, then the rest struck through
        rest = span.label.split()[len(span.heard.split()) :]
        return f"{escape(span.heard)} <s>{escape(' '.join(rest))}</s>"
    if span.kind in ("unheard", "bargein") or span.start_ms == span.end_ms:
        return f"<span>{escape(span.label)}</span>"
    return escape(span.label)


def _axis(duration_ms: int) -> str:
    ticks = "".join(
        f'<span class="tick" style="left:{100 * t / duration_ms:.3f}%">{t / 1000:g} s</span>'
        for t in time_ticks(duration_ms)
    )
    return _row("axis", "axis", "media time", ticks)


def _legend() -> str:
    items = "".join(f'<i class="{kind}"></i>{escape(text)}' for kind, text in _LEGEND)
    return f'<p class="legend">{items}</p>'


def _table(figures: list[Figure]) -> str:
    rows = "".join(
        f"<tr><th>{escape(f.name)}</th><td>{escape(f.value)}</td>"
        f'<td class="note">{escape(f.note)}</td></tr>'
        for f in figures
    )
    head = "<thead><tr><th>figure</th><th>value</th><th>how</th></tr></thead>"
    return f'<table class="figures">{head}<tbody>{rows}</tbody></table>'


def _conversation(lanes: tuple[Lane, ...]) -> str:
    """Who said what, in full and in order: the lanes' labels are often cut short."""
    spoken = [
        (span, lane.key)
        for lane in lanes
        if lane.key in ("transcripts", "bot")
        for span in lane.spans
    ]
    items = "".join(
        f'<li class="{key}"><b>{"caller" if key == "transcripts" else "bot"}</b> '
        f"<small>{span.start_ms} ms</small> {_span_text(span)}</li>"
        for span, key in sorted(spoken, key=lambda pair: pair[0].start_ms)
    )
    return f'<h2>Conversation</h2><ol class="conversation">{items}</ol>'


def _colours() -> str:
    return "".join(f".{kind}{{background:{colour}}}" for kind, colour in KINDS.items())
