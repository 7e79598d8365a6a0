"""Chat app rows for tests, written straight to the database."""

from __future__ import annotations

import factory

from chat.models import ChatApp
from tests.agents.factories import AgentFactory


class ChatAppFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ChatApp

    chat_app_id = factory.Sequence(lambda n: f"app-{n}")
    title = factory.LazyAttribute(lambda app: f"Chat app {app.chat_app_id}")
    agent = factory.SubFactory(AgentFactory)
    enabled = True
