"""What a chat user sees of an answer's traces (docs/api.md, "Events"): every stage, its timing and
its outcome, never why a stage failed. A tool's error names the internal server it called and
quotes its reply; a model's, the provider's. Operators read the reasons in the Django admin and
the Admin API, which serve the traces as stored."""

from __future__ import annotations

from typing import Any

FAILED = "failed: the reason is kept for the operators"
TIMED_OUT = "did not answer in time"


def trace_for_users(trace: dict[str, Any]) -> dict[str, Any]:
    shown = dict(trace)
    if shown.get("error"):
        shown["error"] = TIMED_OUT if shown.get("outcome") == "timeout" else FAILED
    lookup = shown.get("knowledgeBaseLookupOutput")
    if isinstance(lookup, dict) and lookup.get("error"):  # an embeddings or retrieval service's failure
        shown["knowledgeBaseLookupOutput"] = {**lookup, "error": FAILED}
    invocation = shown.get("agentCollaboratorInvocationOutput")
    if isinstance(invocation, dict) and isinstance(invocation.get("traces"), list):  # a collaborator's own stages
        shown["agentCollaboratorInvocationOutput"] = {**invocation, "traces": traces_for_users(invocation["traces"])}
    return shown


def traces_for_users(traces: list[Any]) -> list[Any]:
    return [trace_for_users(trace) if isinstance(trace, dict) else trace for trace in traces]
