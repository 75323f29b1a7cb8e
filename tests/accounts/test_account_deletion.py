"""DELETE /v1/me: the proof it needs, what it ends (books and every file, batches and
their holds, API keys, webhooks, hub connections, the JWT), what it keeps (the wallet's
ledger, anonymised), and the refusals that change nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

from accounts.models import ApiKey, User
from accounts.services.api_keys import api_key_create
from projects.models import Project, Upload
from tests.factories import DEFAULT_PASSWORD, UserFactory
from tests.projects.test_deletion import exported_book
from tests.projects.test_intake_api import text_pdf, upload
from tests.projects.test_processing import book, credit
from tests.support.problems import assert_problem
from tests.wallet.helpers import assert_wallet_invariants
from tests.webhooks.test_hub_consumer import DEADLINE, assert_open, bearer, hub, run
from wallet.models import Hold, HoldState, LedgerEntry, SavedCard, TopUp, TopUpMethod, Wallet
from webhooks.models import WebhookSubscription

pytestmark = pytest.mark.django_db


def client_with(credential: str, header: str = "HTTP_AUTHORIZATION") -> APIClient:
    client = APIClient()
    client.credentials(**{header: f"Bearer {credential}" if header == "HTTP_AUTHORIZATION" else credential})
    return client


def jwt_issued(user: User, *, minutes_ago: float = 0) -> str:
    token = AccessToken.for_user(user)
    token.set_iat(at_time=token.current_time - timedelta(minutes=minutes_ago))
    return str(token)


@pytest.fixture
def account_in_use(user, auth_client, settings, stored_keys) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """The user with an exported book (files, on local storage and then on S3), a book whose
    first batch is queued (a hold), an unadopted upload, an API key, a webhook and a saved card."""
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    exported = exported_book(auth_client)
    credit(user, "5")
    queued = book(user)
    job_id = auth_client.post(f"/v1/projects/{queued.pk}/process").json()["jobId"]
    upload(auth_client, "spare.pdf", text_pdf(1))
    _, secret = api_key_create(user=user, name="integration")
    hook = auth_client.post("/v1/webhooks", {"url": "http://127.0.0.1:9/hook"}, format="json")
    assert hook.status_code == 201, hook.json()
    SavedCard.objects.create(user=user, stripe_payment_method_id="pm_test_1", brand="visa", last4="4242")
    return {"exported": exported, "job_id": job_id, "key": secret}


def test_deleting_an_account_with_its_password_ends_everything_and_keeps_the_ledger_anonymised(
    user, auth_client, account_in_use, stored_keys, django_capture_on_commit_callbacks
):
    email = user.email
    entries_before = LedgerEntry.objects.filter(wallet__user=user).count()
    assert stored_keys()

    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.delete("/v1/me", {"password": DEFAULT_PASSWORD}, format="json")

    assert response.status_code == 204, response.content
    assert stored_keys() == []
    assert not Project.objects.exists()
    assert not Upload.objects.exists()
    assert not WebhookSubscription.objects.exists()
    assert not SavedCard.objects.exists()
    assert not ApiKey.objects.filter(revoked_at__isnull=True).exists()
    assert_problem(auth_client.get("/v1/me"), 401, "account_disabled")
    assert_problem(client_with(str(account_in_use["key"]), "HTTP_X_API_KEY").get("/v1/me"), 401, "api_key_revoked")
    # The ledger stays, whole: the hold of the queued batch released, every sum intact.
    assert Hold.objects.get(cause_id=account_in_use["job_id"]).state == HoldState.RELEASED
    wallet = assert_wallet_invariants(Wallet.objects.get(user=user).pk)
    assert (wallet.balance, wallet.reserved) == (Decimal(5), 0)
    assert LedgerEntry.objects.filter(wallet=wallet).count() == entries_before + 1  # the release
    # The user row is an anonymous tombstone, and the address is free again.
    tombstone = User.objects.get(pk=user.pk)
    assert (tombstone.is_active, tombstone.has_usable_password(), tombstone.display_name) == (False, False, "")
    assert email not in tombstone.email
    assert tombstone.email.endswith("@deleted.invalid")
    again = APIClient().post(
        "/v1/auth/register", {"email": email, "password": DEFAULT_PASSWORD, "displayName": "Again"}, format="json"
    )
    assert again.status_code == 201, again.json()
    assert again.json()["user"]["id"] != str(user.pk)


@pytest.mark.parametrize("body", [{}, {"password": ""}, {"password": "not-the-password"}])
def test_a_wrong_or_missing_password_is_refused_and_changes_nothing(
    user, auth_client, account_in_use, django_capture_on_commit_callbacks, stored_keys, body
):
    stored = stored_keys()

    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.delete("/v1/me", body, format="json")

    assert_problem(response, 400, "validation_error")
    assert "password" in response.json()["errors"]
    assert stored_keys() == stored
    assert Project.objects.filter(owner=user).count() == 2
    assert WebhookSubscription.objects.filter(owner=user).exists()
    assert Hold.objects.get(cause_id=account_in_use["job_id"]).state == HoldState.OPEN
    assert client_with(str(account_in_use["key"]), "HTTP_X_API_KEY").get("/v1/me").status_code == 200
    assert auth_client.get("/v1/me").json()["email"] == user.email


def test_an_api_key_cannot_delete_the_account(user, key_client):
    response = key_client(user).delete("/v1/me", {"password": DEFAULT_PASSWORD}, format="json")

    assert_problem(response, 403, "forbidden")
    assert User.objects.get(pk=user.pk).is_active


def test_an_account_without_a_password_needs_a_recent_sign_in(settings):
    settings.ACCOUNT_DELETE_SIGN_IN_MAX_AGE_MINUTES = 10
    user = UserFactory()
    user.set_unusable_password()
    user.save()

    stale = client_with(jwt_issued(user, minutes_ago=11)).delete("/v1/me", {}, format="json")
    assert_problem(stale, 403, "recent_sign_in_required")
    assert User.objects.get(pk=user.pk).is_active

    fresh = client_with(jwt_issued(user, minutes_ago=1)).delete("/v1/me", {}, format="json")
    assert fresh.status_code == 204
    assert not User.objects.get(pk=user.pk).is_active


def test_a_pending_top_up_refuses_the_deletion_and_changes_nothing(
    user, auth_client, account_in_use, django_capture_on_commit_callbacks
):
    TopUp.objects.create(reference="tu_pending_1", user=user, method=TopUpMethod.CARD, amount=Decimal(10))

    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.delete("/v1/me", {"password": DEFAULT_PASSWORD}, format="json")

    assert_problem(response, 409, "top_up_in_flight")
    assert Project.objects.filter(owner=user).count() == 2
    assert Hold.objects.get(cause_id=account_in_use["job_id"]).state == HoldState.OPEN
    assert SavedCard.objects.filter(user=user).exists()
    assert User.objects.get(pk=user.pk).email == user.email


@pytest.mark.django_db(transaction=True)
def test_the_accounts_hub_connections_are_closed_with_4410(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    ada, bob = UserFactory(), UserFactory()
    delete: Callable[[], int] = lambda: (  # noqa: E731
        client_with(bearer(ada)["Authorization"].split()[1])
        .delete("/v1/me", {"password": DEFAULT_PASSWORD}, format="json")
        .status_code
    )

    async def scenario() -> None:
        adas, bobs = hub(headers=bearer(ada)), hub(headers=bearer(bob))
        await assert_open(adas)
        await assert_open(bobs)
        assert await sync_to_async(delete)() == 204
        closing = await adas.receive_output(timeout=DEADLINE)
        assert closing == {"type": "websocket.close", "code": 4410, "reason": "account_deleted"}
        await bobs.send_json_to({"type": "ping"})
        assert await bobs.receive_json_from(timeout=DEADLINE) == {"type": "pong", "data": {}}
        await bobs.disconnect()

    run(scenario())
