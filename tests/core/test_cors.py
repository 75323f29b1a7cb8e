"""CORS for a web app on another origin (config/settings.py CORS_*): the allowed origins come
from the environment, a preflight is answered without a credential, the API's own headers
are readable by the page, and nothing allows cookies."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.services.users import token_issue
from tests.factories import UserFactory

APP = "https://app.example.org"


@pytest.fixture(autouse=True)
def _allowed(settings) -> None:
    settings.CORS_ALLOWED_ORIGINS = [APP]


def preflight(client: Client, path: str, origin: str):
    return client.options(
        path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, idempotency-key",
        },
    )


@pytest.mark.django_db
def test_a_preflight_from_an_allowed_origin_is_answered_without_a_credential():
    response = preflight(Client(), "/v1/projects", APP)

    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == APP
    assert {"POST", "DELETE", "PATCH"} <= {m.strip() for m in response["Access-Control-Allow-Methods"].split(",")}
    allowed = {h.strip() for h in response["Access-Control-Allow-Headers"].split(",")}
    assert {"authorization", "content-type", "idempotency-key", "x-api-key"} <= allowed
    assert "Access-Control-Allow-Credentials" not in response


@pytest.mark.django_db
def test_an_origin_not_allowed_gets_no_cors_grant():
    response = preflight(Client(), "/v1/projects", "https://evil.example.net")
    assert "Access-Control-Allow-Origin" not in response

    answered = Client().get("/v1/languages", headers={"Origin": "https://evil.example.net"})
    assert answered.status_code == 200
    assert "Access-Control-Allow-Origin" not in answered


@pytest.mark.django_db
def test_answers_and_problems_carry_the_grant_and_expose_the_apis_headers():
    user = UserFactory()
    token = token_issue(user=user).token

    read = Client().get("/v1/wallet", headers={"Origin": APP, "Authorization": f"Bearer {token}"})
    refused = Client().get("/v1/wallet", headers={"Origin": APP})

    assert read.status_code == 200
    assert refused.status_code == 401
    for response in (read, refused):
        assert response["Access-Control-Allow-Origin"] == APP
        exposed = {h.strip().lower() for h in response["Access-Control-Expose-Headers"].split(",")}
        assert {"x-request-id", "retry-after", "location", "idempotent-replayed"} <= exposed
        assert "Access-Control-Allow-Credentials" not in response


@pytest.mark.django_db
def test_only_the_api_answers_other_origins():
    response = Client().get("/healthz", headers={"Origin": APP})
    assert "Access-Control-Allow-Origin" not in response
    admin = preflight(Client(), "/admin/login/", APP)
    assert "Access-Control-Allow-Origin" not in admin
