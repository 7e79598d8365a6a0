"""`/ws/chat/converse` (docs/api.md, "WebSocket"): each message is a converse body, answered with the
turn's events as JSON frames `{"type": <event>, "eventId": <id>, ...fields}`, the same events as
the SSE stream; or an action on a session's running turn: `{"action": "resume", "sessionId",
"lastEventId?"}` streams its events as a resume does, `{"action": "stop", "sessionId"}` stops it
(answered `{"type": "stop", "sessionId", "stopped"}`), `{"action": "regenerate", "sessionId",
"messageId"}` answers that answer's question again as the regenerate endpoint does.

Turns (and resumes) sent on one socket are answered one after another, in the order received
(their deltas would otherwise interleave); a stop is answered at once. At most
CHAT_WS_MAX_QUEUED_TURNS of a socket may be accepted and not yet answered; one beyond that is
refused at once with an `error` frame. A turn accepted is run and stored even when the socket
closes before its answer (docs/faults.md).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import orjson
from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from rest_framework.exceptions import AuthenticationFailed

from chat import turn
from chat.doors.sessions import own_session
from chat.users.authentication import SOCKET_TOKEN_EXPIRED
from chatplatform import inflight
from chatplatform.api.errors import InvalidRequest

# Close codes of a socket refused when it opens (4000-4999 are the application's; docs/api.md).
# The socket is accepted, then closed: a socket closed before it is accepted is an HTTP 403 to the
# client, without the code or the reason.
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_SERVICE_RESTART = 1012  # RFC 6455's registered code: reconnect later, to another process

UNAUTHENTICATED_REASONS = {
    None: "authentication required: send ?token=<JWT> or the session cookie",
    "expired": SOCKET_TOKEN_EXPIRED,
}
# docs/api.md, "Authentication": the cookie is a browser's credential, and a browser always sends
# Origin (checked by chatplatform.api.websocket); without one the socket is a program's.
COOKIE_WITHOUT_ORIGIN = "a socket without Origin (a program) must send ?token=<JWT>; the session cookie is for browsers"


class ConverseConsumer(AsyncWebsocketConsumer):
    """An authenticated socket (cookie or `?token=`); every message is one turn."""

    # Nothing reaches this socket through the channel layer, so it takes no channel there: with
    # Redis (channels_redis) each socket would otherwise keep a receive loop on Redis running.
    channel_layer_alias = None

    async def connect(self) -> None:
        if not inflight.accepting():
            await self.refuse(CLOSE_SERVICE_RESTART, "the server is shutting down: reconnect")
            return
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            failure = self.scope.get("auth_failure")
            reason = UNAUTHENTICATED_REASONS.get(failure) or f"invalid token: {failure}"
            await self.refuse(CLOSE_UNAUTHENTICATED, reason)
            return
        if self.scope.get("auth_token") is None and not any(name == b"origin" for name, _ in self.scope.get("headers", [])):
            await self.refuse(CLOSE_UNAUTHENTICATED, COOKIE_WITHOUT_ORIGIN)
            return
        address = (self.scope.get("client") or ("unknown", 0))[0]
        self.caller = turn.SocketCaller(
            getattr(user, "_wrapped", user), address, token=self.scope.get("auth_token"), session_key=self.scope.get("auth_session_key")
        )
        self.waiting: deque[str | bytes] = deque()
        self.unanswered = 0  # accepted turns not yet answered, the one running included
        self.open = True
        self.worker: asyncio.Task[None] | None = None
        await self.accept()

    async def refuse(self, code: int, reason: str) -> None:
        """Accept, then close with `code` and `reason` (at most 123 bytes in the close frame)."""
        self.open = False
        await self.accept()
        await self.close(code=code, reason=reason.encode()[:123].decode(errors="ignore"))

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Channels' dispatch without its `aclose_old_connections()` before every message: a hop to
        Django's one thread-sensitive thread, for consumers that use the database there. This one
        never does: its turns read and write on their own database threads (chatplatform.db)."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if not hasattr(self, "caller"):  # refused when it opened: closing
            return
        action = _action(text_data if text_data is not None else bytes_data)
        if action is not None and action.get("action") == "stop":
            await self._stop(action)
            return
        limit = settings.CHAT_WS_MAX_QUEUED_TURNS
        if self.unanswered >= limit:
            refused = InvalidRequest(f"at most {limit} turns of a socket may await their answer; send more after a done or error")
            await self.send(text_data=turn.frame(turn.error_event(refused)))
            return
        self.unanswered += 1
        self.waiting.append(text_data if text_data is not None else (bytes_data or b""))
        if self.worker is None:
            # Tracked: the turns accepted on this socket are run even after it closes, and a shutdown drains them.
            self.worker = asyncio.create_task(self._answer_in_order(), name="converse-socket")
            inflight.track(self.worker)

    async def disconnect(self, code: int) -> None:
        self.open = False  # the frames stop; the turns accepted go on and store their answers

    async def _send_frame(self, event: turn.TurnEvent, message_id: str = "") -> None:
        if not self.open:
            return
        try:
            await self.send(text_data=turn.frame(event, message_id))
        except Exception:  # the client went away mid-send: as a disconnect
            self.open = False

    async def _answer_in_order(self) -> None:
        while self.waiting:
            body = self.waiting.popleft()
            try:
                await self._answer(body)
            finally:
                self.unanswered -= 1
        self.worker = None

    async def _answer(self, body: str | bytes) -> None:
        try:
            action = _action(body)
            events: turn.Reader | None
            if action is not None and action.get("action") == "regenerate":
                events = turn.start(await self._regenerate(action)).reader()
            elif action is not None:
                events = await self._resume(action)
            else:
                events = turn.start(await turn.admit(self.caller, body)).reader()
            if events is None:
                return
        except turn.Refused as refused:
            await self._refused(refused.error)
            return
        # Read to the end even when the socket has closed: the next turn waits for this one.
        while (batch := await events.batch()) is not None:
            for event in batch:
                await self._send_frame(event, events.message_id)

    async def _refused(self, error: Exception) -> None:
        await self._send_frame(turn.error_event(error))
        if isinstance(error, AuthenticationFailed) and self.open:  # signed out: nothing more this socket can do
            self.open = False
            await self.close(code=CLOSE_UNAUTHENTICATED, reason=str(error.detail))

    async def _session_of(self, action: dict[str, Any]) -> Any:
        """The session an action names, when it is this socket's user's (Refused otherwise)."""
        admission = await turn.admit_action(self.caller)
        try:
            return await own_session(admission.user, str(action.get("sessionId") or ""), action.get("userId"))
        except Exception as exc:
            raise turn.Refused(exc, admission.budget) from exc

    async def _resume(self, action: dict[str, Any]) -> turn.Reader | None:
        if action.get("action") != "resume":
            raise turn.Refused(InvalidRequest("must be resume, stop or regenerate (or send a converse body)", field="action"), None)
        session_id = await self._session_of(action)
        events = await turn.resume(session_id, action.get("lastEventId"))
        if events is None:  # nothing running or kept: the stored messages are the answer
            await self.send(text_data=orjson.dumps({"type": "idle", "sessionId": str(session_id)}).decode())
        return events

    async def _regenerate(self, action: dict[str, Any]) -> turn.Admitted:
        """`{"action": "regenerate", "sessionId", "messageId", "features?", "timezone?"}`: the answer's
        question answered again, as the regenerate endpoint does (docs/api.md, "Regenerating an answer")."""
        options = {key: action[key] for key in ("userId", "features", "timezone") if key in action}
        session_id, message_id = str(action.get("sessionId") or ""), str(action.get("messageId") or "")
        return await turn.admit_regenerate(self.caller, session_id, message_id, orjson.dumps(options))

    async def _stop(self, action: dict[str, Any]) -> None:
        try:
            session_id = await self._session_of(action)
            stopped = await turn.stop(session_id)
        except turn.Refused as refused:
            await self._refused(refused.error)
            return
        if self.open:
            await self.send(text_data=orjson.dumps({"type": "stop", "sessionId": str(session_id), "stopped": stopped}).decode())


def _action(data: str | bytes | None) -> dict[str, Any] | None:
    """The message as an action on a session (`{"action": ...}`), or None for a converse body."""
    if not data or (b'"action"' not in data if isinstance(data, bytes) else '"action"' not in data):
        return None
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) and "action" in parsed else None
