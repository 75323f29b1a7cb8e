"""Scoped API keys: minting, hashing, both header forms, scopes, revocation, expiry."""

import logging
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiKey
from accounts.services.api_keys import SECRET_PREFIX, api_key_create, secret_hash, secret_is_well_formed
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db

SECRET_ALPHABET = set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def test_creating_a_key_returns_the_secret_once_and_stores_only_its_hash(auth_client, user, caplog):
    caplog.set_level(logging.DEBUG)

    response = auth_client.post("/v1/api-keys", {"name": "CI", "expiresInDays": 30}, format="json")

    assert response.status_code == 201
    body = response.json()
    secret = body["secret"]
    assert secret.startswith(SECRET_PREFIX)
    assert set(secret[len(SECRET_PREFIX) :]) <= SECRET_ALPHABET
    assert len(secret) - len(SECRET_PREFIX) >= 43  # at least 256 random bits in base62
    assert body["scopes"] == ["projects:write"]
    assert body["prefix"] == secret[: len(body["prefix"])]
    assert secret not in body["prefix"]
    assert body["expiresUtc"] is not None

    key = ApiKey.objects.get(pk=body["id"])
    assert key.secret_hash == secret_hash(secret)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM accounts_apikey")
        stored = repr(cursor.fetchall())
    assert secret not in stored
    assert secret[len(body["prefix"]) :] not in stored
    assert secret not in caplog.text

    api_client = APIClient()
    assert api_client.get("/v1/me", HTTP_X_API_KEY=secret).status_code == 200
    assert api_client.get("/v1/me", HTTP_X_API_KEY=secret[:-2]).status_code == 401
    assert secret not in caplog.text
    assert secret[:-2] not in caplog.text

    listing = auth_client.get("/v1/api-keys").json()
    assert [item["id"] for item in listing] == [body["id"]]
    assert "secret" not in listing[0]
    assert set(listing[0]) == {
        "id",
        "name",
        "prefix",
        "scopes",
        "createdUtc",
        "lastUsedUtc",
        "expiresUtc",
        "revokedUtc",
    }


@pytest.mark.parametrize("header", ["bearer", "x-api-key"])
def test_a_key_authenticates_in_either_header(user, key_client, header):
    response = key_client(user, header=header).get("/v1/me")

    assert response.status_code == 200
    assert response.json()["id"] == str(user.pk)


def test_a_mistyped_key_is_malformed_and_an_unknown_one_is_invalid(api_client, user):
    _, secret = api_key_create(user=user, name="k")
    mistyped = secret[:-1] + ("A" if secret[-1] != "A" else "B")
    unknown = api_key_create(user=user, name="other")[1]
    ApiKey.objects.filter(secret_hash=secret_hash(unknown)).delete()

    assert not secret_is_well_formed(mistyped)
    assert_problem(api_client.get("/v1/me", HTTP_X_API_KEY=mistyped), 401, "credential_malformed")
    assert_problem(api_client.get("/v1/me", HTTP_X_API_KEY="svc_sk_live_short"), 401, "credential_malformed")
    assert_problem(api_client.get("/v1/me", HTTP_AUTHORIZATION=f"Bearer {unknown}"), 401, "credential_invalid")


def test_a_revoked_key_is_refused_at_once_with_its_own_code(user, key_client, auth_client):
    client = key_client(user)
    assert client.get("/v1/me").status_code == 200
    key = ApiKey.objects.get(user=user)

    response = auth_client.delete(f"/v1/api-keys/{key.pk}")

    assert response.status_code == 204
    assert_problem(client.get("/v1/me"), 401, "api_key_revoked")
    key.refresh_from_db()
    first_revocation = key.revoked_at
    assert auth_client.delete(f"/v1/api-keys/{key.pk}").status_code == 204
    key.refresh_from_db()
    assert key.revoked_at == first_revocation
    assert auth_client.get("/v1/api-keys").json()[0]["revokedUtc"] is not None


def test_an_expired_key_is_refused_with_its_own_code(api_client, user):
    key, secret = api_key_create(user=user, name="short-lived", expires_in_days=1)
    ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert_problem(api_client.get("/v1/me", HTTP_X_API_KEY=secret), 401, "api_key_expired")


def test_a_key_of_a_disabled_account_is_refused(api_client, user):
    _, secret = api_key_create(user=user, name="k")
    user.is_active = False
    user.save()

    assert_problem(api_client.get("/v1/me", HTTP_X_API_KEY=secret), 401, "account_disabled")


def test_another_owners_key_is_not_found_like_a_missing_one(auth_client, other_user):
    foreign, _ = api_key_create(user=other_user, name="theirs")

    foreign_response = auth_client.delete(f"/v1/api-keys/{foreign.pk}")
    missing_response = auth_client.delete("/v1/api-keys/7d5e1b2a-0000-4000-8000-000000000000")
    malformed_response = auth_client.delete("/v1/api-keys/not-a-uuid")

    foreign_body = assert_problem(foreign_response, 404, "not_found")
    missing_body = assert_problem(missing_response, 404, "not_found")
    assert_problem(malformed_response, 404, "not_found")
    assert {k: v for k, v in foreign_body.items() if k != "instance"} == {
        k: v for k, v in missing_body.items() if k != "instance"
    }
    foreign.refresh_from_db()
    assert foreign.revoked_at is None
    assert auth_client.get("/v1/api-keys").json() == []


def test_a_read_key_can_read_but_not_write(user, key_client):
    client = key_client(user, scopes=["projects:read"])

    assert client.get("/v1/me").status_code == 200
    assert client.get("/v1/api-keys").status_code == 200
    assert_problem(client.put("/v1/me", {"displayName": "New"}, format="json"), 403, "forbidden")
    assert_problem(client.post("/v1/api-keys", {"name": "x"}, format="json"), 403, "forbidden")
    user.refresh_from_db()
    assert user.display_name != "New"
    assert ApiKey.objects.filter(user=user).count() == 1


def test_an_approve_only_key_cannot_write_projects(user, key_client):
    client = key_client(user, scopes=["approve"])

    assert client.get("/v1/me").status_code == 200
    assert_problem(client.put("/v1/me/preferences", {"timeZone": "UTC"}, format="json"), 403, "forbidden")


def test_a_write_key_can_create_keys_but_only_with_scopes_it_holds(user, key_client):
    client = key_client(user, scopes=["projects:write"])

    allowed = client.post("/v1/api-keys", {"name": "reader", "scopes": ["projects:read"]}, format="json")
    escalation = client.post("/v1/api-keys", {"name": "approver", "scopes": ["approve"]}, format="json")

    assert allowed.status_code == 201
    body = assert_problem(escalation, 403, "scope_not_held")
    assert body["missingScopes"] == ["approve"]
    assert ApiKey.objects.filter(user=user).count() == 2


def test_a_jwt_can_create_a_key_with_any_scope(auth_client):
    response = auth_client.post(
        "/v1/api-keys", {"name": "all", "scopes": ["projects:write", "approve", "projects:read"]}, format="json"
    )

    assert response.status_code == 201
    assert response.json()["scopes"] == ["projects:write", "approve", "projects:read"]
    assert response.json()["expiresUtc"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "k", "scopes": ["admin"]}, "scopes"),
        ({"name": "k", "scopes": []}, "scopes"),
        ({"name": "k", "expiresInDays": 0}, "expiresInDays"),
        ({"name": "k", "expiresInDays": "soon"}, "expiresInDays"),
    ],
)
def test_invalid_key_requests_are_refused_and_create_nothing(auth_client, user, body, field):
    response = auth_client.post("/v1/api-keys", body, format="json")

    problem = assert_problem(response, 400, "validation_error")
    assert any(name == field or name.startswith(f"{field}.") for name in problem["errors"])
    assert not ApiKey.objects.exists()


def test_last_used_is_recorded_without_a_write_on_every_request(user, key_client):
    client = key_client(user)
    key = ApiKey.objects.get(user=user)
    assert key.last_used_at is None

    client.get("/v1/me")
    key.refresh_from_db()
    first_use = key.last_used_at
    with CaptureQueriesContext(connection) as queries:
        client.get("/v1/me")

    assert first_use is not None
    assert not [q for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("UPDATE")]
    key.refresh_from_db()
    assert key.last_used_at == first_use


def test_last_used_moves_on_once_the_resolution_has_passed(user, key_client, settings):
    settings.API_KEY_LAST_USED_RESOLUTION_SECONDS = 0
    client = key_client(user)

    client.get("/v1/me")
    first_use = ApiKey.objects.get(user=user).last_used_at
    client.get("/v1/me")

    assert ApiKey.objects.get(user=user).last_used_at > first_use


def key_client_expiring(user, *, days: int) -> tuple[ApiKey, APIClient]:  # type: ignore[no-untyped-def]
    key, secret = api_key_create(user=user, name=f"{days}-day key", expires_in_days=days)
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=secret)
    return key, client


@pytest.mark.parametrize("body", [{"name": "decade", "expiresInDays": 3650}, {"name": "forever"}])
def test_an_expiring_key_cannot_mint_a_key_that_outlives_it(user, body):
    key, client = key_client_expiring(user, days=1)

    problem = assert_problem(client.post("/v1/api-keys", body, format="json"), 403, "expiry_not_held")

    assert problem["maxExpiresInDays"] == 0
    assert problem["keyExpiresUtc"] == key.expires_at.isoformat().replace("+00:00", "Z")
    assert list(ApiKey.objects.filter(user=user)) == [key]


def test_an_expiring_key_may_mint_keys_expiring_no_later_than_itself(user):
    key, client = key_client_expiring(user, days=30)

    within = client.post("/v1/api-keys", {"name": "shorter", "expiresInDays": 29}, format="json")
    beyond = client.post("/v1/api-keys", {"name": "as long", "expiresInDays": 30}, format="json")

    assert within.status_code == 201
    assert ApiKey.objects.get(pk=within.json()["id"]).expires_at <= key.expires_at
    assert assert_problem(beyond, 403, "expiry_not_held")["maxExpiresInDays"] == 29
    assert ApiKey.objects.filter(user=user).count() == 2


@pytest.mark.parametrize("body", [{"name": "decade", "expiresInDays": 3650}, {"name": "forever"}])
def test_a_jwt_or_a_key_without_expiry_mints_keys_of_any_lifetime(user, auth_client, key_client, body):
    assert auth_client.post("/v1/api-keys", body, format="json").status_code == 201
    assert key_client(user).post("/v1/api-keys", body, format="json").status_code == 201
