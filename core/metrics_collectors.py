"""Metrics counted at scrape time (GET /metrics on a web node): the Celery queues' depth in
the broker's Redis, and from the database jobs by state, pages by status, open wallet holds
and webhook deliveries by status.

Every web node reports the same figures (they come from shared stores), so dashboards
take `max` across nodes. A source that cannot be read is skipped for that scrape and
`bts_metrics_collector_up{collector=...}` says 0. Models are looked up through the app
registry, so the webhooks collector is simply absent while that app is not installed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from decimal import Decimal

import redis
from django.apps import apps
from django.conf import settings
from django.db.models import Count, Min, Sum
from django.utils import timezone
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from config.celery_app import WORK_QUEUES

logger = logging.getLogger(__name__)

# kombu's Redis transport keeps a queue's messages of priority p > 0 in "<queue>\x06\x16<p>".
_PRIORITY_SEPARATOR = "\x06\x16"
_PRIORITY_STEPS = (3, 6, 9)
_UNACKED_KEY = "unacked"


def _queue_metrics() -> Iterator[Metric]:
    depth = GaugeMetricFamily(
        "bts_celery_queue_length", "Messages waiting in each Celery queue of the broker.", labels=["queue"]
    )
    unacked = GaugeMetricFamily(
        "bts_celery_unacked_messages", "Messages delivered to a worker and not yet acknowledged (running tasks)."
    )
    timeout = settings.HEALTH_CHECK_TIMEOUT_SECONDS
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        pipeline = client.pipeline(transaction=False)
        for queue in WORK_QUEUES:
            for key in (queue, *(f"{queue}{_PRIORITY_SEPARATOR}{step}" for step in _PRIORITY_STEPS)):
                pipeline.llen(key)
        pipeline.hlen(_UNACKED_KEY)
        lengths = pipeline.execute()
    finally:
        client.close()
    per_queue = 1 + len(_PRIORITY_STEPS)
    for position, queue in enumerate(WORK_QUEUES):
        depth.add_metric([queue], sum(lengths[position * per_queue : (position + 1) * per_queue]))
    unacked.add_metric([], lengths[-1])
    yield depth
    yield unacked


def _counts_by(model_label: str, field: str) -> dict[str, int]:
    """Rows of a model per value of a choices field, every choice present (0 when none)."""
    model = apps.get_model(model_label)
    counts = {str(value): 0 for value, _ in model._meta.get_field(field).choices or []}
    for row in model.objects.order_by().values(field).annotate(rows=Count("pk")):
        counts[str(row[field])] = row["rows"]
    return counts


def _job_metrics() -> Iterator[Metric]:
    jobs = GaugeMetricFamily("bts_jobs", "Jobs (batches) by status.", labels=["status"])
    for status, rows in _counts_by("projects.Job", "status").items():
        jobs.add_metric([status], rows)
    yield jobs
    job_model = apps.get_model("projects.Job")
    oldest = job_model.objects.filter(status="Queued").aggregate(oldest=Min("enqueued_at"))["oldest"]
    age = GaugeMetricFamily(
        "bts_jobs_oldest_queued_age_seconds", "How long the oldest Queued job has waited (0 when none)."
    )
    age.add_metric([], max((timezone.now() - oldest).total_seconds(), 0.0) if oldest else 0.0)
    yield age


def _page_metrics() -> Iterator[Metric]:
    pages = GaugeMetricFamily("bts_pages", "Pages of every book by status.", labels=["status"])
    for status, rows in _counts_by("projects.Page", "status").items():
        pages.add_metric([status], rows)
    yield pages


def _hold_metrics() -> Iterator[Metric]:
    hold_model = apps.get_model("wallet.Hold")
    totals = hold_model.objects.filter(state="open").aggregate(holds=Count("pk"), amount=Sum("amount"))
    count = GaugeMetricFamily("bts_wallet_holds_open", "Open holds on wallets (batches queued or running).")
    count.add_metric([], totals["holds"] or 0)
    amount = GaugeMetricFamily("bts_wallet_holds_open_usd", "USD reserved by open holds.")
    amount.add_metric([], float(totals["amount"] or Decimal(0)))
    yield count
    yield amount


def _webhook_metrics() -> Iterator[Metric]:
    deliveries = GaugeMetricFamily(
        "bts_webhook_deliveries",
        "Webhook deliveries by status (failed: given up, dead: every retry failed).",
        labels=["status"],
    )
    for status, rows in _counts_by("webhooks.WebhookDelivery", "status").items():
        deliveries.add_metric([status], rows)
    yield deliveries
    delivery_model = apps.get_model("webhooks.WebhookDelivery")
    retrying = GaugeMetricFamily(
        "bts_webhook_deliveries_retrying", "Pending webhook deliveries whose earlier attempts failed."
    )
    retrying.add_metric([], delivery_model.objects.filter(status="pending", attempt_count__gt=0).count())
    yield retrying


def _webhooks_installed() -> bool:
    try:
        apps.get_model("webhooks.WebhookDelivery")
    except LookupError:
        return False
    return True


class ScrapeTimeCollector(Collector):
    """Each source read at scrape time; one that fails is logged and reported down."""

    def sources(self) -> dict[str, Callable[[], Iterator[Metric]]]:
        sources: dict[str, Callable[[], Iterator[Metric]]] = {
            "queues": _queue_metrics,
            "jobs": _job_metrics,
            "pages": _page_metrics,
            "holds": _hold_metrics,
        }
        if _webhooks_installed():
            sources["webhooks"] = _webhook_metrics
        return sources

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "bts_metrics_collector_up",
            "Whether a scrape-time source could be read (1) or not (0).",
            labels=["collector"],
        )
        for name, source in self.sources().items():
            try:
                metrics = list(source())
            except Exception:
                logger.exception("metrics: the %s source could not be read", name)
                up.add_metric([name], 0)
                continue
            up.add_metric([name], 1)
            yield from metrics
        yield up


SCRAPE_REGISTRY = CollectorRegistry(auto_describe=False)
SCRAPE_REGISTRY.register(ScrapeTimeCollector())
