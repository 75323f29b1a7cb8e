"""The ASGI application: HTTP through Django, and the websocket hub at /v1/hub through
Channels' protocol router. Request bodies are limited before Django reads them
(core/asgi_limits.py), and the upload temporary files of server processes that died are
swept when a server process starts (core/uploads.py)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (after Django is set up)

from config.websockets import websocket_urlpatterns  # noqa: E402
from core.asgi_limits import RequestBodyLimits  # noqa: E402
from core.uploads import upload_temporary_files_sweep  # noqa: E402

upload_temporary_files_sweep()

application = ProtocolTypeRouter(
    {
        "http": RequestBodyLimits(django_asgi_app),
        # Channels' stubs want their own pattern type, which path() does not return.
        "websocket": URLRouter(websocket_urlpatterns),  # type: ignore[arg-type]
    }
)
