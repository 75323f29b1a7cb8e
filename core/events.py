"""The in-process event bus: how a lower app tells the apps above it that something
happened, without importing them (Zulip's `send_event_on_commit`; STYLE.md "Events go
through one bus in core").

An app declares its events as frozen dataclasses subclassing `DomainEvent` in its own
`events.py` (accounts: an account closing, a key revoked, a password changed; wallet: credit
landed, spending room grew, a top-up confirmed, a low balance; projects: a status changed, a
job finished; exports: a file ready). It publishes them from its services with `publish`,
inside the transaction that made the change. Apps above subscribe in their
`AppConfig.ready()` with `subscribe`:

- `on_commit` handlers (the default) run after the publishing transaction commits, at once
  outside one, never for a rolled-back change. A handler that raises is logged and does not
  stop the others: what was committed stays committed (a missed resume or webhook is caught
  up by the next event or the owner's next call).
- `in_transaction` handlers run inside the publisher's transaction, before `publish`
  returns; one that raises refuses the change (the transaction rolls back). Only for
  events that ask each app to end what it holds (an account closing).

Subscribing the same handler twice for the same event is a no-op, as is publishing an event
nobody subscribed to.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import partial
from typing import Any, TypeVar

from django.db import transaction

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DomainEvent:
    """Base of every event; subclasses are frozen dataclasses of ids and plain values."""


class Phase(Enum):
    ON_COMMIT = "on_commit"
    IN_TRANSACTION = "in_transaction"


E = TypeVar("E", bound=DomainEvent)
Handler = Callable[[Any], None]

_SUBSCRIBERS: dict[type[DomainEvent], list[tuple[Phase, Handler]]] = {}


def subscribe(event_type: type[E], handler: Callable[[E], None], *, phase: Phase = Phase.ON_COMMIT) -> None:
    """Calls `handler(event)` for every `event_type` published from now on (idempotent)."""
    subscribers = _SUBSCRIBERS.setdefault(event_type, [])
    if (phase, handler) not in subscribers:
        subscribers.append((phase, handler))


def unsubscribe(event_type: type[E], handler: Callable[[E], None]) -> None:
    """Stops calling `handler` for `event_type` (whatever its phase); a no-op if it was not subscribed."""
    _SUBSCRIBERS[event_type] = [entry for entry in _SUBSCRIBERS.get(event_type, ()) if entry[1] != handler]


def subscribers_of(event_type: type[DomainEvent]) -> list[tuple[Phase, Handler]]:
    """The handlers an event of this type reaches, in subscription order (for operators'
    and tests' introspection)."""
    return list(_SUBSCRIBERS.get(event_type, ()))


def publish(event: DomainEvent) -> None:
    """Hands `event` to its subscribers: in-transaction ones now (an exception propagates and
    refuses the change), on-commit ones after the current transaction commits."""
    for phase, handler in subscribers_of(type(event)):
        if phase is Phase.IN_TRANSACTION:
            handler(event)
        else:
            transaction.on_commit(partial(_deliver, handler, event))


def _deliver(handler: Handler, event: DomainEvent) -> None:
    try:
        handler(event)
    except Exception:  # one subscriber failing must not starve the others or undo the commit
        logger.exception("event %s could not be handled by %s", type(event).__name__, _name(handler))


def _name(handler: Handler) -> str:
    return f"{getattr(handler, '__module__', '?')}.{getattr(handler, '__qualname__', repr(handler))}"
