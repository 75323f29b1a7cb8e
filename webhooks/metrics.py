"""Webhooks' scrape-time metrics (registered with core.metrics_collectors in
WebhooksConfig.ready): deliveries by status, and those retrying."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from core.metrics_collectors import counts_by_choice
from webhooks.models import DeliveryStatus, WebhookDelivery


def webhook_metrics() -> Iterator[Metric]:
    deliveries = GaugeMetricFamily(
        "bts_webhook_deliveries",
        "Webhook deliveries by status (failed: given up, dead: every retry failed).",
        labels=["status"],
    )
    for status, rows in counts_by_choice(WebhookDelivery, "status").items():
        deliveries.add_metric([status], rows)
    yield deliveries
    retrying = GaugeMetricFamily(
        "bts_webhook_deliveries_retrying", "Pending webhook deliveries whose earlier attempts failed."
    )
    retrying.add_metric([], WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, attempt_count__gt=0).count())
    yield retrying
