"""A webhook event fanned out once the transaction that caused it commits: to the owner's
webhook subscriptions (a delivery each) and to the real-time hub."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from django.db import transaction
from djangorestframework_camel_case.util import camelize

from webhooks.events import EVENT_TYPES, Event, json_safe
from webhooks.services.deliveries import deliveries_for_event
from webhooks.services.hub import hub_broadcast

logger = logging.getLogger(__name__)


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
        for sink in (deliveries_for_event, hub_broadcast):
            try:
                sink(event)
            except Exception:  # one sink failing must not starve the others
                logger.exception("event %s (%s) could not be handed to %s", event.id, event.type, sink.__name__)

    transaction.on_commit(fan_out)
