"""Export the configuration (docs/api.md, "Configuration as code"): every definition of every kind, in the
shape its Admin API's GET answers, without what the server manages; secrets as "********"."""

from __future__ import annotations

from typing import Any

from chat.config.kinds import KINDS


def config_export() -> dict[str, list[dict[str, Any]]]:
    """`{tools, knowledgeBases, agents, tagDefinitions, semanticDirectives, chatApps}`, each ordered by id."""
    return {kind.name: [kind.render(record) for record in kind.records()] for kind in KINDS}
