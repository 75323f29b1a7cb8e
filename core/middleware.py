"""Request ids and request metrics, the first two middlewares of every request.

`RequestIdMiddleware` keeps a sane incoming X-Request-ID (else makes one), puts it in the
log context for every line of the request (and the Celery tasks it queues) and returns it
in the X-Request-ID response header. `RequestMetricsMiddleware` times the request and
counts it by method, route pattern (never the raw path: ids would explode the series)
and status class, and writes one access-log line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase

from core.logging import (
    REQUEST_ID_HEADER,
    log_context_bind,
    log_context_clear,
    request_id_generate,
    request_id_sanitize,
)
from core.metrics import http_request_observe

access_logger = logging.getLogger("core.access")

UNMATCHED_ROUTE = "unmatched"
# Probes and scrapes come every few seconds: their access lines are DEBUG, not INFO.
QUIET_ROUTES = frozenset({"healthz", "readyz", "metrics"})


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        request_id = request_id_sanitize(request.headers.get(REQUEST_ID_HEADER)) or request_id_generate()
        request.request_id = request_id  # type: ignore[attr-defined]
        # Not reset on the way out: Django logs the response's status after the middleware
        # returns, and that line belongs to this request too. Each ASGI request runs in its
        # own context; the next request (or the response's close) clears it.
        log_context_clear()
        log_context_bind(request_id=request_id)
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request_id
        response._resource_closers.append(log_context_clear)  # type: ignore[attr-defined]
        return response


def route_of(request: HttpRequest) -> str:
    """The URL pattern the request matched (`v1/projects/<uuid:project_id>`), or "unmatched"."""
    match = getattr(request, "resolver_match", None)
    return (match.route or match.view_name or UNMATCHED_ROUTE) if match is not None else UNMATCHED_ROUTE


class RequestMetricsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        response = self.get_response(request)
        seconds = time.perf_counter() - started
        route = route_of(request)
        http_request_observe(
            method=request.method or "", route=route, status_code=response.status_code, seconds=seconds
        )
        access_logger.log(
            logging.DEBUG if route in QUIET_ROUTES else logging.INFO,
            "%s %s %s",
            request.method,
            request.path,
            response.status_code,
            extra={
                "method": request.method,
                "path": request.path,
                "route": route,
                "status": response.status_code,
                "duration_ms": round(seconds * 1000, 1),
            },
        )
        return response
