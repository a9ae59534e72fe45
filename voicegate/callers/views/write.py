"""``voicegate replay --report FILE``: the call's report, as HTML or PNG by the file's suffix."""

from __future__ import annotations

from pathlib import Path

from voicegate.callers.views import html_page
from voicegate.callers.views.picture import CallRecording, call_picture

#: The report formats, by file suffix.
REPORT_SUFFIXES = (".html", ".png")


def write_report(call: CallRecording, path: Path) -> None:
    """Write the report of ``call`` to ``path`` (``.html`` or ``.png``)."""
    suffix = path.suffix.lower()
    if suffix == ".html":
        page = html_page.render_html(call_picture(call, html_page.COLUMNS))
        path.write_text(page, encoding="utf-8")
    elif suffix == ".png":
        # matplotlib takes ~0.5 s to import: only a PNG report pays for it.
        from voicegate.callers.views import png_image

        png_image.write_png(call_picture(call, png_image.COLUMNS), path)
    else:
        raise ValueError(f"{path}: a report is {' or '.join(REPORT_SUFFIXES)}")
