"""The one exception tree of voicegate.

Every error voicegate raises on purpose derives from :class:`VoicegateError`, so a caller
can catch "anything voicegate refused" in one place and still tell the kinds apart::

    VoicegateError
    ├── ConfigError                  a settings file or command-line value is invalid
    ├── AudioError                   audio that cannot be processed as declared
    │   └── AudioFormatError         unsupported rate, width or channel count; bad WAV
    ├── RemoteProtocolError          a peer (provider, browser) sent a malformed message;
    │   │                            closes that call with this reason, never another call
    │   └── PolicyViolationError     a peer broke a gateway limit (no start, silence, flood,
    │                                call too long, duplicate stream, bad token): closed 1008
    ├── LocalProtocolError           voicegate asked a codec for something its protocol
    │                                forbids in this state (a bug in the caller, not the peer)
    ├── SpeechError                  an STT/TTS engine or remote speech service failed
    ├── McpServerError               an MCP server could not be started, connected,
    │                                authenticated or listed, or lacks an imported tool
    └── EngineError                  the dialogue engine refused something
        ├── ProjectError             an agent project failed to load or validate
        ├── ConditionError           a condition expression is malformed or cannot be evaluated
        ├── ToolDefinitionError      a @tool is declared against the contract
        ├── ToolExecutionError       a tool call failed (incl. ToolTimeoutError)
        │   └── ToolTimeoutError     a tool exceeded its wall-clock timeout
        ├── MemoryWriteError         a memory write broke a declared rule
        │   └── ProjectMemoryAlreadySetError   a write-once project field was set twice
        ├── LLMError                 the language-model port failed
        └── StoreError               the durable store (SQLite, Redis) failed or timed out
            └── StaleCallError       another node took the call over (a newer epoch)

Cancellation is never an error here: a barge-in raises ``asyncio.CancelledError`` inside the
running tool (design §4) and voicegate never wraps or swallows it.
"""

from __future__ import annotations


class VoicegateError(Exception):
    """Base of every error voicegate raises on purpose."""


class ConfigError(VoicegateError):
    """A settings file or command-line value is invalid."""


class AudioError(VoicegateError):
    """Audio cannot be processed as declared."""


class AudioFormatError(AudioError):
    """Unsupported sample rate, sample width or channel count, or a malformed WAV file."""


class RemoteProtocolError(VoicegateError):
    """A peer sent a malformed or out-of-order message; the call it belongs to ends."""


class PolicyViolationError(RemoteProtocolError):
    """A peer broke a gateway limit or policy; its call ends with 1008 (RFC 6455 §7.4.1)."""


class SpeechError(VoicegateError):
    """A speech-to-text or text-to-speech engine failed."""


class McpServerError(VoicegateError):
    """An MCP server could not be started, connected, authenticated or listed (startup stops)."""


class EngineError(VoicegateError):
    """The dialogue engine refused something."""


class ProjectError(EngineError):
    """An agent project failed to load or validate.

    ``code`` is the documented validation code (mantle contract §9), e.g.
    ``skill.markdown.invalid_frontmatter_delimiter``; ``path`` and ``line`` point at the file.
    """

    def __init__(
        self, message: str, *, code: str = "", path: str = "", line: int | None = None
    ) -> None:
        where = f"{path}:{line}" if path and line is not None else path
        super().__init__(f"{where}: {message}" if where else message)
        self.code = code
        self.path = path
        self.line = line


class ConditionError(EngineError):
    """A condition expression (contract §3) is malformed or cannot be evaluated.

    ``name`` is set when the expression uses a name that is not a three-segment memory
    reference, the documented ``Unknown name '<key>' in condition expression`` case.
    ``unset`` is set when a comparison could not be made because a field is unset (``None``).
    """

    def __init__(self, message: str, *, name: str | None = None, unset: bool = False) -> None:
        super().__init__(message)
        self.name = name
        self.unset = unset


class ToolDefinitionError(EngineError):
    """A tool is declared against the tools reference (e.g. not async, bare @tool)."""


class ToolExecutionError(EngineError):
    """A tool call failed; the failure is reported to the model, the session goes on."""


class ToolTimeoutError(ToolExecutionError):
    """A tool call exceeded its wall-clock timeout (distinct from a cancellation)."""


class MemoryWriteError(EngineError):
    """A memory write broke a declared rule (unknown entry, no write access, bad value)."""


class ProjectMemoryAlreadySetError(MemoryWriteError):
    """A write-once project memory field was written a second time."""


class LLMError(EngineError):
    """The language-model port failed (transport, protocol or provider error)."""


class StoreError(EngineError):
    """The durable store failed or timed out after its retries; nothing was silently lost."""


class StaleCallError(StoreError):
    """This node's claim on a call is stale: another node resumed it (issue 13 fencing)."""


class LocalProtocolError(VoicegateError):
    """Voicegate itself tried to send what the peer's protocol forbids (e.g. audio before start)."""
