"""Bearer tokens (docs/api.md, "Authentication"): verifying them, remembering what was verified, signing them.

Who a token's claims name is the chat app's business (`chat.authentication` maps them to a ChatUser).
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any

import jwt
from django.conf import settings
from rest_framework import exceptions

logger = logging.getLogger("chatplatform.auth")

# Asymmetric algorithms are only ever verified with keys from JWT_JWKS_URL, HS256 only with the
# shared key: a token cannot choose its own verification key (the "alg confusion" attack).
_JWKS_ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"]
_LEEWAY = 30  # seconds of clock skew tolerated on exp/iat/nbf
TOKEN_EXPIRED = "token has expired"


@functools.cache
def _jwks_client(url: str) -> jwt.PyJWKClient:
    return jwt.PyJWKClient(url, cache_keys=True, lifespan=300, timeout=5)


# Verified claims by exact token string. A frontend sends the same token on every request until
# it expires; re-verifying it each time costs more than the rest of a small request. Expiry is
# checked again on every hit, and a changed setting (key, issuer, audience) misses the cache.
_verified: dict[tuple[str, Any, Any, Any, Any], dict[str, Any]] = {}
_VERIFIED_MAX = 10_000


def decode_token(token: str) -> dict[str, Any]:
    """Verify a bearer token and return its claims; raise AuthenticationFailed otherwise."""
    claims = _remembered(token)
    if claims is None:
        claims = _decode(token)
        if len(_verified) >= _VERIFIED_MAX:
            _verified.clear()
        _verified[_verified_key(token)] = claims
    return claims


def verified_subject(authorization: str) -> str | None:
    """The subject of an `Authorization: Bearer` token verified before and not expired: who sends
    a request, known without any read. None otherwise (the token is then checked as usual)."""
    scheme, _, token = authorization.partition(" ")
    claims = _remembered(token.strip()) if scheme.lower() == "bearer" else None
    subject = claims.get("sub") if claims is not None else None
    return subject if isinstance(subject, str) and subject.strip() else None


def _verified_key(token: str) -> tuple[str, Any, Any, Any, Any]:
    return (token, settings.JWT_SIGNING_KEY, settings.JWT_JWKS_URL, settings.JWT_ISSUER, settings.JWT_AUDIENCE)


def _remembered(token: str) -> dict[str, Any] | None:
    """The claims of `token` as verified before, while it has not expired."""
    key = _verified_key(token)
    claims = _verified.get(key)
    if claims is None:
        return None
    exp = claims.get("exp")
    if exp is None or time.time() < exp + _LEEWAY:
        return claims
    _verified.pop(key, None)
    return None


def _decode(token: str) -> dict[str, Any]:
    try:
        header = jwt.get_unverified_header(token)
        algorithm = header.get("alg")
        if algorithm == "HS256":
            key: Any = settings.JWT_SIGNING_KEY
            algorithms = ["HS256"]
        elif algorithm in _JWKS_ALGORITHMS and settings.JWT_JWKS_URL:
            key = _jwks_client(settings.JWT_JWKS_URL).get_signing_key_from_jwt(token).key
            algorithms = [algorithm]
        else:
            raise exceptions.AuthenticationFailed(f"token algorithm {algorithm!r} is not accepted")
        return jwt.decode(
            token,
            key=key,
            algorithms=algorithms,
            issuer=settings.JWT_ISSUER,
            audience=settings.JWT_AUDIENCE,
            options={"require": ["sub"], "verify_aud": settings.JWT_AUDIENCE is not None},
            leeway=_LEEWAY,
        )
    except exceptions.AuthenticationFailed:
        raise
    except jwt.ExpiredSignatureError:
        raise exceptions.AuthenticationFailed(TOKEN_EXPIRED) from None
    except jwt.PyJWKClientError as exc:
        logger.warning("JWKS lookup failed: %s", exc)
        raise exceptions.AuthenticationFailed("token signing key could not be found") from None
    except jwt.InvalidTokenError as exc:
        raise exceptions.AuthenticationFailed(f"invalid token: {exc}") from None


def sign_token(claims: dict[str, Any]) -> str:
    """Sign claims with the shared HS256 key (used by `manage.py issue_token`)."""
    if settings.JWT_ISSUER:
        claims.setdefault("iss", settings.JWT_ISSUER)
    if settings.JWT_AUDIENCE:
        claims.setdefault("aud", settings.JWT_AUDIENCE)
    return jwt.encode(claims, settings.JWT_SIGNING_KEY, algorithm="HS256")
