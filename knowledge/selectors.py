"""Reads on knowledge bases, and the search a turn calls (docs/api.md, "Knowledge bases").

For the turn (chat): `usable_knowledge_bases(ids, user)` gives the agent's knowledge bases this
user may use, in the agent's order, as plain values (no database access afterwards);
`search(knowledge_base=..., query=..., top_k=...)` gives `Result`s best first, exactly what the
query endpoint answers; `tool_name(id)` names the search function (`search_<id>`, `-` → `_`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from chatplatform.access import AccessRules
from chatplatform.api.errors import NotFound
from knowledge.models import Document, KnowledgeBase
from knowledge.search import Result, SearchError, run

__all__ = [
    "KnowledgeBaseOffer",
    "Result",
    "SearchError",
    "documents_of",
    "knowledge_base_get",
    "knowledge_bases_search",
    "search",
    "tool_name",
    "usable_knowledge_bases",
]


def with_counts(bases: QuerySet[KnowledgeBase]) -> QuerySet[KnowledgeBase]:
    """`document_count` (every document) and `chunk_total` (chunks of indexed ones), as the serializer shows them."""
    return bases.annotate(
        document_count=Count("documents"),
        chunk_total=Coalesce(Sum("documents__chunk_count"), Value(0)),
    )


def knowledge_base_get(*, knowledge_base_id: str, counts: bool = True) -> KnowledgeBase:
    """The knowledge base, or 404 NOT_FOUND."""
    bases = KnowledgeBase.objects.filter(pk=knowledge_base_id)
    base = (with_counts(bases) if counts else bases).first()
    if base is None:
        raise NotFound(f"knowledge base {knowledge_base_id} not found")
    return base


def knowledge_bases_search(*, knowledge_base_ids: Iterable[str] | None) -> QuerySet[KnowledgeBase]:
    """Those named (unknown ids skipped), or all; by knowledgeBaseId (primary key)."""
    bases = KnowledgeBase.objects.order_by("knowledge_base_id")
    if knowledge_base_ids is not None:
        bases = bases.filter(pk__in=list(knowledge_base_ids))
    return with_counts(bases)


def existing_ids(knowledge_base_ids: Iterable[str]) -> set[str]:
    """Which of these ids name a knowledge base (agent writes check theirs)."""
    return set(KnowledgeBase.objects.filter(pk__in=set(knowledge_base_ids)).values_list("pk", flat=True))


def documents_of(*, knowledge_base_id: str) -> QuerySet[Document]:
    """The base's documents, newest first (index knowledge_doc_list); 404 when the base is absent."""
    base = knowledge_base_get(knowledge_base_id=knowledge_base_id, counts=False)
    return Document.objects.filter(knowledge_base=base).defer("content").order_by("-create_date", "-id")


def tool_name(knowledge_base_id: str) -> str:
    """The function a turn offers the model for a knowledge base (docs/api.md, "Knowledge bases")."""
    return f"search_{knowledge_base_id.replace('-', '_')}"


@dataclass(frozen=True, slots=True)
class KnowledgeBaseOffer:
    """What a turn needs of a knowledge base, copied out of the row."""

    knowledge_base: KnowledgeBase
    knowledge_base_id: str
    name: str
    description: str
    strategy: str
    top_k: int
    tool_name: str


def knowledge_bases_by_id(knowledge_base_ids: Sequence[str]) -> dict[str, KnowledgeBase]:
    """The rows of these knowledge bases (one query), by id; a turn keeps them in memory."""
    return KnowledgeBase.objects.in_bulk(list(knowledge_base_ids))


def usable_knowledge_bases(
    *, knowledge_base_ids: Sequence[str], user: Mapping[str, Any], bases: Mapping[str, KnowledgeBase] | None = None
) -> list[KnowledgeBaseOffer]:
    """The knowledge bases among `knowledge_base_ids` (an agent's `knowledgeBases[].id`, in its
    order) whose access rules let `user` (wire fields: userId, email, ..., customData) use them.
    `bases`: their rows, read already (knowledge_bases_by_id); one query otherwise. A base deleted
    meanwhile is skipped."""
    bases = bases if bases is not None else knowledge_bases_by_id(knowledge_base_ids)
    access = AccessRules(user)
    return [
        KnowledgeBaseOffer(base, base.pk, base.name, base.description, base.strategy, base.top_k, tool_name(base.pk))
        for base in (bases.get(knowledge_base_id) for knowledge_base_id in knowledge_base_ids)
        if base is not None and access.allow(base.access_rules, subject=f"knowledge base {base.pk}")
    ]


def search(*, knowledge_base: KnowledgeBase | KnowledgeBaseOffer | str, query: str, top_k: int | None = None) -> list[Result]:
    """The best chunks for `query`, best first: at most `top_k` (default: the base's topK).

    Raises NotFound for an unknown id and SearchError when the embedding model or the provider
    fails. Synchronous (database, and the embedding call when the mode needs one): an async
    caller runs it on a thread.
    """
    if isinstance(knowledge_base, KnowledgeBaseOffer):
        knowledge_base = knowledge_base.knowledge_base
    if isinstance(knowledge_base, str):
        knowledge_base = knowledge_base_get(knowledge_base_id=knowledge_base, counts=False)
    else:
        # The cached vectors are checked against the current index_version, not the caller's copy.
        knowledge_base = knowledge_base_get(knowledge_base_id=knowledge_base.pk, counts=False)
    return run(knowledge_base, query, top_k or knowledge_base.top_k)
