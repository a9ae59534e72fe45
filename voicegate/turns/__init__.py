"""Turn-taking: when the caller has finished (end of turn) and when audio is the bot's echo.

Sits between the VAD and the barge-in machine (design §2, issue 14): a pure end-of-turn
machine on media time fed by an end-of-turn model (Smart Turn v3.2) and the transcripts, and
a pure echo gate that knows what the bot played. Knows nothing of providers or the engine.
"""
