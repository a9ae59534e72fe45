"""Pictures of a replayed call: lanes and figures from its timeline, drawn as HTML or PNG.

``lanes`` turns timeline records (docs/timeline.md) into time spans per lane, ``figures`` into
the call's numbers, ``waveform`` the two audio channels into envelopes, and ``picture`` holds
them together; ``html_page`` and ``png_image`` draw a picture, and ``write`` picks one by the
file's suffix (``voicegate replay --report``).
"""
