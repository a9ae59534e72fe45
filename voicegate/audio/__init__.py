"""Pure audio: PCM16 frames, G.711 tables, streaming resampling, re-framing, WAV I/O."""
