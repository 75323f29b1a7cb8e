"""The hub's websocket at /v1/hub (docs/hub.md): a signed-in client receives the events
of its own account's books as `{type, id, timestamp, data}` messages, asks for a book's
current status by subscribing to it, and can ping.

Client messages: {"type": "subscribe", "projectId": ...} (answered with a project.status
message carrying the status view, or an error), {"type": "unsubscribe", "projectId": ...}
(answered with unsubscribed), {"type": "ping"} (answered with pong).

A connection lasts no longer than its credential: it is closed with 4401 when its API key
is revoked or its JWT voided by a password change (told through the channel layer,
webhooks/receivers.py), when the credential expires (a timer), and when a check finds the
credential no longer good: at each `subscribe` and every HUB_CREDENTIAL_RECHECK_SECONDS,
which make up for an announcement that was lost.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections import deque
from datetime import datetime
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.utils import timezone
from djangorestframework_camel_case.util import camelize

from core.errors import NotFound
from projects.api.serializers import StatusViewSerializer
from projects.selectors.projects import project_get_for_owner
from projects.selectors.status import status_view_for
from webhooks.api.hub_auth import (
    CLOSE_UNAUTHENTICATED,
    HubIdentity,
    HubRefused,
    hub_authenticate,
    hub_origin_check,
)
from webhooks.events import json_safe
from webhooks.services.hub import HUB_EVENT, api_key_group, jwt_group, owner_group, project_group

logger = logging.getLogger(__name__)

PROJECT_STATUS = "project.status"
# A connection follows at most this many books at once (each one is a group membership
# kept in the channel layer).
MAX_SUBSCRIPTIONS = 500
# Event ids remembered to drop the second copy of an event that reaches a connection
# through both its owner's group and a book's group.
RECENT_EVENT_IDS = 256


def project_status_message(*, identity: HubIdentity, project_id: str) -> dict[str, Any]:
    """The project.status message of the caller's book: the status view as
    GET /v1/projects/{id}/status renders it. Anyone else's book is NotFound."""
    project = project_get_for_owner(owner=identity.user, project_id=project_id)
    view = StatusViewSerializer(status_view_for(project=project)).data
    return {"type": PROJECT_STATUS, "data": json_safe(camelize(view))}


def error_message(code: str, detail: str, **extra: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"code": code, "detail": detail, **extra}}


def identity_groups(identity: HubIdentity) -> list[str]:
    """The groups a connection is in from its accept: its account's, and its credential's
    (the API key's own, or the account's JWT connections')."""
    credential = api_key_group(identity.api_key.pk) if identity.api_key is not None else jwt_group(identity.user.pk)
    return [owner_group(identity.user.pk), credential]


class HubConsumer(AsyncJsonWebsocketConsumer):
    identity: HubIdentity | None = None
    closing = False  # the close is sent: nothing more goes out

    async def connect(self) -> None:
        self.subscriptions: set[str] = set()
        # The last RECENT_EVENT_IDS events sent, in order and as a set (looked up for every
        # event to every connection).
        self.recent_event_ids: deque[str] = deque()
        self.recent_event_id_set: set[str] = set()
        self.watch_task: asyncio.Task[None] | None = None
        try:
            hub_origin_check(self.scope)
            identity = await database_sync_to_async(hub_authenticate)(self.scope)
        except HubRefused as refused:
            # Accepted first so that the close code reaches the client: a close before the
            # accept turns into a bare HTTP 403 of the handshake.
            await self.accept()
            await self.close(code=refused.close_code, reason=refused.reason)
            return
        for group in identity_groups(identity):
            await self.channel_layer.group_add(group, self.channel_name)
        self.identity = identity
        await self.accept()
        self.watch_task = asyncio.create_task(self._watch_credential(identity))

    async def disconnect(self, code: int) -> None:
        if self.watch_task is not None:
            self.watch_task.cancel()
        if self.identity is None:
            return
        for group in [*identity_groups(self.identity), *self.subscriptions]:
            await self.channel_layer.group_discard(group, self.channel_name)
        self.subscriptions.clear()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        if self.identity is None or self.closing:  # refused or ended, and the close is on its way
            return
        try:
            content = json.loads(text_data) if text_data is not None else None
        except ValueError:
            content = None
        if not isinstance(content, dict) or not isinstance(content.get("type"), str):
            await self.send_json(error_message("invalid_message", 'Send a JSON object with a "type".'))
            return
        await self.receive_json(content)

    async def receive_json(self, content: dict[str, Any], **kwargs: Any) -> None:
        message_type = content["type"]
        if message_type == "ping":
            await self.send_json({"type": "pong", "data": {}})
        elif message_type == "subscribe":
            await self._subscribe(content.get("projectId"))
        elif message_type == "unsubscribe":
            await self._unsubscribe(content.get("projectId"))
        else:
            await self.send_json(
                error_message("unknown_type", "Known types: subscribe, unsubscribe, ping.", type=message_type[:100])
            )

    async def dispatch(self, message: dict[str, Any]) -> None:
        """An event of the bus goes straight to `hub_event`: it touches no database, so it
        skips Channels' closing of old database connections, a hop to a worker thread for
        every message to every connection (what limited the fan-out, bench/bench_api.py).
        Everything else is dispatched as Channels does it."""
        if message.get("type") == HUB_EVENT:
            await self.hub_event(message)
        else:
            await super().dispatch(message)

    async def hub_event(self, message: dict[str, Any]) -> None:
        """An event of the bus (webhooks.services.hub.hub_broadcast), sent on once per
        connection as the JSON text it was encoded to once."""
        event_id = message["id"]
        if self.closing or event_id in self.recent_event_id_set:
            return
        if len(self.recent_event_ids) == RECENT_EVENT_IDS:
            self.recent_event_id_set.discard(self.recent_event_ids.popleft())
        self.recent_event_ids.append(event_id)
        self.recent_event_id_set.add(event_id)
        await self.send(text_data=message["text"])

    async def hub_close(self, message: dict[str, Any]) -> None:
        """The account's access ended (webhooks.services.hub.hub_owner_disconnect): close with the
        code and reason given."""
        await self._end(code=message["code"], reason=message["reason"])

    async def hub_credential_check(self, message: dict[str, Any]) -> None:
        """The connection's credential may have been revoked (webhooks.services.hub.hub_credential_check):
        check it again, and close if it no longer holds. Messages are handled one at a
        time, so no event sent after the revocation goes out before this closes."""
        await self._credential_holds()

    async def _subscribe(self, project_id: object) -> None:
        assert self.identity is not None
        if not await self._credential_holds():
            return
        if not isinstance(project_id, str):
            await self.send_json(error_message("validation_error", "projectId: a project id is required."))
            return
        try:
            status = await database_sync_to_async(project_status_message)(identity=self.identity, project_id=project_id)
        except NotFound:
            await self.send_json(error_message("not_found", "No such project.", projectId=project_id[:100]))
            return
        group = project_group(status["data"]["projectId"])
        if group not in self.subscriptions:
            if len(self.subscriptions) >= MAX_SUBSCRIPTIONS:
                await self.send_json(
                    error_message(
                        "too_many_subscriptions",
                        f"A connection follows at most {MAX_SUBSCRIPTIONS} books; unsubscribe from one first.",
                        projectId=project_id,
                    )
                )
                return
            await self.channel_layer.group_add(group, self.channel_name)
            self.subscriptions.add(group)
        await self.send_json(status)

    async def _unsubscribe(self, project_id: object) -> None:
        try:
            group = project_group(str(project_id))
        except ValueError:
            await self.send_json(error_message("not_found", "No such project.", projectId=str(project_id)[:100]))
            return
        if group in self.subscriptions:
            await self.channel_layer.group_discard(group, self.channel_name)
            self.subscriptions.discard(group)
        await self.send_json({"type": "unsubscribed", "data": {"projectId": project_id}})

    async def _credential_holds(self) -> bool:
        """Whether the connection's credential is still good, as the API would judge it
        now (one database read); if not, the connection is closed with the refusal's code
        and reason (4401 api_key_revoked, token_revoked, account_disabled, ...)."""
        if self.closing:
            return False
        try:
            await database_sync_to_async(hub_authenticate)(self.scope)
        except HubRefused as refused:
            await self._end(code=refused.close_code, reason=refused.reason)
            return False
        return True

    async def _watch_credential(self, identity: HubIdentity) -> None:
        """Closes the connection when its credential expires (a JWT's 12 hours, a key's
        expiry), and checks the credential again every HUB_CREDENTIAL_RECHECK_SECONDS (less
        a random part, so that connections opened together do not all check at once)."""
        interval = max(1.0, float(settings.HUB_CREDENTIAL_RECHECK_SECONDS))
        while True:
            wait = interval * random.uniform(0.75, 1.0)  # noqa: S311  (spreading load, not a secret)
            if identity.expires_at is not None and _seconds_until(identity.expires_at) <= wait:
                await asyncio.sleep(max(0.0, _seconds_until(identity.expires_at)))
                reason = "api_key_expired" if identity.api_key is not None else "token_expired"
                await self._end(code=CLOSE_UNAUTHENTICATED, reason=reason)
                return
            await asyncio.sleep(wait)
            try:
                if not await self._credential_holds():
                    return
            except Exception:  # the database away: keep the connection, check again later
                logger.warning("a hub connection could not check its credential", exc_info=True)

    async def _end(self, *, code: int, reason: str) -> None:
        """Closes the connection once; nothing is sent after."""
        if self.closing:
            return
        self.closing = True
        await self.close(code=code, reason=reason)


def _seconds_until(moment: datetime) -> float:
    return (moment - timezone.now()).total_seconds()
