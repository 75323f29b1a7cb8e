"""Webhook subscriptions and their deliveries.

A delivery row is the source of truth for one event sent to one subscription: its status
and next attempt time decide what a worker does, a Celery message only wakes one up. Every
attempt leaves a DeliveryAttempt row: the delivery log the owner reads.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class WebhookSubscription(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks")
    url = models.CharField(max_length=2048)
    description = models.CharField(max_length=200, blank=True)
    event_types = models.JSONField(default=list, blank=True, help_text="event types delivered; empty: all")
    secret_encrypted = models.TextField(help_text="the signing secret, Fernet-encrypted (see webhooks.signing)")
    secret_prefix = models.CharField(max_length=16, help_text="the secret's first characters, for recognition")
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=255, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    consecutive_failures = models.PositiveIntegerField(
        default=0, help_text="dead deliveries in a row; reset by a success"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["owner", "enabled"], name="webhook_owner_enabled")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(enabled=True) | ~models.Q(disabled_reason=""), name="webhook_disabled_has_reason"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.url} ({self.owner_id})"

    def delivers(self, event_type: str) -> bool:
        """Whether this subscription's filter lets the event type through."""
        return not self.event_types or event_type in self.event_types


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"  # waiting for its next attempt
    SUCCEEDED = "succeeded"  # the endpoint answered 2xx
    FAILED = "failed"  # given up early: the subscription was disabled
    DEAD = "dead"  # every attempt of the retry schedule failed


class WebhookDelivery(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    subscription = models.ForeignKey(WebhookSubscription, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.CharField(max_length=64, help_text="the webhook-id header: the same on every attempt")
    event_type = models.CharField(max_length=64)
    payload = models.JSONField(help_text="the body sent: {type, timestamp, data}")
    status = models.CharField(max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempt_count = models.PositiveIntegerField(default=0, help_text="attempts in this round (redeliver starts one)")
    next_attempt_at = models.DateTimeField(null=True, blank=True, help_text="when a worker may try next (pending)")
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["subscription", "event_id"], name="webhook_delivery_once_per_event"),
            models.CheckConstraint(
                condition=~models.Q(status="pending") | models.Q(next_attempt_at__isnull=False),
                name="webhook_delivery_pending_has_time",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due"),
            models.Index(fields=["subscription", "-created_at"], name="webhook_delivery_log"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} to {self.subscription_id} ({self.status})"


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempts")
    attempted_at = models.DateTimeField(default=timezone.now)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True, help_text="null: no answer")
    duration_ms = models.PositiveIntegerField(default=0)
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        indexes = [models.Index(fields=["delivery", "attempted_at"], name="webhook_attempt_log")]

    def __str__(self) -> str:
        return f"attempt of {self.delivery_id} at {self.attempted_at:%Y-%m-%d %H:%M:%S}: {self.status_code}"
