"""Error codes (docs/api.md, "Envelope") and the exceptions views raise.

Views and services raise these; `chatplatform.api.exceptions.handle` renders every one of them
(and every DRF or Django exception) as the envelope `{success: false, error, code?}`.
"""

from __future__ import annotations

from rest_framework import exceptions, status


class Code:
    INVALID_AGENT_ID = "INVALID_AGENT_ID"
    INVALID_CHAT_APP_ID = "INVALID_CHAT_APP_ID"
    INVALID_SESSION_ID = "INVALID_SESSION_ID"
    INSUFFICIENT_PERMISSIONS = "INSUFFICIENT_PERMISSIONS"
    RATE_LIMIT_EXCEEDED = "RATE_LIMIT_EXCEEDED"
    INVALID_REQUEST = "INVALID_REQUEST"
    NOT_FOUND = "NOT_FOUND"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    # A dependency (the database, the cache, the model provider's connection) is unreachable, or
    # the server is shutting down: the request may succeed if sent again later (docs/faults.md).
    SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"
    # Beyond the basic set; given so that every error carries a code (docs/decisions.md).
    AUTHENTICATION_REQUIRED = "AUTHENTICATION_REQUIRED"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
    NOT_ACCEPTABLE = "NOT_ACCEPTABLE"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    # 409: a second message while a turn of the session runs, under concurrentTurns `reject`;
    # a decision on an approval already decided (docs/api.md, "Resume, stop and approvals").
    SESSION_BUSY = "SESSION_BUSY"
    ALREADY_DECIDED = "ALREADY_DECIDED"
    # 429: the user's turns used up a usageLimits limit (docs/api.md, "Usage limits").
    USAGE_LIMIT_EXCEEDED = "USAGE_LIMIT_EXCEEDED"


# The code of each status that has one of its own (docs/api.md, "Envelope").
CODES_BY_STATUS = {
    400: Code.INVALID_REQUEST,
    401: Code.AUTHENTICATION_REQUIRED,
    403: Code.INSUFFICIENT_PERMISSIONS,
    404: Code.NOT_FOUND,
    405: Code.METHOD_NOT_ALLOWED,
    406: Code.NOT_ACCEPTABLE,
    413: Code.PAYLOAD_TOO_LARGE,
    415: Code.UNSUPPORTED_MEDIA_TYPE,
    429: Code.RATE_LIMIT_EXCEEDED,
}


class ApiError(exceptions.APIException):
    """An error with an HTTP status, a message for people and a stable code for programs. Given a
    status and no code, the status's own code (a 413 is PAYLOAD_TOO_LARGE wherever it is raised)."""

    status_code: int = status.HTTP_400_BAD_REQUEST
    code = Code.INVALID_REQUEST

    def __init__(self, message: str, *, code: str | None = None, status_code: int | None = None) -> None:
        super().__init__(detail=message)
        self.message = message
        if status_code is not None:
            self.status_code = status_code
            self.code = CODES_BY_STATUS.get(status_code, self.code)
        if code is not None:
            self.code = code


class InvalidRequest(ApiError):
    """400: the request names a field that breaks a rule. The message names both."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


class NotFound(ApiError):
    status_code = status.HTTP_404_NOT_FOUND
    code = Code.NOT_FOUND

    def __init__(self, message: str, *, code: str = Code.NOT_FOUND) -> None:
        super().__init__(message, code=code)


class PermissionDenied(ApiError):
    status_code = status.HTTP_403_FORBIDDEN
    code = Code.INSUFFICIENT_PERMISSIONS

    def __init__(self, message: str = "insufficient permissions") -> None:
        super().__init__(message)


class Conflict(ApiError):
    """409: a sound request that the current state of its record refuses."""

    status_code = status.HTTP_409_CONFLICT

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message, code=code)


class RateLimited(ApiError):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    code = Code.RATE_LIMIT_EXCEEDED

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"rate limit exceeded: retry after {retry_after} seconds")
        self.retry_after = retry_after
