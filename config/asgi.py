"""The ASGI application: HTTP through Django, and the websocket hub at /v1/hub through
Channels' protocol router. Request bodies are limited before Django reads them
(core/asgi_limits.py), Django's handler runs each request's synchronous part in one call
on a thread kept from one request to the next (core/asgi_handler.py), and the upload
temporary files of server processes that died are swept when a server process starts
(core/uploads.py)."""

import os
import tempfile

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup(set_prefix=False)

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (after Django is set up)

from config.websockets import websocket_urlpatterns  # noqa: E402
from core.asgi_handler import RequestHandler  # noqa: E402
from core.asgi_limits import RequestBodyLimits  # noqa: E402
from core.uploads import upload_temporary_files_sweep  # noqa: E402

upload_temporary_files_sweep()
# Python's tempfile finds its folder on first use by creating and deleting a probe file with
# a random name there (TMPDIR, where a request's body spools once it is large). With
# FILE_UPLOAD_TEMP_DIR set nothing used it before the first large request, and a server
# killed during that probe left the empty file behind (test_upload_crash caught it once):
# found now, at start.
tempfile.gettempdir()

application = ProtocolTypeRouter(
    {
        "http": RequestBodyLimits(RequestHandler()),
        # Channels' stubs want their own pattern type, which path() does not return.
        "websocket": URLRouter(websocket_urlpatterns),  # type: ignore[arg-type]
    }
)
