"""The webhook subscription endpoints: register (the secret once), list, read, change,
delete, rotate the secret; owner scoping, scopes and validation."""

from __future__ import annotations

import base64

import pytest
from standardwebhooks.webhooks import Webhook

from core.models import IdempotencyRecord
from tests.support.problems import assert_problem
from tests.webhooks.receiver import Receiver
from webhooks import signing
from webhooks.models import WebhookSubscription

pytestmark = pytest.mark.django_db

PUBLIC_URL = "https://93.184.215.14/hooks/books"  # an IP literal: registration needs no DNS


def assert_secret_shape(secret: str) -> None:
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) >= 24


def test_registering_returns_the_subscription_with_its_secret_once(auth_client):
    response = auth_client.post(
        "/v1/webhooks",
        {"url": PUBLIC_URL, "description": "my book pipeline", "eventTypes": ["job.succeeded", "export.ready"]},
        format="json",
    )

    assert response.status_code == 201
    body = response.json()
    assert_secret_shape(body["secret"])
    assert body["secretPrefix"] == body["secret"][:10]
    assert body["url"] == PUBLIC_URL
    assert body["description"] == "my book pipeline"
    assert body["eventTypes"] == ["job.succeeded", "export.ready"]
    assert body["enabled"] is True
    assert body["createdUtc"]
    read = auth_client.get(f"/v1/webhooks/{body['id']}").json()
    listed = auth_client.get("/v1/webhooks").json()
    assert "secret" not in read
    assert read["secretPrefix"] == body["secretPrefix"]
    assert [item["id"] for item in listed] == [body["id"]]
    assert "secret" not in listed[0]


def test_the_secret_is_stored_encrypted_and_signs_what_the_receiver_verifies(auth_client):
    body = auth_client.post("/v1/webhooks", {"url": PUBLIC_URL}, format="json").json()
    secret = body["secret"]
    row = WebhookSubscription.objects.get(pk=body["id"])

    assert secret not in row.secret_encrypted
    assert secret.removeprefix("whsec_") not in row.secret_encrypted
    assert signing.secret_decrypt(row.secret_encrypted) == secret
    message = b'{"type":"webhook.test"}'
    now = row.created_at
    headers = signing.signed_headers(secret=secret, message_id="evt_1", timestamp=now, body=message)
    # The official package, not our code, says whether the signature is right.
    assert Webhook(secret).verify(message, headers) == {"type": "webhook.test"}


def test_a_secret_encrypted_under_a_retired_key_still_signs_after_rotating_the_key(auth_client, settings):
    settings.WEBHOOK_SECRET_KEY = "the-first-key"
    body = auth_client.post("/v1/webhooks", {"url": PUBLIC_URL}, format="json").json()
    settings.WEBHOOK_SECRET_KEY = "the-second-key"
    settings.WEBHOOK_SECRET_KEY_FALLBACKS = ["the-first-key"]

    row = WebhookSubscription.objects.get(pk=body["id"])
    assert signing.secret_decrypt(row.secret_encrypted) == body["secret"]


def test_rotating_the_secret_returns_the_new_one_once_and_the_old_one_stops_verifying(auth_client):
    created = auth_client.post("/v1/webhooks", {"url": PUBLIC_URL}, format="json").json()

    response = auth_client.post(f"/v1/webhooks/{created['id']}/rotate-secret")

    assert response.status_code == 200
    rotated = response.json()
    assert rotated["subscriptionId"] == created["id"]
    assert_secret_shape(rotated["secret"])
    assert rotated["secret"] != created["secret"]
    assert rotated["secretPrefix"] == rotated["secret"][:10]
    assert auth_client.get(f"/v1/webhooks/{created['id']}").json()["secretPrefix"] == rotated["secretPrefix"]
    row = WebhookSubscription.objects.get(pk=created["id"])
    current = signing.secret_decrypt(row.secret_encrypted)
    message = b'{"type":"webhook.test"}'
    headers = signing.signed_headers(secret=current, message_id="evt_2", timestamp=row.created_at, body=message)
    assert Webhook(rotated["secret"]).verify(message, headers)
    with pytest.raises(Exception, match="No matching signature"):
        Webhook(created["secret"]).verify(message, headers)


def test_deleting_a_webhook_is_204_and_it_is_gone(auth_client):
    created = auth_client.post("/v1/webhooks", {"url": PUBLIC_URL}, format="json").json()

    response = auth_client.delete(f"/v1/webhooks/{created['id']}")

    assert response.status_code == 204
    assert_problem(auth_client.get(f"/v1/webhooks/{created['id']}"), 404, "not_found")
    assert not WebhookSubscription.objects.exists()


def test_another_accounts_webhook_is_not_found_for_every_operation(auth_client, other_user, jwt_client):
    created = auth_client.post("/v1/webhooks", {"url": PUBLIC_URL}, format="json").json()
    stranger = jwt_client(other_user)
    base = f"/v1/webhooks/{created['id']}"

    assert stranger.get("/v1/webhooks").json() == []
    assert_problem(stranger.get(base), 404, "not_found")
    assert_problem(stranger.patch(base, {"description": "mine now"}, format="json"), 404, "not_found")
    assert_problem(stranger.post(f"{base}/rotate-secret"), 404, "not_found")
    assert_problem(stranger.post(f"{base}/test"), 404, "not_found")
    assert_problem(stranger.get(f"{base}/deliveries"), 404, "not_found")
    assert_problem(stranger.delete(base), 404, "not_found")
    row = WebhookSubscription.objects.get(pk=created["id"])
    assert (row.description, row.secret_prefix) == ("", created["secretPrefix"])


def test_changing_the_description_and_event_types_keeps_the_rest(auth_client):
    created = auth_client.post("/v1/webhooks", {"url": PUBLIC_URL, "description": "a"}, format="json").json()

    response = auth_client.patch(
        f"/v1/webhooks/{created['id']}", {"description": "b", "eventTypes": ["wallet.low_balance"]}, format="json"
    )

    assert response.status_code == 200
    body = response.json()
    assert (body["description"], body["eventTypes"], body["url"]) == ("b", ["wallet.low_balance"], PUBLIC_URL)
    assert body["secretPrefix"] == created["secretPrefix"]


def test_a_new_url_is_checked_like_at_registration(auth_client):
    created = auth_client.post("/v1/webhooks", {"url": PUBLIC_URL}, format="json").json()

    refused = auth_client.patch(f"/v1/webhooks/{created['id']}", {"url": "http://10.0.0.7/hook"}, format="json")

    assert_problem(refused, 400, "webhook_address_forbidden")
    assert WebhookSubscription.objects.get(pk=created["id"]).url == PUBLIC_URL


def test_the_owner_disables_and_enables_a_webhook(auth_client):
    created = auth_client.post("/v1/webhooks", {"url": PUBLIC_URL}, format="json").json()

    disabled = auth_client.patch(f"/v1/webhooks/{created['id']}", {"enabled": False}, format="json").json()
    enabled = auth_client.patch(f"/v1/webhooks/{created['id']}", {"enabled": True}, format="json").json()

    assert (disabled["enabled"], disabled["disabledReason"]) == (False, "Disabled by the owner.")
    assert disabled["disabledUtc"]
    assert (enabled["enabled"], enabled["disabledReason"], enabled["disabledUtc"]) == (True, "", None)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "url"),
        ({"url": PUBLIC_URL, "eventTypes": ["book.eaten"]}, "eventTypes"),
        ({"url": PUBLIC_URL, "description": "x" * 201}, "description"),
    ],
)
def test_invalid_input_is_a_validation_error_and_registers_nothing(auth_client, body, field):
    problem = assert_problem(auth_client.post("/v1/webhooks", body, format="json"), 400, "validation_error")

    assert any(name.startswith(field) for name in problem["errors"])
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "ftp://93.184.215.14/hook",
        "//93.184.215.14/hook",
        "93.184.215.14/hook",
        "https:///hook",
        "https://user:pass@93.184.215.14/hook",
        "https://93.184.215.14:99999/hook",
        "https://exa mple.com/hook",
        "https://[not-an-ip]/hook",
        "javascript:alert(1)",
        "https://" + "a" * 2100 + ".com/",
    ],
)
def test_a_url_that_is_not_absolute_http_is_refused(auth_client, url):
    response = auth_client.post("/v1/webhooks", {"url": url}, format="json")

    assert response.status_code == 400
    assert response.json()["code"] in ("webhook_url_invalid", "validation_error")
    assert not WebhookSubscription.objects.exists()


def test_a_name_that_does_not_resolve_yet_is_registered(auth_client):
    # `.invalid` never resolves (RFC 6761), like a name on an offline machine or one whose
    # DNS record is still to come; every delivery checks it again (test_deliveries). A name
    # that resolves to a forbidden address is still refused (test_addresses).
    url = "https://hooks.example-to-come.invalid/hook"

    response = auth_client.post("/v1/webhooks", {"url": url}, format="json")

    assert response.status_code == 201, response.json()
    assert WebhookSubscription.objects.get().url == url


def test_an_account_has_at_most_the_configured_number_of_webhooks(auth_client, settings):
    settings.WEBHOOK_MAX_SUBSCRIPTIONS = 2
    for index in range(2):
        auth_client.post("/v1/webhooks", {"url": f"{PUBLIC_URL}/{index}"}, format="json")

    refused = auth_client.post("/v1/webhooks", {"url": f"{PUBLIC_URL}/3"}, format="json")

    assert_problem(refused, 409, "webhook_limit_reached")
    assert WebhookSubscription.objects.count() == 2


def test_a_double_submit_registers_one_webhook(auth_client):
    first = auth_client.post("/v1/webhooks", {"url": PUBLIC_URL}, format="json")
    second = auth_client.post("/v1/webhooks", {"url": PUBLIC_URL}, format="json")

    assert first.status_code == second.status_code == 201
    assert second["Idempotent-Replayed"] == "true"
    assert second.json()["id"] == first.json()["id"]
    assert WebhookSubscription.objects.count() == 1
    assert IdempotencyRecord.objects.count() == 1


def test_a_read_only_key_lists_but_cannot_register(user, key_client):
    reader = key_client(user, scopes=["projects:read"])

    assert reader.get("/v1/webhooks").status_code == 200
    assert_problem(reader.post("/v1/webhooks", {"url": PUBLIC_URL}, format="json"), 403, "forbidden")
    assert not WebhookSubscription.objects.exists()


def test_without_a_credential_nothing_is_answered(api_client):
    assert_problem(api_client.get("/v1/webhooks"), 401, "not_authenticated")


def test_the_list_reads_in_a_fixed_number_of_queries(auth_client, django_assert_max_num_queries):
    for index in range(5):
        auth_client.post("/v1/webhooks", {"url": f"{PUBLIC_URL}/{index}"}, format="json")

    with django_assert_max_num_queries(3):
        listed = auth_client.get("/v1/webhooks").json()

    assert len(listed) == 5


def test_a_receiver_url_on_this_machine_is_accepted_only_when_private_addresses_are_allowed(
    auth_client, receiver: Receiver, settings
):
    refused = auth_client.post("/v1/webhooks", {"url": receiver.url()}, format="json")
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    accepted = auth_client.post("/v1/webhooks", {"url": receiver.url()}, format="json")

    assert_problem(refused, 400, "webhook_address_forbidden")
    assert accepted.status_code == 201
