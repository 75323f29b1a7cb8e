"""Background work of the wallet: thin Celery tasks that call the alert services. Both
check their rule again under a lock, so a duplicate message does nothing."""

from __future__ import annotations

from decimal import Decimal

from celery import shared_task

from wallet.services import alerts, btcpay, preferences, stripe_gateway


@shared_task(
    name="wallet.tasks.low_balance_alert_send",
    autoretry_for=(OSError,),
    retry_backoff=30,
    max_retries=8,
)
def low_balance_alert_send(wallet_id: int) -> bool:
    """Email the owner that the balance is low (at most once per repeat window); a mail
    server that is down is retried with growing delays."""
    return alerts.low_balance_alert_send(wallet_id=wallet_id)


@shared_task(name="wallet.tasks.auto_top_up_start")
def auto_top_up_start(wallet_id: int, short_of: str | None = None) -> str | None:
    """Charge the primary saved card when spendable credit fell to the auto top-up
    threshold, or (`short_of`, a decimal string) is below what a paused book's batch needs;
    returns the top-up's reference, if one was made."""
    top_up = alerts.auto_top_up_start(wallet_id=wallet_id, short_of=None if short_of is None else Decimal(short_of))
    return top_up.reference if top_up else None


@shared_task(name="wallet.tasks.spending_month_begin")
def spending_month_begin() -> int:
    """At the start of a calendar month (UTC): books paused by the spending ceiling may
    continue; returns how many owners were told."""
    return preferences.spending_month_begin()


@shared_task(name="wallet.tasks.crypto_pending_reconcile")
def crypto_pending_reconcile() -> int:
    """Apply BTCPay's word to crypto top-ups still pending after a few minutes (a webhook may
    have been lost); returns how many changed. Safe to run twice: each change is made once."""
    return btcpay.pending_reconcile()


@shared_task(name="wallet.tasks.stripe_customers_erase")
def stripe_customers_erase() -> int:
    """Delete at Stripe the customers (and saved cards) of deleted accounts: queued by each
    deletion once it commits, and run every STRIPE_ERASURE_SWEEP_SECONDS for those Stripe
    could not take then; returns how many were done. Safe to run twice at once: a customer
    already deleted is done."""
    return stripe_gateway.stripe_customers_erase()
