"""Registration, login, tokens: the sign-in paths and their failure codes."""

import time
from datetime import timedelta

import jwt
import pytest
from rest_framework_simplejwt.tokens import AccessToken

from accounts.models import User
from tests.accounts.helpers import assert_signed_in
from tests.factories import DEFAULT_PASSWORD, UserFactory
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db

STRONG_PASSWORD = "Lantern-Orchard-47-Quietly"


def register(client, **overrides):
    body = {"email": "Reader@Example.COM ", "password": STRONG_PASSWORD, "displayName": "Ada Reader"}
    body.update(overrides)
    return client.post("/v1/auth/register", body, format="json")


def test_register_creates_an_account_with_a_normalised_email_and_signs_in(api_client):
    response = register(api_client)

    assert response.status_code == 201
    assert_signed_in(api_client, response.json(), email="reader@example.com", has_password=True, email_verified=False)


def test_register_refuses_an_email_taken_in_another_case(api_client):
    UserFactory(email="reader@example.com")

    response = register(api_client, email="READER@example.com")

    assert_problem(response, 409, "email_taken")
    assert User.objects.count() == 1


@pytest.mark.parametrize(
    ("password", "reason"),
    [
        ("short1!", "too short"),
        ("password123", "too common"),
        ("48213957604817", "entirely numeric"),
        ("reader@example.com", "too similar"),
    ],
)
def test_register_refuses_a_weak_password_and_creates_nothing(api_client, password, reason):
    response = register(api_client, password=password)

    body = assert_problem(response, 400, "validation_error")
    assert "password" in body["errors"]
    assert any(reason in message for message in body["errors"]["password"])
    assert not User.objects.exists()


def test_register_reports_every_missing_field(api_client):
    response = api_client.post("/v1/auth/register", {}, format="json")

    body = assert_problem(response, 400, "validation_error")
    assert set(body["errors"]) == {"email", "password", "displayName"}


def test_login_returns_a_token_and_the_user(api_client):
    user = UserFactory(email="reader@example.com")

    response = api_client.post("/v1/auth/login", {"email": "Reader@example.com", "password": DEFAULT_PASSWORD})

    assert response.status_code == 200
    body = response.json()
    assert body["user"]["id"] == str(user.pk)
    token = AccessToken(body["token"])
    assert str(token["sub"]) == str(user.pk)
    assert timedelta(hours=11, minutes=59) < timedelta(seconds=token["exp"] - token["iat"]) <= timedelta(hours=12)


@pytest.mark.parametrize("email", ["reader@example.com", "nobody@example.com"])
def test_login_with_a_wrong_email_or_password_is_invalid_credentials(api_client, email):
    UserFactory(email="reader@example.com")

    response = api_client.post("/v1/auth/login", {"email": email, "password": "not-the-password"})

    assert_problem(response, 401, "invalid_credentials")


def test_login_of_a_disabled_account_is_invalid_credentials(api_client):
    UserFactory(email="reader@example.com", is_active=False)

    response = api_client.post("/v1/auth/login", {"email": "reader@example.com", "password": DEFAULT_PASSWORD})

    assert_problem(response, 401, "invalid_credentials")


def test_a_request_without_a_credential_is_not_authenticated(api_client):
    response = api_client.get("/v1/me")

    assert_problem(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_an_expired_jwt_is_told_apart_from_a_bad_one(api_client, user):
    token = AccessToken.for_user(user)
    token.set_exp(lifetime=-timedelta(seconds=1))

    expired = api_client.get("/v1/me", HTTP_AUTHORIZATION=f"Bearer {token}")
    tampered = api_client.get("/v1/me", HTTP_AUTHORIZATION=f"Bearer {str(AccessToken.for_user(user))[:-3]}xyz")
    garbage = api_client.get("/v1/me", HTTP_AUTHORIZATION="Bearer not-a-token")

    assert_problem(expired, 401, "token_expired")
    assert_problem(tampered, 401, "token_invalid")
    assert_problem(garbage, 401, "credential_malformed")


def test_a_jwt_signed_with_another_key_is_invalid(api_client, user):
    genuine = AccessToken.for_user(user)
    foreign = jwt.encode(dict(genuine.payload), "another-key-entirely-another-key-entirely", algorithm="HS256")

    assert_problem(api_client.get("/v1/me", HTTP_AUTHORIZATION=f"Bearer {foreign}"), 401, "token_invalid")


def test_a_jwt_accepted_before_is_refused_once_it_expires(api_client, user):
    # Its signature is checked once per process (accounts.authentication): its expiry is not.
    token = AccessToken.for_user(user)
    token.set_exp(lifetime=timedelta(seconds=2))
    header = f"Bearer {token}"

    accepted = api_client.get("/v1/me", HTTP_AUTHORIZATION=header)
    time.sleep(max(0.0, token["exp"] - time.time()) + 0.05)
    later = api_client.get("/v1/me", HTTP_AUTHORIZATION=header)

    assert accepted.status_code == 200
    assert_problem(later, 401, "token_expired")


def test_a_jwt_of_a_disabled_account_is_refused(api_client, user, jwt_client):
    client = jwt_client(user)
    User.objects.filter(pk=user.pk).update(is_active=False)

    assert_problem(client.get("/v1/me"), 401, "account_disabled")


def test_changing_the_password_revokes_earlier_tokens_and_returns_a_fresh_one(user, jwt_client, api_client):
    client = jwt_client(user)

    response = client.post(
        "/v1/me/password", {"currentPassword": DEFAULT_PASSWORD, "newPassword": STRONG_PASSWORD}, format="json"
    )

    assert response.status_code == 200
    assert_problem(client.get("/v1/me"), 401, "token_revoked")
    fresh = api_client.get("/v1/me", HTTP_AUTHORIZATION=f"Bearer {response.json()['token']}")
    assert fresh.status_code == 200
    login = api_client.post("/v1/auth/login", {"email": user.email, "password": STRONG_PASSWORD})
    assert login.status_code == 200


def test_changing_the_password_needs_the_current_one(user, jwt_client):
    response = jwt_client(user).post(
        "/v1/me/password", {"currentPassword": "wrong-password", "newPassword": STRONG_PASSWORD}, format="json"
    )

    body = assert_problem(response, 400, "validation_error")
    assert "currentPassword" in body["errors"]
    user.refresh_from_db()
    assert user.check_password(DEFAULT_PASSWORD)


def test_changing_the_password_of_an_account_without_one_is_password_not_set(jwt_client):
    provider_only = User.objects.create_user("oidc@example.com", None)

    response = jwt_client(provider_only).post(
        "/v1/me/password", {"currentPassword": "anything", "newPassword": STRONG_PASSWORD}, format="json"
    )

    assert_problem(response, 409, "password_not_set")


def test_changing_the_password_needs_an_interactive_sign_in(user, key_client):
    response = key_client(user).post(
        "/v1/me/password", {"currentPassword": DEFAULT_PASSWORD, "newPassword": STRONG_PASSWORD}, format="json"
    )

    assert_problem(response, 403, "forbidden")
    user.refresh_from_db()
    assert user.check_password(DEFAULT_PASSWORD)
