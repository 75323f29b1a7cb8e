"""The operators' admin for accounts, and the development-user command."""

import io
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from accounts.models import ApiKey, User
from accounts.services.api_keys import api_key_create
from tests.factories import UserFactory
from tests.support.problems import assert_problem
from wallet.selectors.wallet import wallet_view_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    staff = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(staff)
    return client


def test_the_admin_revoke_action_revokes_keys_through_the_service(staff_client, user, api_client):
    key, secret = api_key_create(user=user, name="leaked")

    response = staff_client.post(
        "/admin/accounts/apikey/", {"action": "revoke", "_selected_action": [str(key.pk)]}, follow=True
    )

    assert response.status_code == 200
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert_problem(api_client.get("/v1/me", HTTP_X_API_KEY=secret), 401, "api_key_revoked")


def test_the_admin_lists_users_and_keys_and_never_shows_a_secret(staff_client, user):
    key, secret = api_key_create(user=user, name="visible")

    users_page = staff_client.get("/admin/accounts/user/")
    user_page = staff_client.get(f"/admin/accounts/user/{user.pk}/change/")
    key_page = staff_client.get(f"/admin/accounts/apikey/{key.pk}/change/")

    assert users_page.status_code == 200
    assert user.email in users_page.content.decode()
    assert user_page.status_code == 200
    assert key_page.status_code == 200
    for page in (users_page, user_page, key_page):
        assert secret not in page.content.decode()


def test_the_admin_is_for_staff_only(client, user):
    client.force_login(user)

    response = client.get("/admin/accounts/user/")

    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_create_dev_user_prints_working_credentials(api_client):
    out = io.StringIO()

    call_command("create_dev_user", "--email", "Dev@Example.com", stdout=out)

    text = out.getvalue()
    secret = next(word for word in text.split() if word.startswith("svc_sk_live_"))
    assert api_client.get("/v1/me", HTTP_X_API_KEY=secret).json()["email"] == "dev@example.com"
    assert ApiKey.objects.get(user__email="dev@example.com").scopes == ["projects:write", "approve"]
    call_command("create_dev_user", "--email", "dev@example.com", stdout=io.StringIO())
    assert User.objects.filter(email="dev@example.com").count() == 1
    dev = User.objects.get(email="dev@example.com")
    assert wallet_view_for(user=dev).spendable == Decimal("100")  # granted once, not twice
    assert "100.000000 USD spendable" in text


def test_create_dev_user_refuses_outside_development(settings):
    settings.DEVELOPMENT_DEPLOYMENT = False

    with pytest.raises(CommandError, match="development"):
        call_command("create_dev_user", stdout=io.StringIO())
    assert not User.objects.exists()
