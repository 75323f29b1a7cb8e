"""Checks shared by the account tests."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient


def assert_signed_in(
    api_client: APIClient, body: dict[str, Any], *, email: str, has_password: bool, email_verified: bool
) -> None:
    """A sign-in answer: a Bearer token for Ada Reader's account as described, which /v1/me
    accepts as that account."""
    assert body["tokenType"] == "Bearer"
    assert body["user"]["email"] == email
    assert body["user"]["displayName"] == "Ada Reader"
    assert body["user"]["hasPassword"] is has_password
    assert body["user"]["emailVerified"] is email_verified
    me = api_client.get("/v1/me", HTTP_AUTHORIZATION=f"Bearer {body['token']}")
    assert me.status_code == 200
    assert me.json()["id"] == body["user"]["id"]
