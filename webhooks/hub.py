"""The real-time hub's sending side: a sink of the event bus (webhooks/events.py SINKS)
that hands each event to the websocket clients of its owner (webhooks/consumers.py).

An event goes to the owner's group and, for an event about a book, to the book's group
too; a client is in its owner's group from the moment it connects, and in a book's group
while it is subscribed to that book. A client in both gets the event once (the consumer
drops the copy by event id).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import BaseChannelLayer, InMemoryChannelLayer, get_channel_layer

from webhooks.events import Event

logger = logging.getLogger(__name__)

# The channel-layer message type; Channels dispatches it to HubConsumer.hub_event.
HUB_EVENT = "hub.event"
# A broadcast waits at most this long for the channel layer (a Redis that stopped
# answering must not hold up the request or task that published the event).
SEND_TIMEOUT_SECONDS = 3.0


def owner_group(owner_id: uuid.UUID | str) -> str:
    """The group every connection of this account is in."""
    return f"owner.{uuid.UUID(str(owner_id)).hex}"


def project_group(project_id: uuid.UUID | str) -> str:
    """The group of the connections subscribed to this book."""
    return f"project.{uuid.UUID(str(project_id)).hex}"


def hub_message(event: Event) -> dict[str, Any]:
    """What a client receives for an event: the envelope {type, timestamp, data} and the
    event's id (the same id its webhook delivery carries)."""
    return {"id": event.id, **event.envelope()}


def hub_broadcast(event: Event) -> None:
    """Sends the event to the owner's connections and, for a book's event, to the book's
    subscribers. Never raises: a hub that cannot be reached is logged, and the caller
    (the bus, after the commit) carries on. With nobody listening it costs the channel
    layer's look-up of empty groups."""
    try:
        layer = get_channel_layer()
        if layer is None:
            return
        groups = [owner_group(event.owner_id)]
        if event.project_id is not None:
            groups.append(project_group(event.project_id))
        message = {"type": HUB_EVENT, "event": hub_message(event)}
        if isinstance(layer, InMemoryChannelLayer):  # its queues belong to the caller's loop
            async_to_sync(_groups_send)(layer, groups, message)
        else:
            sending = asyncio.run_coroutine_threadsafe(_groups_send(layer, groups, message), _sending_loop())
            sending.result(timeout=SEND_TIMEOUT_SECONDS + 1)
    except Exception:
        logger.exception("event %s (%s) could not be sent to the hub", event.id, event.type)


_loop_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_loop_pid = 0


def _sending_loop() -> asyncio.AbstractEventLoop:
    """This process's one event loop for broadcasts, running in a daemon thread. Redis's
    channel layer keeps its connections per event loop, and `async_to_sync` called from a
    worker's thread starts a thread, a loop and so a new Redis connection for every event
    (2.5 ms each, bench/bench_api.py); on a loop that lives on they are reused. A forked
    worker process starts its own."""
    global _loop, _loop_pid
    with _loop_lock:
        if _loop is None or _loop_pid != os.getpid():
            _loop, _loop_pid = asyncio.new_event_loop(), os.getpid()
            threading.Thread(target=_loop.run_forever, name="hub-broadcast", daemon=True).start()
        return _loop


async def _groups_send(layer: BaseChannelLayer, groups: list[str], message: dict[str, Any]) -> None:
    async with asyncio.timeout(SEND_TIMEOUT_SECONDS):
        for group in groups:
            await layer.group_send(group, message)
