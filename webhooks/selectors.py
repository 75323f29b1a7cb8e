"""Owner-scoped reads of webhook subscriptions and their delivery log."""

from __future__ import annotations

import uuid

from django.db.models import Prefetch, QuerySet

from accounts.models import User
from core.selectors import object_get_or_not_found
from webhooks.models import DeliveryAttempt, WebhookDelivery, WebhookSubscription


def subscription_list_for_owner(*, owner: User) -> QuerySet[WebhookSubscription]:
    return WebhookSubscription.objects.filter(owner=owner).order_by("-created_at")


def subscription_get_for_owner(*, owner: User, subscription_id: uuid.UUID | str) -> WebhookSubscription:
    """The owner's subscription; someone else's is NotFound, exactly like a missing one."""
    return object_get_or_not_found(
        WebhookSubscription.objects.filter(owner=owner), pk=subscription_id, message="No such webhook."
    )


def subscriptions_for_event(*, owner_id: uuid.UUID, event_type: str) -> list[WebhookSubscription]:
    """The owner's enabled subscriptions whose filter lets this event type through."""
    enabled = WebhookSubscription.objects.filter(owner_id=owner_id, enabled=True).order_by("created_at")
    return [subscription for subscription in enabled if subscription.delivers(event_type)]


def delivery_log_for_subscription(*, subscription: WebhookSubscription) -> QuerySet[WebhookDelivery]:
    """The subscription's deliveries, newest first, each with its attempts (oldest first)."""
    attempts = Prefetch("attempts", queryset=DeliveryAttempt.objects.order_by("attempted_at", "pk"))
    return subscription.deliveries.order_by("-created_at", "-pk").prefetch_related(attempts)


def delivery_get_for_subscription(
    *, subscription: WebhookSubscription, delivery_id: uuid.UUID | str
) -> WebhookDelivery:
    return object_get_or_not_found(
        subscription.deliveries.all(), pk=delivery_id, message="No such delivery of this webhook."
    )
