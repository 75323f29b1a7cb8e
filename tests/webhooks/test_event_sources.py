"""Each source of events really publishes, through the public API: normalize's status
changes (Calibrating, Failed), a job that fails (an engine outage, a cancelled book),
export.ready after a render, wallet.top_up_confirmed (a manual top-up, Stripe's signed
webhook), wallet.low_balance. Every event reaches a webhook registered over the API, at a
local receiver that verifies it with the official `standardwebhooks` package, and is in
the delivery log; its data is what the matching GET answers.

Celery runs in this process (eager) and the transaction's on-commit work runs as the
request ends, as it would after a real commit."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from decimal import Decimal
from typing import Any

import pytest
from django.core import mail
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import User
from projects.models import JobStatus, PageStatus, Project, ProjectStatus
from tests.factories import ProjectFactory, pages_add
from tests.support.pdfs import pdf_bytes
from tests.wallet.stripe_stand_in import WEBHOOK_SECRET, StripeStandIn, signature_header
from tests.webhooks.receiver import Receiver
from wallet.models import EntryKind
from wallet.services.ledger import wallet_credit
from webhooks.events import (
    EXPORT_READY,
    JOB_FAILED,
    PROJECT_STATUS_CHANGED,
    WALLET_LOW_BALANCE,
    WALLET_TOP_UP_CONFIRMED,
)
from webhooks.models import DeliveryStatus, WebhookDelivery

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery", "local_storage")]

PAGE_TEXT = "The lighthouse keeper wrote the weather down every evening at six. " * 6


@pytest.fixture(autouse=True)
def _echo_engine(settings: Any) -> None:
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {}


@pytest.fixture
def hooked(subscribe: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """A webhook of the signed-in user's for every event type, to the receiver."""
    return subscribe()


@pytest.fixture
def committed(django_capture_on_commit_callbacks: Any) -> Callable[[], AbstractContextManager[Any]]:
    """A block whose on-commit work (events, their deliveries, queued tasks) runs at its end."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def received(receiver: Receiver, event_type: str) -> list[dict[str, Any]]:
    """The data of every delivery of this type, each verified by standardwebhooks."""
    found = []
    for request in receiver.received:
        assert request.verified, request.refusal
        if request.payload["type"] == event_type:
            found.append(request.payload["data"])
    return found


def assert_logged(webhook: dict[str, Any], receiver: Receiver) -> None:
    """Each request the receiver got is a succeeded delivery in the webhook's log, once."""
    log = {row.event_id: row for row in WebhookDelivery.objects.filter(subscription_id=webhook["id"])}
    ids = [request.headers["webhook-id"] for request in receiver.received]
    assert sorted(ids) == sorted(log)
    for request in receiver.received:
        delivery = log[request.headers["webhook-id"]]
        assert (delivery.event_type, delivery.status, delivery.attempt_count) == (
            request.payload["type"],
            DeliveryStatus.SUCCEEDED,
            1,
        )


def without_time(status: dict[str, Any]) -> dict[str, Any]:
    return {**status, "timestamp": None}


def credit(user: User, amount: str) -> None:
    wallet_credit(user=user, amount=Decimal(amount), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="seed")


def upload_and_create(client: APIClient, data: bytes, name: str = "book.pdf") -> str:
    uploaded = client.post("/v1/uploads", {"file": ContentFile(data, name=name)}, format="multipart")
    assert uploaded.status_code == 200, uploaded.content
    created = client.post(
        "/v1/projects", {"uploadKey": uploaded.json()["uploadKey"], "targetLanguageCode": "fr"}, format="json"
    )
    assert created.status_code == 201, created.content
    return str(created.json()["id"])


def book_with_text(owner: User, pages: int = 3) -> Project:
    project = ProjectFactory(owner=owner, status=ProjectStatus.CALIBRATING)
    pages_add(project, pages, text_layer=PAGE_TEXT, has_text_layer=True)
    return project


# --- Projects ----------------------------------------------------------------------------------


def test_normalize_publishes_the_change_to_calibrating(auth_client, receiver, hooked, committed):
    project_id = upload_and_create(auth_client, pdf_bytes(2, text=lambda n: f"Page {n} of the book."))

    with committed():
        normalized = auth_client.post(f"/v1/projects/{project_id}/normalize")

    assert normalized.status_code == 200, normalized.content
    [status] = received(receiver, PROJECT_STATUS_CHANGED)
    assert (status["projectId"], status["state"]) == (project_id, "Calibrating")
    assert without_time(status) == without_time(auth_client.get(f"/v1/projects/{project_id}/status").json())
    assert_logged(hooked, receiver)


def test_a_book_normalize_cannot_render_publishes_the_change_to_failed(auth_client, receiver, hooked, committed):
    # A page of 200 x 200 inches: too large to render, found by normalize (not by the upload).
    project_id = upload_and_create(auth_client, pdf_bytes(1, size=(14400, 14400)), name="map.pdf")

    with committed():
        auth_client.post(f"/v1/projects/{project_id}/normalize")

    project = Project.objects.get(pk=project_id)
    assert (project.status, project.failure_code) == (ProjectStatus.FAILED, "image_too_large")
    [status] = received(receiver, PROJECT_STATUS_CHANGED)
    assert (status["projectId"], status["state"]) == (project_id, "Failed")
    assert without_time(status) == without_time(auth_client.get(f"/v1/projects/{project_id}/status").json())
    assert_logged(hooked, receiver)


def test_a_batch_the_engine_outage_stops_publishes_job_failed(user, auth_client, receiver, hooked, committed, settings):
    project = book_with_text(user)
    credit(user, "5")
    settings.TRANSLATION_ENGINE_OPTIONS = {"unavailable": True}

    with committed():
        response = auth_client.post(f"/v1/projects/{project.pk}/process-next-batch")

    assert response.status_code == 503, response.content
    [job] = received(receiver, JOB_FAILED)
    assert job["projectId"] == str(project.pk)
    assert job["status"] == JobStatus.FAILED
    assert "unavailable" in job["errorText"]
    assert job == auth_client.get(f"/v1/jobs/{job['id']}").json()
    assert_logged(hooked, receiver)


def test_cancelling_a_book_with_a_queued_job_publishes_job_failed_and_cancelled(
    user, auth_client, receiver, hooked, committed
):
    project = book_with_text(user)
    credit(user, "5")
    # Outside `committed`: the worker is never woken, so the job stays Queued.
    assert auth_client.post(f"/v1/projects/{project.pk}/process").status_code == 202

    with committed():
        cancelled = auth_client.post(f"/v1/projects/{project.pk}/cancel")

    assert cancelled.status_code == 200, cancelled.content
    [job] = received(receiver, JOB_FAILED)
    assert (job["projectId"], job["status"]) == (str(project.pk), JobStatus.FAILED)
    assert job == auth_client.get(f"/v1/jobs/{job['id']}").json()
    [status] = received(receiver, PROJECT_STATUS_CHANGED)  # it was Calibrating already
    assert (status["projectId"], status["state"]) == (str(project.pk), "Cancelled")
    assert without_time(status) == without_time(cancelled.json())
    assert_logged(hooked, receiver)


# --- Exports -----------------------------------------------------------------------------------


def test_a_rendered_export_publishes_export_ready_with_its_entry(user, auth_client, receiver, hooked, committed):
    project = ProjectFactory(owner=user, status=ProjectStatus.COMPLETE, name="Le Phare")
    for page in pages_add(project, 2, text_layer="Source words.", has_text_layer=True):
        default_storage.save(page.image_key, ContentFile(b"\x89PNG not really " + str(page.index).encode()))
    project.pages.update(status=PageStatus.APPROVED, translated_at=timezone.now(), engine="echo")
    for page in project.pages.all():
        page.translation = f"# Chapitre {page.index}\n\nLe gardien du phare, page {page.index}."
        page.save(update_fields=["translation"])

    with committed():
        asked = auth_client.post(f"/v1/projects/{project.pk}/export", {"format": "Markdown"}, format="json")

    assert asked.status_code == 202, asked.content
    [entry] = received(receiver, EXPORT_READY)
    [listed] = auth_client.get(f"/v1/projects/{project.pk}/exports").json()
    assert entry == listed
    assert (entry["format"], entry["status"]) == ("Markdown", "ready")
    assert entry["url"] == f"/v1/projects/{project.pk}/exports/{entry['fileName']}"
    assert_logged(hooked, receiver)


# --- The wallet --------------------------------------------------------------------------------


def test_a_manual_top_up_publishes_top_up_confirmed(auth_client, receiver, hooked, committed, settings):
    settings.DEVELOPMENT_DEPLOYMENT = True

    with committed():
        response = auth_client.post("/v1/wallet/top-up", {"amount": 15, "method": "manual"}, format="json")

    assert response.status_code == 200, response.content
    [top_up] = received(receiver, WALLET_TOP_UP_CONFIRMED)
    assert (top_up["reference"], top_up["status"], top_up["creditedAmount"]) == (
        response.json()["reference"],
        "confirmed",
        15,
    )
    assert top_up == auth_client.get(f"/v1/wallet/top-up/{top_up['reference']}").json()
    assert_logged(hooked, receiver)


def test_stripes_completed_checkout_publishes_top_up_confirmed(
    auth_client, api_client, receiver, hooked, committed, stripe_stand_in
):
    opened = auth_client.post("/v1/wallet/top-up", {"amount": 12.5, "method": "card"}, format="json")
    assert opened.status_code == 200, opened.content
    reference = opened.json()["reference"]
    assert not received(receiver, WALLET_TOP_UP_CONFIRMED)  # pending until Stripe says it is paid
    (session_id,) = stripe_stand_in.sessions
    session = stripe_stand_in.checkout_pay(session_id)
    payload = StripeStandIn.event_payload("checkout.session.completed", session)

    with committed():
        answer = api_client.post(
            "/v1/payments/stripe/webhook",
            data=payload,
            content_type="application/json",
            HTTP_STRIPE_SIGNATURE=signature_header(payload, WEBHOOK_SECRET),
        )

    assert answer.status_code == 200, answer.content
    [top_up] = received(receiver, WALLET_TOP_UP_CONFIRMED)
    assert (top_up["reference"], top_up["status"], top_up["creditedAmount"]) == (reference, "confirmed", 12.5)
    assert top_up == auth_client.get(f"/v1/wallet/top-up/{reference}").json()
    assert_logged(hooked, receiver)


def test_a_balance_at_the_alert_threshold_publishes_low_balance_once(user, auth_client, receiver, hooked, committed):
    credit(user, "3")

    with committed():
        set_alert = auth_client.put("/v1/wallet/low-balance-alert", {"threshold": 5}, format="json")
    wallet_then = auth_client.get("/v1/wallet").json()
    with committed():  # a second change within the repeat window sends nothing more
        auth_client.put("/v1/wallet/low-balance-alert", {"threshold": 4}, format="json")

    assert set_alert.status_code == 200, set_alert.content
    [wallet] = received(receiver, WALLET_LOW_BALANCE)
    assert (wallet["balanceUsd"], wallet["lowBalanceAlertThresholdUsd"]) == (3, 5)
    assert wallet == wallet_then
    assert [message.to for message in mail.outbox] == [[user.email]]
    assert_logged(hooked, receiver)


def test_a_balance_above_the_threshold_publishes_nothing(user, auth_client, receiver, hooked, committed):
    credit(user, "30")

    with committed():
        auth_client.put("/v1/wallet/low-balance-alert", {"threshold": 5}, format="json")

    assert not received(receiver, WALLET_LOW_BALANCE)
    assert not WebhookDelivery.objects.filter(event_type=WALLET_LOW_BALANCE).exists()
