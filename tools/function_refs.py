"""The `functionArn` rule of `function` tools (docs/api.md, "Tools"): a valid resource name of an existing
function that carries the tag `agent-tool` = true.

Two kinds of names: `local:<name>` (the project's registry, tools.registry) and
`arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>]`, asked of AWS Lambda via boto3 with
the standard AWS credential chain.
"""

from __future__ import annotations

import re

from tools import registry

LAMBDA_ARN = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):lambda:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):function:(?P<name>[A-Za-z0-9_-]{1,64})"
    r"(?::(?P<qualifier>\$LATEST|[A-Za-z0-9_-]{1,128}))?"
)
# Validation runs inside an admin request: fail fast rather than hold it through botocore's retries.
_AWS_CONFIG = {"connect_timeout": 3, "read_timeout": 5, "retries": {"max_attempts": 2, "mode": "standard"}}


class FunctionRefError(ValueError):
    """The reference breaks the rule; the message says which part (without the field name)."""


def is_lambda_arn(function_arn: str) -> bool:
    return LAMBDA_ARN.fullmatch(function_arn) is not None


def check_local(function_arn: str) -> None:
    name = function_arn.removeprefix("local:")
    function = registry.get_function(name)
    if function is None:
        raise FunctionRefError(f"no local function named {name!r} is registered")
    if not function.is_agent_tool:
        raise FunctionRefError(f"local function {name!r} does not carry the tag {registry.AGENT_TOOL_TAG}=true")


def check_lambda(function_arn: str) -> None:
    match = LAMBDA_ARN.fullmatch(function_arn)
    if match is None:
        raise FunctionRefError("is not a valid AWS Lambda function ARN")
    # boto3 is imported here, where an ARN is verified: not when Django starts.
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        client = boto3.client("lambda", region_name=match["region"], config=Config(**_AWS_CONFIG))
        function = client.get_function(FunctionName=function_arn)
        tags = function.get("Tags")
        if tags is None:
            # GetFunction includes tags only for callers allowed lambda:ListTags; ask explicitly.
            unqualified = function_arn if match["qualifier"] is None else function_arn.rsplit(":", 1)[0]
            tags = client.list_tags(Resource=unqualified).get("Tags", {})
    except ClientError as exc:
        error = exc.response.get("Error", {})
        if error.get("Code") == "ResourceNotFoundException":
            raise FunctionRefError(f"AWS Lambda function {function_arn} does not exist") from None
        raise FunctionRefError(f"AWS Lambda function {function_arn} could not be verified ({error.get('Code', 'error')})") from None
    except BotoCoreError as exc:  # no credentials, no region, endpoint unreachable, timeouts
        raise FunctionRefError(f"AWS Lambda function {function_arn} could not be verified ({str(exc)[:200]})") from None
    if not registry.tag_is_true(tags):
        raise FunctionRefError(f"AWS Lambda function {function_arn} does not carry the tag {registry.AGENT_TOOL_TAG}=true")


def check_function_arn(function_arn: str, *, verify_remote: bool = True) -> None:
    """Raise FunctionRefError unless the name is valid and the function exists and is tagged.

    `verify_remote=False` checks only the form of an AWS ARN (used when an update keeps an ARN
    that was verified when it was stored, so an AWS outage does not block unrelated edits).
    """
    if function_arn.startswith("local:"):
        check_local(function_arn)
    elif is_lambda_arn(function_arn):
        if verify_remote:
            check_lambda(function_arn)
    else:
        raise FunctionRefError(
            "is not a valid function resource name: use local:<name> or arn:aws:lambda:<region>:<account>:function:<name>"
        )
