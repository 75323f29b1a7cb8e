"""The wallet's scrape-time metrics (registered with core.metrics_collectors in
WalletConfig.ready): open holds and the credit they reserve."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from django.db.models import Count, Sum
from prometheus_client.core import GaugeMetricFamily, Metric

from wallet.models import Hold, HoldState


def hold_metrics() -> Iterator[Metric]:
    totals = Hold.objects.filter(state=HoldState.OPEN).aggregate(holds=Count("pk"), amount=Sum("amount"))
    count = GaugeMetricFamily("bts_wallet_holds_open", "Open holds on wallets (batches queued or running).")
    count.add_metric([], totals["holds"] or 0)
    amount = GaugeMetricFamily("bts_wallet_holds_open_usd", "USD reserved by open holds.")
    amount.add_metric([], float(totals["amount"] or Decimal(0)))
    yield count
    yield amount
