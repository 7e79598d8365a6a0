"""Factories of directive records, for tests that need many or dated ones."""

from __future__ import annotations

import factory

from directives.models import SemanticDirective
from directives.scopes import parse_scope


class SemanticDirectiveFactory(factory.django.DjangoModelFactory):
    """A directive stored directly; `scope` decides scopeType and scopeValue as the service would."""

    class Meta:
        model = SemanticDirective

    scope = factory.Sequence(lambda n: f"chatapp#app-{n}")
    scope_type = factory.LazyAttribute(lambda o: parse_scope(o.scope).scope_type)
    scope_value = factory.LazyAttribute(lambda o: parse_scope(o.scope).scope_value)
    directive_id = factory.Sequence(lambda n: f"directive-{n}")
    description = factory.LazyAttribute(lambda o: f"when {o.directive_id} applies")
    instructions = factory.LazyAttribute(lambda o: f"Do what {o.directive_id} says.")
    created_by = "alice"
    last_updated_by = factory.LazyAttribute(lambda o: o.created_by)
