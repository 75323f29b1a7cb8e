"""Prometheus metrics recorded in-process: HTTP requests (web nodes) and engine calls
(whichever process runs a batch: a worker, or a web node for an inline batch).

Web nodes serve them at /metrics (core.health) together with the scrape-time counts of
core.metrics_collectors; a Celery worker serves its own on WORKER_METRICS_PORT
(`worker_metrics_serve`). Prefork processes (Celery's children, several uvicorn workers)
keep their values in files under PROMETHEUS_MULTIPROC_DIR, prometheus_client's
multiprocess mode, so that the one server of a node reports all of them. See
docs/observability.md.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIServer

from django.conf import settings
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, multiprocess, start_http_server

logger = logging.getLogger(__name__)

HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

HTTP_REQUEST_SECONDS = Histogram(
    "bts_http_request_duration_seconds",
    "Time to answer an HTTP request, by method, route pattern and status class.",
    ["method", "route", "status"],
)
ENGINE_REQUEST_SECONDS = Histogram(
    "bts_engine_request_duration_seconds",
    "Time the translation engine took for one page, by engine and outcome (ok, error).",
    ["engine", "outcome"],
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600),
)
ENGINE_PROMPT_TOKENS = Counter(
    "bts_engine_prompt_tokens", "Prompt (input) tokens the engine reported, by engine.", ["engine"]
)
ENGINE_COMPLETION_TOKENS = Counter(
    "bts_engine_completion_tokens", "Completion (output) tokens the engine reported, by engine.", ["engine"]
)
PAGES_TRANSLATED = Counter(
    "bts_pages_translated", "Pages the engine translated that passed the completeness check, by engine.", ["engine"]
)
PAGES_FAILED = Counter(
    "bts_pages_failed",
    "Pages that came back without a usable translation, by engine and reason "
    "(incomplete, engine_error, engine_unavailable, crash).",
    ["engine", "reason"],
)


BATCH_UNDERCHARGED_USD = Counter(
    "bts_batch_undercharged_usd",
    "Measured cost of translated pages not charged because the charge was capped at the batch's hold "
    "(an engine costlier than the price table), by engine.",
    ["engine"],
)
BATCHES_UNDERCHARGED = Counter(
    "bts_batches_undercharged", "Batches whose charge was capped below their measured cost, by engine.", ["engine"]
)
ENGINE_POOL_PAGES = Gauge(
    "bts_engine_pool_pages",
    "Pages in a worker's page pool, by state: waiting for a slot, or at the engine.",
    ["state"],
    multiprocess_mode="livesum",
)


def batch_undercharge_count(*, engine: str, usd: float) -> None:
    """A batch charged less than it measured (its hold's cap): counted, with the amount."""
    BATCHES_UNDERCHARGED.labels(engine=engine).inc()
    BATCH_UNDERCHARGED_USD.labels(engine=engine).inc(usd)


def status_class(status_code: int) -> str:
    return f"{status_code // 100}xx"


def http_request_observe(*, method: str, route: str, status_code: int, seconds: float) -> None:
    HTTP_REQUEST_SECONDS.labels(
        method=method if method in HTTP_METHODS else "other", route=route, status=status_class(status_code)
    ).observe(seconds)


def _failure_reason(error: BaseException) -> str:
    # By class name, so that core does not import the translation app (which depends on it).
    names = {cls.__name__ for cls in type(error).__mro__}
    if "EngineUnavailable" in names:
        return "engine_unavailable"
    if "EngineError" in names:
        return "engine_error"
    return "crash"


def engine_translate_observed(engine: Any, page: Any) -> Any:
    """`engine.translate(page)`, its latency and tokens recorded (failures too)."""
    started = time.perf_counter()
    try:
        result = engine.translate(page)
    except BaseException as error:
        ENGINE_REQUEST_SECONDS.labels(engine=engine.name, outcome="error").observe(time.perf_counter() - started)
        PAGES_FAILED.labels(engine=engine.name, reason=_failure_reason(error)).inc()
        raise
    ENGINE_REQUEST_SECONDS.labels(engine=engine.name, outcome="ok").observe(time.perf_counter() - started)
    ENGINE_PROMPT_TOKENS.labels(engine=engine.name).inc(max(result.prompt_tokens or 0, 0))
    ENGINE_COMPLETION_TOKENS.labels(engine=engine.name).inc(max(result.completion_tokens or 0, 0))
    return result


def page_outcome_count(*, engine: str, problem: str | None) -> None:
    """A translated page: counted as translated, or failed when its completeness check failed."""
    if problem:
        PAGES_FAILED.labels(engine=engine, reason="incomplete").inc()
    else:
        PAGES_TRANSLATED.labels(engine=engine).inc()


def process_registry() -> CollectorRegistry:
    """The registry of this node's in-process metrics: every process's, merged, in
    multiprocess mode; else this process's (with its CPU, memory and GC metrics)."""
    if settings.PROMETHEUS_MULTIPROC_DIR:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=settings.PROMETHEUS_MULTIPROC_DIR)
        return registry
    return REGISTRY


# --- The Celery worker's metrics server (signals wired in config/celery_app.py) --------


# The worker's metrics server, once started (kept so that it can be shut down).
worker_metrics_server: WSGIServer | None = None


def worker_metrics_prepare(**_: Any) -> None:
    """worker_init (the main process, before the pool starts): the multiprocess folder
    starts empty, so that values of a previous run are not counted again."""
    folder = settings.PROMETHEUS_MULTIPROC_DIR
    if not (settings.WORKER_METRICS_PORT and folder):
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    for kind in ("counter", "gauge", "histogram", "summary"):
        for stale in Path(folder).glob(f"{kind}_*.db"):
            stale.unlink(missing_ok=True)


def worker_metrics_serve(sender: Any = None, **_: Any) -> None:
    """worker_ready: serve this worker's metrics on WORKER_METRICS_PORT, when set. A port
    that cannot be bound is logged; the worker goes on working."""
    global worker_metrics_server
    port = settings.WORKER_METRICS_PORT
    if not port:
        return
    pool = type(getattr(sender, "pool", None)).__module__ if sender is not None else ""
    if "prefork" in pool and not settings.PROMETHEUS_MULTIPROC_DIR:
        logger.warning(
            "WORKER_METRICS_PORT is set on a prefork worker without PROMETHEUS_MULTIPROC_DIR: "
            "the engine metrics of its child processes are not visible on the port"
        )
    try:
        worker_metrics_server = start_http_server(
            port, addr=settings.WORKER_METRICS_ADDRESS, registry=process_registry()
        )[0]
    except OSError:
        logger.exception("the worker's metrics server could not listen on port %s", port)
        return
    logger.info("worker metrics on %s:%s/metrics", settings.WORKER_METRICS_ADDRESS, port)
