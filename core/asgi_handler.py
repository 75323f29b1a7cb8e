"""Django's ASGI handler, with each HTTP request's synchronous part run as WSGI runs it: in
one call, on a thread kept from one request to the next.

Django's own ASGI handler builds the middleware chain for async code. Ours are synchronous
(as are the views), so each request went from the event loop to a thread for the
middleware, back to the loop for the view's dispatch, and to the thread again for the
view; and asgiref made a new thread for every request and joined it from yet another new
thread, so every request also opened a database connection (Django's connections belong to
their thread). The polled reads paid for all of that each time (docs/performance.md, "The
API under load").

`RequestHandler` builds the chain for synchronous code, so the middleware and the view run
in one call on the request's thread, and gives each request a thread of its own taken from
the idle ones (a new one when none is idle). A request still runs all its synchronous code
on a thread that no other request uses meanwhile, as before; the thread outlives it, as a
WSGI server's threads do, with its database connection when CONN_MAX_AGE keeps it (SQLite:
config/settings.py). At most IDLE_THREADS are kept; one more than that closes its
connections and ends. A thread is taken again only once everything given to it has
returned (a view still running after its client went away keeps it until it returns).
Streaming responses, the request_started and request_finished signals, and the handling of
a client that goes away are Django's own, unchanged.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.db import connections
from django.http import HttpRequest, HttpResponseBase

Scope = dict[str, Any]
Message = Mapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
_T = TypeVar("_T")

# Enough for the requests one process serves at once on a small node; more are started
# when needed and end with their request.
IDLE_THREADS = 32
_numbers = itertools.count(1)


class RequestThread(ThreadPoolExecutor):
    """One thread that runs one request's synchronous calls, and knows when all of them
    have returned."""

    def __init__(self, handler: RequestHandler) -> None:
        super().__init__(max_workers=1, thread_name_prefix=f"request-{next(_numbers)}")
        self._handler = handler
        self._lock = threading.Lock()
        self._pending = 0
        self._released = False

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        with self._lock:
            self._pending += 1
        future = super().submit(fn, *args, **kwargs)
        future.add_done_callback(self._returned)
        return future

    def release(self) -> None:
        """The request is over: idle now, or when its last call returns."""
        with self._lock:
            if self._pending:
                self._released = True
                return
        self._handler.thread_idle(self)

    def _returned(self, _future: Future[Any]) -> None:
        with self._lock:
            self._pending -= 1
            idle = self._released and not self._pending
            if idle:
                self._released = False
        if idle:
            self._handler.thread_idle(self)

    def retire(self) -> None:
        """Closes this thread's database connections, then ends it (without waiting)."""
        super().submit(connections.close_all)
        self.shutdown(wait=False)


class RequestHandler(ASGIHandler):
    """Django's ASGI handler for HTTP: see the module docstring."""

    def __init__(self, *, idle_threads: int = IDLE_THREADS) -> None:
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)
        self.idle_threads = idle_threads
        self._idle: deque[RequestThread] = deque()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        thread = self._thread_take()
        try:
            async with ThreadSensitiveContext(executor=thread):
                await self.handle(scope, receive, send)
        finally:
            thread.release()

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)

    def _thread_take(self) -> RequestThread:
        try:
            return self._idle.pop()  # the last used: its connection is the freshest
        except IndexError:
            return RequestThread(self)

    def thread_idle(self, thread: RequestThread) -> None:
        """Keeps `thread` for a next request, or retires it when enough are idle."""
        if len(self._idle) < self.idle_threads:
            self._idle.append(thread)
        else:
            thread.retire()
