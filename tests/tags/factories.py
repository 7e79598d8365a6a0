"""Tag definition factories: model rows (bulk-creatable) and wire payloads."""

from __future__ import annotations

import copy
from typing import Any

import factory

from tags.models import TagDefinition, TagStatus, UsageMode


class TagDefinitionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TagDefinition

    scope = "demo"
    tag = factory.Sequence(lambda n: f"tag-{n:04d}")
    usage_mode = UsageMode.GLOBAL
    widget = factory.LazyFunction(lambda: {"type": "built-in", "builtInType": "chart"})
    llm_instructions_md = factory.LazyAttribute(lambda o: f"Emit <{o.scope}.{o.tag}> with chart JSON.")
    status = TagStatus.ENABLED
    rendering_contexts = factory.LazyFunction(lambda: {"inline": {"enabled": True}})
    can_be_generated_by_llm = True
    can_be_generated_by_tool = False
    description = factory.LazyAttribute(lambda o: f"The {o.tag} tag")
    created_by = "seed"
    last_updated_by = "seed"


_PAYLOAD: dict[str, Any] = {
    "scope": "demo",
    "tag": "chart",
    "usageMode": "global",
    "widget": {"type": "built-in", "builtInType": "chart"},
    "llmInstructionsMd": "Put chart JSON inside <demo.chart>.",
    "status": "enabled",
    "renderingContexts": {"inline": {"enabled": True}},
    "canBeGeneratedByLlm": True,
    "canBeGeneratedByTool": False,
    "description": "Charts in replies",
}


def payload(**overrides: Any) -> dict[str, Any]:
    """A valid current-form TagDefinition on the wire; a None override removes the key."""
    data = copy.deepcopy(_PAYLOAD)
    for key, value in overrides.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def web_component(**component: Any) -> dict[str, Any]:
    return {"type": "web-component", "webComponent": component}
