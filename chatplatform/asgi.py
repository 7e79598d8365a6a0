"""The ASGI application: HTTP through Django (bearer-token converse in front of it), WebSocket through Channels."""

from __future__ import annotations

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
