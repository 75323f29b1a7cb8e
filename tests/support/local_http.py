"""A local HTTP server for the stand-ins of outside services: a handler served on a free
port of 127.0.0.1 in a thread of its own, stopped when the block ends."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that does not log each request to stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serves requests with the handler until the block ends (the serving thread joined);
    yields the server's address, `http://127.0.0.1:<port>`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # A short poll interval lets the shutdown return at once.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
