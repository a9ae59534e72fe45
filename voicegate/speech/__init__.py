"""Speech ports (STT, TTS), embedded engines, remote adapters and fakes."""
