"""The HTTP side: one streaming ``POST {base_url}/chat/completions`` per model step (aiohttp).

Streaming per the OpenAI API reference ("Create chat completion", ``stream: true``): the answer
comes as server-sent events, parsed by :mod:`.sse` and :mod:`.deltas`. Text deltas are yielded
the moment they arrive; tool calls once the stream has ended, when their arguments are whole.

Cancellation (design §4): when the turn is cancelled or the consumer closes the generator, the
``finally`` below closes the response's connection at once, so the provider sees the client go
away and stops generating. Each request has its own ``ClientSession``: the port has no close
hook, and nothing may outlive the request.

The API key is sent in the ``Authorization`` header only. No error message carries it: aiohttp
errors (whose request info holds the headers) are never chained, and text from the server is
scrubbed of the key before it is quoted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import aclosing, contextmanager

import aiohttp

from voicegate.engine.llm.openai_chat.deltas import ChunkAssembler, excerpt
from voicegate.engine.llm.openai_chat.request import request_body
from voicegate.engine.llm.openai_chat.sse import SseParser
from voicegate.engine.llm.port import Message, StreamItem, TextDelta
from voicegate.engine.llm.selection import ChatModelSettings
from voicegate.engine.tools.schema import ToolSpec
from voicegate.errors import LLMError
from voicegate.retry import RetryPolicy, post_retrying

#: How much of an error response body is read to quote it.
ERROR_BODY_BYTES = 4096
#: How long a server that sent the answer's ``finish_reason`` may take to end the body.
FINISHED_GRACE_S = 1.0
#: How many body bytes may come without new text or tool calls in them. A real stream sends a
#: few hundred (a role chunk, a usage chunk, keep-alives); a flood of padding would otherwise
#: keep the dialogue plane parsing at line rate until the read timeout.
MAX_IDLE_BYTES = 4 << 20
#: And a whole response at most this many bytes: padding beside each piece of text would
#: otherwise pass the bound above (a real answer, bounded by the engine, is well under 1 MiB).
MAX_BODY_BYTES = 16 << 20

_STATUS_HINTS = {
    401: "the API key was refused",
    403: "the API key may not use this model",
    404: "check the base URL and the model name",
    429: "rate limited or out of quota",
}


class OpenAIChatLLM:
    """An LLM port on an OpenAI-compatible Chat Completions endpoint."""

    def __init__(
        self, settings: ChatModelSettings, api_key: str = "", retry: RetryPolicy | None = None
    ) -> None:
        """``retry``: how 429, 5xx and connection failures are retried before the first byte
        (default: :class:`RetryPolicy`'s; a stream that has begun is never repeated)."""
        self._settings = settings
        self._api_key = api_key
        self._retry = RetryPolicy() if retry is None else retry

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        """Stream one model step: text deltas as they come, then the complete tool calls."""
        body = request_body(self._settings, messages, tools)
        with self._errors_as_llm_errors():
            async with aiohttp.ClientSession(timeout=self._timeout()) as http:
                response = await self._answer(http, body)
                try:
                    patience = self._settings.read_timeout_s
                    async with aclosing(_items(response, patience)) as items:
                        async for item in items:
                            yield item
                finally:
                    response.close()  # at once, even mid-stream: the server sees the drop

    async def _answer(self, http: aiohttp.ClientSession, body: object) -> aiohttp.ClientResponse:
        """The response, once it is known to be an event stream.

        Its headers (retries included) and an error body come within one deadline: a server
        that trickles them a byte at a time keeps every socket read timeout from firing.
        """
        settings = self._settings
        wait = settings.connect_timeout_s + settings.read_timeout_s + self._retry.budget_s
        async with asyncio.timeout(wait):
            response = await self._post(http, body)
            try:
                await self._check_response(response)
            except BaseException:
                response.close()
                raise
        return response

    async def _post(self, http: aiohttp.ClientSession, body: object) -> aiohttp.ClientResponse:
        """POST the request, retrying what a retry may cure within the retry budget."""
        return await post_retrying(
            http,
            self._settings.endpoint,
            self._retry,
            json=body,
            headers=self._headers(),
            redact=self._redact,
        )

    @contextmanager
    def _errors_as_llm_errors(self) -> Iterator[None]:
        """Transport errors as LLMError; never chained (aiohttp's carry the request headers)."""
        endpoint, settings = self._settings.endpoint, self._settings
        try:
            yield
        except LLMError as error:
            raise LLMError(self._redact(str(error))) from None
        except TimeoutError:
            raise LLMError(
                f"the model at {endpoint} timed out (connect {settings.connect_timeout_s} s, "
                f"then at most {settings.read_timeout_s} s without new text or tool calls)"
            ) from None
        except aiohttp.ClientError as error:
            raise LLMError(self._redact(f"the model at {endpoint} failed: {error}")) from None

    def _timeout(self) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(
            total=None,  # a long answer that keeps streaming is fine; silence is not
            connect=self._settings.connect_timeout_s,
            sock_read=self._settings.read_timeout_s,
        )

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    async def _check_response(self, response: aiohttp.ClientResponse) -> None:
        if not 200 <= response.status < 300:
            refused = "the request was refused" if response.status < 500 else "the provider failed"
            hint = _STATUS_HINTS.get(response.status, refused)
            if response.status in (401, 403) and self._settings.api_key_env:
                hint += f" (the key comes from ${self._settings.api_key_env})"
            raise LLMError(
                f"the model at {self._settings.endpoint} answered HTTP {response.status} "
                f"{response.reason or ''}, {hint}: {await _error_text(response)}"
            )
        if response.content_type == "application/json":
            raise LLMError(
                f"the model at {self._settings.endpoint} answered with JSON, not an event "
                f"stream (does it support stream: true?): {await _error_text(response)}"
            )

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "[api key]") if self._api_key else text


class _Patience:
    """How long the stream's next read may take: ``read_timeout_s`` from the last progress.

    Progress is new text or tool-call content, not bytes: SSE comments, empty deltas and
    role-only chunks keep a socket's read timeout from ever firing, so a stream of them alone
    would hold the turn (and the caller, in silence) forever. Once the answer has its
    ``finish_reason`` it is whole: a server that then neither sends ``[DONE]`` nor ends the
    body is waited for :data:`FINISHED_GRACE_S` at most. Bytes without progress are bounded
    too (:data:`MAX_IDLE_BYTES`), as is the whole body (:data:`MAX_BODY_BYTES`).
    """

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._loop = asyncio.get_running_loop()
        self._deadline = self._loop.time() + seconds
        self._received = 0
        self._idle_bytes = self._bytes = 0

    async def read(self, content: aiohttp.StreamReader) -> bytes:
        """The next bytes of the body (b"" at its end); TimeoutError past the deadline."""
        async with asyncio.timeout_at(self._deadline):
            return await content.readany()

    def update(self, assembler: ChunkAssembler, size: int) -> None:
        """Move the deadline after a read of ``size`` bytes, by what the assembler got."""
        now = self._loop.time()
        self._bytes += size
        if self._bytes > MAX_BODY_BYTES:
            raise LLMError(f"the model's response passed {MAX_BODY_BYTES} bytes")
        if assembler.received > self._received:
            self._received = assembler.received
            self._deadline = now + self._seconds
            self._idle_bytes = 0
        else:
            self._idle_bytes += size
            if self._idle_bytes > MAX_IDLE_BYTES:
                raise LLMError(
                    f"the model's stream sent over {MAX_IDLE_BYTES} bytes with no text or "
                    "tool call in them"
                )
        if assembler.finish_reason is not None:
            self._deadline = min(self._deadline, now + FINISHED_GRACE_S)


async def _items(
    response: aiohttp.ClientResponse, patience_s: float
) -> AsyncGenerator[StreamItem, None]:
    """The stream's text deltas as they come, then its tool calls (see :class:`_Patience`)."""
    parser, assembler = SseParser(), ChunkAssembler()
    patience = _Patience(patience_s)
    while not assembler.done:
        try:
            chunk = await patience.read(response.content)
        except TimeoutError:
            if assembler.finish_reason is None:
                raise
            break  # the answer is whole; the server did not end the body
        for delta in _text_of(chunk, parser, assembler):
            yield delta
        patience.update(assembler, len(chunk))
        if not chunk:
            break
    for call in assembler.tool_calls():
        yield call


def _text_of(chunk: bytes, parser: SseParser, assembler: ChunkAssembler) -> list[TextDelta]:
    """The text one read of the body carries (an empty read is the end of the body)."""
    events = parser.feed(chunk) if chunk else parser.close()
    return [delta for data in events for delta in assembler.feed(data)]


async def _error_text(response: aiohttp.ClientResponse) -> str:
    """The start of an error body: the API's ``error.message`` when it is JSON, else raw."""
    data = b""
    while len(data) < ERROR_BODY_BYTES:
        chunk = await response.content.read(ERROR_BODY_BYTES - len(data))
        if not chunk:
            break
        data += chunk
    text = data.decode("utf-8", "replace")
    try:
        error = json.loads(text).get("error")
        text = str(error.get("message", error) if isinstance(error, dict) else error or text)
    except (ValueError, AttributeError):
        pass  # not the API's JSON error shape: quote the body as it is
    return excerpt(text) or "(empty body)"
