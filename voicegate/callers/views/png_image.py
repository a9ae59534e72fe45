"""The report as a static picture, drawn with matplotlib (Agg, no window, no pyplot state).

Same content as the HTML page: both waveforms, the lanes, and the table of figures. Text from
the call is drawn with ``parse_math=False``, so a ``$`` in a transcript is a dollar sign, not
mathtext.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure

from voicegate.callers.views.figures import Figure
from voicegate.callers.views.lanes import KINDS, Lane, Span
from voicegate.callers.views.picture import CallPicture, time_ticks
from voicegate.callers.views.waveform import Envelope

#: The picture's size: WIDTH x HEIGHT pixels at DPI.
WIDTH, HEIGHT, DPI = 1400, 900, 100
COLUMNS = 1000  # waveform columns: about one per pixel of the plot
_CHAR_PX = 5.0  # the width of a character at the lanes' font size, to shorten labels
_PLOT_PX = WIDTH * 0.86  # the plot's width in pixels (left and right margins below)


def write_png(picture: CallPicture, path: Path) -> None:
    """Draw ``picture`` into ``path`` (PNG, WIDTH x HEIGHT)."""
    figure = MplFigure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI)
    FigureCanvasAgg(figure)
    grid = figure.add_gridspec(
        4, 1, height_ratios=[1, 1, 3.6, 2.4], hspace=0.12, left=0.11, right=0.97, top=0.95
    )
    figure.suptitle(picture.title, fontsize=11, x=0.11, ha="left", parse_math=False)
    caller = figure.add_subplot(grid[0])
    bot = figure.add_subplot(grid[1], sharex=caller)
    lanes = figure.add_subplot(grid[2], sharex=caller)
    _wave(caller, picture.caller, "caller audio", KINDS["cue"])
    _wave(bot, picture.bot, "bot audio", "#c05621")
    _lanes(lanes, picture.lanes, picture.duration_ms)
    _table(figure.add_subplot(grid[3]), picture.figures)
    figure.savefig(path, format="png", dpi=DPI)


def _wave(axes: Axes, wave: Envelope, title: str, colour: str) -> None:
    times = np.linspace(0, wave.duration_ms, len(wave.high))
    axes.fill_between(times, wave.low, wave.high, color=colour, linewidth=0)
    axes.set_ylim(-1, 1)
    axes.set_xlim(0, wave.duration_ms)
    axes.set_yticks([])
    axes.set_ylabel(title, rotation=0, ha="right", va="center", fontsize=9)
    axes.tick_params(labelbottom=False)


def _lanes(axes: Axes, lanes: tuple[Lane, ...], duration_ms: int) -> None:
    ms_per_px = duration_ms / _PLOT_PX
    for row, lane in enumerate(lanes):
        y = len(lanes) - 1 - row
        for span in lane.spans:
            _span(axes, span, y, ms_per_px)
    axes.set_yticks(range(len(lanes)), [lane.title for lane in reversed(lanes)], fontsize=9)
    axes.set_ylim(-0.6, len(lanes) - 0.4)
    ticks = time_ticks(duration_ms)
    axes.set_xticks(ticks, [f"{t / 1000:g} s" for t in ticks], fontsize=8)
    axes.grid(axis="x", color="#dddddd", linewidth=0.5)


def _span(axes: Axes, span: Span, y: float, ms_per_px: float) -> None:
    width = max(span.end_ms - span.start_ms, 2 * ms_per_px)  # instants: a 2 px line
    colour = KINDS[span.kind]
    # A white edge keeps back-to-back sentences apart.
    axes.barh(y, width, left=span.start_ms, height=0.7, color=colour, edgecolor="white", lw=0.8)
    text = span.heard + " …" if span.kind == "cut" else span.label
    room = int(width / ms_per_px / _CHAR_PX)
    if span.start_ms == span.end_ms or span.kind in ("unheard", "bargein"):
        room = max(room, 24)  # a short span's label runs on to its right, as in the page
    text = text if len(text) <= room else text[: max(0, room - 1)] + "…"
    if not text:
        return
    # A barge-in's label follows its bar, clear of the flush marks drawn over it.
    x = (span.end_ms if span.kind == "bargein" else span.start_ms) + 3 * ms_per_px
    grey = span.kind == "unheard"
    axes.text(
        x, y, text, fontsize=7, va="center", clip_on=True, parse_math=False,
        color="#8a94a6" if grey else "#222222",
    )  # fmt: skip
    if grey:  # struck through: generated, never heard
        axes.plot([x, x + len(text) * _CHAR_PX * ms_per_px], [y, y], color="#8a94a6", lw=0.8)


def _table(axes: Axes, figures: list[Figure]) -> None:
    axes.axis("off")
    half = (len(figures) + 1) // 2
    for index, figure in enumerate(figures):
        column, row = divmod(index, half)
        x, y = column * 0.52, 0.9 - 0.9 * row / half
        axes.text(x, y, figure.name, fontsize=8.5, weight="bold", va="top", parse_math=False)
        value = figure.value if len(figure.value) <= 70 else figure.value[:69] + "…"
        axes.text(x + 0.15, y, value, fontsize=8.5, va="top", parse_math=False)
