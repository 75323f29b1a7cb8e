"""The profile (GET/PUT /v1/me) and preferences (PUT /v1/me/preferences)."""

import pytest

from accounts.models import User
from tests.factories import DEFAULT_PASSWORD, UserFactory
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db


def test_the_profile_is_read_from_the_account_record(auth_client, user):
    body = auth_client.get("/v1/me").json()

    assert body == {
        "id": str(user.pk),
        "email": user.email,
        "displayName": user.display_name,
        "name": user.display_name,
        "emailVerified": False,
        "hasAvatar": False,
        "avatarChangedUtc": None,
        "createdUtc": body["createdUtc"],
        "hasPassword": True,
        "preferences": {
            "defaultTargetLanguage": None,
            "displayCurrency": "USD",
            "emailNotifications": True,
            "inAppNotifications": True,
            "projectsPageSize": 25,
            "timeZone": "UTC",
        },
    }
    assert body["createdUtc"].startswith(str(user.date_joined.year))


def test_the_display_name_can_be_changed_without_a_password(auth_client, user):
    response = auth_client.put("/v1/me", {"displayName": "  Grace Hopper "}, format="json")

    assert response.status_code == 200
    assert response.json()["displayName"] == "Grace Hopper"
    user.refresh_from_db()
    assert user.display_name == "Grace Hopper"


def test_changing_the_email_needs_the_current_password(auth_client, user):
    refused = auth_client.put("/v1/me", {"email": "new@example.com"}, format="json")
    accepted = auth_client.put(
        "/v1/me", {"email": "New@Example.com", "currentPassword": DEFAULT_PASSWORD}, format="json"
    )

    assert "currentPassword" in assert_problem(refused, 400, "validation_error")["errors"]
    assert accepted.status_code == 200
    assert accepted.json()["email"] == "new@example.com"
    assert accepted.json()["emailVerified"] is False


def test_changing_the_email_to_a_taken_one_is_a_conflict(auth_client, user):
    UserFactory(email="taken@example.com")

    response = auth_client.put(
        "/v1/me", {"email": "TAKEN@example.com", "currentPassword": DEFAULT_PASSWORD}, format="json"
    )

    assert_problem(response, 409, "email_taken")
    user.refresh_from_db()
    assert user.email != "taken@example.com"


def test_an_account_without_a_password_cannot_change_its_email(jwt_client):
    provider_only = User.objects.create_user("oidc@example.com", None)

    response = jwt_client(provider_only).put("/v1/me", {"email": "other@example.com"}, format="json")

    assert_problem(response, 409, "password_not_set")
    provider_only.refresh_from_db()
    assert provider_only.email == "oidc@example.com"
    assert jwt_client(provider_only).get("/v1/me").json()["hasPassword"] is False


def test_an_api_key_cannot_change_the_email(user, key_client):
    response = key_client(user).put(
        "/v1/me", {"email": "other@example.com", "currentPassword": DEFAULT_PASSWORD}, format="json"
    )

    assert_problem(response, 403, "forbidden")


def test_preferences_update_only_the_fields_given(auth_client, user):
    first = auth_client.put(
        "/v1/me/preferences",
        {"defaultTargetLanguage": "fr", "displayCurrency": "eur", "timeZone": "Europe/Paris"},
        format="json",
    )
    second = auth_client.put(
        "/v1/me/preferences", {"projectsPageSize": 50, "emailNotifications": False, "timeZone": None}, format="json"
    )

    assert first.status_code == 200
    assert second.status_code == 200
    assert second.json()["preferences"] == {
        "defaultTargetLanguage": "fr",
        "displayCurrency": "EUR",
        "emailNotifications": False,
        "inAppNotifications": True,
        "projectsPageSize": 50,
        "timeZone": "Europe/Paris",
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"defaultTargetLanguage": "xx"}, "defaultTargetLanguage"),
        ({"defaultTargetLanguage": "EN-us"}, "defaultTargetLanguage"),
        ({"displayCurrency": "ZZZ"}, "displayCurrency"),
        ({"displayCurrency": "dollars"}, "displayCurrency"),
        ({"timeZone": "Mars/Olympus_Mons"}, "timeZone"),
        ({"projectsPageSize": 0}, "projectsPageSize"),
        ({"projectsPageSize": 10_000}, "projectsPageSize"),
        ({"projectsPageSize": "many"}, "projectsPageSize"),
        ({"emailNotifications": "perhaps"}, "emailNotifications"),
    ],
)
def test_invalid_preferences_are_refused_and_nothing_changes(auth_client, user, body, field):
    before = auth_client.get("/v1/me").json()["preferences"]

    response = auth_client.put("/v1/me/preferences", {**body, "inAppNotifications": False}, format="json")

    assert field in assert_problem(response, 400, "validation_error")["errors"]
    assert auth_client.get("/v1/me").json()["preferences"] == before
