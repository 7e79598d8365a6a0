"""The ASGI application: HTTP through Django (bearer-token converse in front of it), WebSocket through Channels."""

from __future__ import annotations

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatplatform.settings")
django_asgi_app = get_asgi_application()  # before importing anything that touches models

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path  # noqa: E402

from chat.consumers import ConverseConsumer  # noqa: E402
from chat.endpoint import ConverseEndpoint  # noqa: E402
from chatplatform.api.websocket import OriginCheckedWebSocket, WebSocketAuthMiddleware  # noqa: E402

websocket_urlpatterns = [path("ws/chat/converse", ConverseConsumer.as_asgi())]

application = ProtocolTypeRouter(
    {
        "http": ConverseEndpoint(django_asgi_app),
        "websocket": OriginCheckedWebSocket(WebSocketAuthMiddleware(URLRouter(websocket_urlpatterns))),
    }
)

# Everything startup loaded (Django, the apps, their modules) lives as long as the process: out of
# the cyclic garbage collector's sight, a full collection walks the objects a request made, not
# those 250,000 too. Measured with bench/converse.py at 200 streams: full collections had paused
# the process for 160 ms each, 0.6 ms of CPU per turn in all (docs/decisions.md).
gc.collect()
gc.freeze()
# The youngest generation is collected after 10,000 new objects, not Python's 700: in a burst of
# turns most objects are still in use when a collection comes, so each one walks them, promotes
# them and walks them again in the older generations; at 700 that ended in full collections that
# paused the process 27-76 ms in the middle of a burst (docs/decisions.md).
gc.set_threshold(10_000, 10, 10)
