from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class IdempotencyRecord(models.Model):
    """The first response to a POST, kept per owner and key so a retry gets it back.

    `key` is the client's Idempotency-Key, or for a request without one an automatic key
    derived from the request (a double-submit within DOUBLE_SUBMIT_WINDOW_SECONDS).
    """

    class State(models.TextChoices):
        IN_PROGRESS = "in_progress"
        COMPLETED = "completed"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=300)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of method, path and body")
    state = models.CharField(max_length=12, choices=State.choices, default=State.IN_PROGRESS)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "key"], name="idempotency_owner_key_unique")]

    def __str__(self) -> str:
        return f"{self.owner_id} {self.key}"
