"""When an emulated caller hangs up: after its cues, once the bot has answered and gone quiet.

A caller that hangs up a fixed time after its last cue can leave while a tool still awaits its
backend, and how long that takes is wall-clock time, not media time: at ``--speed 8`` a 1.5 s
tool lasts 12 s of media. So replays and scenarios hang up only once the bot *finished* speaking
(its audio ran out, not a ``clear``) after the last cue began, and then stayed quiet for
``quiet_ms`` of media time. Callers that replay faster pass ``quiet_ms`` scaled by the speed,
which keeps the wait the same in real time (docs/replay.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from voicegate.callers.script import CallerScript


def quiet_after_cues(
    script: CallerScript,
    now_ms: int,
    bot_started_ms: Sequence[int],
    bot_drained_ms: Sequence[int],
    quiet_ms: int,
) -> bool:
    """The bot's audio ran out after the last cue began and ``quiet_ms`` passed since."""
    starts = [script.start_of(index, bot_started_ms) for index in range(len(script.cues))]
    known = [start for start in starts if start is not None]
    if len(known) < len(starts) or not bot_drained_ms:
        return False
    last_drain = bot_drained_ms[-1]
    playing_again = bool(bot_started_ms) and bot_started_ms[-1] > last_drain
    return (
        last_drain >= max(known, default=0)
        and not playing_again
        and now_ms - last_drain >= quiet_ms
    )
