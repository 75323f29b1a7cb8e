"""The webhook event types and their fan-out. The other apps publish domain events on
core's event bus (core/events.py); webhooks/subscribers.py turns each into a webhook event
here with `publish`, which fans out after the current transaction commits (at once
outside one; never for a rolled-back change), to the owner's webhook subscriptions and to
the real-time hub.

Event types (DESIGN.md): project.status_changed (data: the project status view),
job.succeeded, job.failed (data: the job), export.ready (data: the export file entry),
wallet.low_balance (data: the wallet view), wallet.top_up_confirmed (data: the top-up view).
Data is the API's own JSON (camelCase), so a webhook body and a hub message carry exactly
what the matching GET would answer.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone
from djangorestframework_camel_case.util import camelize
from rest_framework.utils.encoders import JSONEncoder

logger = logging.getLogger(__name__)

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


# The sinks an event fans out to, by dotted path (each a callable taking the Event).
SINKS = (
    "webhooks.deliveries.deliveries_for_event",
    "webhooks.hub.hub_broadcast",
)


def publish(
    event_type: str,
    *,
    owner_id: uuid.UUID | None,
    data: dict[str, Any] | Callable[[], dict[str, Any]],
    project_id: uuid.UUID | None = None,
) -> None:
    """Publishes an event once the current transaction commits (at once outside one).
    `data` may be a function: it is called after the commit, so that a view composed from
    the database (the status view) shows the committed state. Snake_case keys are
    camelized. An event of no owner is dropped (nobody could receive it)."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    if owner_id is None:
        return

    def fan_out() -> None:
        try:
            payload = data() if callable(data) else data
        except Exception:
            logger.exception("event %s of owner %s: its data could not be composed", event_type, owner_id)
            return
        event = Event(type=event_type, owner_id=owner_id, project_id=project_id, data=json_safe(camelize(payload)))
        for path in SINKS:
            try:
                _sink(path)(event)
            except Exception:  # one sink failing must not starve the others
                logger.exception("event %s (%s) could not be handed to %s", event.id, event.type, path)

    transaction.on_commit(fan_out)


def json_safe(data: Any) -> Any:
    """Plain JSON types only (Decimal to number, UUID and times to strings), as the API
    renders them: what a webhook body and a channel-layer message can carry."""
    return json.loads(json.dumps(data, cls=JSONEncoder))


def _sink(path: str) -> Callable[[Event], object]:
    from django.utils.module_loading import import_string

    sink: Callable[[Event], object] = import_string(path)
    return sink
