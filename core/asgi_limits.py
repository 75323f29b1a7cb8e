"""Request bodies refused or cut off at the ASGI layer, before Django reads them.

Django's ASGI handler reads a whole request body (spooling it to a temporary file past
FILE_UPLOAD_MAX_MEMORY_SIZE) before it even looks at the address, so without this a 1 GB
POST to an address that does not exist, to one that takes no body, or without a credential
filled the disk before its 404, 405 or 401. `RequestBodyLimits` wraps the Django
application (config/asgi.py) and, for a request that announces a body (Content-Length or
chunked), resolves the route first:

- no such route, a method the route does not have, a method that reads no body (GET, HEAD,
  OPTIONS), or a route that needs a credential and got none that its own authentication
  classes accept: Django answers as always (404, 405, 401 with its exact problem) but is
  handed an empty body, and not one byte of the body is read;
- otherwise the route's limit applies: an upload route's file limit (the view's
  `body_file_limits`, the same function its GET .../limits serves) plus room for the
  multipart framing, else DATA_UPLOAD_MAX_MEMORY_SIZE (JSON and form bodies). A declared
  Content-Length over it is answered 413 `request_too_large` at once; a body that passes
  it while it arrives (chunked, or lying) stops being read there and is answered 413.

Every answer given before the whole body arrived says `Connection: close`, so the server
does not read the rest either. Behind a reverse proxy, its own limit (nginx
client_max_body_size) should be the largest route limit: docs/deploy.md.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.db import connections
from django.urls import Resolver404, resolve
from rest_framework.exceptions import APIException
from rest_framework.permissions import AllowAny
from rest_framework.request import Request

from core import problem_json
from core.errors import RequestTooLarge
from core.logging import REQUEST_ID_HEADER, request_id_generate, request_id_sanitize
from core.uploads import MULTIPART_OVERHEAD_BYTES, UploadLimits

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
Message = Mapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_BODYLESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
_FRAMING_HEADERS = frozenset({b"content-length", b"transfer-encoding"})


_View = TypeVar("_View", bound=Callable[..., Any])


@dataclass(frozen=True)
class BodyPolicy:
    """What a request's route does with a body."""

    reads_body: bool
    max_bytes: int = 0
    authenticators: tuple[type, ...] | None = None  # None: the route is public
    problem_extra: dict[str, int] = field(default_factory=dict)  # what the 413 names


def body_unread(view: _View) -> _View:
    """Marks a plain Django view that reads no request body (the web app's pages): a body
    sent to it is not read, as for a route that has none (the view's answer comes at once)."""
    view.body_unread = True  # type: ignore[attr-defined]
    return view


def body_policy(*, path: str, method: str) -> BodyPolicy:
    """The policy of the route at `path` (a path_info) for `method`."""
    try:
        match = resolve(path)
    except Resolver404:
        return BodyPolicy(reads_body=False)
    view = match.func
    if view is problem_json.api_not_found or getattr(view, "body_unread", False):  # no body wanted
        return BodyPolicy(reads_body=False)
    view_class = getattr(view, "cls", None)
    if view_class is None:  # a plain Django view (the admin's forms): Django's own body limit
        return _small_body()
    initkwargs = getattr(view, "initkwargs", {})

    def attribute(name: str) -> Any:
        return initkwargs.get(name, getattr(view_class, name, None))

    actions = getattr(view, "actions", None)  # a viewset: its method -> action map
    handles = method.lower() in actions if actions is not None else hasattr(view_class, method.lower())
    if method in _BODYLESS_METHODS or not handles or method.lower() not in view_class.http_method_names:
        return BodyPolicy(reads_body=False)
    public = any(permission is AllowAny for permission in attribute("permission_classes") or ())
    authenticators = None if public else tuple(attribute("authentication_classes") or ())
    file_limits: Callable[[], UploadLimits] | None = attribute("body_file_limits")
    if file_limits is None:
        return _small_body(authenticators)
    max_file = file_limits().max_file_size_bytes
    return BodyPolicy(
        reads_body=True,
        max_bytes=max_file + MULTIPART_OVERHEAD_BYTES,
        authenticators=authenticators,
        problem_extra={"maxFileSizeBytes": max_file},
    )


def _small_body(authenticators: tuple[type, ...] | None = None) -> BodyPolicy:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return BodyPolicy(
        reads_body=True, max_bytes=limit, authenticators=authenticators, problem_extra={"maxBodyBytes": limit}
    )


def credential_accepted(*, scope: Scope, authenticators: tuple[type, ...]) -> bool:
    """Whether the request carries a credential that the route's own authentication
    classes accept (DRF's authentication, run on the headers alone)."""
    try:
        request = Request(ASGIRequest(dict(scope), io.BytesIO()), authenticators=[cls() for cls in authenticators])
        try:
            return bool(request.user and request.user.is_authenticated)
        except APIException:  # a credential sent but refused: Django will say which way
            return False
        except Exception:
            # The check itself failed (the database busy or unreachable): the request goes on
            # with its body, still cut at the route's limit, and Django authenticates it and
            # answers as it would have (never a request stripped of a body it was entitled to).
            logger.exception("Could not check the credential of a request with a body.")
            return True
    finally:
        connections.close_all()  # this thread is outside Django's request cycle


class RequestBodyLimits:
    """ASGI middleware around the Django application: see the module docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _announces_body(scope):
            await self.app(scope, receive, send)
            return
        path = _path_info(scope)
        policy = body_policy(path=path, method=scope["method"])
        if not policy.reads_body or not await self._credential_accepted(scope, policy):
            await self.app(_without_body(scope), _NoBody(), _closing(send))
            return
        declared = _declared_length(scope)
        if declared is not None and declared > policy.max_bytes:
            await _too_large(send, scope=scope, path=path, policy=policy)
            return
        limited = _LimitedReceive(receive, max_bytes=policy.max_bytes)
        await self.app(scope, limited, send)
        if limited.overrun:  # Django saw a disconnect and answered nothing
            await _too_large(send, scope=scope, path=path, policy=policy)

    async def _credential_accepted(self, scope: Scope, policy: BodyPolicy) -> bool:
        if policy.authenticators is None:
            return True
        # One thread for every check (asgiref's main sync thread: Django runs each request in
        # its own), so checks hold at most one database connection, however many requests
        # with bodies arrive at once (a hundred at once exhausted the pool otherwise).
        return await sync_to_async(credential_accepted, thread_sensitive=True)(
            scope=scope, authenticators=policy.authenticators
        )


class _LimitedReceive:
    """Passes body messages on until more than `max_bytes` arrived; then tells the
    application the client went away, and reads no more."""

    def __init__(self, receive: Receive, *, max_bytes: int) -> None:
        self.receive, self.max_bytes = receive, max_bytes
        self.received = 0
        self.overrun = False

    async def __call__(self) -> Message:
        if self.overrun:
            return {"type": "http.disconnect"}
        message = await self.receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.max_bytes:
                self.overrun = True
                return {"type": "http.disconnect"}
        return message


def _announces_body(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() not in (b"0", b"")):
            return True
    return False


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _path_info(scope: Scope) -> str:
    path: str = scope["path"]
    root = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _without_body(scope: Scope) -> Scope:
    """The scope as if no body had been announced: Django cannot read what was not read."""
    headers = [(name, value) for name, value in scope["headers"] if name not in _FRAMING_HEADERS]
    return {**scope, "headers": headers}


class _NoBody:
    """The receive of a request whose body is not read: an empty body, then nothing until
    the application is done with the request (reading on would read the body)."""

    def __init__(self) -> None:
        self.given = False

    async def __call__(self) -> Message:
        if self.given:
            await asyncio.Event().wait()  # Django cancels its disconnect listener when done
        self.given = True
        return {"type": "http.request", "body": b"", "more_body": False}


def _closing(send: Send) -> Send:
    """`send` with Connection: close on the answer: the rest of the body is never read, so
    the connection cannot carry another request."""

    async def closing_send(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(name, value) for name, value in message.get("headers", []) if name.lower() != b"connection"]
            message = {**message, "headers": [*headers, (b"connection", b"close")]}
        await send(message)

    return closing_send


async def _too_large(send: Send, *, scope: Scope, path: str, policy: BodyPolicy) -> None:
    too_large = RequestTooLarge(
        f"The request body is larger than this operation accepts ({policy.max_bytes} bytes).", **policy.problem_extra
    )
    body = problem_json.problem_body(too_large, instance=path)
    payload = json.dumps(body).encode()
    headers = [
        (b"content-type", problem_json.PROBLEM_CONTENT_TYPE.encode()),
        (b"content-length", str(len(payload)).encode()),
        (b"connection", b"close"),
        *_answer_headers(scope, path),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": payload, "more_body": False})


def _answer_headers(scope: Scope, path: str) -> list[tuple[bytes, bytes]]:
    """What Django's middleware would have added to an answer made before it: the request
    id, and the CORS grant for a web app on an allowed origin (config/settings.py CORS_*),
    without which the page could not read the 413."""
    sent = {name.lower(): value.decode("latin-1") for name, value in scope["headers"]}
    request_id = request_id_sanitize(sent.get(REQUEST_ID_HEADER.lower().encode())) or request_id_generate()
    headers = [(REQUEST_ID_HEADER.encode(), request_id.encode())]
    origin = sent.get(b"origin")
    if origin is not None and origin in settings.CORS_ALLOWED_ORIGINS and re.match(settings.CORS_URLS_REGEX, path):
        headers += [
            (b"access-control-allow-origin", origin.encode()),
            (b"access-control-expose-headers", ", ".join(settings.CORS_EXPOSE_HEADERS).encode()),
            (b"vary", b"origin"),
        ]
    return headers
