"""voicegate: a real-time voice gateway with barge-in-correct dialogue turns."""

__version__ = "0.1.0"
