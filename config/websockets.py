"""Websocket routes: the status hub at /v1/hub (docs/hub.md), served by the same ASGI
server and address as the API."""

from django.urls import URLPattern, path

from webhooks.api.hub import HubConsumer
from webhooks.api.hub_auth import access_tokens_redact_in

websocket_urlpatterns: list[URLPattern] = [
    # Django's path() is typed for views; Channels routes ASGI applications with it.
    path("v1/hub", HubConsumer.as_asgi(), name="hub"),  # type: ignore[arg-type]
]

# Browsers send their hub credential in the query string, which uvicorn logs with each
# handshake; the filter takes the token out of those lines.
access_tokens_redact_in(["uvicorn.error", "uvicorn.access"])
