"""Background work of webhooks: thin Celery tasks on the `webhooks` queue that call the
services. The delivery rows decide what happens, so a duplicate message does nothing."""

from __future__ import annotations

from celery import shared_task

from webhooks.services import deliveries
from webhooks.services import subscriptions as services


# celery-types has soft_time_limit as an int; Celery takes float seconds.
@shared_task(  # type: ignore[call-overload, untyped-decorator]
    name=deliveries.ATTEMPT_TASK, soft_time_limit=deliveries.attempt_time_limit()
)
def delivery_attempt(delivery_id: str) -> str | None:
    """One attempt of the delivery if it is pending and due; returns its status after.
    The soft time limit ends an attempt that takes longer in all than it may (recorded as
    a failed attempt, retried on the schedule)."""
    delivery = deliveries.delivery_attempt(delivery_id=delivery_id)
    return delivery.status if delivery is not None else None


@shared_task(name="webhooks.tasks.deliveries_sweep")
def deliveries_sweep() -> int:
    """Periodic: queue the pending deliveries that are overdue (long retries, lost messages)."""
    return deliveries.deliveries_sweep()


@shared_task(
    name="webhooks.tasks.subscription_disabled_notify",
    autoretry_for=(OSError,),
    retry_backoff=30,
    max_retries=8,
)
def subscription_disabled_notify(subscription_id: str) -> bool:
    """Email the owner that their webhook was disabled; a mail server that is down is retried."""
    return services.subscription_disabled_notify(subscription_id=subscription_id)
