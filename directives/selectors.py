"""Reads on semantic directives: the admin search and the candidates of a turn."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet

from directives.models import SemanticDirective
from directives.scopes import candidate_scopes

Position = tuple[datetime, int]  # (create_date, pk) of the last directive of a page


@dataclass(frozen=True, slots=True)
class DirectiveSearch:
    """The search fields of docs/api.md "Semantic directives", already validated."""

    scopes: list[str] | None = None
    created_by: str | None = None
    directive_ids: list[str] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None
    descending: bool = True
    include_instructions: bool = False


def _selected(search: DirectiveSearch) -> QuerySet[SemanticDirective]:
    """The precedence: scopes, else createdBy, else directiveIds, else all. Each branch is one
    equality or IN on an indexed column followed by create_date (see SemanticDirective.Meta)."""
    directives = SemanticDirective.objects.all()
    if search.scopes:
        return directives.filter(scope__in=search.scopes)  # directive_scope_created
    if search.created_by:
        return directives.filter(created_by=search.created_by)  # directive_creator_created
    if search.directive_ids:
        return directives.filter(directive_id__in=search.directive_ids)  # directive_id
    return directives  # directive_created


def directives_search(*, search: DirectiveSearch, limit: int, after: Position | None) -> tuple[list[SemanticDirective], Position | None]:
    """One page of the search, ordered by (createDate, pk), and the position of the next page.

    Keyset pagination: a page starts after the (create_date, pk) of the previous one, so deep pages
    cost what the first one does and a directive created meanwhile neither repeats nor skips rows.
    The date filters apply in every branch: createdAfter/updatedAfter inclusive, *Before exclusive.
    """
    directives = _selected(search)
    if search.created_after is not None:
        directives = directives.filter(create_date__gte=search.created_after)
    if search.created_before is not None:
        directives = directives.filter(create_date__lt=search.created_before)
    if search.updated_after is not None:
        directives = directives.filter(last_update__gte=search.updated_after)
    if search.updated_before is not None:
        directives = directives.filter(last_update__lt=search.updated_before)
    if after is not None:
        created, pk = after
        if search.descending:
            directives = directives.filter(Q(create_date__lt=created) | Q(create_date=created, pk__lt=pk))
        else:
            directives = directives.filter(Q(create_date__gt=created) | Q(create_date=created, pk__gt=pk))
    directives = directives.order_by(*(("-create_date", "-pk") if search.descending else ("create_date", "pk")))
    if not search.include_instructions:
        directives = directives.defer("instructions")  # up to 20,000 characters each, not shown
    page = list(directives[: limit + 1])
    if len(page) <= limit:
        return page, None
    page = page[:limit]
    return page, (page[-1].create_date, page[-1].pk)


def directives_candidates(*, chat_app_id: str, agent_id: str, tool_ids: list[str], entity_value: str | None) -> list[SemanticDirective]:
    """The directives a turn may select from (docs/api.md, "The system prompt"), in one query (scope IN ...).

    Scopes: `chatapp#<chatAppId>`, `agent#<agentId>`, `tool#<toolId>` per tool, and with an entity
    value `entity#<value>` and `agent#<agentId>#entity#<value>`. Plain arguments: this leaf app
    knows nothing of chat apps, agents or users.
    """
    scopes = candidate_scopes(chat_app_id=chat_app_id, agent_id=agent_id, tool_ids=tool_ids, entity_value=entity_value)
    return list(SemanticDirective.objects.filter(scope__in=scopes).order_by("scope", "directive_id"))
