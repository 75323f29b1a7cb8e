"""Rate limits on sign-in and anonymous endpoints: 429 problem+json with Retry-After."""

import pytest

from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def tight_rates(settings):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "login": "3/min", "register": "2/min", "anonymous": "2/min"}


def test_login_is_rate_limited_per_client_address(api_client, tight_rates):
    for _ in range(3):
        assert api_client.post("/v1/auth/login", {"email": "a@example.com", "password": "x"}).status_code == 401

    limited = api_client.post("/v1/auth/login", {"email": "a@example.com", "password": "x"})
    other_address = api_client.post(
        "/v1/auth/login", {"email": "a@example.com", "password": "x"}, REMOTE_ADDR="198.51.100.7"
    )

    assert_problem(limited, 429, "rate_limited")
    assert 1 <= int(limited["Retry-After"]) <= 60
    assert other_address.status_code == 401


def test_register_and_discovery_are_rate_limited(api_client, tight_rates):
    for _ in range(2):
        api_client.post("/v1/auth/register", {}, format="json")
        api_client.get("/v1/meta")

    assert_problem(api_client.post("/v1/auth/register", {}, format="json"), 429, "rate_limited")
    assert_problem(api_client.get("/v1/meta"), 429, "rate_limited")


def test_a_rate_limited_login_does_not_check_the_password(api_client, tight_rates, user):
    from tests.factories import DEFAULT_PASSWORD

    for _ in range(3):
        api_client.post("/v1/auth/login", {"email": user.email, "password": "wrong"})

    response = api_client.post("/v1/auth/login", {"email": user.email, "password": DEFAULT_PASSWORD})

    assert_problem(response, 429, "rate_limited")
