"""System checks: Django's deployment checks run against this project's middleware, and settings
unsafe to serve with (chatplatform.safety) reported as an error.

Django finds its security, CSRF and clickjacking middleware by their dotted names;
`chatplatform.middleware` subclasses them (to run them on the event loop). Without this,
`manage.py check --deploy` would report them missing (W001-W003, silenced in settings) and skip
every check that depends on them (HSTS, SSL redirect, nosniff, X-Frame-Options, secure CSRF cookie).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register
from django.core.checks.security import base, csrf

DJANGO_NAMES = {
    "chatplatform.middleware.Security": "django.middleware.security.SecurityMiddleware",
    "chatplatform.middleware.Csrf": "django.middleware.csrf.CsrfViewMiddleware",
    "chatplatform.middleware.XFrameOptions": "django.middleware.clickjacking.XFrameOptionsMiddleware",
}

_CHECKS_BY_MIDDLEWARE_NAME = (
    base.check_security_middleware,
    base.check_xframe_options_middleware,
    base.check_sts,
    base.check_sts_include_subdomains,
    base.check_sts_preload,
    base.check_content_type_nosniff,
    base.check_ssl_redirect,
    base.check_xframe_deny,
    base.check_referrer_policy,
    base.check_cross_origin_opener_policy,
    csrf.check_csrf_middleware,
    csrf.check_csrf_cookie_secure,
)


@register(Tags.security, deploy=True)
def django_security_checks(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    from django.test.utils import override_settings  # django.test is heavy: when deploy checks run, not at start-up

    with override_settings(MIDDLEWARE=[DJANGO_NAMES.get(name, name) for name in settings.MIDDLEWARE]):
        return [message for check in _CHECKS_BY_MIDDLEWARE_NAME for message in check(app_configs)]


@register(Tags.security)
def unsafe_settings(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """What stops every other command and the server (chatplatform.safety), as `check` reports it."""
    return [Error(settings.UNSAFE_SETTING, id="chatplatform.E001")] if settings.UNSAFE_SETTING else []
