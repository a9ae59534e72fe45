"""Remote speech engines behind the speech ports: Deepgram live STT and OpenAI-compatible TTS.

They speak to cloud services (or compatible local servers) with the ``websockets`` and
``aiohttp`` clients voicegate already depends on; API keys are passed in by the wiring, which
reads them from the environment, so these modules never read it themselves.
"""
