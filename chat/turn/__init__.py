"""A conversation turn, from request to stored answer (docs/api.md, "Converse").

    HTTP (chat.doors.converse: JSON, SSE) ──┐
    WebSocket (chat.doors.websocket) ───────┴─▶ admit(caller, body) ──▶ start(admitted) ──▶ Turn: events
                                            │                        │
       authenticate · rate limit · body ·   │                        └─ ticket · session · directives ·
       userId rule · chat app · agent ·     │                           reply + tools (llm.stream_reply) ·
       access and rollout · ticket          │                           verification · store · done · title
                                            └─ Refused(error, budget): the transport answers it

    admission.py     the one way in, for every transport and credential
    door.py          the same admission for the protocol doors (docs/doors.md), their refusals as DoorError
    prompt.py        what the model is told: features, system prompt, directive candidates, tools
    run.py           the turn's task: its steps, its failures, the lease on its session
    reply.py         the model and its tools: one streamed reply through the tool loop
    verification.py  the verifyResponse feature
    lock.py          the session's ticket lock: one turn at a time, in arrival order, across processes
    completion.py    sessions idle long enough are completed (and reopened by their next turn)
    usage.py         usage and cost of every model call
    events.py        the events, and their SSE, WebSocket and JSON encodings

Transports only turn the events into their wire format; everything a turn decides is here.
"""

from __future__ import annotations

from chat.turn.admission import Admitted, BearerCaller, Caller, CookieCaller, Refused, SocketCaller, admit, admit_action, admit_regenerate
from chat.turn.events import Turn, TurnEvent, TurnReader, collect, error_event, frame, sse_chunks
from chat.turn.prompt import warm
from chat.turn.replay import Reader, resume, stop
from chat.turn.run import go_on, start, wait_for_running_turns

__all__ = [
    "Admitted",
    "BearerCaller",
    "Caller",
    "CookieCaller",
    "Reader",
    "Refused",
    "SocketCaller",
    "Turn",
    "TurnEvent",
    "TurnReader",
    "admit",
    "admit_action",
    "admit_regenerate",
    "collect",
    "error_event",
    "frame",
    "go_on",
    "resume",
    "sse_chunks",
    "start",
    "stop",
    "wait_for_running_turns",
    "warm",
]
