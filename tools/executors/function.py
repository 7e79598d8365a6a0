"""`function` tools: `functionArn` names a `local:` registry function or an AWS Lambda function.

Both receive the event of docs/api.md "Tools in a turn". A local function is called as `func(event, params)`:
awaited when it is a coroutine function, otherwise run on the tool thread pool. A Lambda function
is invoked synchronously (`RequestResponse`) with the event as its JSON payload; a function error
(`FunctionError` in the response) is the tool's error. Blocking work runs on a dedicated pool, not
the event loop's default executor, so tools that hang cannot starve the loop's own uses of it
(DNS resolution). A thread cannot be killed: a sync local function that never returns keeps its
worker, though the call itself ends at its timeout.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from tools import registry
from tools.executors import ToolError, timed_out
from tools.function_refs import LAMBDA_ARN

_pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="function-tool")

# boto3 sessions are not thread-safe, clients are: one session builds them under a lock, and a
# client is kept per region and timeout (its read timeout must cover the tool's executionTimeout).
_session_lock = threading.Lock()
_session: boto3.session.Session | None = None
_clients: dict[tuple[str, int], Any] = {}


def _lambda_client(region: str, timeout: float) -> Any:
    global _session
    key = (region, math.ceil(timeout))
    client = _clients.get(key)
    if client is not None:
        return client
    with _session_lock:
        client = _clients.get(key)
        if client is None:
            if _session is None:
                _session = boto3.session.Session()
            config = Config(
                connect_timeout=min(10, key[1]),
                read_timeout=key[1] + 5,
                # One attempt: a retried invocation would run a function with side effects twice.
                retries={"total_max_attempts": 1, "mode": "standard"},
            )
            client = _clients[key] = _session.client("lambda", region_name=region, config=config)
    return client


def _invoke_lambda(function_arn: str, payload: bytes, timeout: float) -> Any:
    match = LAMBDA_ARN.fullmatch(function_arn)
    if match is None:
        raise ToolError(f"{function_arn} is not a valid AWS Lambda function ARN")
    client = _lambda_client(match["region"], timeout)
    try:
        response = client.invoke(FunctionName=function_arn, InvocationType="RequestResponse", Payload=payload)
        body = response["Payload"].read()
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise ToolError(f"AWS Lambda refused the invocation: {error.get('Code', 'error')}: {error.get('Message', '')}".rstrip(": "))
    except BotoCoreError as exc:  # credentials, endpoint, read timeout
        raise ToolError(f"AWS Lambda could not be invoked: {exc}")
    try:
        result = json.loads(body) if body else None
    except ValueError:
        result = body.decode(errors="replace")
    if response.get("FunctionError"):
        if isinstance(result, dict) and ("errorMessage" in result or "errorType" in result):
            kind = result.get("errorType") or "Error"
            raise ToolError(f"{kind}: {result.get('errorMessage', '')}".rstrip(": "))
        raise ToolError(f"the Lambda function failed ({response['FunctionError']})")
    return result


async def call_function(function_arn: str, event: dict[str, Any], *, timeout: float) -> Any:
    """The result of the function named `function_arn` for `event`; ToolError when it fails,
    is unknown, or does not answer within `timeout` seconds."""
    loop = asyncio.get_running_loop()
    if function_arn.startswith("local:"):
        name = function_arn.removeprefix("local:")
        function = registry.get_function(name)
        if function is None:
            raise ToolError(f"no local function named {name!r} is registered in this process")
        if not function.is_agent_tool:
            raise ToolError(f"local function {name!r} does not carry the tag {registry.AGENT_TOOL_TAG}=true")
        params = event.get("parameters") or {}
        try:
            async with asyncio.timeout(timeout):
                if function.is_async:
                    return await function.func(event, params)
                return await loop.run_in_executor(_pool, function.func, event, params)
        except TimeoutError:
            raise timed_out(timeout) from None
        except ToolError:
            raise
        except Exception as exc:  # the function's own failure is the tool's result (ValueError: bad argument...)
            raise ToolError(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from exc
    payload = json.dumps(event).encode()
    try:
        async with asyncio.timeout(timeout):
            return await loop.run_in_executor(_pool, _invoke_lambda, function_arn, payload, timeout)
    except TimeoutError:
        raise timed_out(timeout) from None
