"""The cost of a credential on every request.

Baseline: an anonymous read that touches no account (GET /v1/problems/not_found), through
the same middleware, router, renderer and exception handler. Figures: GET /v1/me with an API
key (prefix lookup, hash, constant-time compare, last-used throttle) and with a JWT
(signature check, one user read). A ratio near 1 means authentication adds little.
"""

from __future__ import annotations

from django.test import Client

from accounts.models import User
from accounts.services.api_keys import api_key_create
from accounts.services.users import token_issue
from bench.common import Result, rate


def run() -> list[Result]:
    user = User.objects.create_user("bench@example.com", "bench-password-123", display_name="Bench")
    _, secret = api_key_create(user=user, name="bench")
    token = token_issue(user=user).token
    client = Client()

    def anonymous() -> None:
        assert client.get("/v1/problems/not_found").status_code == 200

    def with_key() -> None:
        assert client.get("/v1/me", HTTP_X_API_KEY=secret).status_code == 200

    def with_jwt() -> None:
        assert client.get("/v1/me", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200

    baseline = rate(anonymous)
    return [
        Result("auth: GET /v1/me with an API key, req/s", rate(with_key), baseline, "r/s"),
        Result("auth: GET /v1/me with a JWT, req/s", rate(with_jwt), baseline, "r/s"),
    ]
