"""The hub's websocket consumer, driven in this process through an ASGI communicator on
Channels' in-memory layer: who may connect, what a client receives, and what it may ask
for. The same behaviour over a real server, Redis and worker: test_hub_server.py.

Transactional: the consumer reads the database through database_sync_to_async, which
closes connections that are inside a transaction."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from asgiref.testing import ApplicationCommunicator
from channels.routing import URLRouter
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

from accounts.models import ApiKey, User
from accounts.services.api_keys import api_key_create, api_key_revoke
from accounts.services.users import token_issue
from config.websockets import websocket_urlpatterns
from projects.events import status_changed_publish
from projects.models import Project
from tests.factories import DEFAULT_PASSWORD, ProjectFactory, UserFactory, pages_add
from webhooks.api.hub_auth import redacted
from webhooks.events import JOB_SUCCEEDED, PROJECT_STATUS_CHANGED, WALLET_LOW_BALANCE, Event
from webhooks.services.fanout import publish
from webhooks.services.hub import hub_broadcast

pytestmark = pytest.mark.django_db(transaction=True)

application = URLRouter(websocket_urlpatterns)
DEADLINE = 10  # seconds a receive may wait before the test fails (a hang guard, not a timing check)


class WebsocketCommunicator(ApplicationCommunicator):
    """A websocket client of the ASGI application in this process (channels.testing's own
    needs daphne, which this project does not install)."""

    def __init__(self, path: str, headers: list[tuple[bytes, bytes]]) -> None:
        parsed = urlsplit(path)
        scope = {"type": "websocket", "path": parsed.path, "query_string": parsed.query.encode(), "headers": headers}
        super().__init__(application, scope)

    async def connect(self, timeout: float) -> tuple[bool, Any]:
        await self.send_input({"type": "websocket.connect"})
        response = await self.receive_output(timeout)
        return response["type"] == "websocket.accept", response

    async def send_to(self, *, text_data: str) -> None:
        await self.send_input({"type": "websocket.receive", "text": text_data})

    async def send_json_to(self, data: object) -> None:
        await self.send_to(text_data=json.dumps(data))

    async def receive_json_from(self, timeout: float) -> Any:
        """The next message from the server; anything else (a close) as the ASGI event itself."""
        output = await self.receive_output(timeout)
        return json.loads(output["text"]) if output["type"] == "websocket.send" else output

    async def disconnect(self, code: int = 1000) -> None:
        await self.send_input({"type": "websocket.disconnect", "code": code})
        await self.wait(DEADLINE)


@pytest.fixture(autouse=True)
def _in_memory_channel_layer(settings) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def run(scenario: Awaitable[None]) -> None:
    async def main() -> None:
        await scenario

    async_to_sync(main)()


def hub(*, headers: dict[str, str] | None = None, query: str = "") -> WebsocketCommunicator:
    raw = [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    return WebsocketCommunicator(f"/v1/hub{query}", headers=raw)


def bearer(user: User) -> dict[str, str]:
    return {"Authorization": f"Bearer {token_issue(user=user).token}"}


async def assert_refused(communicator: WebsocketCommunicator, *, code: int, reason: str) -> None:
    """The handshake completes, then the server closes with `code` before sending anything."""
    connected, _ = await communicator.connect(timeout=DEADLINE)
    assert connected
    closing = await communicator.receive_output(timeout=DEADLINE)
    assert closing == {"type": "websocket.close", "code": code, "reason": reason}


async def assert_open(communicator: WebsocketCommunicator) -> None:
    """Connected and answering: a ping gets a pong."""
    connected, _ = await communicator.connect(timeout=DEADLINE)
    assert connected
    await communicator.send_json_to({"type": "ping"})
    assert await communicator.receive_json_from(timeout=DEADLINE) == {"type": "pong", "data": {}}


async def hub_opened(user: User) -> WebsocketCommunicator:
    """A connection with the user's JWT, open and answering."""
    communicator = hub(headers=bearer(user))
    await assert_open(communicator)
    return communicator


async def assert_next_is_marker(communicator: WebsocketCommunicator, marker: str) -> None:
    """The next message is the marker event: nothing arrived before it. A connection's
    messages come in the order they were sent, so what was published before the marker
    and did not arrive first never will."""
    message = await communicator.receive_json_from(timeout=DEADLINE)
    assert (message["type"], message["data"]) == (WALLET_LOW_BALANCE, {"marker": marker}), message


async def hub_subscribed(book: Project) -> WebsocketCommunicator:
    """A connection with the book's owner's JWT, subscribed to the book (its status view
    answered)."""
    communicator = await hub_opened(book.owner)
    await communicator.send_json_to({"type": "subscribe", "projectId": str(book.pk)})
    assert (await communicator.receive_json_from(timeout=DEADLINE))["type"] == "project.status"
    return communicator


def marker_publish(user: User, marker: str) -> None:
    publish(WALLET_LOW_BALANCE, owner_id=user.pk, data={"marker": marker})


# --- Who may connect ----------------------------------------------------------------------


def test_a_connection_without_a_credential_is_closed_with_4401():
    run(assert_refused(hub(), code=4401, reason="not_authenticated"))


@pytest.mark.parametrize(
    ("credential", "reason"),
    [
        ("not-a-token", "credential_malformed"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "token_invalid"),
        ("svc_sk_live_0000", "credential_malformed"),
    ],
)
def test_a_bad_credential_is_closed_with_4401_and_the_api_problem_code(credential, reason):
    run(assert_refused(hub(headers={"Authorization": f"Bearer {credential}"}), code=4401, reason=reason))
    run(assert_refused(hub(query=f"?access_token={credential}"), code=4401, reason=reason))


def test_an_expired_jwt_and_a_revoked_key_are_closed_with_4401():
    user = UserFactory()
    expired = AccessToken.for_user(user)
    expired.set_exp(lifetime=timedelta(seconds=-1))
    key, secret = api_key_create(user=user, name="hub")
    api_key_revoke(key=key)

    run(assert_refused(hub(query=f"?access_token={expired}"), code=4401, reason="token_expired"))
    run(assert_refused(hub(headers={"X-Api-Key": secret}), code=4401, reason="api_key_revoked"))


def test_a_key_without_a_read_scope_is_closed_with_4403():
    user = UserFactory()
    key, secret = api_key_create(user=user, name="hub")
    ApiKey.objects.filter(pk=key.pk).update(scopes=[])  # a key of none of today's scopes

    run(assert_refused(hub(headers={"X-Api-Key": secret}), code=4403, reason="forbidden"))


def test_a_page_on_an_origin_the_api_does_not_allow_is_closed_with_4403(settings):
    settings.CORS_ALLOWED_ORIGINS = ["https://app.example.org"]
    user = UserFactory()
    credential = {**bearer(user), "Host": "api.example.org"}

    run(
        assert_refused(
            hub(headers={**credential, "Origin": "https://evil.example.net"}), code=4403, reason="origin_not_allowed"
        )
    )
    run(assert_open(hub(headers={**credential, "Origin": "https://app.example.org"})))
    run(assert_open(hub(headers={**credential, "Origin": "https://api.example.org"})))  # the service's own page
    run(assert_open(hub(headers=credential)))  # a program sends no Origin


@pytest.mark.parametrize("form", ["jwt header", "jwt query", "key bearer", "key x-api-key", "key query"])
def test_every_credential_form_of_the_api_is_accepted(form):
    user = UserFactory()
    jwt = token_issue(user=user).token
    _, secret = api_key_create(user=user, name="hub", scopes=["projects:read"])
    communicator = {
        "jwt header": lambda: hub(headers={"Authorization": f"Bearer {jwt}"}),
        "jwt query": lambda: hub(query=f"?access_token={jwt}"),
        "key bearer": lambda: hub(headers={"Authorization": f"Bearer {secret}"}),
        "key x-api-key": lambda: hub(headers={"X-Api-Key": secret}),
        "key query": lambda: hub(query=f"?access_token={secret}"),
    }[form]()

    async def scenario() -> None:
        await assert_open(communicator)
        await communicator.disconnect()

    run(scenario())


def test_a_connection_is_closed_when_its_jwt_expires():
    user = UserFactory()
    short = AccessToken.for_user(user)
    short.set_exp(lifetime=timedelta(seconds=1))

    async def scenario() -> None:
        communicator = hub(query=f"?access_token={short}")
        await assert_open(communicator)
        closing = await communicator.receive_output(timeout=DEADLINE)
        assert closing == {"type": "websocket.close", "code": 4401, "reason": "token_expired"}

    run(scenario())


# --- A connection ends with its credential --------------------------------------------------


def revoke_through_the_api(owner: User, key: ApiKey) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=bearer(owner)["Authorization"])
    return client.delete(f"/v1/api-keys/{key.pk}").status_code


def test_revoking_a_key_closes_the_connections_opened_with_it_and_no_other():
    ada = UserFactory()
    revoked, secret = api_key_create(user=ada, name="revoked", scopes=["projects:read"])
    _, other_secret = api_key_create(user=ada, name="kept", scopes=["projects:read"])

    async def scenario() -> None:
        by_revoked, by_other, by_jwt = (
            hub(headers={"X-Api-Key": secret}),
            hub(headers={"X-Api-Key": other_secret}),
            hub(headers=bearer(ada)),
        )
        for communicator in (by_revoked, by_other, by_jwt):
            await assert_open(communicator)
        assert await sync_to_async(revoke_through_the_api)(ada, revoked) == 204
        await sync_to_async(marker_publish)(ada, "after")
        closing = await by_revoked.receive_output(timeout=DEADLINE)
        assert closing == {"type": "websocket.close", "code": 4401, "reason": "api_key_revoked"}
        assert await by_revoked.receive_nothing(timeout=0.2)  # not the event sent after
        for communicator in (by_other, by_jwt):
            await assert_next_is_marker(communicator, "after")
            await communicator.disconnect()

    run(scenario())


def test_revoking_a_key_again_closes_what_a_lost_first_announcement_left_open():
    ada = UserFactory()
    key, secret = api_key_create(user=ada, name="hub", scopes=["projects:read"])

    async def scenario() -> None:
        communicator = hub(headers={"X-Api-Key": secret})
        await assert_open(communicator)
        # Committed without its announcement, as when the revoking process dies in between.
        await sync_to_async(ApiKey.objects.filter(pk=key.pk).update)(revoked_at=timezone.now())
        await assert_open_still(communicator)  # nobody told it, and a ping checks nothing
        assert await sync_to_async(revoke_through_the_api)(ada, key) == 204
        closing = await communicator.receive_output(timeout=DEADLINE)
        assert closing == {"type": "websocket.close", "code": 4401, "reason": "api_key_revoked"}

    run(scenario())


def test_a_password_change_closes_the_accounts_jwt_connections_only():
    ada, bob = UserFactory(), UserFactory()
    _, secret = api_key_create(user=ada, name="hub", scopes=["projects:read"])

    def password_change() -> int:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=bearer(ada)["Authorization"])
        body = {"currentPassword": DEFAULT_PASSWORD, "newPassword": "a-new-and-longer-passphrase"}
        return client.post("/v1/me/password", body, format="json").status_code

    async def scenario() -> None:
        header, query = hub(headers=bearer(ada)), hub(query=f"?access_token={token_issue(user=ada).token}")
        by_key, bobs = hub(headers={"X-Api-Key": secret}), hub(headers=bearer(bob))
        for communicator in (header, query, by_key, bobs):
            await assert_open(communicator)
        assert await sync_to_async(password_change)() == 200
        for communicator in (header, query):
            closing = await communicator.receive_output(timeout=DEADLINE)
            assert closing == {"type": "websocket.close", "code": 4401, "reason": "token_revoked"}
        for communicator in (by_key, bobs):
            await assert_open_still(communicator)
            await communicator.disconnect()

    run(scenario())


def test_a_credential_voided_without_an_announcement_is_found_by_the_periodic_recheck(settings):
    settings.HUB_CREDENTIAL_RECHECK_SECONDS = 1
    ada = UserFactory()

    async def scenario() -> None:
        communicator = await hub_opened(ada)
        # An operator disables the account in the admin: no service announces that.
        await sync_to_async(User.objects.filter(pk=ada.pk).update)(is_active=False)
        closing = await communicator.receive_output(timeout=DEADLINE)
        assert closing == {"type": "websocket.close", "code": 4401, "reason": "account_disabled"}

    run(scenario())


def test_subscribing_with_a_revoked_key_closes_the_connection_instead_of_answering():
    ada = UserFactory()
    book = ProjectFactory(owner=ada)
    key, secret = api_key_create(user=ada, name="hub", scopes=["projects:read"])

    async def scenario() -> None:
        communicator = hub(headers={"X-Api-Key": secret})
        await assert_open(communicator)
        await sync_to_async(ApiKey.objects.filter(pk=key.pk).update)(revoked_at=timezone.now())
        await communicator.send_json_to({"type": "subscribe", "projectId": str(book.pk)})
        closing = await communicator.receive_output(timeout=DEADLINE)
        assert closing == {"type": "websocket.close", "code": 4401, "reason": "api_key_revoked"}

    run(scenario())


# --- What a client receives ---------------------------------------------------------------


def test_each_client_receives_only_its_own_accounts_events():
    ada, bob = UserFactory(), UserFactory()
    adas_book = ProjectFactory(owner=ada)

    async def scenario() -> None:
        ada_hub, bob_hub = hub(headers=bearer(ada)), hub(headers=bearer(bob))
        await assert_open(ada_hub)
        await assert_open(bob_hub)

        await sync_to_async(publish)(
            JOB_SUCCEEDED, owner_id=ada.pk, project_id=adas_book.pk, data={"id": "job-1", "status": "Succeeded"}
        )
        event = await ada_hub.receive_json_from(timeout=DEADLINE)
        assert (event["type"], event["data"]) == (JOB_SUCCEEDED, {"id": "job-1", "status": "Succeeded"})
        assert event["id"].startswith("evt_")
        assert event["timestamp"]

        await sync_to_async(marker_publish)(bob, "bob-1")
        await assert_next_is_marker(bob_hub, "bob-1")
        await ada_hub.disconnect()
        await bob_hub.disconnect()

    run(scenario())


def test_an_event_of_a_subscribed_book_arrives_once():
    ada = UserFactory()
    book = ProjectFactory(owner=ada)

    async def scenario() -> None:
        communicator = await hub_subscribed(book)

        await sync_to_async(publish)(PROJECT_STATUS_CHANGED, owner_id=ada.pk, project_id=book.pk, data={"n": 1})
        await sync_to_async(marker_publish)(ada, "after")
        event = await communicator.receive_json_from(timeout=DEADLINE)
        assert (event["type"], event["data"]) == (PROJECT_STATUS_CHANGED, {"n": 1})
        await assert_next_is_marker(communicator, "after")
        await communicator.disconnect()

    run(scenario())


def test_a_status_change_made_in_a_transaction_arrives_after_the_commit_with_the_status_view():
    ada = UserFactory()
    book = ProjectFactory(owner=ada)
    pages_add(book, 3)

    def change_status() -> None:
        with transaction.atomic():
            Project.objects.filter(pk=book.pk).update(approval_count=1)
            status_changed_publish(project_id=book.pk, owner_id=ada.pk)

    async def scenario() -> None:
        communicator = await hub_opened(ada)
        await sync_to_async(change_status)()
        event = await communicator.receive_json_from(timeout=DEADLINE)
        assert event["type"] == PROJECT_STATUS_CHANGED
        assert event["data"]["projectId"] == str(book.pk)
        progress = event["data"]["progress"]
        assert (progress["translatedPages"], progress["totalPages"], progress["rung"]) == (0, 3, 1)
        await communicator.disconnect()

    run(scenario())


# --- What a client may ask ----------------------------------------------------------------


def status_read(user: User, project: Project) -> dict[str, Any]:
    client = APIClient()
    client.credentials(**{"HTTP_AUTHORIZATION": bearer(user)["Authorization"]})
    return client.get(f"/v1/projects/{project.pk}/status").json()


def test_subscribing_to_an_own_book_sends_its_status_view_at_once():
    ada = UserFactory()
    book = ProjectFactory(owner=ada)
    pages_add(book, 2)
    received: list[dict[str, Any]] = []

    async def scenario() -> None:
        communicator = await hub_opened(ada)
        await communicator.send_json_to({"type": "subscribe", "projectId": str(book.pk)})
        received.append(await communicator.receive_json_from(timeout=DEADLINE))
        await communicator.disconnect()

    run(scenario())
    [message] = received
    assert message["type"] == "project.status"
    expected = status_read(ada, book)
    assert {**message["data"], "timestamp": None} == {**expected, "timestamp": None}


def test_subscribing_to_someone_elses_book_or_none_is_not_found():
    ada, bob = UserFactory(), UserFactory()
    bobs_book = ProjectFactory(owner=bob)

    async def scenario() -> None:
        communicator = await hub_opened(ada)
        for project_id in [str(bobs_book.pk), "0b7c6c0e-0000-4000-8000-000000000000", "not-a-uuid"]:
            await communicator.send_json_to({"type": "subscribe", "projectId": project_id})
            error = await communicator.receive_json_from(timeout=DEADLINE)
            assert error["type"] == "error"
            assert (error["data"]["code"], error["data"]["projectId"]) == ("not_found", project_id)

        # Nor does a refused subscription let bob's book's events through.
        await sync_to_async(publish)(PROJECT_STATUS_CHANGED, owner_id=bob.pk, project_id=bobs_book.pk, data={})
        await sync_to_async(marker_publish)(ada, "ada-1")
        await assert_next_is_marker(communicator, "ada-1")
        await communicator.disconnect()

    run(scenario())


def test_unsubscribing_is_acknowledged_and_malformed_messages_get_errors():
    book = ProjectFactory()

    async def scenario() -> None:
        communicator = await hub_subscribed(book)
        await communicator.send_json_to({"type": "unsubscribe", "projectId": str(book.pk)})
        assert await communicator.receive_json_from(timeout=DEADLINE) == {
            "type": "unsubscribed",
            "data": {"projectId": str(book.pk)},
        }

        await communicator.send_to(text_data="{not json")
        assert (await communicator.receive_json_from(timeout=DEADLINE))["data"]["code"] == "invalid_message"
        await communicator.send_json_to(["subscribe"])
        assert (await communicator.receive_json_from(timeout=DEADLINE))["data"]["code"] == "invalid_message"
        await communicator.send_json_to({"type": "shout"})
        assert (await communicator.receive_json_from(timeout=DEADLINE))["data"]["code"] == "unknown_type"
        await communicator.send_json_to({"type": "subscribe"})
        assert (await communicator.receive_json_from(timeout=DEADLINE))["data"]["code"] == "validation_error"
        await assert_open_still(communicator)
        await communicator.disconnect()

    run(scenario())


async def assert_open_still(communicator: WebsocketCommunicator) -> None:
    await communicator.send_json_to({"type": "ping"})
    assert await communicator.receive_json_from(timeout=DEADLINE) == {"type": "pong", "data": {}}


# --- Broadcasting -------------------------------------------------------------------------


def test_broadcasting_never_raises_when_the_hub_cannot_be_reached(settings, caplog):
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:9/0"]},  # the discard port: nothing listens
        }
    }
    user = UserFactory()
    caplog.set_level(logging.ERROR, logger="webhooks.services.hub")

    hub_broadcast(Event(type=WALLET_LOW_BALANCE, owner_id=user.pk, data={}))

    assert "could not be sent to the hub" in caplog.text


def test_broadcasting_to_nobody_is_harmless(caplog):
    caplog.set_level(logging.WARNING, logger="webhooks.services.hub")

    hub_broadcast(Event(type=WALLET_LOW_BALANCE, owner_id=UserFactory().pk, data={"balanceUsd": 1}))

    assert [record for record in caplog.records if record.levelno >= logging.WARNING] == []


def test_access_tokens_are_redacted_from_logged_paths():
    line = redacted('127.0.0.1:5 - "WebSocket /v1/hub?access_token=eyJ.abc.def&x=1" [accepted]')
    assert line == '127.0.0.1:5 - "WebSocket /v1/hub?access_token=[redacted]&x=1" [accepted]'
