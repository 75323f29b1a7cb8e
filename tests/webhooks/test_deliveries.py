"""Webhook deliveries end to end: an event published in a transaction reaches a local
receiver, signed (verified there by the official standardwebhooks package), retried on
failure, logged, redelivered; the subscription is disabled when the endpoint is gone or
keeps failing; the address is checked again at every delivery."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.factories import UserFactory
from tests.support.problems import assert_problem
from tests.webhooks.receiver import Answer, Received, Receiver, running_receiver, self_signed_certificate
from webhooks import tasks
from webhooks.events import EXPORT_READY, JOB_SUCCEEDED, PROJECT_STATUS_CHANGED, Event
from webhooks.models import DeliveryAttempt, DeliveryStatus, WebhookDelivery, WebhookSubscription
from webhooks.services import deliveries
from webhooks.services.fanout import publish

pytestmark = pytest.mark.django_db

STATUS_DATA = {"projectId": "7d7c1b8e-0000-4000-8000-000000000001", "state": "Complete", "phase": "done"}


@pytest.fixture
def publish_committed(user, django_capture_on_commit_callbacks) -> Callable[..., None]:
    """Publishes an event of the user's inside a transaction that commits (so it fans out)."""

    def send(event_type: str = PROJECT_STATUS_CHANGED, data: dict[str, Any] | None = None, owner: Any = None) -> None:
        with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
            publish(event_type, owner_id=(owner or user).pk, data=data or STATUS_DATA)

    return send


def assert_verified(received: Received, *, event_type: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """The receiver's standardwebhooks check passed and the body is the event's envelope."""
    assert received.verified, received.refusal
    assert received.payload["type"] == event_type
    assert set(received.payload) == {"type", "timestamp", "data"}
    if data is not None:
        assert received.payload["data"] == data
    assert received.headers["content-type"] == "application/json"
    return received.payload


def only_delivery() -> WebhookDelivery:
    (delivery,) = WebhookDelivery.objects.all()
    return delivery


def attempts_of(delivery: WebhookDelivery) -> list[DeliveryAttempt]:
    return list(delivery.attempts.order_by("attempted_at", "pk"))


def the_unsent_attempt(receiver: Receiver) -> tuple[WebhookDelivery, DeliveryAttempt]:
    """The only delivery and its one attempt, which sent nothing: the receiver got no request
    and the attempt no answer."""
    assert not receiver.received
    delivery = only_delivery()
    (attempt,) = attempts_of(delivery)
    assert attempt.status_code is None
    return delivery, attempt


# --- The happy path ---------------------------------------------------------------------------


@pytest.mark.usefixtures("eager_celery")
def test_a_committed_event_reaches_the_receiver_signed_and_verified(receiver, subscribe, publish_committed, caplog):
    caplog.set_level(logging.DEBUG)
    subscription = subscribe()

    publish_committed(PROJECT_STATUS_CHANGED, STATUS_DATA)

    (received,) = receiver.received
    assert_verified(received, event_type=PROJECT_STATUS_CHANGED, data=STATUS_DATA)
    assert received.path == "/hook"
    assert received.headers["webhook-id"].startswith("evt_")
    assert received.headers["user-agent"].startswith("BookTranslationService-Webhooks/")
    delivery = only_delivery()
    assert str(delivery.subscription_id) == subscription["id"]
    assert (delivery.status, delivery.attempt_count, delivery.last_status_code) == (DeliveryStatus.SUCCEEDED, 1, 204)
    assert delivery.event_id == received.headers["webhook-id"]
    assert delivery.next_attempt_at is None
    assert [(a.status_code, a.error) for a in attempts_of(delivery)] == [(204, "")]
    assert subscription["secret"].removeprefix("whsec_") not in caplog.text


def test_the_task_delivers_what_was_queued_on_commit(receiver, subscribe, user, django_capture_on_commit_callbacks):
    subscribe()
    with django_capture_on_commit_callbacks() as fan_out:
        publish(JOB_SUCCEEDED, owner_id=user.pk, data={"jobId": "j1"})
    assert not WebhookDelivery.objects.exists()  # nothing before the commit

    with django_capture_on_commit_callbacks() as queued:
        fan_out[0]()
    delivery = only_delivery()
    assert len(queued) == 1
    assert not receiver.received  # queued, not sent

    assert tasks.delivery_attempt(str(delivery.pk)) == DeliveryStatus.SUCCEEDED
    assert tasks.delivery_attempt(str(delivery.pk)) is None  # a second message does nothing

    (received,) = receiver.received
    assert_verified(received, event_type=JOB_SUCCEEDED, data={"jobId": "j1"})


@pytest.mark.usefixtures("eager_celery")
def test_a_rolled_back_change_sends_nothing(receiver, subscribe, user, django_capture_on_commit_callbacks):
    subscribe()

    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError), transaction.atomic():  # noqa: PT012
        publish(PROJECT_STATUS_CHANGED, owner_id=user.pk, data=STATUS_DATA)
        raise RuntimeError("the change fails")

    assert not WebhookDelivery.objects.exists()
    assert not receiver.received


@pytest.mark.usefixtures("eager_celery")
def test_only_matching_enabled_webhooks_of_the_owner_receive_an_event(
    receiver, subscribe, publish_committed, auth_client, jwt_client, other_user
):
    everything = subscribe(receiver.url(path="/all"))
    subscribe(receiver.url(path="/jobs-only"), eventTypes=[JOB_SUCCEEDED])
    status_only = subscribe(receiver.url(path="/status"), eventTypes=[PROJECT_STATUS_CHANGED, EXPORT_READY])
    switched_off = subscribe(receiver.url(path="/off"))
    auth_client.patch(f"/v1/webhooks/{switched_off['id']}", {"enabled": False}, format="json")
    subscribe(receiver.url(path="/stranger"), client=jwt_client(other_user))

    publish_committed(PROJECT_STATUS_CHANGED, STATUS_DATA)

    assert sorted(request.path for request in receiver.received) == ["/all", "/status"]
    delivered_to = set(WebhookDelivery.objects.values_list("subscription_id", flat=True))
    assert {str(pk) for pk in delivered_to} == {everything["id"], status_only["id"]}


def test_a_name_is_delivered_to_the_address_checked_with_the_name_in_the_host_header(receiver, subscribe, user):
    subscribe(f"http://localhost:{receiver.port}/named")
    deliveries.deliveries_for_event(Event(type=EXPORT_READY, owner_id=user.pk, data={"fileName": "a.md"}))

    tasks.delivery_attempt(str(only_delivery().pk))

    (received,) = receiver.received
    assert received.headers["host"] == f"localhost:{receiver.port}"
    assert_verified(received, event_type=EXPORT_READY)


@pytest.mark.usefixtures("allow_private")
def test_https_connects_to_the_checked_address_and_verifies_the_certificate_for_the_name(
    auth_client, user, settings, tmp_path
):
    certificate, key = self_signed_certificate(tmp_path, host_name="localhost")
    with running_receiver(tls_certificate=certificate, tls_key=key) as tls_receiver:
        created = auth_client.post("/v1/webhooks", {"url": tls_receiver.url(host="localhost")}, format="json").json()
        tls_receiver.secret = created["secret"]
        event = Event(type=JOB_SUCCEEDED, owner_id=user.pk, data={"jobId": "j2"})
        deliveries.deliveries_for_event(event)
        delivery = only_delivery()

        tasks.delivery_attempt(str(delivery.pk))  # the certificate is not trusted yet
        untrusted = attempts_of(delivery)[-1]
        settings.WEBHOOK_CA_BUNDLE = str(certificate)
        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
        tasks.delivery_attempt(str(delivery.pk))

        assert untrusted.status_code is None
        assert "TLS failed" in untrusted.error
        (received,) = tls_receiver.received
        assert_verified(received, event_type=JOB_SUCCEEDED)
        assert received.headers["host"] == f"localhost:{tls_receiver.port}"
        assert tls_receiver.sni_names[-1] == "localhost"
        delivery.refresh_from_db()
        assert delivery.status == DeliveryStatus.SUCCEEDED


# --- Failures and retries ----------------------------------------------------------------------


@pytest.mark.usefixtures("eager_celery")
def test_a_500_is_retried_later_and_an_early_message_does_nothing(receiver, subscribe, publish_committed):
    subscribe()
    receiver.answers = [Answer(status=500, body=b"database on fire")]

    publish_committed()

    delivery = only_delivery()
    (attempt,) = attempts_of(delivery)
    assert (attempt.status_code, attempt.error) == (500, "HTTP 500: database on fire")
    assert delivery.status == DeliveryStatus.PENDING
    assert delivery.attempt_count == 1
    assert delivery.next_attempt_at > attempt.attempted_at
    assert len(receiver.received) == 1  # the retry's message came early (eager Celery) and did nothing


@pytest.mark.usefixtures("eager_celery")
def test_a_retry_that_succeeds_ends_the_delivery_with_every_attempt_logged(
    receiver, subscribe, publish_committed, settings
):
    settings.WEBHOOK_RETRY_SCHEDULE_SECONDS = [0, 0]
    subscribe()
    receiver.answers = [Answer(status=503), Answer(status=429)]

    publish_committed()

    delivery = only_delivery()
    assert [attempt.status_code for attempt in attempts_of(delivery)] == [503, 429, 204]
    assert (delivery.status, delivery.attempt_count) == (DeliveryStatus.SUCCEEDED, 3)
    ids = {request.headers["webhook-id"] for request in receiver.received}
    assert ids == {delivery.event_id}  # every attempt carries the same webhook-id
    assert all(request.verified for request in receiver.received)


@pytest.mark.usefixtures("eager_celery")
def test_a_timeout_is_a_failed_attempt_with_a_retry_scheduled(receiver, subscribe, publish_committed, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    subscribe()
    receiver.answers = [Answer(hang=True)]

    publish_committed()

    delivery = only_delivery()
    (attempt,) = attempts_of(delivery)
    assert attempt.status_code is None
    assert attempt.error == "No answer within 0.5 s."
    assert delivery.status == DeliveryStatus.PENDING
    assert delivery.next_attempt_at > attempt.attempted_at


@pytest.mark.usefixtures("eager_celery")
def test_retry_after_postpones_the_next_attempt(receiver, subscribe, publish_committed):
    subscribe()
    receiver.answers = [Answer(status=503, headers={"Retry-After": "7200"})]

    publish_committed()

    delivery = only_delivery()
    (attempt,) = attempts_of(delivery)
    assert delivery.next_attempt_at - attempt.attempted_at >= timedelta(hours=2)


@pytest.mark.usefixtures("eager_celery")
def test_a_redirect_is_not_followed(receiver, subscribe, publish_committed):
    subscribe()
    receiver.answers = [Answer(status=307, headers={"Location": receiver.url(path="/elsewhere")})]

    publish_committed()

    assert [request.path for request in receiver.received] == ["/hook"]
    delivery = only_delivery()
    (attempt,) = attempts_of(delivery)
    assert attempt.status_code == 307
    assert "not followed" in attempt.error
    assert delivery.status == DeliveryStatus.PENDING


@pytest.mark.usefixtures("eager_celery")
def test_the_address_is_checked_again_at_delivery(receiver, subscribe, publish_committed, settings):
    subscribe(f"http://localhost:{receiver.port}/hook")
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False  # what localhost resolves to is now refused

    publish_committed()

    delivery, attempt = the_unsent_attempt(receiver)
    assert "localhost resolves to 127.0.0.1" in attempt.error
    assert "loopback" in attempt.error
    assert delivery.status == DeliveryStatus.PENDING


@pytest.mark.usefixtures("eager_celery")
def test_a_name_that_does_not_resolve_at_delivery_fails_that_attempt(receiver, subscribe, publish_committed):
    subscribe("https://hooks.example-to-come.invalid/hook")  # accepted at registration

    publish_committed()

    delivery, attempt = the_unsent_attempt(receiver)
    assert "hooks.example-to-come.invalid' could not be resolved" in attempt.error
    assert delivery.status == DeliveryStatus.PENDING
    assert delivery.next_attempt_at is not None


@pytest.mark.usefixtures("eager_celery")
def test_a_delivery_whose_every_attempt_failed_is_dead(receiver, subscribe, publish_committed, settings):
    settings.WEBHOOK_RETRY_SCHEDULE_SECONDS = [0]
    subscription = subscribe()
    receiver.default = Answer(status=500)

    publish_committed()

    delivery = only_delivery()
    assert [attempt.status_code for attempt in attempts_of(delivery)] == [500, 500]
    assert (delivery.status, delivery.next_attempt_at) == (DeliveryStatus.DEAD, None)
    assert delivery.finished_at is not None
    row = WebhookSubscription.objects.get(pk=subscription["id"])
    assert (row.enabled, row.consecutive_failures) == (True, 1)


@pytest.mark.usefixtures("eager_celery")
def test_consecutive_dead_deliveries_disable_the_webhook_and_tell_the_owner(
    receiver, subscribe, publish_committed, settings, mailoutbox, user
):
    settings.WEBHOOK_RETRY_SCHEDULE_SECONDS = []
    settings.WEBHOOK_DISABLE_AFTER_DEAD_DELIVERIES = 2
    subscription = subscribe()
    receiver.default = Answer(status=500)

    publish_committed()
    publish_committed()
    publish_committed()  # after the webhook was disabled: not delivered

    row = WebhookSubscription.objects.get(pk=subscription["id"])
    assert row.enabled is False
    assert row.disabled_reason == "2 deliveries in a row failed every attempt."
    assert len(receiver.received) == 2
    assert WebhookDelivery.objects.filter(status=DeliveryStatus.DEAD).count() == 2
    (email,) = mailoutbox
    assert email.to == [user.email]
    assert row.url in email.body
    assert row.disabled_reason in email.body


@pytest.mark.usefixtures("eager_celery")
def test_a_success_resets_the_failure_count(receiver, subscribe, publish_committed, settings):
    settings.WEBHOOK_RETRY_SCHEDULE_SECONDS = []
    settings.WEBHOOK_DISABLE_AFTER_DEAD_DELIVERIES = 2
    subscription = subscribe()
    receiver.answers = [Answer(status=500), Answer(status=200), Answer(status=500)]

    for _ in range(3):
        publish_committed()

    row = WebhookSubscription.objects.get(pk=subscription["id"])
    assert (row.enabled, row.consecutive_failures) == (True, 1)


@pytest.mark.usefixtures("eager_celery")
def test_a_410_disables_the_webhook_at_once_and_fails_its_pending_deliveries(
    receiver, subscribe, publish_committed, mailoutbox
):
    subscription = subscribe()
    receiver.answers = [Answer(status=500), Answer(status=410)]

    publish_committed()  # fails once: pending, retried in a few seconds
    publish_committed()  # 410

    row = WebhookSubscription.objects.get(pk=subscription["id"])
    assert row.enabled is False
    assert "410" in row.disabled_reason
    statuses = sorted(WebhookDelivery.objects.values_list("status", flat=True))
    assert statuses == [DeliveryStatus.FAILED, DeliveryStatus.FAILED]
    assert len(mailoutbox) == 1
    assert len(receiver.received) == 2


# --- The log, redeliver, the test event ---------------------------------------------------------


@pytest.mark.usefixtures("eager_celery")
def test_the_delivery_log_shows_each_attempt_and_redeliver_sends_the_same_event_again(
    receiver, subscribe, publish_committed, auth_client, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_RETRY_SCHEDULE_SECONDS = []
    subscription = subscribe()
    receiver.answers = [Answer(status=502, body=b"bad gateway")]
    publish_committed(JOB_SUCCEEDED, {"jobId": "j3"})
    log_url = f"/v1/webhooks/{subscription['id']}/deliveries"

    (dead,) = auth_client.get(log_url).json()["results"]
    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(f"{log_url}/{dead['id']}/redeliver")
    log = auth_client.get(log_url).json()

    assert dead["status"] == "dead"
    assert dead["eventType"] == JOB_SUCCEEDED
    assert dead["payload"]["data"] == {"jobId": "j3"}
    assert [(a["statusCode"], a["error"]) for a in dead["attempts"]] == [(502, "HTTP 502: bad gateway")]
    assert response.status_code == 202
    assert log["count"] == 1
    (redelivered,) = log["results"]
    assert (redelivered["id"], redelivered["status"], redelivered["attemptCount"]) == (dead["id"], "succeeded", 1)
    assert [a["statusCode"] for a in redelivered["attempts"]] == [502, 204]
    assert all(a["attemptedUtc"] and a["durationMs"] >= 0 for a in redelivered["attempts"])
    first, second = receiver.received
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == dead["eventId"]
    assert first.body == second.body
    assert second.verified


@pytest.mark.usefixtures("allow_private")
def test_a_pending_delivery_cannot_be_redelivered(receiver, subscribe, user, auth_client):
    subscription = subscribe()
    deliveries.deliveries_for_event(Event(type=JOB_SUCCEEDED, owner_id=user.pk, data={}))
    delivery = only_delivery()

    response = auth_client.post(f"/v1/webhooks/{subscription['id']}/deliveries/{delivery.pk}/redeliver")

    assert_problem(response, 409, "webhook_delivery_pending")
    assert not DeliveryAttempt.objects.exists()


def test_another_webhooks_delivery_is_not_found(receiver, subscribe, user, auth_client):
    first = subscribe(receiver.url(path="/a"))
    second = subscribe(receiver.url(path="/b"), eventTypes=[EXPORT_READY])
    deliveries.deliveries_for_event(Event(type=JOB_SUCCEEDED, owner_id=user.pk, data={}))
    delivery = only_delivery()
    assert str(delivery.subscription_id) == first["id"]

    response = auth_client.post(f"/v1/webhooks/{second['id']}/deliveries/{delivery.pk}/redeliver")

    assert_problem(response, 404, "not_found")


def test_the_delivery_log_is_paginated_and_read_in_a_fixed_number_of_queries(
    receiver, subscribe, user, auth_client, django_assert_max_num_queries
):
    subscription = subscribe()
    for index in range(7):
        deliveries.deliveries_for_event(Event(type=JOB_SUCCEEDED, owner_id=user.pk, data={"n": index}))
    for delivery in WebhookDelivery.objects.all():
        tasks.delivery_attempt(str(delivery.pk))

    with django_assert_max_num_queries(6):
        page = auth_client.get(f"/v1/webhooks/{subscription['id']}/deliveries?pageSize=5").json()

    assert page["count"] == 7
    assert len(page["results"]) == 5
    assert page["next"]
    assert [item["payload"]["data"]["n"] for item in page["results"]] == [6, 5, 4, 3, 2]
    assert all(len(item["attempts"]) == 1 for item in page["results"])


@pytest.mark.usefixtures("eager_celery")
def test_the_test_endpoint_sends_a_test_event_to_that_webhook_only(
    receiver, subscribe, auth_client, django_capture_on_commit_callbacks
):
    target = subscribe(receiver.url(path="/target"))
    subscribe(receiver.url(path="/other"))
    receiver.secret = target["secret"]

    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(f"/v1/webhooks/{target['id']}/test")

    assert response.status_code == 202
    assert response.json()["eventType"] == "webhook.test"
    (received,) = receiver.received
    assert received.path == "/target"
    payload = assert_verified(received, event_type="webhook.test")
    assert payload["data"]["webhookId"] == target["id"]
    assert WebhookDelivery.objects.get().status == DeliveryStatus.SUCCEEDED


def test_a_disabled_webhook_cannot_be_tested(receiver, subscribe, auth_client):
    subscription = subscribe()
    auth_client.patch(f"/v1/webhooks/{subscription['id']}", {"enabled": False}, format="json")

    assert_problem(auth_client.post(f"/v1/webhooks/{subscription['id']}/test"), 409, "webhook_disabled")
    assert not WebhookDelivery.objects.exists()


# --- Secrets, the sweep, deletion -----------------------------------------------------------


@pytest.mark.usefixtures("eager_celery")
def test_a_retry_after_rotation_is_signed_with_the_new_secret_only(
    receiver, subscribe, publish_committed, auth_client, settings
):
    settings.WEBHOOK_RETRY_SCHEDULE_SECONDS = [3600]
    subscription = subscribe()
    old_secret = subscription["secret"]
    receiver.answers = [Answer(status=500)]
    publish_committed()

    new_secret = auth_client.post(f"/v1/webhooks/{subscription['id']}/rotate-secret").json()["secret"]
    receiver.secret = new_secret
    delivery = only_delivery()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())  # an hour went by
    tasks.delivery_attempt(str(delivery.pk))

    first, retry = receiver.received
    assert retry.verified
    with pytest.raises(WebhookVerificationError):
        Webhook(old_secret).verify(retry.body, retry.headers)
    assert Webhook(old_secret).verify(first.body, first.headers)


@pytest.mark.usefixtures("eager_celery")
def test_the_sweep_sends_a_delivery_whose_message_was_lost(
    receiver, subscribe, user, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_SWEEP_SECONDS = 0
    subscribe()
    with django_capture_on_commit_callbacks() as lost:  # never executed: the message is lost
        deliveries.deliveries_for_event(Event(type=JOB_SUCCEEDED, owner_id=user.pk, data={"jobId": "j4"}))
    assert len(lost) == 1

    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.deliveries_sweep() == 1

    (received,) = receiver.received
    assert_verified(received, event_type=JOB_SUCCEEDED, data={"jobId": "j4"})
    assert only_delivery().status == DeliveryStatus.SUCCEEDED
    assert tasks.deliveries_sweep() == 0


def test_the_sweep_leaves_deliveries_that_are_not_overdue(receiver, subscribe, user):
    subscribe()
    deliveries.deliveries_for_event(Event(type=JOB_SUCCEEDED, owner_id=user.pk, data={}))

    assert tasks.deliveries_sweep() == 0


def test_an_event_is_delivered_once_per_webhook_however_often_it_is_handed_over(receiver, subscribe, user):
    subscribe()
    event = Event(type=JOB_SUCCEEDED, owner_id=user.pk, data={})

    assert deliveries.deliveries_for_event(event) == 1
    assert deliveries.deliveries_for_event(event) == 0
    assert WebhookDelivery.objects.count() == 1


def test_deleting_a_webhook_drops_its_pending_deliveries(receiver, subscribe, user, auth_client):
    subscription = subscribe()
    deliveries.deliveries_for_event(Event(type=JOB_SUCCEEDED, owner_id=user.pk, data={}))
    delivery = only_delivery()

    auth_client.delete(f"/v1/webhooks/{subscription['id']}")

    assert tasks.delivery_attempt(str(delivery.pk)) is None
    assert not receiver.received
    assert not WebhookDelivery.objects.exists()


def test_an_owner_without_webhooks_costs_one_query_per_event(django_assert_num_queries):
    owner = UserFactory()

    with django_assert_num_queries(1):
        assert deliveries.deliveries_for_event(Event(type=JOB_SUCCEEDED, owner_id=owner.pk, data={})) == 0


@pytest.mark.usefixtures("eager_celery")
def test_the_body_reads_type_timestamp_data_and_is_the_same_bytes_on_every_attempt(
    receiver, subscribe, publish_committed, settings
):
    settings.WEBHOOK_RETRY_SCHEDULE_SECONDS = [0]
    subscribe()
    receiver.answers = [Answer(status=500)]

    publish_committed(JOB_SUCCEEDED, {"zeta": 1, "alpha": {"later": True, "earlier": [1, 2]}})

    first, second = receiver.received
    assert first.body == second.body
    assert first.body.startswith(b'{"type":"job.succeeded","timestamp":"')
    assert first.body.endswith(b'"data":{"alpha":{"earlier":[1,2],"later":true},"zeta":1}}')
