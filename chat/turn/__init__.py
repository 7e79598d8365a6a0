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
    run.py           the turn's task: its ticket, its failures, the lease on its session
    steps.py         its steps once it runs: directives, the reply, verification, pause, stop, `done`
    control.py       a running turn's handle and its stop
    finish.py        storing the answer and counting its usage, tried again while the database is away
    reply.py         the model and its tools: one streamed reply through the tool loop
    verification.py  the verifyResponse feature
    replay.py        where a turn's events are kept, for readers in any process (store.py, redis_store.py)
    lock.py          the session's ticket lock: one turn at a time, in arrival order, across processes
    branches.py      where a turn's message goes on the session's tree, and the history before it
    handover.py      the answer stored and the session handed to its next ticket, in one transaction
    completion.py    sessions idle long enough are completed (and reopened by their next turn)
    usage.py         usage and cost of every model call
    events.py        the events, and their SSE, WebSocket and JSON encodings

Transports only turn the events into their wire format; everything a turn decides is here.

The names below are imported at their first use: importing the package (chat/apps.py does, for
the definitions' signals; so does every door's module, which the URLconf of `manage.py check`
imports) loads neither the prompt compiler nor the model clients. A server process loads them
before it listens (`warm`, docs/decisions.md, "Warm start").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chat.turn.admission import (
        Admitted,
        BearerCaller,
        Caller,
        CookieCaller,
        Refused,
        SocketCaller,
        admit,
        admit_action,
        admit_regenerate,
    )
    from chat.turn.events import Turn, TurnEvent, TurnReader, collect, error_event, frame, sse_chunks
    from chat.turn.prompt import warm
    from chat.turn.replay import resume, stop
    from chat.turn.run import go_on, start, wait_for_running_turns
    from chat.turn.store import Reader

_MODULES = {
    "chat.turn.admission": (
        "Admitted",
        "BearerCaller",
        "Caller",
        "CookieCaller",
        "Refused",
        "SocketCaller",
        "admit",
        "admit_action",
        "admit_regenerate",
    ),
    "chat.turn.events": ("Turn", "TurnEvent", "TurnReader", "collect", "error_event", "frame", "sse_chunks"),
    "chat.turn.prompt": ("warm",),
    "chat.turn.replay": ("resume", "stop"),
    "chat.turn.run": ("go_on", "start", "wait_for_running_turns"),
    "chat.turn.store": ("Reader",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
