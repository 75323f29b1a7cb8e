"""The operators' endpoints, outside /v1: GET /healthz (the process answers), GET /readyz
(its dependencies answer) and GET /metrics (Prometheus, behind METRICS_TOKEN).

Readiness checks the database, Redis (the broker and the cache) and file storage, each
with HEALTH_CHECK_TIMEOUT_SECONDS, at once. The translation engine's model status is
reported but never makes a web node unready: books wait for the GPU (PausedNeedsCapacity)
while the API goes on serving. See docs/observability.md.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict
from typing import Any

import redis
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import connections
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from core.metrics import process_registry
from core.metrics_collectors import SCRAPE_REGISTRY

logger = logging.getLogger(__name__)

# A key that need not exist: asking whether it does proves the storage answers.
STORAGE_PROBE_KEY = "readyz-probe"
# Shared and small: a dependency that hangs ties up at most these threads, not one per probe.
_checks_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="readyz")


@require_safe
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is up and serving; touches nothing else."""
    return JsonResponse({"status": "ok"})


def _check_database() -> None:
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    finally:
        connections["default"].close()


def _redis_urls() -> list[str]:
    """The broker's and the cache's Redis, each once."""
    urls = [settings.CELERY_BROKER_URL]
    location = settings.CACHES["default"].get("LOCATION", "")
    urls.extend([location] if isinstance(location, str) else list(location))
    return list(dict.fromkeys(url for url in urls if url.startswith(("redis://", "rediss://", "unix://"))))


def _check_redis() -> None:
    timeout = settings.HEALTH_CHECK_TIMEOUT_SECONDS
    for url in _redis_urls():
        client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        try:
            client.ping()
        finally:
            client.close()


def _check_storage() -> None:
    default_storage.exists(STORAGE_PROBE_KEY)


CHECKS: dict[str, Callable[[], None]] = {
    "database": _check_database,
    "redis": _check_redis,
    "storage": _check_storage,
}


# The engine's status, as the translation app reports it (it provides this in its
# AppConfig.ready: core imports no app above it).
_engine_status_source: Callable[[], Any] | None = None


def engine_status_provide(source: Callable[[], Any]) -> None:
    """The translation app's engine status (a dataclass instance), for /readyz's body."""
    global _engine_status_source
    _engine_status_source = source


def _engine_status() -> dict[str, Any]:
    if _engine_status_source is None:
        raise LookupError("no translation engine is installed")
    return asdict(_engine_status_source())


def _outcome(name: str, future: Future[Any], timeout: float) -> tuple[bool, Any]:
    """(ok, value or error name) of one check."""
    try:
        return True, future.result(timeout=timeout)
    except FutureTimeout:
        logger.warning("readyz: the %s check timed out after %ss", name, timeout)
        return False, "timeout"
    except Exception as error:
        logger.warning("readyz: the %s check failed: %s: %s", name, type(error).__name__, error)
        return False, type(error).__name__


@require_safe
@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when the database, Redis and storage answer; else 503 naming what failed (only
    an error class: the body is public). The engine's state is in the body either way."""
    timeout = settings.HEALTH_CHECK_TIMEOUT_SECONDS
    futures = {name: _checks_pool.submit(check) for name, check in CHECKS.items()}
    engine_future = _checks_pool.submit(_engine_status)
    checks: dict[str, dict[str, Any]] = {}
    for name, future in futures.items():
        ok, value = _outcome(name, future, timeout)
        checks[name] = {"ok": True} if ok else {"ok": False, "error": value}
    ok, engine = _outcome("engine", engine_future, timeout)
    if not ok:
        engine = {"state": "unknown", "detail": f"The engine's status could not be read ({engine})."}
    failed = [name for name, check in checks.items() if not check["ok"]]
    body: dict[str, Any] = {"status": "unavailable" if failed else "ok", "checks": checks, "engine": engine}
    if failed:
        body["failed"] = failed
    return JsonResponse(body, status=503 if failed else 200)


@require_safe
@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text format. 404 while METRICS_TOKEN is unset; else the token as a
    bearer credential (401 without one, 403 with another)."""
    token = settings.METRICS_TOKEN
    if not token:
        raise Http404("Metrics are not enabled.")
    scheme, _, offered = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not offered.strip():
        response = HttpResponse("Authentication required.\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if not hmac.compare_digest(offered.strip().encode(), token.encode()):
        return HttpResponse("Forbidden.\n", status=403, content_type="text/plain")
    body = generate_latest(process_registry()) + generate_latest(SCRAPE_REGISTRY)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
