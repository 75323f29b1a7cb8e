"""The hub over the wire: a real ASGI server process (uvicorn, as `make run` serves it),
a real Celery worker, Redis as the channel layer, and a real websocket client (the
`websockets` package), on this test's PostgreSQL database."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from accounts.services.api_keys import api_key_create
from projects.models import Project
from tests.e2e.processes import Services
from tests.factories import ProjectFactory, UserFactory, pages_add
from tests.support.hub_client import (
    DEADLINE,
    assert_answers_pings,
    hub_connect,
    is_marker,
    jwt,
    marker_publish,
    receive,
    receive_until,
)
from wallet.models import EntryKind
from wallet.services.ledger import wallet_credit
from webhooks.events import WALLET_LOW_BALANCE

pytestmark = [pytest.mark.slow, pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

PAGE_TEXT = "The lamp was lit before the guests arrived, and the house smelled of rain. " * 8


@pytest.fixture
def server(services: Services) -> str:
    """A running API server; its address, host:port."""
    return services.api_server().removeprefix("http://")


def assert_refused(address: str, *, code: int, reason: str, **credential: Any) -> None:
    """The server closes the connection with `code` before sending any message."""
    with hub_connect(address, **credential) as hub, pytest.raises(ConnectionClosed) as closed:
        hub.recv(timeout=DEADLINE)
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (code, reason)


def test_the_hub_takes_the_apis_credentials_and_refuses_anything_else(server: str):
    user = UserFactory()
    _, secret = api_key_create(user=user, name="hub", scopes=["projects:read"])

    assert_refused(server, code=4401, reason="not_authenticated")
    assert_refused(server, code=4401, reason="token_invalid", query="?access_token=a.b.c")
    assert_refused(server, code=4401, reason="credential_malformed", headers={"Authorization": "Bearer nonsense"})
    with hub_connect(server, headers={"X-Api-Key": secret}) as hub:
        assert_answers_pings(hub)
    with hub_connect(server, headers={"Authorization": f"Bearer {secret}"}) as hub:
        assert_answers_pings(hub)
    with hub_connect(server, query=f"?access_token={jwt(user)}") as hub:
        assert_answers_pings(hub)


def test_the_hub_is_served_at_its_address_only(server: str):
    with pytest.raises(InvalidStatus):
        connect(f"ws://{server}/v1/elsewhere", proxy=None, open_timeout=DEADLINE)


def test_subscribing_answers_with_the_status_view_of_an_own_book_only(server: str):
    ada, bob = UserFactory(), UserFactory()
    adas_book, bobs_book = ProjectFactory(owner=ada), ProjectFactory(owner=bob)
    pages_add(adas_book, 2)
    status_read = httpx.get(
        f"http://{server}/v1/projects/{adas_book.pk}/status", headers={"Authorization": f"Bearer {jwt(ada)}"}
    )
    assert status_read.status_code == 200

    with hub_connect(server, query=f"?access_token={jwt(ada)}") as hub:
        hub.send(json.dumps({"type": "subscribe", "projectId": str(bobs_book.pk)}))
        refused = receive(hub)
        hub.send(json.dumps({"type": "subscribe", "projectId": str(adas_book.pk)}))
        status = receive(hub)

    assert (refused["type"], refused["data"]["code"]) == ("error", "not_found")
    assert status["type"] == "project.status"
    assert {**status["data"], "timestamp": None} == {**status_read.json(), "timestamp": None}


def test_two_users_each_see_only_their_own_books_as_a_worker_translates_them(server: str, services: Services):
    services.worker("worker")
    ada, bob = UserFactory(), UserFactory()
    books: dict[str, Project] = {}
    for name, owner in (("ada", ada), ("bob", bob)):
        wallet_credit(user=owner, amount=Decimal(5), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id=name)
        books[name] = ProjectFactory(owner=owner)
        pages_add(books[name], 3, text_layer=PAGE_TEXT, has_text_layer=True)

    def complete(name: str) -> Callable[[dict[str, Any]], bool]:
        project_id = str(books[name].pk)
        return lambda message: (
            message["type"] == "project.status_changed"
            and message["data"]["projectId"] == project_id
            and message["data"]["state"] == "Complete"
        )

    with (
        hub_connect(server, query=f"?access_token={jwt(ada)}") as ada_hub,
        hub_connect(server, headers={"Authorization": f"Bearer {jwt(bob)}"}) as bob_hub,
    ):
        assert_answers_pings(ada_hub)  # both connections are in their owner's group from here on
        assert_answers_pings(bob_hub)
        for name, owner in (("ada", ada), ("bob", bob)):
            started = httpx.post(
                f"http://{server}/v1/projects/{books[name].pk}/process",
                headers={"Authorization": f"Bearer {jwt(owner)}"},
                timeout=30,
            )
            assert started.status_code == 202, started.text

        seen = {"ada": receive_until(ada_hub, complete("ada")), "bob": receive_until(bob_hub, complete("bob"))}
        # Anything of the other's still on its way would arrive before these markers.
        marker_publish(ada, "ada-end")
        marker_publish(bob, "bob-end")
        seen["ada"] += receive_until(ada_hub, is_marker("ada-end"))
        seen["bob"] += receive_until(bob_hub, is_marker("bob-end"))

    for name in ("ada", "bob"):
        book_events = [message for message in seen[name] if message["type"] != WALLET_LOW_BALANCE]
        states = [m["data"]["state"] for m in book_events if m["type"] == "project.status_changed"]
        assert states[-1] == "Complete", states
        assert "Processing" in states, states
        assert {m["type"] for m in book_events} >= {"project.status_changed", "job.succeeded"}
        own = str(books[name].pk)
        assert {m["data"].get("projectId", own) for m in book_events} == {own}, book_events
        assert all(m["id"].startswith("evt_") and m["timestamp"] for m in book_events)


def test_a_client_keeps_receiving_after_another_client_leaves(server: str):
    ada = UserFactory()
    with hub_connect(server, query=f"?access_token={jwt(ada)}") as staying:
        assert_answers_pings(staying)
        with hub_connect(server, query=f"?access_token={jwt(ada)}") as leaving:
            assert_answers_pings(leaving)
            marker_publish(ada, "both")
            assert receive_until(leaving, is_marker("both"))[-1]["data"] == {"marker": "both"}
        marker_publish(ada, "one")
        received = receive_until(staying, is_marker("one"))
    assert [message["data"] for message in received] == [{"marker": "both"}, {"marker": "one"}]
