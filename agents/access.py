"""Who may talk to an agent (docs/api.md, "Agents"): its access rules, then its rollout policy.

Plain arguments only: the user arrives as its wire fields (userId, email, ..., customData), so
this app knows nothing of chat users. The CEL variables are documented in docs/access-rules.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chatplatform.access import AccessRules


@dataclass(frozen=True, slots=True)
class AccessDecision:
    allowed: bool
    reason: str = ""  # why not, for the 403 message; empty when allowed


def _listed(values: Any) -> list[str] | None:
    """A rollout list that is set: a non-empty list (an empty or absent one restricts nobody)."""
    if isinstance(values, list) and values:
        return [str(value) for value in values]
    return None


def rollout_allows(policy: Mapping[str, Any] | None, custom_data: Mapping[str, Any]) -> AccessDecision:
    """`betaAccounts`: only users whose customData.accountId is listed; `regionRestrictions`: only
    users whose customData.region is listed. Both must hold when both are set."""
    policy = policy or {}
    accounts = _listed(policy.get("betaAccounts"))
    if accounts is not None and str(custom_data.get("accountId", "")) not in accounts:
        return AccessDecision(False, "insufficient permissions: this agent is in beta for other accounts")
    regions = _listed(policy.get("regionRestrictions"))
    if regions is not None and str(custom_data.get("region", "")) not in regions:
        return AccessDecision(False, "insufficient permissions: this agent is not available in your region")
    return AccessDecision(True)


def agent_access(
    *, access_rules: list[dict[str, Any]] | None, rollout_policy: Mapping[str, Any] | None, user: Mapping[str, Any]
) -> AccessDecision:
    """The access rules (lowest order first, first matching decides, none matching denies, absent
    opens; a condition failing at run time does not hold, one running past its budget denies),
    then the rollout policy."""
    access = AccessRules(user)
    if not access.allow(access_rules, subject="an agent"):
        if access.over_budget:
            return AccessDecision(False, f"insufficient permissions: the agent's {access.over_budget}")
        return AccessDecision(False, "insufficient permissions: the agent's access rules do not allow you")
    return rollout_allows(rollout_policy, user.get("customData") or {})
