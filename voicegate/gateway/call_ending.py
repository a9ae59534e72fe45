"""Ending and transferring a call the engine asked to end (issue 16), per provider.

The session calls :meth:`ProviderCallControl.end` once the caller has heard the last words
(every mark of the final utterance came back). Where the provider's REST API is configured it
sends the hang-up or transfer request built by ``gateway/call_control.py`` and returns True;
otherwise it returns False and the session ends the call by closing the media socket, which
ends calls whose answer document has nothing after the stream (voicegate's own TwiML, TeXML,
Plivo XML and NCCO). A transfer always needs the API (or, for ConversationRelay, the codec's
``end`` message, which needs nothing here).

Credentials come from environment variables named in ``call_control`` (and the providers'
own ``auth_token_env``); the CLI resolves them into :class:`CallControlCredentials`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

import aiohttp

from voicegate.codecs import CallStarted, Codec, Hangup
from voicegate.errors import ConfigError, LocalProtocolError, RemoteProtocolError
from voicegate.gateway import call_control as cc
from voicegate.gateway.transport import CLOSE_NORMAL, Transport

log = logging.getLogger(__name__)


#: Puts one record on the call's timeline (at the session's current time).
Emit = Callable[..., Any]


async def hang_up(
    transfer_to: str,
    *,
    codec: Codec,
    transport: Transport,
    emit: Emit,
    control: CallControl | None = None,
    started: CallStarted | None = None,
) -> None:
    """End (or transfer) the call the engine ended, the caller having heard it all.

    Through the provider's API when ``control`` has one for this dialect, then the dialect's
    hang-up message if it has one (browser ``stop``, ConversationRelay ``end`` with the
    transfer in ``handoffData``), then the socket closes normally. A refused API request is
    logged and on the timeline; the socket closes all the same.
    """
    action = "transfer" if transfer_to else "hangup"
    emit("call_ending", action=action, transfer_to=transfer_to)
    capabilities = codec.capabilities
    verb = (capabilities.transfer_verb if transfer_to else None) or capabilities.hangup_verb
    via = verb or "socket"
    if control is not None and started is not None:
        try:
            if await control.end(capabilities.dialect, started, transfer_to):
                via = "api"
        except (RemoteProtocolError, ConfigError) as error:
            log.warning("call %s: the %s was refused: %s", started.call_id, action, error)
            emit("call_control_failed", reason=str(error))
    reason = f"transferred to {transfer_to}" if transfer_to else "the agent ended the call"
    emit("call_ended_by_agent", action=action, via=via)
    with contextlib.suppress(LocalProtocolError):
        for message in codec.send(Hangup(reason, transfer_to)):
            await transport.send(message)
    await transport.close(CLOSE_NORMAL, reason)


class CallControl(Protocol):
    """Ends or transfers a call through its provider's API."""

    async def end(self, dialect: str, call: CallStarted, transfer_to: str) -> bool:
        """Hang up (``transfer_to`` empty) or transfer; False when the socket must do it."""
        ...


@dataclass(frozen=True, slots=True)
class CallControlSettings:
    """``call_control``: provider REST APIs used to hang up and transfer calls."""

    timeout_s: float = 10.0
    twilio_api: str = cc.TWILIO_API
    telnyx_api: str = cc.TELNYX_API
    #: Telnyx API key (Call Control calls; TeXML calls end when the stream closes).
    telnyx_api_key_env: str = ""
    plivo_api: str = cc.PLIVO_API
    #: Plivo auth id; its token is providers.plivo.auth_token_env's.
    plivo_auth_id_env: str = ""
    #: A URL answering Plivo XML that dials the destination; voicegate adds ``?to=...``.
    plivo_transfer_url: str = ""
    vonage_api: str = cc.VONAGE_API
    vonage_application_id: str = ""
    #: The application's private key (PEM text).
    vonage_private_key_env: str = ""

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ConfigError(f"timeout_s must be positive, got {self.timeout_s}")

    def env_names(self) -> dict[str, str]:
        """Key path -> environment variable, for the secrets this section names."""
        names = {
            "call_control.telnyx_api_key_env": self.telnyx_api_key_env,
            "call_control.plivo_auth_id_env": self.plivo_auth_id_env,
            "call_control.vonage_private_key_env": self.vonage_private_key_env,
        }
        return {path: name for path, name in names.items() if name}


@dataclass(frozen=True, slots=True)
class CallControlCredentials:
    """The resolved secrets; an empty one means that provider's API is not used."""

    twilio_auth_token: str = ""
    telnyx_api_key: str = ""
    plivo_auth_id: str = ""
    plivo_auth_token: str = ""
    vonage_private_key: bytes = b""


class ProviderCallControl:
    """:class:`CallControl` over the providers' REST APIs."""

    def __init__(
        self,
        settings: CallControlSettings,
        credentials: CallControlCredentials,
        now_s: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._credentials = credentials
        self._now_s = now_s

    def request(self, dialect: str, call: CallStarted, transfer_to: str) -> cc.RestRequest | None:
        """The request that ends or transfers ``call``; None when no API is configured."""
        build = {
            "twilio": self._twilio,
            "telnyx": self._telnyx,
            "plivo": self._plivo,
            "vonage": self._vonage,
        }.get(dialect)
        return None if build is None else build(call, transfer_to)

    async def end(self, dialect: str, call: CallStarted, transfer_to: str) -> bool:
        """Send the provider's hang-up or transfer request, if one is configured."""
        request = self.request(dialect, call, transfer_to)
        if request is None:
            return False
        try:
            async with aiohttp.ClientSession() as http:
                await cc.perform(http, request, timeout_s=self._settings.timeout_s)
        except (aiohttp.ClientError, TimeoutError) as error:
            raise RemoteProtocolError(f"{request.method} {request.url}: {error!r}") from None
        return True

    def _twilio(self, call: CallStarted, to: str) -> cc.RestRequest | None:
        token, sid, api = self._credentials.twilio_auth_token, call.account_id, self._settings
        if not token or not sid:
            return None
        if to:
            return cc.twilio_transfer(sid, token, call.call_id, to, api=api.twilio_api)
        return cc.twilio_hangup(sid, token, call.call_id, api=api.twilio_api)

    def _telnyx(self, call: CallStarted, to: str) -> cc.RestRequest | None:
        key, api = self._credentials.telnyx_api_key, self._settings.telnyx_api
        if not key:
            return None
        if to:
            return cc.telnyx_transfer(key, call.call_id, to, api=api)
        return cc.telnyx_hangup(key, call.call_id, api=api)

    def _plivo(self, call: CallStarted, to: str) -> cc.RestRequest | None:
        auth_id, token = self._credentials.plivo_auth_id, self._credentials.plivo_auth_token
        api = self._settings.plivo_api
        if not auth_id or not token or (to and not self._settings.plivo_transfer_url):
            return None
        if to:
            url = f"{self._settings.plivo_transfer_url}?to={quote(to, safe='')}"
            return cc.plivo_transfer(auth_id, token, call.call_id, url, api=api)
        return cc.plivo_hangup(auth_id, token, call.call_id, api=api)

    def _vonage(self, call: CallStarted, to: str) -> cc.RestRequest | None:
        app, key = self._settings.vonage_application_id, self._credentials.vonage_private_key
        if not app or not key:
            return None
        jwt = cc.vonage_application_jwt(app, key, now_s=int(self._now_s()))
        api = self._settings.vonage_api
        if to:
            return cc.vonage_transfer(jwt, call.call_id, to, api=api)
        return cc.vonage_hangup(jwt, call.call_id, api=api)
