"""Semantic directives (docs/api.md, "Semantic directives"): scoped instruction snippets that a selection
step may inject into an agent's prompt, and the record of each infrastructure-as-code batch."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

# One part of a scope (an id or an entity value); a scope holds at most two parts.
SCOPE_PART_MAX_LENGTH = 200
# "agent#" + part + "#entity#" + part, the longest of the five forms.
SCOPE_MAX_LENGTH = len("agent#") + SCOPE_PART_MAX_LENGTH + len("#entity#") + SCOPE_PART_MAX_LENGTH
DIRECTIVE_ID_MAX_LENGTH = 128
GROUP_ID_MAX_LENGTH = 128


class ScopeType(models.TextChoices):
    CHATAPP = "chatapp", "Chat app"
    AGENT = "agent", "Agent"
    TOOL = "tool", "Tool"
    ENTITY = "entity", "Entity"
    AGENT_ENTITY = "agent-entity", "Agent and entity"


class SemanticDirective(models.Model):
    """An instruction snippet for one scope, with the description the selection step reads.

    `scope` is always built by `directives.scopes` from `scope_type` and `scope_value`, never typed
    freely, so the three columns agree. For `agent-entity` the stored `scope_value` is
    `<agentId>#<entity>`: parts may not contain `#`, so the split back into the wire form
    `{agent, entity}` is unambiguous. Stamps are set by `directives.services` only.
    """

    scope = models.CharField(max_length=SCOPE_MAX_LENGTH)
    scope_type = models.CharField("scopeType", max_length=12, choices=ScopeType.choices)
    scope_value = models.CharField("scopeValue", max_length=2 * SCOPE_PART_MAX_LENGTH + 1)
    directive_id = models.CharField("id", max_length=DIRECTIVE_ID_MAX_LENGTH)
    # Set only by an IaC batch (docs/api.md, "Infrastructure-as-code batches"); the batch owns every directive carrying its group.
    group_id = models.CharField("groupId", max_length=GROUP_ID_MAX_LENGTH, null=True, blank=True)
    # Length rules live in directives.serializers (one place for the API and the admin).
    description = models.TextField()
    instructions = models.TextField()
    create_date = models.DateTimeField(default=timezone.now, editable=False)
    last_update = models.DateTimeField(default=timezone.now, editable=False)
    created_by = models.CharField(max_length=255, editable=False)
    last_updated_by = models.CharField(max_length=255, editable=False)

    class Meta:
        verbose_name = "semantic directive"
        ordering = ["scope", "directive_id"]
        constraints = [
            # (scope, id) is unique; its index also serves upsert and delete by (scope, id).
            models.UniqueConstraint(fields=["scope", "directive_id"], name="directive_scope_id_unique"),
        ]
        indexes = [
            # search by `scopes` (scope IN ... ORDER BY create_date) and directives_candidates
            models.Index(fields=["scope", "create_date"], name="directive_scope_created"),
            # search by `createdBy`, ordered by creation date
            models.Index(fields=["created_by", "create_date"], name="directive_creator_created"),
            # search by `directiveIds` across scopes
            models.Index(fields=["directive_id"], name="directive_id"),
            # an IaC batch finds the members of its group
            models.Index(fields=["group_id"], name="directive_group"),
            # search without a selector: all directives in creation order
            models.Index(fields=["create_date"], name="directive_created"),
        ]

    def __str__(self) -> str:
        return f"{self.scope} {self.directive_id}"

    @property
    def scope_value_wire(self) -> str | dict[str, str]:
        """scopeValue as the API shows it: a string, or `{agent, entity}` for agent-entity."""
        if self.scope_type == ScopeType.AGENT_ENTITY:
            agent, _, entity = self.scope_value.partition("#")
            return {"agent": agent, "entity": entity}
        return self.scope_value


class DirectiveDeployment(models.Model):
    """One applied IaC batch (docs/api.md, "Infrastructure-as-code batches"): its `timestamp` is recorded here, with what it changed."""

    group_id = models.CharField("groupId", max_length=GROUP_ID_MAX_LENGTH)
    stage = models.CharField(max_length=100, blank=True, default="")
    timestamp = models.CharField(max_length=100, blank=True, default="")
    user_id = models.CharField("userId", max_length=255)
    applied = models.PositiveIntegerField(default=0)
    deleted = models.PositiveIntegerField(default=0)
    deployed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "directive deployment"
        ordering = ["-deployed_at"]
        # the admin lists a group's deployments, newest first
        indexes = [models.Index(fields=["group_id", "deployed_at"], name="directive_deploy_group")]

    def __str__(self) -> str:
        return f"{self.group_id} at {self.deployed_at:%Y-%m-%d %H:%M:%S}"
