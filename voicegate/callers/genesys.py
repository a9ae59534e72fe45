"""The client side of a Genesys Cloud AudioHook session (Audio Connector), emulated.

What Genesys does (shared/spec/providers.md §b.7; the protocol reference
https://developer.genesys.cloud/devapps/audiohook/protocol-reference and session walkthrough):
it upgrades with the ``Audiohook-*`` ids, ``X-API-KEY`` and, with a client secret, an HTTP
message signature; sends ``open`` and no audio until ``opened``; then one binary frame of PCMU
per 20 ms, silence included, a ``ping`` every few seconds (which wants a ``pong``), and
``close`` when the caller hangs up. Bot audio arrives as binary PCMU, played in order, at most
about 5 messages per second on average and 25 at once (Genesys's AudioHook rate limit; a
faster server is refused here). Playback is reported per queue with ``playback_started`` and
``playback_completed``; an ``event`` with a ``barge_in`` entity drops the queue; ``disconnect``
is answered with ``close``. Every message carries ``seq`` (counting from 1), ``serverseq`` (the
last server ``seq`` seen), ``position`` and the session id.

Pure and synchronous: a driver (``callers/driver.py``) moves the messages over a WebSocket.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from voicegate.callers.line_caller import LineCaller
from voicegate.callers.script import CallerScript
from voicegate.callers.telephone import TelephoneLine
from voicegate.codecs.genesys import MEDIA
from voicegate.codecs.genesys_signature import sign
from voicegate.errors import RemoteProtocolError
from voicegate.types import TELEPHONE_ULAW

DEFAULT_CONVERSATION_ID = "090eaa2f-0000-4000-8000-000000000042"
DEFAULT_SESSION_ID = "30b0e395-0000-4000-8000-000000000042"
ORGANIZATION_ID = "d7934305-0000-4000-8000-000000000042"
PING_EVERY_MS = 5000
#: The AudioHook rate limit on the server's binary messages (providers.md §b.7).
RATE_PER_S = 5
BURST = 25


class GenesysCaller(LineCaller):
    """One emulated Audio Connector session: open, PCMU out, bot audio in, barge_in honoured."""

    def __init__(
        self,
        script: CallerScript,
        *,
        conversation_id: str = "",  # empty: DEFAULT_CONVERSATION_ID
        session_id: str = DEFAULT_SESSION_ID,
        parameters: Mapping[str, str] | None = None,
        quiet_ms: int | None = None,
        api_key: str = "emulated-genesys-api-key",
        client_secret: str | None = None,  # base64; None: the upgrade is not signed
    ) -> None:
        if script.sample_rate != TELEPHONE_ULAW.sample_rate:
            raise ValueError("a Genesys caller streams PCMU at 8000 Hz")
        line = TelephoneLine(script, TELEPHONE_ULAW, quiet_ms=quiet_ms)
        super().__init__(line, conversation_id or DEFAULT_CONVERSATION_ID)
        self._session_id = session_id
        self._input_variables = dict(parameters or {})
        self._api_key = api_key
        self._client_secret = client_secret
        self._seq = 0
        self._server_seq = 0
        self.opened = False
        self.closed = False
        self.pongs = 0
        self._tokens = float(BURST)  # the rate limiter's bucket, refilled on media time
        self._refilled_ms = 0

    def upgrade_headers(self, url: str, now_s: int) -> dict[str, str]:
        """The upgrade's headers: the ids, the API key and, with a secret, the signature."""
        headers = {
            "audiohook-organization-id": ORGANIZATION_ID,
            "audiohook-correlation-id": "c0771e1a-0000-4000-8000-000000000042",
            "audiohook-session-id": self._session_id,
            "x-api-key": self._api_key,
        }
        if self._client_secret is not None:
            parts = urlsplit(url)
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            secret = base64.b64decode(self._client_secret)
            nonce = base64.b64encode(self._session_id.encode()).decode()
            headers |= sign(
                secret,
                target=target,
                authority=parts.netloc,
                headers=headers,
                nonce=nonce,
                created=now_s,
                expires=now_s + 60,
            )
        return headers

    def opening(self) -> list[str]:
        """The ``open`` transaction's first half."""
        parameters = {
            "organizationId": ORGANIZATION_ID,
            "conversationId": self.call_id,
            "participant": {"id": "p-42", "ani": "tel:+15550100042", "dnis": "tel:+15550100043"},
            "media": [MEDIA],
            "language": "en-US",
            "inputVariables": self._input_variables,
        }
        return [self._message("open", parameters)]

    def closing(self) -> str | None:
        """The caller hung up: ``close`` (unless the session already closed)."""
        return None if self.closed else self._message("close", {"reason": "end"})

    def tick(self) -> list[str | bytes]:
        """Advance 20 ms: play bot audio, report playback, send audio once opened."""
        was_playing = self._line.playback.playing
        frame, _ = self._line.tick()
        messages: list[str | bytes] = []
        playing = self._line.playback.playing
        if playing and not was_playing:
            messages.append(self._message("playback_started", {}))
        elif was_playing and not playing:
            messages.append(self._message("playback_completed", {}))
        if self.opened and not self.closed:
            if self._line.now_ms % PING_EVERY_MS == 0:
                messages.append(self._message("ping", {}))
            messages.append(frame)
        return messages

    def receive(self, message: str | bytes) -> list[str]:
        """Take one server message; messages to send back at once."""
        if isinstance(message, bytes):
            self._take_audio(message)
            return []
        data = self._parse(message)
        match data.get("type"):
            case "opened":
                self.opened = True
            case "pong":
                self.pongs += 1
            case "event":
                self._on_event(data)
            case "disconnect":  # the server ends the session: Genesys closes it
                return [self._message("close", {"reason": "end"})]
            case "closed":
                self.closed = True
            case "updated":
                pass
            case other:
                raise RemoteProtocolError(f"genesys does not accept type {other!r}")
        return []

    def finished(self, deadline_ms: int) -> bool:
        """The session closed, or the script and the bot are done."""
        return self.closed or super().finished(deadline_ms)

    def _take_audio(self, payload: bytes) -> None:
        if not self.opened:
            raise RemoteProtocolError("genesys: audio before opened")
        now = self._line.now_ms
        refill = (now - self._refilled_ms) * RATE_PER_S / 1000
        self._tokens, self._refilled_ms = min(float(BURST), self._tokens + refill), now
        if self._tokens < 1:
            raise RemoteProtocolError(
                f"genesys: over the rate limit of {RATE_PER_S} binary messages per second"
            )
        self._tokens -= 1
        self._line.playback.queue_audio(payload)

    def _on_event(self, data: dict[str, Any]) -> None:
        entities = data.get("parameters", {}).get("entities", [])
        if any(entity.get("type") == "barge_in" for entity in entities):
            self._line.clear()  # queued bot audio is dropped

    def _parse(self, message: str) -> dict[str, Any]:
        try:
            data = json.loads(message)
        except json.JSONDecodeError as error:
            raise RemoteProtocolError(f"genesys: not JSON: {error}") from error
        if not isinstance(data, dict) or data.get("version") != "2":
            raise RemoteProtocolError("genesys: a server message must be a version 2 object")
        if data.get("id") != self._session_id or data.get("clientseq", -1) > self._seq:
            raise RemoteProtocolError(f"genesys: a message for another session or seq: {data}")
        if data.get("seq") != self._server_seq + 1:
            raise RemoteProtocolError(f"genesys: server seq {data.get('seq')} is out of order")
        self._server_seq += 1
        return data

    def _message(self, kind: str, parameters: dict[str, Any]) -> str:
        self._seq += 1
        envelope = {
            "version": "2",
            "type": kind,
            "seq": self._seq,
            "serverseq": self._server_seq,
            "id": self._session_id,
            "position": f"PT{self._line.now_ms / 1000:.2f}S",
            "parameters": parameters,
        }
        return json.dumps(envelope)
