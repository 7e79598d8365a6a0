"""Rows for converse tests, written straight to the database."""

from __future__ import annotations

import factory

from chat.models import ChatApp, ChatMessage, ChatSession
from tests.agents.factories import AgentFactory
from tests.directives.factories import SemanticDirectiveFactory  # noqa: F401  (re-exported for the tests)
from tests.tags.factories import TagDefinitionFactory  # noqa: F401


class ChatAppFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ChatApp

    chat_app_id = factory.Sequence(lambda n: f"app-{n}")
    title = factory.LazyAttribute(lambda app: f"Chat app {app.chat_app_id}")
    agent = factory.SubFactory(AgentFactory)
    enabled = True


class ChatSessionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ChatSession

    user_id = "alice"
    chat_app_id = "support"
    agent_id = "helper"


class ChatMessageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ChatMessage

    session = factory.SubFactory(ChatSessionFactory)
    user_id = factory.LazyAttribute(lambda m: m.session.user_id)
    source = "user"
    message = factory.Sequence(lambda n: f"message {n}")
