"""The demo data set that `manage.py seed_demo` loads (README "Two commands"): its accounts, one chat
app, agents, tools of each type that works offline, tag definitions and widgets, directives, a
knowledge base of the project's docs; and how they are written.

Everything is written through the same services as the Admin API, so the demo data obeys the
same rules as anything an operator creates. A record is written when it is missing (or on reset),
never changed otherwise: an operator's edits to the demo survive `make run`'s every start.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.storage import storages
from django.db import models

from agents.models import AgentDefinition
from agents.services import agent_upsert
from chat.chat_apps.models import ChatApp
from chat.chat_apps.services import chat_app_upsert
from chat.users.models import ChatUser, UserType
from chatplatform.storage import WIDGET_STORE, encode, object_name, store_write
from directives.models import SemanticDirective
from directives.services import directive_upsert
from knowledge.models import KnowledgeBase
from knowledge.services import document_add, knowledge_base_upsert
from tags.models import TagDefinition
from tags.serializers import TagDefinitionSerializer
from tags.services import tag_upsert
from tools.models import ToolDefinition
from tools.registry import get_function
from tools.services import tool_upsert


@dataclass(frozen=True)
class Account:
    user_id: str
    development_password: str  # `make run`'s printed login, with DEBUG on only
    fields: dict[str, Any]


# Who signs in to the demo: an admin of the Django admin, and a person of the chat page (not
# staff, so the page shows what a chat app's user sees).
ADMIN = Account("admin", "admin-demo", {"is_staff": True, "is_superuser": True, "user_type": UserType.INTERNAL})
PERSON = Account("demo", "demo-chat", {"first_name": "Demo", "last_name": "User", "email": "demo@example.com"})

SEEDED_BY = "seed_demo"

WORD_COUNT_CODE = """async (event, params) => {
  const words = params.text.trim().split(/\\s+/).filter(Boolean);
  return { words: words.length, characters: params.text.length };
}"""

TOOLS: list[dict[str, Any]] = [
    {
        "toolId": "current-time@1",
        "executionType": "function",
        "name": "current_time",
        "displayName": "Current time",
        "description": "Tells the current date and time in a timezone.",
        "supportedAgentFrameworks": ["hosted"],
        "functionArn": "local:current_time",
        "functionSchema": [get_function("current_time").function_definition()],  # type: ignore[union-attr]  # tools.functions registers it
        "executionTimeout": 5,
    },
    {
        "toolId": "word-count@1",
        "executionType": "inline",
        "name": "word_count",
        "displayName": "Word count",
        "description": "Counts the words and characters of a text.",
        "supportedAgentFrameworks": ["hosted"],
        "code": WORD_COUNT_CODE,
        "functionSchema": [
            {
                "name": "word_count",
                "description": "Counts the words and characters of a text.",
                "parameters": {"text": {"type": "string", "description": "The text to count", "required": True}},
            }
        ],
        "executionTimeout": 2,
    },
]

KNOWLEDGE_BASE: dict[str, Any] = {
    "knowledgeBaseId": "platform-docs",
    "name": "Platform documentation",
    "description": (
        "The chat agent platform's own documentation: how to run it, its API conventions, configuration, "
        "access rules and design decisions. Search it for questions about the platform."
    ),
    "retrieval": {"strategy": "tool", "topK": 4},
}
# The project's own docs, by path from the repository root (sourceUrl), so a re-run replaces them.
KNOWLEDGE_FILES = ["README.md", "docs/*.md"]

AGENT = {
    "agentId": "demo-assistant",
    "basePrompt": (
        "You are the {{company.name}} demo assistant. You are talking to {{user.firstName}} "
        "({{user.email}}). Answer briefly and helpfully.\n\n{{tag-instructions}}"
    ),
    "toolIds": [tool["toolId"] for tool in TOOLS],
    "foundationModel": "offline",
    "knowledgeBases": [{"id": KNOWLEDGE_BASE["knowledgeBaseId"]}],
}

# A supervisor and two collaborators (README "Collaborating agents"), all on the offline model.
COLLABORATORS: list[dict[str, Any]] = [
    {
        "agentId": "demo-researcher",
        "basePrompt": "You find facts in the platform's documentation and report them with their sources.",
        "toolIds": [],
        "foundationModel": "offline",
        "knowledgeBases": [{"id": KNOWLEDGE_BASE["knowledgeBaseId"]}],
    },
    {
        "agentId": "demo-writer",
        "basePrompt": "You turn notes into a short, friendly answer for {{user.firstName}}.",
        "toolIds": ["word-count@1"],
        "foundationModel": "offline",
    },
]
SUPERVISOR = {
    "agentId": "demo-supervisor",
    "basePrompt": "You coordinate a researcher and a writer to answer questions about the platform.",
    "toolIds": [],
    "foundationModel": "offline",
    "agentCollaboration": "SUPERVISOR",
    "collaborators": [
        {"agentId": "demo-researcher", "instruction": "Finds facts in the platform's documentation.", "historyRelay": "TO_COLLABORATOR"},
        {"agentId": "demo-writer", "instruction": "Writes the final answer from notes.", "historyRelay": "TO_AGENT"},
    ],
}

CHAT_APP = {
    "chatAppId": "demo",
    "title": "Demo chat",
    "description": "Talks to the demo assistant (the offline model: it echoes, no network).",
    "agentId": AGENT["agentId"],
    "enabled": True,
    "features": {
        "tags": {"enabled": True, "tagsEnabled": [{"scope": "demo", "tag": "weather-card"}]},
        "instructionAugmentation": {"enabled": True},
        "promptInputFieldLabel": "Ask the demo assistant",
        "suggestions": {
            "enabled": True,
            "suggestions": ["What time is it in Tokyo?", "How many words are in this sentence?", "Show me a table of three planets"],
            "randomize": False,
            "maxToShow": 3,
        },
        "traces": {"enabled": True},
        # A session idle for CHAT_SESSION_IDLE_MINUTES is reviewed by CHAT_INSIGHTS_MODEL (the offline one answers too).
        "sessionInsights": {"enabled": True},
        "fileUpload": {"enabled": True, "mimeTypesAllowed": ["text/plain", "text/markdown", "text/csv", "image/png", "image/jpeg"]},
        "chatDisclaimerNotice": {"enabled": True, "notice": "The demo assistant runs offline and only echoes: no answer is advice."},
    },
}

# The widget runtime's demo (docs/widgets.md): widgets that work offline, written only when missing (an
# operator's edits survive a re-run). The web components' scripts go into the database-backed
# widget store, one per encoding the store serves.
WIDGET_STORE_BUCKET = "demo-widgets"
WIDGET_SCRIPTS_DIR = Path(__file__).resolve().parents[2] / "demo_widgets"
# (file in chat/demo_widgets, key in the store, encoding)
WIDGET_SCRIPTS = [
    ("counter.js", "counter.js.gz", "gzip"),
    ("tips.js", "tips.js.b64", "gzip+base64"),
    ("welcome.js", "welcome.js", "none"),
    ("weather-card.js", "weather-card.js.gz", "gzip"),
]


def _stored_component(file: str, element: str) -> dict[str, Any]:
    _, key, encoding = next(script for script in WIDGET_SCRIPTS if script[0] == file)
    return {
        "type": "web-component",
        "webComponent": {"storeBucket": WIDGET_STORE_BUCKET, "storeKey": key, "encoding": encoding, "customElementName": element},
    }


TAG_DEFINITIONS: list[dict[str, Any]] = [
    {
        "scope": "demo",
        "tag": "chart",
        "usageMode": "global",
        "status": "enabled",
        "widget": {"type": "built-in", "builtInType": "chart"},
        "renderingContexts": {"inline": True, "canvas": True},
        "canBeGeneratedByLlm": True,
        "canBeGeneratedByTool": True,
        "description": "A chart drawn from a JSON series.",
        "llmInstructionsMd": (
            "To show numbers as a chart, write the series as JSON inside the tag, for example: "
            '<demo.chart type="bar" title="Visitors this week">{"labels": ["Mon", "Tue", "Wed", "Thu", "Fri"], '
            '"series": [{"label": "Visitors", "data": [120, 150, 90, 180, 160]}]}</demo.chart>'
        ),
    },
    {
        "scope": "demo",
        "tag": "weather-card",
        "usageMode": "chat-app",
        "status": "enabled",
        # Served from the widget store, so the demo works offline.
        "widget": _stored_component("weather-card.js", "demo-weather-card"),
        "renderingContexts": {"inline": {"enabled": True}, "spotlight": {"enabled": True, "displayOrder": 1}},
        "canBeGeneratedByLlm": True,
        "canBeGeneratedByTool": False,
        "description": "A weather card for one city.",
        "llmInstructions": [
            {"type": "line", "text": 'To show the weather of a city, write <demo.weather-card city="Paris"></demo.weather-card>.'},
            {"type": "block", "title": "Rules", "lines": [{"type": "line", "text": "One card per city."}]},
        ],
    },
    {
        "scope": "demo",
        "tag": "citation",
        "usageMode": "global",
        "status": "disabled",
        "widget": {"type": "pass-through"},
        "renderingContexts": {"inline": True},
        "canBeGeneratedByLlm": False,
        "canBeGeneratedByTool": True,
        "description": "Marks a quoted source (disabled in the demo).",
    },
]

WIDGET_TAG_DEFINITIONS: list[dict[str, Any]] = [
    {
        "scope": "demo",
        "tag": "suggestion",
        "usageMode": "global",
        "status": "enabled",
        "widget": {"type": "built-in", "builtInType": "prompt"},
        "renderingContexts": {"inline": True},
        "canBeGeneratedByLlm": True,
        "canBeGeneratedByTool": True,
        "description": "A question the user can send with one click.",
        "llmInstructionsMd": (
            "To suggest a question the user could ask next, write it in the tag's text attribute, for example: "
            '<demo.suggestion text="What time is it in Tokyo?"></demo.suggestion>'
        ),
    },
    {
        "scope": "demo",
        "tag": "counter",
        "usageMode": "global",
        "status": "enabled",
        "widget": _stored_component("counter.js", "demo-counter"),
        "renderingContexts": {"inline": True, "canvas": True, "dialog": True},
        "canBeGeneratedByLlm": True,
        "canBeGeneratedByTool": False,
        "description": "A counter that remembers its number per user (widget data).",
        "llmInstructionsMd": 'To show the user their counter, write <demo.counter title="Your counter"></demo.counter>',
    },
    {
        "scope": "demo",
        "tag": "tips",
        "usageMode": "global",
        "status": "enabled",
        "widget": _stored_component("tips.js", "demo-tips"),
        "renderingContexts": {"spotlight": {"enabled": True, "isDefault": True, "displayOrder": 0, "autoCreateInstance": True}},
        "canBeGeneratedByLlm": False,
        "canBeGeneratedByTool": False,
        "description": "Questions to try, in the spotlight above the message box.",
    },
    {
        "scope": "demo",
        "tag": "welcome",
        "usageMode": "global",
        "status": "enabled",
        "widget": _stored_component("welcome.js", "demo-welcome"),
        "renderingContexts": {"hero": {"enabled": True, "autoCreateInstance": True, "sizing": {"maxWidth": "720px", "minHeight": 100}}},
        "canBeGeneratedByLlm": False,
        "canBeGeneratedByTool": False,
        "description": "A welcome banner, the demo's hero.",
    },
]

DIRECTIVES: list[dict[str, Any]] = [
    {
        "scopeType": "chatapp",
        "scopeValue": CHAT_APP["chatAppId"],
        "id": "greet-by-first-name",
        "description": "When the user greets the assistant or says hello.",
        "instructions": "Greet the user by their first name.",
    },
    {
        "scopeType": "agent",
        "scopeValue": AGENT["agentId"],
        "id": "metric-units",
        "description": "When the answer involves temperatures, distances or weights.",
        "instructions": "Use metric units (Celsius, kilometres, kilograms).",
    },
    {
        "scopeType": "tool",
        "scopeValue": "word-count@1",
        "id": "count-before-judging-length",
        "description": "When the user asks whether a text is too long or short.",
        "instructions": "Call word_count before judging the length of a text.",
    },
]


@dataclass
class Loaded:
    """What a load did: records written and kept, documents indexed, widget tags added, and the
    password of each account whose password it set (None: created earlier, left as it is)."""

    written: int = 0
    kept: int = 0
    documents: int = 0
    widgets_added: int = 0
    passwords: dict[str, str | None] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


class Loader:
    def __init__(self, *, reset: bool) -> None:
        self.reset = reset
        self.loaded = Loaded()

    def wanted(self, model: type[models.Model], **lookup: Any) -> bool:
        """Whether to write this demo record: when it is missing, or on reset. Counts what is kept."""
        if self.reset or not model._default_manager.filter(**lookup).exists():
            self.loaded.written += 1
            return True
        self.loaded.kept += 1
        return False

    def accounts(self, *, random_passwords: bool) -> None:
        """The demo's accounts, each password set when created (or on reset): the development one,
        or a random one (never a fixed password outside DEBUG)."""
        for account in (ADMIN, PERSON):
            user, created = ChatUser.objects.get_or_create(user_id=account.user_id, defaults=account.fields)
            password = None
            if created or self.reset:
                password = secrets.token_urlsafe(12) if random_passwords else account.development_password
                user.set_password(password)
                user.save()
            self.loaded.passwords[account.user_id] = password

    def records(self) -> None:
        for tool in TOOLS:
            if self.wanted(ToolDefinition, tool_id=tool["toolId"]):
                tool_upsert(tool=tool, user_id=SEEDED_BY)
        if self.wanted(KnowledgeBase, knowledge_base_id=KNOWLEDGE_BASE["knowledgeBaseId"]):
            knowledge_base_upsert(data=KNOWLEDGE_BASE, user_id=SEEDED_BY)
            self.documents()
        for agent in [AGENT, *COLLABORATORS, SUPERVISOR]:
            if self.wanted(AgentDefinition, agent_id=agent["agentId"]):
                agent_upsert(data=agent, user_id=SEEDED_BY)
        if self.wanted(ChatApp, chat_app_id=CHAT_APP["chatAppId"]):
            chat_app_upsert(data=CHAT_APP, user_id=SEEDED_BY)
        for definition in TAG_DEFINITIONS:
            if self.wanted(TagDefinition, scope=definition["scope"], tag=definition["tag"]):
                self.tag(definition)
        for directive in DIRECTIVES:
            lookup = {"scope_type": directive["scopeType"], "scope_value": directive["scopeValue"], "directive_id": directive["id"]}
            if self.wanted(SemanticDirective, **lookup):
                directive_upsert(data=directive, user_id=SEEDED_BY)
        self.widgets()

    def tag(self, definition: dict[str, Any]) -> None:
        serializer = TagDefinitionSerializer(data=definition)
        serializer.is_valid(raise_exception=True)
        tag_upsert(definition=serializer.validated_data, user_id=SEEDED_BY)

    def documents(self) -> None:
        """Upload README.md and docs/*.md into the demo knowledge base; a failed one is reported, not fatal."""
        root = Path(settings.BASE_DIR)
        paths = sorted({path for pattern in KNOWLEDGE_FILES for path in root.glob(pattern) if path.is_file()})
        for path in paths:
            text = path.read_text(encoding="utf-8")
            heading = next((line.lstrip("#").strip() for line in text.splitlines() if line.startswith("# ")), "")
            relative = path.relative_to(root).as_posix()
            document = document_add(
                knowledge_base_id=KNOWLEDGE_BASE["knowledgeBaseId"],
                title=f"{heading} ({relative})" if heading else relative,
                data=text.encode("utf-8"),
                mime_type="text/markdown",
                source_url=relative,
                user_id=SEEDED_BY,
            )
            if document.status == "failed":
                self.loaded.failures.append(f"{relative}: not indexed: {document.error}")
        self.loaded.documents = len(paths)

    def widgets(self) -> None:
        """The demo's widget scripts and tag definitions, each only when missing (or on reset)."""
        for file, key, encoding in WIDGET_SCRIPTS:
            if self.reset or not storages[WIDGET_STORE].exists(object_name(WIDGET_STORE_BUCKET, key)):
                content = encode((WIDGET_SCRIPTS_DIR / file).read_bytes(), encoding)
                store_write(bucket=WIDGET_STORE_BUCKET, key=key, content=content)
        for definition in WIDGET_TAG_DEFINITIONS:
            if self.wanted(TagDefinition, scope=definition["scope"], tag=definition["tag"]):
                self.tag(definition)
                self.loaded.widgets_added += 1
