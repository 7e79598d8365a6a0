"""The platform's URLs plus `/bench/bare-user`: the same JSON as `GET /api/chat/user`, with no
authentication, rate limit, envelope handling or DRF in between (the baseline of api_overhead)."""

import json
import os

from django.http import HttpRequest, HttpResponse
from django.urls import path

from chatplatform.urls import urlpatterns as platform_urlpatterns

_BODY = json.dumps(json.loads(os.environ.get("BENCH_BARE_BODY", "{}"))).encode()


def bare_user(request: HttpRequest) -> HttpResponse:
    return HttpResponse(_BODY, content_type="application/json")


urlpatterns = [path("bench/bare-user", bare_user), *platform_urlpatterns]
