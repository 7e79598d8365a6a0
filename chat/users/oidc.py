"""Sign-in through an OpenID Connect provider (mozilla-django-oidc), when OIDC_* variables are set.

The provider's claims name and describe the user exactly as a bearer token's do (docs/api.md, "Authentication"):
`sub` is the userId, and `email`, `given_name`, `family_name`, `user_type`, `custom_data`,
`roles` refresh the ChatUser through `ChatUserManager.sync_from_claims`, the one mapping. The
library verifies the id token's signature and nonce; it leaves the issuer and audience to us.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest
from django.shortcuts import resolve_url
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from chat.users.models import ChatUser


class ClaimsBackend(OIDCAuthenticationBackend):
    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The id token's claims, completed by the userinfo endpoint when one is configured; the
        userinfo answer must be about the same subject (OpenID Connect Core 5.3.2)."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            info = super().get_userinfo(access_token, id_token, payload)
            if info.get("sub") != payload.get("sub"):
                raise SuspiciousOperation("the userinfo answer is about another subject than the id token")
            claims.update(info)
        return claims

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject.strip():
            return False
        issuer = getattr(settings, "OIDC_OP_ISSUER", None)
        if issuer and claims.get("iss") != issuer:
            return False
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        return self.OIDC_RP_CLIENT_ID in audiences

    def get_user(self, user_id: Any) -> ChatUser | None:
        """The signed-in user of a session, while active: the library's reads any (ModelBackend's does not)."""
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> ChatUser | None:
        claims = self.get_userinfo(access_token, id_token, payload)
        if not self.verify_claims(claims):
            raise SuspiciousOperation("the id token is not for this client, from this issuer, or about a subject")
        user = ChatUser.objects.sync_from_claims(claims)
        return user if user.is_active else None


def provider_logout_url(request: HttpRequest) -> str:
    """Where signing out sends a person who signed in through the provider: its end_session_endpoint
    (OpenID Connect RP-Initiated Logout 1.0), which comes back to the sign-in page. A person who
    signed in with a password has no provider session to end."""
    back = request.build_absolute_uri(resolve_url(settings.LOGOUT_REDIRECT_URL))
    id_token = request.session.get("oidc_id_token")
    if not id_token:
        return back
    query = {"id_token_hint": id_token, "post_logout_redirect_uri": back, "client_id": settings.OIDC_RP_CLIENT_ID}
    return f"{settings.OIDC_OP_LOGOUT_ENDPOINT}?{urlencode(query)}"
