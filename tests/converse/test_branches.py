"""Branches of a conversation through the Chat API (docs/api.md, "Branches", "Regenerating an
answer"): edit a question, regenerate an answer, list a branch, against the scripted model."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_migration_makes_each_existing_session_one_straight_branch():
    before, after = ("chat", "0015_pins_shares_search"), ("chat", "0016_message_branches")
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    old = executor.loader.project_state([before]).apps
    try:
        user = old.get_model("chat", "ChatUser").objects.create(user_id="alice", password="!")
        Session, Message = old.get_model("chat", "ChatSession"), old.get_model("chat", "ChatMessage")
        start = timezone.now()
        made = {}
        for name in ("first", "second"):
            session = Session.objects.create(user=user, chat_app_id="support", agent_id="helper")
            # created out of order: the branch follows the messages' times, not their insertion
            for index in (2, 0, 1):
                message = Message.objects.create(
                    session=session,
                    user_id="alice",
                    source="user" if index % 2 == 0 else "assistant",
                    message=f"{name} {index}",
                    timestamp=start + timedelta(seconds=index),
                )
                made[message.pk] = f"{name} {index}"

        executor = MigrationExecutor(connection)
        executor.migrate([after])
        new = executor.loader.project_state([after]).apps
        rows = list(new.get_model("chat", "ChatMessage").objects.values_list("message_id", "parent_id"))
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())

    parents = {made[key]: made.get(parent) for key, parent in rows}
    assert parents == {
        "first 0": None, "first 1": "first 0", "first 2": "first 1",
        "second 0": None, "second 1": "second 0", "second 2": "second 1",
    }  # fmt: skip
