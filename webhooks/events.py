"""The webhook event types and the event a subscription and the hub receive. The other
apps publish domain events on core's event bus (core/events.py); webhooks/subscribers.py
turns each into a webhook event with `webhooks.services.fanout.publish`, which fans out
after the current transaction commits (at once outside one; never for a rolled-back
change), to the owner's webhook subscriptions and to the real-time hub.

Event types (DESIGN.md): project.status_changed (data: the project status view),
job.succeeded, job.failed (data: the job), export.ready (data: the export file entry),
wallet.low_balance (data: the wallet view), wallet.top_up_confirmed (data: the top-up view).
Data is the API's own JSON (camelCase), so a webhook body and a hub message carry exactly
what the matching GET would answer.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils import timezone
from rest_framework.utils.encoders import JSONEncoder

PROJECT_STATUS_CHANGED = "project.status_changed"
JOB_SUCCEEDED = "job.succeeded"
JOB_FAILED = "job.failed"
EXPORT_READY = "export.ready"
WALLET_LOW_BALANCE = "wallet.low_balance"
WALLET_TOP_UP_CONFIRMED = "wallet.top_up_confirmed"
EVENT_TYPES = (
    PROJECT_STATUS_CHANGED,
    JOB_SUCCEEDED,
    JOB_FAILED,
    EXPORT_READY,
    WALLET_LOW_BALANCE,
    WALLET_TOP_UP_CONFIRMED,
)


@dataclass(frozen=True)
class Event:
    type: str
    owner_id: uuid.UUID
    data: dict[str, Any]  # camelCase JSON
    project_id: uuid.UUID | None = None
    id: str = field(default_factory=lambda: f"evt_{uuid.uuid4().hex}")
    timestamp: datetime = field(default_factory=timezone.now)

    def envelope(self) -> dict[str, Any]:
        """The body a webhook receives and the message a hub client gets: {type, timestamp, data}."""
        return {"type": self.type, "timestamp": self.timestamp.isoformat(), "data": self.data}


def json_safe(data: Any) -> Any:
    """Plain JSON types only (Decimal to number, UUID and times to strings), as the API
    renders them: what a webhook body and a channel-layer message can carry."""
    return json.loads(json.dumps(data, cls=JSONEncoder))
