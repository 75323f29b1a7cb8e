"""Websocket routes. The status hub (/v1/hub) joins this list with the events work."""

from django.urls import URLPattern

websocket_urlpatterns: list[URLPattern] = []
