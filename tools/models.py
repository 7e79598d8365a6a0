"""Tool definitions (docs/api.md, "Tools"): a callable an agent may offer its model."""

from __future__ import annotations

from django.db import models


class ExecutionType(models.TextChoices):
    FUNCTION = "function", "Serverless function"
    MCP = "mcp", "MCP server"
    INLINE = "inline", "Inline JavaScript"


class LifecycleStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    DEPRECATED = "deprecated", "Deprecated"
    RETIRED = "retired", "Retired"


class TestType(models.TextChoices):
    MOCK = "mock", "Mock (deleted after one day)"


class ToolDefinition(models.Model):
    """One version of a tool: `toolId` is `<name>@<version>`.

    `auth` may hold an OAuth client secret and a cached token: stored, never returned by any
    endpoint or shown in the admin list (serializers redact it).
    """

    tool_id = models.CharField("toolId", max_length=200, primary_key=True)
    execution_type = models.CharField(max_length=10, choices=ExecutionType.choices)
    name = models.CharField(max_length=100)
    display_name = models.CharField(max_length=200)
    description = models.CharField(max_length=499)
    supported_agent_frameworks = models.JSONField(default=list)
    version = models.PositiveIntegerField(default=1)
    execution_timeout = models.FloatField(default=30)
    function_schema = models.JSONField(default=list, blank=True)
    tags = models.JSONField(default=dict, blank=True)
    lifecycle_status = models.CharField(max_length=12, choices=LifecycleStatus.choices, default=LifecycleStatus.ACTIVE)
    deprecation_date = models.DateTimeField(null=True, blank=True)
    migration_path = models.TextField(blank=True, default="")
    access_rules = models.JSONField(null=True, blank=True)
    # {required: true | "<CEL condition>", timeoutSeconds?, approverRoles?}: a call waits for a person (docs/api.md, "Approvals").
    approval = models.JSONField(null=True, blank=True)
    test_type = models.CharField(max_length=10, choices=TestType.choices, null=True, blank=True)
    # Variant fields: `function` → function_arn; `mcp` → url, auth; `inline` → code.
    function_arn = models.CharField(max_length=500, blank=True, default="")
    # A CharField, not URLField: the http(s) rule lives in tools.validation with the others.
    url = models.CharField(max_length=2000, blank=True, default="")
    auth = models.JSONField(null=True, blank=True)
    code = models.TextField(blank=True, default="")
    created_by = models.CharField(max_length=255)
    last_modified_by = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(fields=["test_type", "created_at"], name="tool_mock_cleanup"),  # cleanup_mock_records
        ]

    def __str__(self) -> str:
        return self.tool_id
