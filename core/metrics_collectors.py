"""Metrics counted at scrape time (GET /metrics on a web node): the Celery queues' depth in
the broker's Redis, and from the database jobs by state, pages by status, open wallet holds
and webhook deliveries by status.

Every web node reports the same figures (they come from shared stores), so dashboards
take `max` across nodes. A source that cannot be read is skipped for that scrape and
`bts_metrics_collector_up{collector=...}` says 0. The queues are core's own; each app
registers the sources of its rows in its AppConfig.ready (`scrape_source_register`:
projects/metrics.py, wallet/metrics.py, webhooks/metrics.py), so core imports no app.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import redis
from django.conf import settings
from django.db.models import Count, Model
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

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
        for queue in settings.WORK_QUEUES:
            for key in (queue, *(f"{queue}{_PRIORITY_SEPARATOR}{step}" for step in _PRIORITY_STEPS)):
                pipeline.llen(key)
        pipeline.hlen(_UNACKED_KEY)
        lengths = pipeline.execute()
    finally:
        client.close()
    per_queue = 1 + len(_PRIORITY_STEPS)
    for position, queue in enumerate(settings.WORK_QUEUES):
        depth.add_metric([queue], sum(lengths[position * per_queue : (position + 1) * per_queue]))
    unacked.add_metric([], lengths[-1])
    yield depth
    yield unacked


def counts_by_choice(model: type[Model], field: str) -> dict[str, int]:
    """Rows of a model per value of a choices field, every choice present (0 when none): what
    an app's scrape-time source counts its rows by."""
    choices = getattr(model._meta.get_field(field), "choices", None) or []
    counts = {str(value): 0 for value, _ in choices}
    for row in model._default_manager.order_by().values(field).annotate(rows=Count("pk")):
        counts[str(row[field])] = row["rows"]
    return counts


Source = Callable[[], Iterator[Metric]]
_sources: dict[str, Source] = {"queues": _queue_metrics}


def scrape_source_register(name: str, source: Source) -> None:
    """An app's scrape-time source (its AppConfig.ready registers it: core knows no app's
    models); registering a name again replaces it."""
    _sources[name] = source


class ScrapeTimeCollector(Collector):
    """Each source read at scrape time; one that fails is logged and reported down."""

    def sources(self) -> dict[str, Source]:
        return dict(_sources)

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
