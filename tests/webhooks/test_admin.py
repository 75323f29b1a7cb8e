"""The webhooks' Django admin, through its pages as an operator: no secret shown, and the
disable action goes through the service."""

from __future__ import annotations

import pytest

from webhooks.events import JOB_SUCCEEDED, Event
from webhooks.models import DeliveryStatus, WebhookDelivery, WebhookSubscription
from webhooks.services import deliveries

pytestmark = pytest.mark.django_db

SUBSCRIPTIONS_URL = "/admin/webhooks/webhooksubscription/"
DELIVERIES_URL = "/admin/webhooks/webhookdelivery/"


@pytest.fixture
def registered(auth_client, user):
    body = auth_client.post("/v1/webhooks", {"url": "https://93.184.215.14/hook"}, format="json").json()
    deliveries.deliveries_for_event(Event(type=JOB_SUCCEEDED, owner_id=user.pk, data={}))
    return body


def test_the_pages_show_webhooks_and_deliveries_but_never_a_secret(staff_client, registered):
    delivery = WebhookDelivery.objects.get()
    pages = [
        staff_client.get(SUBSCRIPTIONS_URL),
        staff_client.get(f"{SUBSCRIPTIONS_URL}{registered['id']}/change/"),
        staff_client.get("/admin/webhooks/webhookdelivery/"),
        staff_client.get(f"/admin/webhooks/webhookdelivery/{delivery.pk}/change/"),
    ]

    assert [page.status_code for page in pages] == [200, 200, 200, 200]
    secret_body = registered["secret"].removeprefix("whsec_")
    for page in pages:
        assert secret_body not in page.content.decode()
    assert registered["secretPrefix"] in pages[1].content.decode()


@pytest.mark.usefixtures("eager_celery")
def test_the_disable_action_fails_pending_deliveries_and_tells_the_owner(
    staff_client, registered, user, mailoutbox, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            SUBSCRIPTIONS_URL, {"action": "disable", "_selected_action": [registered["id"]]}, follow=True
        )

    assert response.status_code == 200
    subscription = WebhookSubscription.objects.get()
    assert (subscription.enabled, subscription.disabled_reason) == (False, "Disabled by an operator.")
    assert WebhookDelivery.objects.get().status == DeliveryStatus.FAILED
    (email,) = mailoutbox
    assert email.to == [user.email]
    assert "Disabled by an operator." in email.body


@pytest.mark.usefixtures("eager_celery")
def test_an_operator_redelivers_a_dead_delivery_and_a_pending_one_is_refused(
    staff_client, registered, receiver, settings, user, django_capture_on_commit_callbacks
):
    """Through the owner's redeliver service: attempts from zero, to the same webhook."""
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    WebhookSubscription.objects.filter(pk=registered["id"]).update(url=receiver.url())
    receiver.secret = registered["secret"]
    dead = WebhookDelivery.objects.get()
    WebhookDelivery.objects.filter(pk=dead.pk).update(status=DeliveryStatus.DEAD, attempt_count=9)
    deliveries.deliveries_for_event(Event(type=JOB_SUCCEEDED, owner_id=user.pk, data={}))
    pending = WebhookDelivery.objects.exclude(pk=dead.pk).get()

    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            DELIVERIES_URL, {"action": "redeliver", "_selected_action": [str(dead.pk), str(pending.pk)]}, follow=True
        )

    shown = [str(message) for message in response.context["messages"]]
    assert "1 deliver(ies) queued again." in shown
    assert any(str(pending.event_id) in message for message in shown)
    redelivered = WebhookDelivery.objects.get(pk=dead.pk)
    assert (redelivered.status, redelivered.attempt_count) == (DeliveryStatus.SUCCEEDED, 1)
    [received] = receiver.received
    assert received.verified
    assert received.headers["webhook-id"] == str(dead.event_id)
    assert WebhookDelivery.objects.get(pk=pending.pk).attempt_count == 0
