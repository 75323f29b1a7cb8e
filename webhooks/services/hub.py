"""The real-time hub's sending side: each event fanned out (webhooks/services/fanout.py)
is handed to the websocket clients of its owner (webhooks/api/hub.py).

An event goes to the owner's group and, for an event about a book, to the book's group
too; a client is in its owner's group from the moment it connects, and in a book's group
while it is subscribed to that book. A client in both gets the event once (the consumer
drops the copy by event id).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import BaseChannelLayer, InMemoryChannelLayer, get_channel_layer

from webhooks.events import Event

logger = logging.getLogger(__name__)

# The channel-layer message types; Channels dispatches them to HubConsumer.hub_event,
# HubConsumer.hub_close and HubConsumer.hub_credential_check.
HUB_EVENT = "hub.event"
HUB_CLOSE = "hub.close"
HUB_CREDENTIAL_CHECK = "hub.credential_check"
# The close code of the connections of an account that was deleted (docs/hub.md).
CLOSE_ACCOUNT_DELETED = 4410
# A broadcast waits at most this long for the channel layer (a Redis that stopped
# answering must not hold up the request or task that published the event).
SEND_TIMEOUT_SECONDS = 3.0


def owner_group(owner_id: uuid.UUID | str) -> str:
    """The group every connection of this account is in."""
    return f"owner.{uuid.UUID(str(owner_id)).hex}"


def project_group(project_id: uuid.UUID | str) -> str:
    """The group of the connections subscribed to this book."""
    return f"project.{uuid.UUID(str(project_id)).hex}"


def api_key_group(key_id: uuid.UUID | str) -> str:
    """The group of the connections opened with this API key."""
    return f"api_key.{uuid.UUID(str(key_id)).hex}"


def jwt_group(owner_id: uuid.UUID | str) -> str:
    """The group of this account's connections opened with a JWT."""
    return f"jwt.{uuid.UUID(str(owner_id)).hex}"


def hub_message(event: Event) -> dict[str, Any]:
    """What a client receives for an event: the envelope {type, timestamp, data} and the
    event's id (the same id its webhook delivery carries)."""
    return {"id": event.id, **event.envelope()}


def hub_broadcast(event: Event) -> None:
    """Sends the event to the owner's connections and, for a book's event, to the book's
    subscribers. Never raises: a hub that cannot be reached is logged, and the caller
    (the bus, after the commit) carries on. With nobody listening it costs the channel
    layer's look-up of empty groups."""
    groups = [owner_group(event.owner_id)]
    if event.project_id is not None:
        groups.append(project_group(event.project_id))
    # Encoded once here, as a connection's send_json would encode it, not once per connection.
    message = {"type": HUB_EVENT, "id": event.id, "text": json.dumps(hub_message(event))}
    if not _layer_send(groups, message):
        logger.error("event %s (%s) could not be sent to the hub", event.id, event.type)


def hub_owner_disconnect(*, owner_id: uuid.UUID | str, code: int, reason: str) -> None:
    """Closes every hub connection of the account with this close code and reason (call
    it once the change that ends the account's access has committed). Never raises."""
    if not _layer_send([owner_group(owner_id)], {"type": HUB_CLOSE, "code": code, "reason": reason}):
        logger.error("the hub connections of %s could not be told to close (%s)", owner_id, reason)


def hub_credential_check(*, group: str) -> None:
    """Tells the connections of a credential group (api_key_group, jwt_group) to check
    their credential again now: those whose credential no longer holds close with 4401
    and the API's problem code. Call it once the revocation has committed. Never raises;
    a message that is lost is made up for by each connection's periodic re-check."""
    if not _layer_send([group], {"type": HUB_CREDENTIAL_CHECK}):
        logger.error("the hub connections of %s could not be told to check their credential", group)


def _layer_send(groups: list[str], message: dict[str, Any]) -> bool:
    """Sends the message to the groups through the channel layer; False (logged) when
    the layer could not be reached in SEND_TIMEOUT_SECONDS."""
    try:
        layer = get_channel_layer()
        if layer is None:
            return True
        if isinstance(layer, InMemoryChannelLayer):  # its queues belong to the caller's loop
            async_to_sync(_groups_send)(layer, groups, message)
        else:
            sending = asyncio.run_coroutine_threadsafe(_groups_send(layer, groups, message), _sending_loop())
            sending.result(timeout=SEND_TIMEOUT_SECONDS + 1)
    except Exception:
        logger.exception("the channel layer could not be reached")
        return False
    return True


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
