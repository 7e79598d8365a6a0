"""bench/shapes: what rendering an answer from declared fields costs per object.

Three renderings of the same objects, in one process, no database: the dict written by hand (what
the serializers did before), OutputSerializer (chatplatform.api.shapes: the declared fields through
a generated function) and DRF's own Serializer.to_representation over the same declared fields.
Objects: a semantic directive (13 keys, two optional) and a chat user (9 keys), a page of
`--objects` each, rendered as a list the way the search endpoints do; the best of `--rounds`.

    .venv/bin/python bench/shapes.py [--objects 1000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatplatform.settings")
os.environ.setdefault("SECRET_KEY", "bench-secret-key-" + "x" * 40)

import django  # noqa: E402

django.setup()

from rest_framework import serializers  # noqa: E402

from chat.users.models import ChatUser  # noqa: E402
from chat.users.serializers import ChatUserSerializer  # noqa: E402
from chatplatform.api.shapes import iso  # noqa: E402
from directives.models import SemanticDirective  # noqa: E402
from directives.serializers import SemanticDirectiveSerializer  # noqa: E402


def _directive_by_hand(directive: SemanticDirective, include_instructions: bool = True) -> dict[str, Any]:
    """The hand-written representation SemanticDirectiveSerializer had before OutputSerializer."""
    wire: dict[str, Any] = {
        "scope": directive.scope,
        "scopeType": directive.scope_type,
        "scopeValue": directive.scope_value_wire,
        "id": directive.directive_id,
    }
    if directive.group_id is not None:
        wire["groupId"] = directive.group_id
    wire["description"] = directive.description
    if include_instructions:
        wire["instructions"] = directive.instructions
    wire.update(
        createDate=iso(directive.create_date),
        lastUpdate=iso(directive.last_update),
        createdBy=directive.created_by,
        lastUpdatedBy=directive.last_updated_by,
    )
    return wire


def _user_by_hand(user: ChatUser) -> dict[str, Any]:
    """The hand-written representation ChatUserSerializer had before OutputSerializer."""
    return {
        "userId": user.user_id,
        "email": user.email,
        "firstName": user.first_name,
        "lastName": user.last_name,
        "userType": user.user_type,
        "customData": user.custom_data,
        "roles": user.roles,
        "createDate": user.create_date.isoformat().replace("+00:00", "Z"),
        "lastUpdate": user.last_update.isoformat().replace("+00:00", "Z"),
    }


def _drf_rendering(serializer_class: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The same declared fields rendered by DRF's own Serializer.to_representation."""
    return type(f"Drf{serializer_class.__name__}", (serializers.Serializer,), dict(serializer_class._declared_fields))


def _objects(count: int) -> tuple[list[SemanticDirective], list[ChatUser]]:
    now = datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=UTC)
    directives = [
        SemanticDirective(
            scope=f"chat-app#app-{i}",
            scope_type="chat-app",
            scope_value=f"app-{i}",
            directive_id=f"directive-{i}",
            group_id="batch" if i % 2 else None,
            description="When the user asks about refunds",
            instructions="Say that refunds take five days.",
            create_date=now,
            last_update=now,
            created_by="admin",
            last_updated_by="admin",
        )
        for i in range(count)
    ]
    users = [
        ChatUser(
            user_id=f"user-{i}",
            email=f"user-{i}@example.com",
            first_name="Ada",
            last_name="Lovelace",
            user_type="customer",
            custom_data={"plan": "pro"},
            roles=["reader"],
            create_date=now,
            last_update=now,
        )
        for i in range(count)
    ]
    return directives, users


def _per_object_us(renders: dict[str, Callable[[], Any]], count: int, rounds: int) -> dict[str, float]:
    """Microseconds per object of each rendering: the best of `rounds`, the renderings taking turns
    round by round so that a busy moment of the machine falls on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in renders}
    for render in renders.values():
        render()  # the generated renderer is built on first use
    for _ in range(rounds):
        for name, render in renders.items():
            start = time.perf_counter()
            render()
            times[name].append(time.perf_counter() - start)
    return {name: min(values) / count * 1e6 for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    directives, users = _objects(args.objects)
    for name, items, by_hand, declared in (
        ("directive", directives, _directive_by_hand, SemanticDirectiveSerializer),
        ("chat user", users, _user_by_hand, ChatUserSerializer),
    ):
        drf = _drf_rendering(declared)
        assert declared(items[:2], many=True).data == [by_hand(item) for item in items[:2]], f"{name}: OutputSerializer differs"
        best = _per_object_us(
            {
                "hand": lambda items=items, by_hand=by_hand: [by_hand(item) for item in items],
                "output": lambda items=items, declared=declared: declared(items, many=True).data,
                "drf": lambda items=items, drf=drf: drf(items, many=True).data,
            },
            len(items),
            args.rounds,
        )
        print(
            f"{name:10} per object (best of {args.rounds} x {len(items)}): by hand {best['hand']:6.2f} µs, "
            f"OutputSerializer {best['output']:6.2f} µs ({best['output'] - best['hand']:+.2f}), "
            f"DRF's to_representation {best['drf']:6.2f} µs"
        )


if __name__ == "__main__":
    main()
