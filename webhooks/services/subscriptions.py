"""webhooks: the event bus (events.py), signed webhook subscriptions and their deliveries
(this module, deliveries.py), and the websocket status hub (hub.py).

This module holds the writes on subscriptions: create (the secret is returned once),
change, enable and disable, rotate the secret, delete. Deliveries, the test event and
redelivery are in `webhooks.services.deliveries`.
"""

from __future__ import annotations

import logging

from celery import signature
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from webhooks import addresses, signing
from webhooks.errors import WebhookLimitReached
from webhooks.models import DeliveryStatus, WebhookDelivery, WebhookSubscription

logger = logging.getLogger(__name__)

DISABLED_NOTIFY_TASK = "webhooks.tasks.subscription_disabled_notify"

OWNER_DISABLED_REASON = "Disabled by the owner."


def subscription_create(
    *, owner: User, url: str, description: str = "", event_types: list[str] | None = None
) -> tuple[WebhookSubscription, str]:
    """Registers a webhook and returns it with its signing secret (the only time the secret
    is shown). The url is checked first (400 webhook_url_invalid, webhook_address_forbidden;
    a name that does not resolve yet is accepted, each delivery checks it again); at most
    WEBHOOK_MAX_SUBSCRIPTIONS per owner (409 webhook_limit_reached)."""
    url = url.strip()
    addresses.registration_check(url)
    if WebhookSubscription.objects.filter(owner=owner).count() >= settings.WEBHOOK_MAX_SUBSCRIPTIONS:
        raise WebhookLimitReached()
    secret = signing.secret_new()
    subscription = WebhookSubscription.objects.create(
        owner=owner,
        url=url,
        description=description,
        event_types=_unique(event_types or []),
        secret_encrypted=signing.secret_encrypt(secret),
        secret_prefix=signing.secret_prefix(secret),
    )
    logger.info("webhook %s registered for %s", subscription.pk, owner.pk)
    return subscription, secret


def subscription_update(
    *,
    subscription: WebhookSubscription,
    url: str | None = None,
    description: str | None = None,
    event_types: list[str] | None = None,
    enabled: bool | None = None,
) -> WebhookSubscription:
    """Changes what is given (None leaves a field as it is). A new url is checked like at
    registration. Enabling clears the reason it was disabled and the failure count;
    disabling fails its pending deliveries."""
    if url is not None:
        url = url.strip()
        addresses.registration_check(url)
    with transaction.atomic():
        locked = WebhookSubscription.objects.select_for_update().get(pk=subscription.pk)
        if url is not None:
            locked.url = url
        if description is not None:
            locked.description = description
        if event_types is not None:
            locked.event_types = _unique(event_types)
        if enabled is True and not locked.enabled:
            locked.enabled = True
            locked.disabled_reason = ""
            locked.disabled_at = None
            locked.consecutive_failures = 0
        locked.save()
        if enabled is False:
            locked = subscription_disable(subscription=locked, reason=OWNER_DISABLED_REASON, notify_owner=False)
    return locked


def subscription_secret_rotate(*, subscription: WebhookSubscription) -> tuple[WebhookSubscription, str]:
    """Replaces the signing secret and returns the new one (shown only here). Every attempt
    from now on, retries of earlier events included, is signed with the new secret only."""
    secret = signing.secret_new()
    with transaction.atomic():
        locked = WebhookSubscription.objects.select_for_update().get(pk=subscription.pk)
        locked.secret_encrypted = signing.secret_encrypt(secret)
        locked.secret_prefix = signing.secret_prefix(secret)
        locked.save(update_fields=["secret_encrypted", "secret_prefix"])
    logger.info("webhook %s: signing secret rotated", locked.pk)
    return locked, secret


def subscription_delete(*, subscription: WebhookSubscription) -> None:
    """Deletes the subscription with its deliveries and their log; nothing more is sent."""
    subscription.delete()


def owner_subscriptions_delete(*, owner: User) -> int:
    """Deletes every subscription of the owner, as `subscription_delete` does; how many."""
    deleted, _ = WebhookSubscription.objects.filter(owner=owner).delete()
    return deleted


def subscription_disable(*, subscription: WebhookSubscription, reason: str, notify_owner: bool) -> WebhookSubscription:
    """Disables the subscription (nothing happens if it already is) and fails its pending
    deliveries; with notify_owner, the owner is emailed once this commits. Locks the
    subscription row."""
    now = timezone.now()
    with transaction.atomic():
        locked = WebhookSubscription.objects.select_for_update().get(pk=subscription.pk)
        if not locked.enabled:
            return locked
        locked.enabled = False
        locked.disabled_reason = reason[:255]
        locked.disabled_at = now
        locked.save(update_fields=["enabled", "disabled_reason", "disabled_at"])
        WebhookDelivery.objects.filter(subscription=locked, status=DeliveryStatus.PENDING).update(
            status=DeliveryStatus.FAILED,
            next_attempt_at=None,
            finished_at=now,
            updated_at=now,
            last_error=f"The webhook was disabled: {reason}"[:500],
        )
        if notify_owner:
            transaction.on_commit(lambda: _notify_queue(locked), robust=True)
    logger.warning("webhook %s disabled: %s", locked.pk, reason)
    return locked


def _notify_queue(subscription: WebhookSubscription) -> None:
    # Queued by name: webhooks/tasks.py calls these services.
    signature(DISABLED_NOTIFY_TASK, args=(str(subscription.pk),)).apply_async(queue="webhooks")


def subscription_disabled_notify(*, subscription_id: str) -> bool:
    """Emails the owner that the webhook was disabled, and why (if it still is); returns
    whether an email went out. A mail server that is down raises (the task retries)."""
    subscription = WebhookSubscription.objects.select_related("owner").filter(pk=subscription_id).first()
    if subscription is None or subscription.enabled:
        return False
    send_mail(
        subject="Your webhook was disabled",
        message=(
            f"We stopped sending events to your webhook {subscription.url}"
            f"{f' ({subscription.description})' if subscription.description else ''}.\n\n"
            f"Why: {subscription.disabled_reason}\n\n"
            f"The delivery log shows each attempt: GET /v1/webhooks/{subscription.pk}/deliveries\n"
            f"Once the endpoint works again, enable the webhook with PATCH /v1/webhooks/{subscription.pk} "
            '{"enabled": true}, and redeliver what it missed with '
            f"POST /v1/webhooks/{subscription.pk}/deliveries/{{deliveryId}}/redeliver.\n"
        ),
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[subscription.owner.email],
    )
    return True


def _unique(event_types: list[str]) -> list[str]:
    return list(dict.fromkeys(event_types))
