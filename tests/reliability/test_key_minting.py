"""Keys that mint keys. An API key with projects:write may create keys over the API; the key
it gets must hold no scope the creator lacks and expire no later than the creator does (a
key with `expiresInDays: 1` once minted a 3,650-day key and one that never expires).
hypothesis draws the creator's scopes and lifetime and what it asks for; each request gets
exactly the answer the rules give (created, 403 `forbidden`, `scope_not_held` or
`expiry_not_held`), a created key is within its creator, and a refused one creates nothing.
`FUZZ_EXAMPLES` sets the number of examples (`make reliability` raises it)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.conf import settings
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from accounts.models import ApiKey, Scope, User
from accounts.services.api_keys import DEFAULT_SCOPES, api_key_create, scopes_implied

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))

SCOPE_SETS = st.lists(st.sampled_from(sorted(Scope.values)), min_size=1, max_size=3, unique=True)
LIFETIMES = st.none() | st.integers(min_value=1, max_value=settings.API_KEY_MAX_EXPIRY_DAYS)


def expected_answer(creator_scopes: list[str], creator_days: int | None, body: dict[str, Any]) -> str:
    """The code the rules give (docs/api.md, Scopes), or "created"."""
    if Scope.PROJECTS_WRITE not in creator_scopes:
        return "forbidden"
    if not set(body.get("scopes", DEFAULT_SCOPES)) <= scopes_implied(creator_scopes):
        return "scope_not_held"
    asked_days = body.get("expiresInDays")
    # The new key's lifetime starts later than the creator's did: the same days outlive it.
    if creator_days is not None and (asked_days is None or asked_days >= creator_days):
        return "expiry_not_held"
    return "created"


@given(creator_scopes=SCOPE_SETS, creator_days=LIFETIMES, asked_scopes=st.none() | SCOPE_SETS, asked_days=LIFETIMES)
@hypothesis_settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_a_key_mints_only_keys_within_its_own_scopes_and_lifetime(
    user: User,
    creator_scopes: list[str],
    creator_days: int | None,
    asked_scopes: list[str] | None,
    asked_days: int | None,
) -> None:
    creator, secret = api_key_create(user=user, name="creator", scopes=creator_scopes, expires_in_days=creator_days)
    body: dict[str, Any] = {"name": "minted"}
    if asked_scopes is not None:
        body["scopes"] = asked_scopes
    if asked_days is not None:
        body["expiresInDays"] = asked_days
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=secret)
    existing = list(ApiKey.objects.filter(user=user).values_list("pk", flat=True))

    response = client.post("/v1/api-keys", body, format="json")

    minted = list(ApiKey.objects.filter(user=user).exclude(pk__in=existing))
    expected = expected_answer(creator_scopes, creator_days, body)
    if expected == "created":
        assert response.status_code == 201, response.content
        (key,) = minted
        assert set(key.scopes) <= scopes_implied(creator.scopes)
        assert creator.expires_at is None or (key.expires_at is not None and key.expires_at <= creator.expires_at)
    else:
        assert response.status_code == 403, (expected, response.content)
        assert response.json()["code"] == expected
        assert minted == []
