"""The ASGI application: HTTP through Django (the doors by its fast path), WebSocket through Channels."""

from __future__ import annotations

import gc
import os

from django.core.asgi import get_asgi_application

from chatplatform.safety import refuse_unsafe_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatplatform.settings")
django_asgi_app = get_asgi_application()  # before importing anything that touches models
refuse_unsafe_settings()  # whatever ASGI server loads this (docs/deploy.md)

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import get_resolver, path  # noqa: E402

from chat import turn  # noqa: E402
from chat.doors.websocket import ConverseConsumer  # noqa: E402
from chat.urls import door_urlpatterns  # noqa: E402
from chat.users.authentication import WebSocketAuthMiddleware  # noqa: E402
from chatplatform import telemetry  # noqa: E402
from chatplatform.api.websocket import OriginCheckedWebSocket  # noqa: E402
from chatplatform.fastpath import FastPath  # noqa: E402
from chatplatform.metrics import RequestMetrics  # noqa: E402

telemetry.setup()  # only with an exporter configured (docs/deploy.md, "Traces")
websocket_urlpatterns = [path("ws/chat/converse", ConverseConsumer.as_asgi())]

application = telemetry.incoming(
    ProtocolTypeRouter(
        {
            "http": RequestMetrics(FastPath(django_asgi_app)),
            "websocket": OriginCheckedWebSocket(WebSocketAuthMiddleware(URLRouter(websocket_urlpatterns))),
        }
    )
)

# A server process loads what its first requests would, before it serves: the URLconf with every
# view (the doors' SDKs too), the prompt compiler, the model providers (docs/decisions.md, "Warm start").
if settings.CHAT_WARM_START:
    for door in door_urlpatterns:
        getattr(door.callback, "load", lambda: None)()
    get_resolver().url_patterns  # noqa: B018
    turn.warm()

# What startup loaded lives as long as the process: out of the cyclic garbage collector's sight, a
# full collection walks what requests made, not those ~250,000 objects too. The youngest generation
# is collected after 10,000 new objects, not 700: in a burst of turns most objects are still in use
# when a collection comes (docs/decisions.md, "The converse path's speed").
gc.collect()
gc.freeze()
gc.set_threshold(10_000, 10, 10)
