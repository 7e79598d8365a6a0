"""Knowledge bases in a turn (docs/api.md, "Knowledge bases"): searched by the model through a function, or with the
user's message before the model is called; every result the model receives is numbered, and the
answer's `citations` list them.

    strategy tool     `search_<id>(query)` offered to the model; its result is the numbered chunks
    strategy always   the user's message searched first; the numbered chunks follow it in the user turn

A lookup that fails is the function's error (tool) or is left out (always): it never fails the turn.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from chatplatform import llm, telemetry
from chatplatform.db import on_db_thread
from knowledge.selectors import KnowledgeBaseOffer, Result, search

QUERY_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What to look for, in a few words or a question"}},
    "required": ["query"],
    "additionalProperties": False,
}


@dataclass
class Citations:
    """Every knowledge base result a turn gave the model, numbered in the order given (`[1]`, `[2]`…)."""

    items: list[dict[str, Any]] = field(default_factory=list)
    searched: bool = False  # a lookup was made: the answer carries `citations`, even an empty list

    def number(self, knowledge_base_id: str, results: list[Result]) -> str:
        """The results as the model reads them, numbered on from the turn's earlier ones."""
        self.searched = True
        blocks = []
        for result in results:
            n = len(self.items) + 1
            self.items.append(
                {
                    "n": n,
                    "knowledgeBaseId": knowledge_base_id,
                    "documentId": result.document_id,
                    "title": result.title,
                    "sourceUrl": result.source_url,
                    "chunkId": result.chunk_id,
                    "text": result.text,
                }
            )
            blocks.append(f"[{n}] {result.title}\n{result.text}")
        return "\n\n".join(blocks) if blocks else "No results."


def _trace(knowledge_base_id: str, query: str, results: list[Result], started: float, error: str | None = None) -> dict[str, Any]:
    output: dict[str, Any] = {"knowledgeBaseId": knowledge_base_id, "query": query, "results": [r.as_wire() for r in results]}
    if error is not None:
        output["error"] = error
    return {"stage": "knowledge", "durationMs": round((time.perf_counter() - started) * 1000), "knowledgeBaseLookupOutput": output}


async def _lookup(offer: KnowledgeBaseOffer, query: str) -> list[Result]:
    with telemetry.span(f"knowledge.search {offer.knowledge_base_id}", {"chat.knowledge_base_id": offer.knowledge_base_id}) as span:
        telemetry.content(span, "chat.knowledge_base.query", query)
        results = await on_db_thread(search)(knowledge_base=offer, query=query)
        telemetry.set_attributes(span, {"chat.knowledge_base.results": len(results)})
        return results


def search_tools(offers: list[KnowledgeBaseOffer], citations: Citations, record: Any) -> list[llm.ToolSpec]:
    """A `search_<id>` function for each knowledge base of strategy `tool`; `record(trace)` keeps each lookup's trace."""

    def spec(offer: KnowledgeBaseOffer) -> llm.ToolSpec:
        async def call(arguments: dict[str, Any]) -> str:
            query, started = str(arguments.get("query") or "").strip(), time.perf_counter()
            if not query:
                raise ValueError("query: give the words to look for")
            try:
                results = await _lookup(offer, query)
            except Exception as exc:
                record(_trace(offer.knowledge_base_id, query, [], started, llm.describe(exc)))
                raise
            record(_trace(offer.knowledge_base_id, query, results, started))
            return citations.number(offer.knowledge_base_id, results)

        return llm.ToolSpec(
            name=offer.tool_name, description=offer.description or offer.name, parameters_json_schema=QUERY_SCHEMA, call=call
        )

    return [spec(offer) for offer in offers if offer.strategy == "tool"]


async def with_results(offers: list[KnowledgeBaseOffer], message: str, citations: Citations, record: Any) -> str:
    """The user's message as the model gets it: with the results of the `always` knowledge bases after it."""
    found = []
    for offer in (offer for offer in offers if offer.strategy == "always"):
        started = time.perf_counter()
        try:
            results = await _lookup(offer, message)
        except Exception as exc:  # left out: the model answers without it
            record(_trace(offer.knowledge_base_id, message, [], started, llm.describe(exc)))
            continue
        record(_trace(offer.knowledge_base_id, message, results, started))
        if results:
            found.append(f'<knowledge-base name="{offer.name}">\n{citations.number(offer.knowledge_base_id, results)}\n</knowledge-base>')
    if not found:
        return message
    note = "Search results that may help; cite them by their numbers, like [1]:"
    return f"{message}\n\n{note}\n" + "\n".join(found)
