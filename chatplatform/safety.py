"""A process with DEBUG off refuses to start on a signing key anyone can read (docs/deploy.md).

The development key is in this repository: sessions, CSRF tokens and HS256 bearer tokens signed
with it can be forged by anyone (an admin's token included). settings.py computes UNSAFE_SETTING
once, from the environment as it was read; every way in refuses on it with one line naming the
variable: manage.py (every command but `check`, which reports it as an error beside Django's own
deploy checks), chatplatform.server and chatplatform.asgi.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

# Django's deploy check (security.W009) flags the `django-insecure-` prefix too.
DEV_SECRET_KEY = "django-insecure-development-key-of-make-run-never-use-it-in-production-0123456789"


def unsafe_setting(*, debug: bool, secret_key: str, jwt_signing_key: str) -> str | None:
    """Why these settings must not serve, in one line naming the variable; None when they may."""
    if debug:
        return None
    if secret_key == DEV_SECRET_KEY:
        return "SECRET_KEY is not set and DEBUG is off: set SECRET_KEY to a long random string (docs/deploy.md)"
    # HS256 bearer tokens are accepted with this key whatever else verifies tokens.
    if jwt_signing_key == DEV_SECRET_KEY:
        return "JWT_SIGNING_KEY is the development key and DEBUG is off: set it to a long random string, or unset it (docs/deploy.md)"
    return None


def refuse_unsafe_settings() -> None:
    """Raise ImproperlyConfigured when the settings must not serve."""
    from django.conf import settings

    if settings.UNSAFE_SETTING:
        raise ImproperlyConfigured(settings.UNSAFE_SETTING)
