"""Events end to end: a book uploaded and translated through a real API server (uvicorn)
and a real Celery worker produces, for every status change and every job, a signed webhook
delivery to a local receiver (verified by the official `standardwebhooks` package) and a
hub message to a real websocket client: the same events, in the same order, on both."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from accounts.models import User
from accounts.services.users import token_issue
from projects.models import Job, JobStatus, Project
from tests.e2e.processes import Services, book_create, wait_until
from tests.factories import UserFactory
from tests.support.pdfs import pdf_bytes
from tests.webhooks.receiver import Receiver, running_receiver
from webhooks.events import JOB_SUCCEEDED, PROJECT_STATUS_CHANGED, WALLET_LOW_BALANCE
from webhooks.models import DeliveryStatus, WebhookDelivery
from webhooks.services.fanout import publish

pytestmark = [pytest.mark.slow, pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

DEADLINE = 90.0  # seconds a wait may last before the test fails (a hang guard, not a timing check)
PAGES = 8  # the ladder runs it as three jobs: 1, 5 and 2 pages
MARKER = {"marker": "the end of the book's events"}


def start_server(services: Services) -> httpx.Client:
    """The API server, on a development deployment, allowed to deliver to loopback."""
    base = services.api_server(DEVELOPMENT_DEPLOYMENT="true", WEBHOOK_ALLOW_PRIVATE_ADDRESSES="true")
    return httpx.Client(base_url=base, timeout=30)


def hub_connect(api: httpx.Client, user: User) -> ClientConnection:
    address = api.base_url.netloc.decode()
    return connect(
        f"ws://{address}/v1/hub?access_token={token_issue(user=user).token}", proxy=None, open_timeout=DEADLINE
    )


def hub_receive_until_marker(hub: ClientConnection) -> list[dict[str, Any]]:
    """Every event message up to (not including) the marker."""
    received: list[dict[str, Any]] = []
    while True:
        message = json.loads(hub.recv(timeout=DEADLINE))
        if message["type"] == WALLET_LOW_BALANCE and message["data"] == MARKER:
            return received
        received.append(message)


def delivered(receiver: Receiver) -> list[dict[str, Any]]:
    """The receiver's verified deliveries as hub-like messages ({id, type, timestamp, data}),
    in the order of their events (Standard Webhooks promises no order of arrival; the
    envelope's timestamp is when the event was published)."""
    assert all(request.verified for request in receiver.received), [r.refusal for r in receiver.received]
    messages = [{"id": request.headers["webhook-id"], **request.payload} for request in receiver.received]
    return sorted(messages, key=lambda message: datetime.fromisoformat(message["timestamp"]))


def test_a_translated_book_sends_the_same_events_in_order_to_its_webhook_and_its_hub(services: Services):
    api = start_server(services)
    services.worker("worker", queues="process,retry,default,webhooks", WEBHOOK_ALLOW_PRIVATE_ADDRESSES="true")
    reader = UserFactory()
    api.headers["Authorization"] = f"Bearer {token_issue(user=reader).token}"

    with running_receiver() as receiver, hub_connect(api, reader) as hub:
        hub.send(json.dumps({"type": "ping"}))
        assert json.loads(hub.recv(timeout=DEADLINE))["type"] == "pong"  # in the owner's group from here on
        subscribed = api.post("/v1/webhooks", json={"url": receiver.url(), "description": "end to end"})
        assert subscribed.status_code == 201, subscribed.text
        receiver.secret = subscribed.json()["secret"]

        topped_up = api.post("/v1/wallet/top-up", json={"amount": 20, "method": "manual"})
        assert topped_up.json()["status"] == "confirmed", topped_up.text
        book = pdf_bytes(PAGES, text=lambda n: f"Page {n} of a short book about lighthouses and their keepers. " * 4)
        project_id = book_create(api, book, file_name="lights.pdf")
        normalized = api.post(f"/v1/projects/{project_id}/normalize")
        assert normalized.status_code == 200, normalized.text
        processing = api.post(f"/v1/projects/{project_id}/process")
        assert processing.status_code == 202, processing.text

        def complete() -> bool:
            """The book is Complete and its last events were sent: the database says so
            before the worker publishes, so wait for the deliveries of the Complete status
            and of every job's success (each published no later than on the hub)."""
            if (
                Project.objects.get(pk=project_id).status != "Complete"
                or Job.objects.filter(project_id=project_id, status__in=(JobStatus.QUEUED, JobStatus.RUNNING)).exists()
            ):
                return False
            sent = [request.payload for request in list(receiver.received) if request.payload]
            book = [event for event in sent if event["data"].get("projectId") == project_id]
            jobs = Job.objects.filter(project_id=project_id).count()
            return sum(event["type"] == JOB_SUCCEEDED for event in book) == jobs and any(
                event["type"] == PROJECT_STATUS_CHANGED and event["data"]["state"] == "Complete" for event in book
            )

        wait_until(complete, what="the book to be Complete", services=services, timeout=DEADLINE)
        # Published after everything the book sent: the hub hands a client its events in order.
        publish(WALLET_LOW_BALANCE, owner_id=reader.pk, data=MARKER)
        on_the_hub = hub_receive_until_marker(hub)

        def all_delivered() -> bool:  # the book's events and the marker
            return len(receiver.received) >= len(on_the_hub) + 1

        wait_until(all_delivered, what="the webhook deliveries", services=services, timeout=DEADLINE)
        by_webhook = [message for message in delivered(receiver) if message["data"] != MARKER]

    # The same events, in the same order, with the same bodies, on both.
    assert [m["id"] for m in by_webhook] == [m["id"] for m in on_the_hub]
    assert by_webhook == on_the_hub
    times = [datetime.fromisoformat(m["timestamp"]) for m in on_the_hub]
    assert times == sorted(times)

    book_events = [m for m in on_the_hub if m["data"].get("projectId") == project_id]
    states = [m["data"]["state"] for m in book_events if m["type"] == PROJECT_STATUS_CHANGED]
    assert states == ["Calibrating", "Processing", "Complete"]
    jobs = list(Job.objects.filter(project_id=project_id).order_by("queue_position"))
    assert [(job.page_count, job.status) for job in jobs] == [
        (1, JobStatus.SUCCEEDED),
        (5, JobStatus.SUCCEEDED),
        (2, JobStatus.SUCCEEDED),
    ]
    succeeded = [m["data"] for m in book_events if m["type"] == JOB_SUCCEEDED]
    assert [job["id"] for job in succeeded] == [str(job.pk) for job in jobs]
    assert [job["status"] for job in succeeded] == [JobStatus.SUCCEEDED] * len(jobs)
    # Each status change follows the job that caused it: Processing once the first batch is
    # done and the ladder queues the next, Complete once the last one is.
    order = [m["data"]["state"] if m["type"] == PROJECT_STATUS_CHANGED else m["type"] for m in book_events]
    assert order == ["Calibrating", JOB_SUCCEEDED, "Processing", JOB_SUCCEEDED, JOB_SUCCEEDED, "Complete"]
    assert {m["type"] for m in on_the_hub} - {PROJECT_STATUS_CHANGED, JOB_SUCCEEDED} <= {"wallet.top_up_confirmed"}

    # The delivery log agrees: one succeeded delivery per event, the first attempt a 2xx.
    deliveries = WebhookDelivery.objects.filter(subscription_id=subscribed.json()["id"]).exclude(
        event_type=WALLET_LOW_BALANCE
    )
    assert sorted(deliveries.values_list("event_id", flat=True)) == sorted(m["id"] for m in on_the_hub)
    assert {(d.status, d.attempt_count, d.last_status_code) for d in deliveries} == {(DeliveryStatus.SUCCEEDED, 1, 204)}
