"""Voice-activity detection: frame scorers and the hysteresis detector."""
