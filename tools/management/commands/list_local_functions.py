"""`python manage.py list_local_functions [--json]`: the `local:<name>` functions a tool may name."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from tools.registry import AGENT_TOOL_TAG, registered_functions


class Command(BaseCommand):
    help = (
        "List the local Python functions registered for `function` tools (functionArn local:<name>). "
        f"Only those tagged {AGENT_TOOL_TAG}=true may back a tool."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print JSON: functionArn, tags and the FunctionDefinition of each.")

    def handle(self, *args: Any, **options: Any) -> None:
        functions = registered_functions()
        if options["json"]:
            rows = [
                {"functionArn": f.function_arn, "tags": dict(f.tags), "agentTool": f.is_agent_tool, "function": f.function_definition()}
                for f in functions
            ]
            self.stdout.write(json.dumps(rows, indent=2))
            return
        for function in functions:
            usable = "agent-tool" if function.is_agent_tool else f"NOT usable (no {AGENT_TOOL_TAG}=true tag)"
            self.stdout.write(f"{function.function_arn:<32} {usable:<12} {function.description}")
