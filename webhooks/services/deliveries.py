"""Webhook deliveries: one row per event and subscription, attempted by workers.

`deliveries_for_event` (a sink of the event bus) creates the deliveries of an event and
queues one task each, after commit. An attempt (`delivery_attempt`) claims the row (a
duplicate or early message does nothing), checks the address again, signs the body and
POSTs it (WEBHOOK_TIMEOUT_SECONDS); only a 2xx answer is a success. Anything else is retried
on the Standard Webhooks schedule (WEBHOOK_RETRY_SCHEDULE_SECONDS, with jitter; a longer
Retry-After wins) until the schedule runs out and the delivery is dead. A 410 disables the
subscription at once; WEBHOOK_DISABLE_AFTER_DEAD_DELIVERIES dead deliveries in a row do too;
either way the owner gets an email.

The rows decide, not Celery: a retry due within COUNTDOWN_MAX is queued with a countdown,
a later one (and any message that was lost) is found by `deliveries_sweep`, run by beat.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import requests
from celery import signature
from celery.exceptions import SoftTimeLimitExceeded
from cryptography.fernet import InvalidToken
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import ServiceError
from webhooks import addresses, selectors, signing
from webhooks.errors import DeliveryPending, WebhookDisabled
from webhooks.events import Event
from webhooks.models import DeliveryAttempt, DeliveryStatus, WebhookDelivery, WebhookSubscription
from webhooks.services import subscriptions as services

ATTEMPT_TASK = "webhooks.tasks.delivery_attempt"
logger = logging.getLogger(__name__)

WEBHOOK_TEST = "webhook.test"
USER_AGENT = "BookTranslationService-Webhooks/1.0"
# A retry further off than this is not queued with a countdown (Redis would hand a message
# held past its visibility timeout to a second worker): the sweep picks it up when due.
COUNTDOWN_MAX = timedelta(minutes=10)
# A message may arrive this early (clocks of different hosts) and still count as due.
CLAIM_SLACK = timedelta(seconds=2)
RETRY_AFTER_CAP = timedelta(hours=24)
JITTER = 0.1  # each delay is the schedule's, +/- 10 %
SWEEP_BATCH = 1000
MAX_ERROR_LENGTH = 500
_random = secrets.SystemRandom()


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to."""

    status_code: int | None
    error: str = ""
    retry_after: timedelta | None = None

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def gone(self) -> bool:
        return self.status_code == 410


# --- Creating deliveries --------------------------------------------------------------------


def deliveries_for_event(event: Event) -> int:
    """The event bus's sink: one delivery per enabled subscription of the event's owner
    whose filter lets the event type through, each queued once committed. Returns how many
    were created; an event already delivered to a subscription is not delivered twice."""
    subscriptions = selectors.subscriptions_for_event(owner_id=event.owner_id, event_type=event.type)
    return sum(1 for subscription in subscriptions if delivery_create(subscription=subscription, event=event))


def delivery_create(*, subscription: WebhookSubscription, event: Event) -> WebhookDelivery | None:
    """Creates the delivery of the event to the subscription and queues its first attempt
    once committed; None when the subscription already has this event."""
    now = timezone.now()
    with transaction.atomic():
        delivery, created = WebhookDelivery.objects.get_or_create(
            subscription=subscription,
            event_id=event.id,
            defaults={
                "event_type": event.type,
                "payload": event.envelope(),
                "next_attempt_at": now,
                "created_at": now,
                "updated_at": now,
            },
        )
        if created:
            _queue_on_commit(delivery.pk)
    return delivery if created else None


def delivery_test_send(*, subscription: WebhookSubscription) -> WebhookDelivery:
    """Sends a `webhook.test` event to this subscription only, through the same path as
    every event (409 webhook_disabled for a disabled subscription)."""
    if not subscription.enabled:
        raise WebhookDisabled()
    event = Event(
        type=WEBHOOK_TEST,
        owner_id=subscription.owner_id,
        data={"webhookId": str(subscription.pk), "message": "A test event: your endpoint receives webhooks."},
    )
    delivery = delivery_create(subscription=subscription, event=event)
    assert delivery is not None  # a new event id
    return delivery


def delivery_redeliver(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Starts a new round of attempts (the whole retry schedule again) for a delivery that
    succeeded, failed or died, with the same webhook-id and body. 409
    webhook_delivery_pending while it is still being tried, webhook_disabled when its
    subscription is disabled."""
    now = timezone.now()
    with transaction.atomic():
        locked = WebhookDelivery.objects.select_for_update().select_related("subscription").get(pk=delivery.pk)
        if locked.status == DeliveryStatus.PENDING:
            raise DeliveryPending()
        if not locked.subscription.enabled:
            raise WebhookDisabled()
        locked.status = DeliveryStatus.PENDING
        locked.attempt_count = 0
        locked.next_attempt_at = now
        locked.finished_at = None
        locked.updated_at = now
        locked.save(update_fields=["status", "attempt_count", "next_attempt_at", "finished_at", "updated_at"])
        _queue_on_commit(locked.pk)
    return locked


def _queue_on_commit(delivery_id: uuid.UUID, *, countdown: float = 0) -> None:
    """Queues an attempt once the transaction commits; a broker that is down is logged,
    and the sweep queues it later."""

    def send() -> None:
        # By the task's name: the task module calls this one (no import either way but that).
        signature(ATTEMPT_TASK, args=[str(delivery_id)]).apply_async(queue="webhooks", countdown=countdown)

    transaction.on_commit(send, robust=True)


# --- One attempt ----------------------------------------------------------------------------


def delivery_attempt(*, delivery_id: uuid.UUID | str) -> WebhookDelivery | None:
    """Makes one attempt of the delivery if it is pending and due, and records it; returns
    the delivery as it then is, or None when there was nothing to do (not due, not
    pending, gone). Two workers never attempt the same delivery at once (the claim)."""
    delivery = _claim(delivery_id)
    if delivery is None:
        return None
    subscription = delivery.subscription
    if not subscription.enabled:
        return _give_up(delivery_id=delivery.pk, error="The webhook is disabled.")
    attempted_at = timezone.now()
    started = time.monotonic()
    outcome = _send(delivery=delivery, subscription=subscription)
    duration_ms = int((time.monotonic() - started) * 1000)
    if outcome.succeeded:
        logger.info("webhook delivery %s (%s) answered %s", delivery.pk, delivery.event_type, outcome.status_code)
    else:
        logger.info("webhook delivery %s (%s) failed: %s", delivery.pk, delivery.event_type, outcome.error)
    return _record(delivery_id=delivery.pk, attempted_at=attempted_at, duration_ms=duration_ms, outcome=outcome)


def attempt_time_limit() -> float:
    """The longest one attempt may take in all, in seconds: WEBHOOK_TIMEOUT_SECONDS for each
    address it may try. The timeout bounds each read; this bounds the whole attempt, so a
    receiver that answers a byte at a time cannot hold a worker (the delivery task's soft
    time limit)."""
    return float(settings.WEBHOOK_TIMEOUT_SECONDS * addresses.MAX_ADDRESSES_TRIED)


def _claim(delivery_id: uuid.UUID | str) -> WebhookDelivery | None:
    """Takes the delivery for one attempt: moves its next attempt past the longest an
    attempt can take, so no other worker (nor the sweep) takes it meanwhile; should this
    worker die, the delivery is due again after that."""
    now = timezone.now()
    lease = timedelta(seconds=attempt_time_limit() + settings.WEBHOOK_TIMEOUT_SECONDS + 60)
    claimed = WebhookDelivery.objects.filter(
        pk=delivery_id, status=DeliveryStatus.PENDING, next_attempt_at__lte=now + CLAIM_SLACK
    ).update(next_attempt_at=now + lease, updated_at=now)
    if not claimed:
        return None
    return WebhookDelivery.objects.select_related("subscription").filter(pk=delivery_id).first()


def _send(*, delivery: WebhookDelivery, subscription: WebhookSubscription) -> Outcome:
    """Checks the address again, signs and POSTs the body; the outcome, never an exception."""
    body = envelope_body(delivery.payload)
    try:
        checked = addresses.target_check(subscription.url)
        secret = signing.secret_decrypt(subscription.secret_encrypted)
    except (ServiceError, addresses.HostUnresolvable) as error:
        return Outcome(status_code=None, error=f"Address refused: {error.detail}")
    except InvalidToken:
        logger.error("webhook %s: its secret cannot be decrypted (WEBHOOK_SECRET_KEY changed?)", subscription.pk)
        return Outcome(status_code=None, error="The signing secret could not be read on our side; rotate it.")
    headers = {
        **signing.signed_headers(secret=secret, message_id=delivery.event_id, timestamp=timezone.now(), body=body),
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
    }
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    try:
        answer = addresses.post_pinned(checked, body=body, headers=headers, timeout=timeout)
    except requests.Timeout:
        return Outcome(status_code=None, error=f"No answer within {timeout:g} s.")
    except SoftTimeLimitExceeded:
        return Outcome(status_code=None, error=f"No complete answer within {attempt_time_limit():g} s.")
    except requests.exceptions.SSLError as error:
        return Outcome(status_code=None, error=_clip(f"TLS failed: {error}"))
    except requests.RequestException as error:
        return Outcome(status_code=None, error=_clip(f"Could not connect or send: {error}"))
    code = answer.status_code
    if 200 <= code < 300:
        return Outcome(status_code=code)
    if 300 <= code < 400:
        location = answer.headers.get("Location", "")
        return Outcome(status_code=code, error=_clip(f"HTTP {code}: redirect to {location!r} not followed."))
    excerpt = " ".join(answer.body_excerpt.split())[:200]
    message = f"HTTP {code}: {excerpt}" if excerpt else f"HTTP {code}"
    return Outcome(status_code=code, error=_clip(message), retry_after=_retry_after(answer.headers.get("Retry-After")))


def envelope_body(payload: dict[str, Any]) -> bytes:
    """The bytes sent: the envelope's keys in their order (type, timestamp, data), the data's
    keys sorted, so that every attempt sends the same bytes whatever the database did to the
    JSON's key order."""
    data = json.loads(json.dumps(payload["data"], sort_keys=True))  # keys sorted at every depth
    envelope = {"type": payload["type"], "timestamp": payload["timestamp"], "data": data}
    return json.dumps(envelope, separators=(",", ":")).encode()


def _retry_after(value: str | None) -> timedelta | None:
    """A Retry-After header (seconds or an HTTP date) as a delay, at most a day."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        delay = timedelta(seconds=int(value))
    else:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        delay = when - timezone.now()
    return min(max(delay, timedelta(0)), RETRY_AFTER_CAP)


def _retry_delay(*, attempts_made: int, retry_after: timedelta | None) -> timedelta | None:
    """How long until the next attempt after this many, or None when the schedule is spent."""
    schedule = settings.WEBHOOK_RETRY_SCHEDULE_SECONDS
    if attempts_made > len(schedule):
        return None
    scheduled = timedelta(seconds=schedule[attempts_made - 1] * _random.uniform(1 - JITTER, 1 + JITTER))
    return max(scheduled, retry_after) if retry_after is not None else scheduled


def _record(
    *, delivery_id: uuid.UUID, attempted_at: datetime, duration_ms: int, outcome: Outcome
) -> WebhookDelivery | None:
    """Writes the attempt to the log and decides what comes next: success, a retry, dead,
    or (410) the subscription disabled. Locks the subscription, then the delivery."""
    now = timezone.now()
    with transaction.atomic():
        delivery = WebhookDelivery.objects.filter(pk=delivery_id).only("subscription_id").first()
        if delivery is None:
            return None  # the subscription was deleted meanwhile
        subscription = WebhookSubscription.objects.select_for_update().filter(pk=delivery.subscription_id).first()
        delivery = WebhookDelivery.objects.select_for_update().filter(pk=delivery_id).first()
        if delivery is None or subscription is None:
            return None
        DeliveryAttempt.objects.create(
            delivery=delivery,
            attempted_at=attempted_at,
            status_code=outcome.status_code,
            duration_ms=duration_ms,
            error=outcome.error,
        )
        delivery.attempt_count += 1
        delivery.last_status_code = outcome.status_code
        delivery.last_error = outcome.error
        delivery.updated_at = now
        if delivery.status == DeliveryStatus.PENDING:
            _next_step(delivery=delivery, subscription=subscription, outcome=outcome, now=now)
        delivery.save()
    return delivery


def _next_step(
    *, delivery: WebhookDelivery, subscription: WebhookSubscription, outcome: Outcome, now: datetime
) -> None:
    if outcome.succeeded:
        _finish(delivery, DeliveryStatus.SUCCEEDED, now)
        if subscription.consecutive_failures:
            subscription.consecutive_failures = 0
            subscription.save(update_fields=["consecutive_failures"])
        return
    if outcome.gone:
        _finish(delivery, DeliveryStatus.FAILED, now)
        delivery.save()  # before the disable marks the other pending deliveries
        services.subscription_disable(
            subscription=subscription, reason="The endpoint answered 410 Gone.", notify_owner=True
        )
        return
    delay = _retry_delay(attempts_made=delivery.attempt_count, retry_after=outcome.retry_after)
    if delay is not None:
        delivery.next_attempt_at = now + delay
        if delay <= COUNTDOWN_MAX:
            _queue_on_commit(delivery.pk, countdown=delay.total_seconds())
        return
    _finish(delivery, DeliveryStatus.DEAD, now)
    subscription.consecutive_failures += 1
    subscription.save(update_fields=["consecutive_failures"])
    limit = settings.WEBHOOK_DISABLE_AFTER_DEAD_DELIVERIES
    if limit and subscription.consecutive_failures >= limit:
        delivery.save()
        services.subscription_disable(
            subscription=subscription,
            reason=f"{subscription.consecutive_failures} deliveries in a row failed every attempt.",
            notify_owner=True,
        )


def _finish(delivery: WebhookDelivery, status: DeliveryStatus, now: datetime) -> None:
    delivery.status = status
    delivery.next_attempt_at = None
    delivery.finished_at = now


def _give_up(*, delivery_id: uuid.UUID, error: str) -> WebhookDelivery | None:
    """Ends a claimed delivery as failed without an attempt (its subscription is disabled)."""
    now = timezone.now()
    WebhookDelivery.objects.filter(pk=delivery_id, status=DeliveryStatus.PENDING).update(
        status=DeliveryStatus.FAILED, next_attempt_at=None, finished_at=now, updated_at=now, last_error=error
    )
    return WebhookDelivery.objects.filter(pk=delivery_id).first()


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ERROR_LENGTH else text[: MAX_ERROR_LENGTH - 1] + "…"


# --- The sweep ------------------------------------------------------------------------------


def deliveries_sweep() -> int:
    """Queues an attempt of every pending delivery overdue by more than
    WEBHOOK_SWEEP_SECONDS: retries further off than COUNTDOWN_MAX, and deliveries whose
    message was lost or whose worker died. Returns how many were queued; a delivery queued
    twice is attempted once."""
    overdue = timezone.now() - timedelta(seconds=settings.WEBHOOK_SWEEP_SECONDS)
    due = WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=overdue)
    delivery_ids = list(due.order_by("next_attempt_at").values_list("pk", flat=True)[:SWEEP_BATCH])
    for delivery_id in delivery_ids:
        _queue_on_commit(delivery_id)
    return len(delivery_ids)
